package cli

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

const importUsage = `import TABLE [FILE]

Upserts (inserts or replaces) every entity of FILE, or of stdin when FILE is absent or "-",
into TABLE, creating the table if needed. FILE has one JSON entity a line, as tabula export
writes it; a value JSON cannot type must carry its annotation (Big@odata.type: Edm.Int64).
Timestamp and odata.* members are ignored. Blank lines are skipped.

Entities are sent in entity group transactions of up to 100 entities of one partition (and at
most 4 MiB), several at once (--parallel). A transaction the service refuses is retried one
entity at a time, so that the error names the line at fault.

Importing again is safe: every write is an upsert, so what is already there is replaced by the
same entity, never duplicated, and nothing fails for existing. An interrupted import (Ctrl-C,
an error) says how many leading lines are stored; --skip that many resumes where it stopped.
A progress line is drawn on stderr when it is a terminal.
`

// Limits of an entity group transaction: 100 operations on one partition, 4 MiB of payload.
// The budget leaves room for the multipart framing the estimate in opSize cannot see.
const (
	maxBatchOps   = 100
	maxBatchBytes = 4<<20 - 64<<10
)

// Import buffers batches of several partitions at once, so that input not sorted by partition
// still makes full batches, within these bounds; past them the oldest batch is sent as it is.
const (
	maxPendingPartitions = 256
	maxPendingBytes      = 32 << 20
)

func importVerb(ctx context.Context, args []string, env Env) error {
	fs, connFlag := newFlags(env, "import", importUsage)
	skip := fs.Int("skip", 0, "skip the first `N` lines: those an interrupted import reported stored")
	parallel := fs.Int("parallel", 4, "`N` transactions in flight at once (one partition's are sent in order)")
	progress := fs.Bool("progress", false, "draw the progress line on stderr even when it is not a terminal")
	args, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(fs, args, 1, 2, "wants TABLE [FILE]"); err != nil {
		return err
	}
	if *skip < 0 || *parallel < 1 {
		return errors.New("tabula import: --skip must be 0 or more and --parallel 1 or more")
	}
	in, size := env.Stdin, int64(0)
	source := "-"
	if len(args) == 2 && args[1] != "-" {
		f, err := os.Open(args[1])
		if err != nil {
			return err
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		in, source = f, args[1]
	}
	svc, err := connect(*connFlag, env)
	if err != nil {
		return err
	}
	tableName := args[0]
	if _, err := svc.CreateTable(ctx, tableName, nil); err != nil && errorCode(err) != "TableAlreadyExists" {
		return fmt.Errorf("creating table %s: %w", tableName, describe(err))
	}
	im := &importer{tc: svc.NewClient(tableName), parallel: *parallel}
	counted := &countingReader{r: in}
	var progressW io.Writer
	if *progress || isTerminal(env.Stderr) {
		progressW = env.Stderr
	}
	start := time.Now()
	stop := startProgress(progressW, func() string {
		n := im.stored.Load()
		line := fmt.Sprintf("import %s: %s entities stored, %s/s", tableName, thousands(n), rate(n, time.Since(start)))
		if size > 0 {
			line = bar(counted.n.Load(), size) + " of " + megabytes(size) + " read, " + line
		}
		return line
	})
	err = im.run(ctx, counted, *skip)
	stop()
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			err = errors.New("interrupted")
		}
		w := im.watermark()
		resume := fmt.Sprintf("tabula import %s --skip %d", tableName, w)
		if source != "-" {
			resume += " " + source
		}
		stored := fmt.Sprintf("the first %d lines are stored", w)
		if w == 1 {
			stored = "the first line is stored"
		}
		return fmt.Errorf("import into %s stopped: %w\n%s; to go on from there: %s", tableName, err, stored, resume)
	}
	fmt.Fprintf(env.Stderr, "imported %s entities into %s in %.1fs\n", thousands(im.stored.Load()), tableName, time.Since(start).Seconds())
	return nil
}

// countingReader counts the bytes read through it, for the progress line.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// importer sends the entities of one import. It knows at every moment the longest run of
// leading lines that are stored (watermark), which is what makes an import resumable.
type importer struct {
	tc       *aztables.Client
	parallel int
	stored   atomic.Int64 // entities acknowledged

	mu sync.Mutex
	// outstanding holds every batch not yet acknowledged, pending or in flight; its lines are
	// the only ones not known to be stored.
	outstanding map[*batch]struct{}
	linesRead   int // lines read so far, all of them in a batch or blank or skipped
}

// batch is the entities of one partition to send in one transaction, in line order; a second
// line with the same RowKey replaces the first, as two upserts in a row would.
type batch struct {
	pk    string
	first int // the number of its first line
	ops   []op
	rows  map[string]int // RowKey → index in ops
	bytes int
}

type op struct {
	line int
	rk   string
	body []byte
}

// watermark returns how many leading lines of the input are stored: every line before the
// first line of any batch not yet acknowledged.
func (im *importer) watermark() int {
	im.mu.Lock()
	defer im.mu.Unlock()
	w := im.linesRead
	for b := range im.outstanding {
		w = min(w, b.first-1)
	}
	return w
}

// run reads the entities of in after its first skip lines and sends them, until the input
// ends (nil) or reading, decoding or sending fails (the first such error).
func (im *importer) run(ctx context.Context, in io.Reader, skip int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	im.outstanding = map[*batch]struct{}{}
	queues := make([]chan *batch, im.parallel)
	var workers sync.WaitGroup
	for i := range queues {
		queues[i] = make(chan *batch, 2)
		q := queues[i]
		workers.Go(func() {
			for b := range q {
				if ctx.Err() != nil {
					continue // drain: the import is stopping
				}
				if err := im.send(ctx, b); err != nil {
					cancel(err)
					continue
				}
				im.mu.Lock()
				delete(im.outstanding, b)
				im.mu.Unlock()
				im.stored.Add(int64(len(b.ops)))
			}
		})
	}
	seed := maphash.MakeSeed()
	pending := map[string]*batch{}
	pendingBytes := 0
	dispatch := func(b *batch) {
		delete(pending, b.pk)
		pendingBytes -= b.bytes
		// One partition always goes to the same queue, so its batches are sent in order and a
		// later line for a RowKey lands after an earlier one.
		q := queues[maphash.String(seed, b.pk)%uint64(len(queues))]
		select {
		case q <- b:
		case <-ctx.Done():
		}
	}

	readErr := func() error {
		lines := newLineReader(in)
		for ctx.Err() == nil {
			line, n, err := lines.next()
			if err == io.EOF {
				im.setLinesRead(n)
				return nil
			}
			if err != nil {
				return err
			}
			im.setLinesRead(n - 1) // the blank lines before this one are done with
			if n <= skip {
				continue
			}
			body, e, err := entityBody(line)
			if err != nil {
				return fmt.Errorf("line %d: %w", n, err)
			}
			size := opSize(body, e.PartitionKey, e.RowKey)
			b := pending[e.PartitionKey]
			if b != nil {
				if _, dup := b.rows[e.RowKey]; !dup && (len(b.ops) == maxBatchOps || b.bytes+size > maxBatchBytes) {
					dispatch(b)
					b = nil
				}
			}
			im.mu.Lock()
			if b == nil {
				b = &batch{pk: e.PartitionKey, first: n, rows: map[string]int{}}
				pending[b.pk] = b
				im.outstanding[b] = struct{}{}
			}
			im.linesRead = n
			im.mu.Unlock()
			if i, dup := b.rows[e.RowKey]; dup {
				b.bytes -= opSize(b.ops[i].body, b.pk, e.RowKey)
				b.ops[i] = op{line: n, rk: e.RowKey, body: body}
			} else {
				b.rows[e.RowKey] = len(b.ops)
				b.ops = append(b.ops, op{line: n, rk: e.RowKey, body: body})
			}
			b.bytes += size
			pendingBytes += size
			if len(b.ops) == maxBatchOps {
				dispatch(b)
			}
			for len(pending) > maxPendingPartitions || pendingBytes > maxPendingBytes {
				dispatch(oldest(pending))
			}
		}
		return nil
	}()
	for len(pending) > 0 {
		dispatch(oldest(pending))
	}
	for _, q := range queues {
		close(q)
	}
	workers.Wait()
	if err := context.Cause(ctx); err != nil {
		return err // a failed send, or the caller's cancellation
	}
	return readErr
}

func (im *importer) setLinesRead(n int) {
	im.mu.Lock()
	im.linesRead = n
	im.mu.Unlock()
}

// oldest returns the pending batch with the earliest first line: sending it first moves the
// watermark furthest.
func oldest(pending map[string]*batch) *batch {
	var o *batch
	for _, b := range pending {
		if o == nil || b.first < o.first {
			o = b
		}
	}
	return o
}

// opSize estimates what one upsert adds to a transaction's payload: its body as the SDK
// re-encodes it (encoding/json writes <, > and & as six-byte escapes) and its request line and
// headers, where the keys appear percent-encoded.
func opSize(body []byte, pk, rk string) int {
	n := len(body) + 512 + 3*(len(pk)+len(rk))
	for _, c := range body {
		if c == '<' || c == '>' || c == '&' {
			n += 5
		}
	}
	return n
}

// send upserts b's entities in one transaction. If the service refuses it, they are sent
// again one by one, in order, so that the failure names its line (and a transaction refused
// as a whole, for its size say, still goes through).
func (im *importer) send(ctx context.Context, b *batch) error {
	actions := make([]aztables.TransactionAction, len(b.ops))
	for i, o := range b.ops {
		actions[i] = aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: o.body}
	}
	_, err := im.tc.SubmitTransaction(ctx, actions, nil)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil || !isServiceRefusal(err) {
		return fmt.Errorf("lines %d to %d: %w", b.first, b.ops[len(b.ops)-1].line, describe(err))
	}
	for _, o := range b.ops {
		if _, err := im.tc.UpsertEntity(ctx, o.body, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
			return fmt.Errorf("line %d: %w", o.line, describe(err))
		}
	}
	return nil
}

// isServiceRefusal reports whether err is the service refusing the transaction: a 4xx, which
// sending the same request again cannot change (5xx and transport failures were retried by the
// SDK already), or the 202 whose body reports an operation that failed inside it.
func isServiceRefusal(err error) bool {
	var se *serviceError
	if errors.As(describe(err), &se) {
		return se.Status == 202 || (se.Status >= 400 && se.Status < 500)
	}
	return false
}
