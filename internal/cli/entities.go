package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabula-dev/tabula/internal/edm"
)

const entityUsage = `entity get|put|rm|query TABLE ...

  get TABLE PK RK      print one entity (on a terminal: name, type, value; else one NDJSON line)
  put TABLE [JSON]     upsert (insert or replace) an entity, or every NDJSON line of stdin
                       when no JSON is given; --merge merges, --insert refuses to overwrite
  rm TABLE PK RK       delete an entity
  query TABLE          print the entities --filter selects: an aligned table on a terminal,
                       else NDJSON (-o chooses)

Entities are JSON objects as the Table service writes them; a value JSON cannot type is
annotated, as in {"PartitionKey":"p","RowKey":"r","Big@odata.type":"Edm.Int64","Big":"12"}.
Put "--" before a key that starts with a dash.
`

func entityVerb(ctx context.Context, args []string, env Env) error {
	fs, connFlag := newFlags(env, "entity", entityUsage)
	output := outputFlag(fs)
	filter := fs.String("filter", "", "query: the OData `FILTER`, e.g. \"PartitionKey eq 'p1' and Age gt 30\"")
	sel := fs.String("select", "", "get, query: the `PROPERTIES` to return, comma-separated")
	top := fs.Int("top", 0, "query: return at most `N` entities (0: all)")
	merge := fs.Bool("merge", false, "put: merge the properties into the stored entity instead of replacing it")
	insert := fs.Bool("insert", false, "put: insert only; an existing entity is an error (EntityAlreadyExists)")
	ifMatch := fs.String("if-match", "", "put, rm: only if the stored entity has this `ETAG` (* for any), else 412; put then updates, never inserts")
	args, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fmt.Errorf("tabula entity: want get, put, rm or query (see tabula entity --help)")
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "get", "rm", "delete":
		err = wantArgs(fs, args, 3, 3, sub+" wants TABLE PK RK")
	case "put":
		err = wantArgs(fs, args, 1, 2, "put wants TABLE [JSON]")
	case "query":
		err = wantArgs(fs, args, 1, 1, "query wants TABLE")
	default:
		err = fmt.Errorf("tabula entity %s: want get, put, rm or query (see tabula entity --help)", sub)
	}
	if err != nil {
		return err
	}
	table, err := asTable(*output, env.Stdout)
	if err != nil {
		return err
	}
	if *merge && *insert {
		return errors.New("tabula entity put: --merge and --insert exclude each other")
	}
	if *insert && *ifMatch != "" {
		return errors.New("tabula entity put: --insert and --if-match exclude each other")
	}
	if *top < 0 {
		return errors.New("tabula entity query: --top must not be negative")
	}
	svc, err := connect(*connFlag, env)
	if err != nil {
		return err
	}
	tc := svc.NewClient(args[0])
	switch sub {
	case "get":
		return getEntity(ctx, tc, args[1], args[2], splitList(*sel), table, env.Stdout)
	case "rm", "delete":
		opts := &aztables.DeleteEntityOptions{}
		if *ifMatch != "" {
			etag := azcore.ETag(*ifMatch)
			opts.IfMatch = &etag
		}
		if _, err := tc.DeleteEntity(ctx, args[1], args[2], opts); err != nil {
			return describe(err)
		}
		return nil
	case "put":
		p := putter{tc: tc, merge: *merge, insert: *insert, ifMatch: *ifMatch}
		if len(args) == 2 {
			return p.put(ctx, []byte(args[1]))
		}
		return p.putLines(ctx, env.Stdin)
	default:
		return queryToOutput(ctx, tc, *filter, *sel, *top, table, env)
	}
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func getEntity(ctx context.Context, tc *aztables.Client, pk, rk string, sel []string, table bool, w io.Writer) error {
	var c captured
	if _, err := tc.GetEntity(withCapture(ctx, &c), pk, rk, &aztables.GetEntityOptions{Format: fullMetadata}); err != nil {
		return describe(err)
	}
	r, err := decodeRow(c.body)
	if err != nil {
		return err
	}
	if r.etag == "" {
		r.etag = c.header.Get("ETag")
	}
	if sel != nil {
		// Get Entity takes no $select in the SDK; pick the properties here.
		props := r.Properties[:0:0]
		for _, p := range r.Properties {
			if contains(sel, p.Name) {
				props = append(props, p)
			}
		}
		r.Properties = props
		r.hasPK, r.hasRK = contains(sel, "PartitionKey"), contains(sel, "RowKey")
		if !contains(sel, "Timestamp") {
			r.Timestamp = 0
		}
	}
	if table {
		return writeVertical(w, &r)
	}
	return writeNDJSON(w, []row{r}, jsonOptions{etag: true, timestamp: true})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// putter writes entities one at a time, as entity put asks.
type putter struct {
	tc            *aztables.Client
	merge, insert bool
	ifMatch       string
}

// put writes one entity given as JSON.
func (p putter) put(ctx context.Context, entityJSON []byte) error {
	body, _, err := entityBody(entityJSON)
	if err != nil {
		return err
	}
	mode := aztables.UpdateModeReplace
	if p.merge {
		mode = aztables.UpdateModeMerge
	}
	switch {
	case p.insert:
		_, err = p.tc.AddEntity(ctx, body, nil)
	case p.ifMatch != "":
		etag := azcore.ETag(p.ifMatch)
		_, err = p.tc.UpdateEntity(ctx, body, &aztables.UpdateEntityOptions{UpdateMode: mode, IfMatch: &etag})
	default:
		_, err = p.tc.UpsertEntity(ctx, body, &aztables.UpsertEntityOptions{UpdateMode: mode})
	}
	return describe(err)
}

// putLines writes every NDJSON line of r, stopping at the first failure.
func (p putter) putLines(ctx context.Context, r io.Reader) error {
	lines := newLineReader(r)
	for {
		line, n, err := lines.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := p.put(ctx, line); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
}

// entityBody reads an entity given as JSON (any annotations, Timestamp and odata.* members
// ignored) and returns it in the typed form to send, with its keys. JSON mistakes and
// unreadable typed values are reported here rather than by the service.
func entityBody(entityJSON []byte) ([]byte, *edm.Entity, error) {
	d, err := edm.DecodeJSON(entityJSON)
	if err != nil {
		return nil, nil, fmt.Errorf("not an entity: %v", plainError(err))
	}
	if !d.HasPartitionKey || !d.HasRowKey {
		return nil, nil, errors.New("not an entity: PartitionKey and RowKey must be strings")
	}
	r := row{Entity: d.Entity, hasPK: true, hasRK: true}
	return appendEntityJSON(nil, &r, jsonOptions{}), &r.Entity, nil
}

// plainError is an *azerr.Error's message without its status and code, which mean nothing
// for a line of a file.
func plainError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": "); i >= 0 {
		if _, convErr := strconv.Atoi(msg[:3]); convErr == nil {
			return msg[i+2:]
		}
	}
	return msg
}

// lineReader reads NDJSON input one line at a time, of any length, skipping blank lines and
// counting all of them.
type lineReader struct {
	r *bufio.Reader
	n int // lines read
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{r: bufio.NewReaderSize(r, 1<<20)} }

// next returns the next non-blank line (without its end of line) and its number, or io.EOF.
func (l *lineReader) next() ([]byte, int, error) {
	for {
		line, err := l.r.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return nil, l.n, err
		}
		l.n++
		if err != nil && err != io.EOF {
			return nil, l.n, err
		}
		line = trimSpace(line)
		if len(line) > 0 {
			return line, l.n, nil
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// queryStats is what a Tabula endpoint says about the queries it ran (the
// x-tabula-query-plan and x-tabula-entities-scanned headers); other endpoints say nothing.
type queryStats struct {
	plan     string
	scanned  int64
	returned int64
}

// query runs a query page by page, passing each page's entities to page, until the query
// ends, top entities were returned (0: no bound) or page fails.
func query(ctx context.Context, tc *aztables.Client, filter, sel string, top int, page func([]row) error) (queryStats, error) {
	opts := &aztables.ListEntitiesOptions{Format: fullMetadata}
	if filter != "" {
		opts.Filter = &filter
	}
	if sel != "" {
		opts.Select = &sel
	}
	var st queryStats
	pager := tc.NewListEntitiesPager(opts)
	for pager.More() {
		if top > 0 {
			n := int32(min(top-int(st.returned), 1000))
			opts.Top = &n
		}
		var c captured
		if _, err := pager.NextPage(withCapture(ctx, &c)); err != nil {
			return st, describe(err)
		}
		rows, err := decodeEntities(c.body)
		if err != nil {
			return st, err
		}
		if top > 0 && len(rows) > top-int(st.returned) {
			rows = rows[:top-int(st.returned)]
		}
		if plan := c.header.Get("x-tabula-query-plan"); plan != "" {
			st.plan = plan
		}
		if n, err := strconv.ParseInt(c.header.Get("x-tabula-entities-scanned"), 10, 64); err == nil {
			st.scanned += n
		}
		st.returned += int64(len(rows))
		if err := page(rows); err != nil {
			return st, err
		}
		if top > 0 && st.returned >= int64(top) {
			break
		}
	}
	return st, nil
}

// queryToOutput runs entity query: NDJSON streams page by page; a table needs every row to
// align its columns, and says on stderr how many there were and, from Tabula, how they were
// found.
func queryToOutput(ctx context.Context, tc *aztables.Client, filter, sel string, top int, table bool, env Env) error {
	var rows []row
	st, err := query(ctx, tc, filter, sel, top, func(page []row) error {
		if table {
			rows = append(rows, page...)
			return nil
		}
		return writeNDJSON(env.Stdout, page, jsonOptions{etag: true, timestamp: true})
	})
	if err != nil {
		return err
	}
	if !table {
		return nil
	}
	if err := writeTable(env.Stdout, rows); err != nil {
		return err
	}
	summary := fmt.Sprintf("%d entities", st.returned)
	if st.plan != "" {
		summary += fmt.Sprintf(" (query plan %s, %d entities scanned)", st.plan, st.scanned)
	}
	fmt.Fprintln(env.Stderr, summary)
	return nil
}
