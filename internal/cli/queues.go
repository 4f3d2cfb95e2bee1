package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
)

const queueUsage = `queue ls | create QUEUE... | rm QUEUE... | put QUEUE [TEXT...] | peek QUEUE | pop QUEUE | clear QUEUE

  ls      the account's queues, with their approximate message counts
  put     adds each TEXT as a message; without TEXT, each line of stdin
  peek    shows the messages at the front of the queue, leaving them there (-n, at most 32)
  pop     receives messages and deletes them: the queue's consumer, by hand (-n, at most 32)
  clear   deletes every message

Messages are printed as NDJSON (id, dequeueCount, insertedOn, expiresOn, text), or as aligned
columns on a terminal. Texts go to the service as they are: a client that base64-encodes its
messages (the Azure Functions host does) reads only base64 texts.`

// connectQueue makes the Queue service client for the connection string
// resolveConnectionString finds.
func connectQueue(flagValue string, env Env) (*azqueue.ServiceClient, error) {
	cs, endpoint, err := resolveEndpoint(flagValue, env, queueService)
	if err != nil {
		return nil, err
	}
	opts := &azqueue.ClientOptions{ClientOptions: clientOptions(env)}
	switch {
	case cs.key != "":
		cred, err := azqueue.NewSharedKeyCredential(cs.account, cs.key)
		if err != nil {
			return nil, fmt.Errorf("connection string: AccountKey: %w", err)
		}
		return azqueue.NewServiceClientWithSharedKeyCredential(endpoint+"/", cred, opts)
	case cs.sas != "":
		return azqueue.NewServiceClientWithNoCredential(endpoint+"/?"+cs.sas, opts)
	default:
		return azqueue.NewServiceClientWithNoCredential(endpoint+"/", opts)
	}
}

func queueVerb(ctx context.Context, args []string, env Env) error {
	fs, connFlag := newFlags(env, "queue", queueUsage)
	output := outputFlag(fs)
	n := fs.Int("n", 1, "peek, pop: how many messages, `N` from 1 to 32")
	visibility := fs.Duration("visibility-timeout", 30*time.Second, "pop: how long a received message stays hidden should the delete fail")
	args, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fmt.Errorf("tabula queue: want ls, create, rm, put, peek, pop or clear (see tabula queue --help)")
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "ls", "list":
		err = wantArgs(fs, args, 0, 0, "ls takes no arguments")
	case "create", "rm", "delete":
		err = wantArgs(fs, args, 1, -1, sub+": which queue?")
	case "put":
		err = wantArgs(fs, args, 1, -1, "put wants QUEUE [TEXT...]")
	case "peek", "pop", "clear":
		err = wantArgs(fs, args, 1, 1, sub+" wants QUEUE")
	default:
		err = fmt.Errorf("tabula queue %s: want ls, create, rm, put, peek, pop or clear (see tabula queue --help)", sub)
	}
	if err == nil && (*n < 1 || *n > 32) {
		err = fmt.Errorf("tabula queue %s: -n %d: the service gives 1 to 32 messages at a time", sub, *n)
	}
	if err != nil {
		return err
	}
	svc, err := connectQueue(*connFlag, env)
	if err != nil {
		return err
	}
	switch sub {
	case "ls", "list":
		return listQueues(ctx, svc, env.Stdout)
	case "create":
		for _, name := range args {
			if _, err := svc.CreateQueue(ctx, name, nil); err != nil {
				return fmt.Errorf("creating queue %s: %w", name, describe(err))
			}
		}
		return nil
	case "rm", "delete":
		for _, name := range args {
			if _, err := svc.DeleteQueue(ctx, name, nil); err != nil {
				return fmt.Errorf("deleting queue %s: %w", name, describe(err))
			}
		}
		return nil
	}
	q := svc.NewQueueClient(args[0])
	switch sub {
	case "put":
		return putMessages(ctx, q, args[1:], env.Stdin)
	case "clear":
		if _, err := q.ClearMessages(ctx, nil); err != nil {
			return fmt.Errorf("clearing queue %s: %w", args[0], describe(err))
		}
		return nil
	}
	table, err := asTable(*output, env.Stdout)
	if err != nil {
		return err
	}
	var shown []message
	if sub == "peek" {
		resp, err := q.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: to32(*n)})
		if err != nil {
			return fmt.Errorf("peeking at queue %s: %w", args[0], describe(err))
		}
		for _, m := range resp.Messages {
			shown = append(shown, message{ID: deref(m.MessageID), DequeueCount: derefInt(m.DequeueCount), InsertedOn: m.InsertionTime, ExpiresOn: m.ExpirationTime, Text: deref(m.MessageText)})
		}
	} else {
		resp, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to32(*n), VisibilityTimeout: to32(int(visibility.Seconds()))})
		if err != nil {
			return fmt.Errorf("receiving from queue %s: %w", args[0], describe(err))
		}
		for _, m := range resp.Messages {
			if _, err := q.DeleteMessage(ctx, deref(m.MessageID), deref(m.PopReceipt), nil); err != nil {
				return fmt.Errorf("deleting message %s: %w", deref(m.MessageID), describe(err))
			}
			shown = append(shown, message{ID: deref(m.MessageID), DequeueCount: derefInt(m.DequeueCount), InsertedOn: m.InsertionTime, ExpiresOn: m.ExpirationTime, Text: deref(m.MessageText)})
		}
	}
	return writeMessages(env.Stdout, shown, table)
}

// message is a queue message as the verbs print it.
type message struct {
	ID           string     `json:"id"`
	DequeueCount int64      `json:"dequeueCount"`
	InsertedOn   *time.Time `json:"insertedOn,omitempty"`
	ExpiresOn    *time.Time `json:"expiresOn,omitempty"`
	Text         string     `json:"text"`
}

func writeMessages(w io.Writer, ms []message, table bool) error {
	if !table {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, m := range ms {
			if err := enc.Encode(m); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tDEQUEUED\tINSERTED\tTEXT")
	for _, m := range ms {
		inserted := ""
		if m.InsertedOn != nil {
			inserted = m.InsertedOn.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", m.ID, m.DequeueCount, inserted, cell(m.Text))
	}
	return tw.Flush()
}

// listQueues writes the account's queues with their approximate message counts.
func listQueues(ctx context.Context, svc *azqueue.ServiceClient, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tMESSAGES")
	pager := svc.NewListQueuesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return describe(err)
		}
		for _, item := range page.Queues {
			count := ""
			if props, err := svc.NewQueueClient(*item.Name).GetProperties(ctx, nil); err == nil && props.ApproximateMessagesCount != nil {
				count = strconv.Itoa(int(*props.ApproximateMessagesCount))
			}
			fmt.Fprintf(tw, "%s\t%s\n", *item.Name, count)
		}
	}
	return tw.Flush()
}

// putMessages adds each text as a message, or each line of stdin when there are none.
func putMessages(ctx context.Context, q *azqueue.QueueClient, texts []string, stdin io.Reader) error {
	put := func(text string) error {
		if _, err := q.EnqueueMessage(ctx, text, nil); err != nil {
			return fmt.Errorf("putting a message: %w", describe(err))
		}
		return nil
	}
	if len(texts) > 0 {
		for _, text := range texts {
			if err := put(text); err != nil {
				return err
			}
		}
		return nil
	}
	lines := bufio.NewScanner(stdin)
	lines.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for lines.Scan() {
		if err := put(lines.Text()); err != nil {
			return err
		}
	}
	return lines.Err()
}

func to32(n int) *int32 { v := int32(n); return &v }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefInt(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}
