// Package bench is `tabula bench`, a load generator for any Azure Table endpoint: Tabula,
// Azurite or Azure itself, and for the same account's Queue and Blob endpoints (queue.go,
// blob.go). It speaks the REST API over keep-alive HTTP with SharedKeyLite
// signing, preloads a table, runs each workload for a fixed time with a fixed number of
// concurrent workers, and reports throughput and latency percentiles. With --compare it
// alternates two endpoints workload by workload, so both are measured by the same client under
// the same conditions.
//
// Every failed operation is counted by its status and error code (or transport failure) and
// reported; a run with any failure returns an error. BENCHMARKS.md at the repository root
// describes the workloads and how the numbers are measured.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"
)

// config is a run's settings, from the command line.
type config struct {
	concurrency int
	duration    time.Duration
	entities    int64
	partitions  int
	entitySize  int
	workloads   []workload
	tablePrefix string
	keep        bool
	json        bool
	progress    bool
	ceiling     bool
	timeout     time.Duration
	settle      time.Duration // pause between the preloads and the first timed workload
	shape       entityShape
	// The queue workloads' settings (queue.go).
	messages    int64
	messageSize int
	queueDepth  int64
	// The blob workloads' settings (blob.go, disk.go).
	blobSize, blockSize int64
	blobParallel        int
	smallSize           int
	smallBlobs          int64
	listBlobs           int64
	listPage            int
	blobLoaders         int
	diskDir             string
}

// endpointFlags are the flags that name one endpoint.
type endpointFlags struct {
	url, account, key, label string
	queueURL                 string // the same account's queue service root
	blobURL                  string // the same account's blob service root
	// messages overrides --messages for this endpoint (0: --messages), so that a slow peer
	// is not preloaded with what a fast one needs.
	messages int64
	metrics  string // Tabula's /metrics for the endpoint (servercost.go)
}

const usageHead = `usage: tabula bench [flags]

Drives an Azure Table endpoint (Tabula, Azurite, Azure), and for the queue and blob workloads
the same account's Queue and Blob endpoints, with concurrent workers and reports throughput and
latency per workload. With --compare, runs every workload against both
endpoints alternately (the first, then the second) and prints the ratio.

  tabula bench --endpoint http://127.0.0.1:10002/devstoreaccount1
  tabula bench --endpoint http://127.0.0.1:10002/devstoreaccount1 --label tabula \
      --compare http://127.0.0.1:10102/devstoreaccount1 --compare-label azurite --ceiling --json >out.json
  tabula bench --workloads queue --queue-endpoint http://127.0.0.1:10001/devstoreaccount1 \
      --compare-queue http://127.0.0.1:10101/devstoreaccount1 --compare http://127.0.0.1:10102/devstoreaccount1
  tabula bench --workloads blob --blob-endpoint http://127.0.0.1:10000/devstoreaccount1 --disk-dir /var/tmp \
      --compare-blob http://127.0.0.1:10100/devstoreaccount1 --compare http://127.0.0.1:10102/devstoreaccount1

Workloads (--workloads, comma-separated, default all, in this order):
`

// Main runs `tabula bench` with args (the arguments after "bench"). The report goes to stdout,
// or with --json the JSON document goes to stdout and the report to stderr. It returns an
// error when the flags are wrong, when setup fails, or when any operation failed (after
// reporting them all); ctx ends the run early. --help prints the usage to stdout and returns
// nil.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, a, b, err := parseFlags(args, stdout)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	human := stdout
	if cfg.json {
		human = stderr
	}
	prog := &progress{every: 250 * time.Millisecond}
	if cfg.progress || isTerminal(stderr) {
		prog.w = stderr
	}

	var targets []*target
	for _, ep := range []endpointFlags{a, b} {
		if ep.url == "" {
			continue
		}
		c, err := NewClient(ep.url, ep.account, ep.key, cfg.concurrency, cfg.timeout)
		if err != nil {
			return err
		}
		defer c.Close()
		label := ep.label
		if label == "" {
			label = hostOf(c.Endpoint)
		}
		t := &target{label: label, client: c, getStatus: 200, messages: ep.messages}
		if t.metrics, err = newServerMetrics(ctx, ep.metrics, c.Endpoint); err != nil {
			return err
		}
		if ep.queueURL != "" {
			if t.queue, err = NewClient(ep.queueURL, ep.account, ep.key, cfg.concurrency, cfg.timeout); err != nil {
				return err
			}
			t.queue.kind = queueService
			defer t.queue.Close()
		}
		if ep.blobURL != "" {
			if t.blob, err = NewClient(ep.blobURL, ep.account, ep.key, cfg.concurrency, cfg.timeout); err != nil {
				return err
			}
			t.blob.kind = blobService
			defer t.blob.Close()
		}
		targets = append(targets, t)
	}
	if len(targets) == 2 && targets[0].label == targets[1].label {
		targets[0].label += "-A"
		targets[1].label += "-B"
	}

	rep := &Report{
		Tool:      "tabula bench",
		Timestamp: time.Now().UTC(),
		Parameters: Parameters{
			Concurrency:     cfg.concurrency,
			DurationSeconds: cfg.duration.Seconds(),
			Entities:        cfg.entities,
			Partitions:      cfg.partitions,
			EntitySize:      cfg.shape.asked,
			EntityShape:     cfg.shape.name,
			EntityBytes:     cfg.shape.size,
			TablePrefix:     cfg.tablePrefix,
			GOMAXPROCS:      runtime.GOMAXPROCS(0),
		},
		Results: []Result{},
	}
	for _, wl := range cfg.workloads {
		rep.Parameters.Workloads = append(rep.Parameters.Workloads, wl.name)
		if wl.queue != noQueue {
			rep.Parameters.Messages, rep.Parameters.MessageSize, rep.Parameters.QueueDepth = cfg.messages, cfg.messageSize, cfg.queueDepth
		}
		if wl.blob != nil {
			p := &rep.Parameters
			switch wl.blob.container {
			case bigContainer, uploadContainer:
				p.BlobSize, p.BlockSize, p.BlobParallel = cfg.blobSize, cfg.blockSize, cfg.blobParallel
			case smallContainer:
				p.SmallSize, p.SmallBlobs = cfg.smallSize, cfg.smallBlobs
			case putContainer:
				p.SmallSize = cfg.smallSize
			case listContainer:
				p.ListBlobs, p.ListPage = cfg.listBlobs, cfg.listPage
			}
		}
	}

	runErr := run(ctx, cfg, targets, rep, human, prog)
	for _, t := range targets {
		if cfg.keep {
			if len(t.created) > 0 {
				fmt.Fprintf(human, "kept tables on %s: %s\n", t.label, strings.Join(t.created, ", "))
			}
			if len(t.createdQueues) > 0 {
				fmt.Fprintf(human, "kept queues on %s: %s\n", t.label, strings.Join(t.createdQueues, ", "))
			}
			continue
		}
		if err := teardown(t); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	if runErr != nil {
		return runErr
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	}
	if rep.Errors > 0 {
		return fmt.Errorf("%d operations failed (listed above)", rep.Errors)
	}
	return nil
}

// run sets up every target, runs the workloads (each on every target in turn) and the
// ceiling, and fills rep, printing rows to human as results arrive.
func run(ctx context.Context, cfg *config, targets []*target, rep *Report, human io.Writer, prog *progress) error {
	runID := randomTableID()
	for _, t := range targets {
		if err := setup(ctx, cfg, t, runID, prog); err != nil {
			return err
		}
		ep := Endpoint{Label: t.label, URL: t.client.Endpoint, Account: t.client.Account, Tables: t.created, PreloadSeconds: t.preload.Seconds(),
			Queues: t.createdQueues, QueuePreloadSeconds: t.queuePreload.Seconds(),
			Containers: t.createdContainers, BlobPreloadSeconds: t.blobPreload.Seconds()}
		if len(t.createdQueues) > 0 {
			ep.QueueURL = t.queue.Endpoint
		}
		if len(t.createdContainers) > 0 {
			ep.BlobURL = t.blob.Endpoint
		}
		if t.metrics != nil {
			ep.MetricsURL = t.metrics.url
		}
		if ep.Tables == nil {
			ep.Tables = []string{}
		}
		rep.Endpoints = append(rep.Endpoints, ep)
	}
	if cfg.settle > 0 {
		select {
		case <-time.After(cfg.settle):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	printHeader(human, rep)
	seed := rand.Uint64()
	for _, wl := range cfg.workloads {
		var row []Result
		for _, t := range targets {
			if wl.blob != nil && wl.blob.container == bigContainer {
				if err := ensureBigBlob(ctx, cfg, t, prog, human); err != nil {
					return err
				}
			}
			r := measureServer(ctx, t.metrics, func() Result { return runWorkload(ctx, cfg, wl, t, seed, prog) })
			if err := ctx.Err(); err != nil {
				return err
			}
			printRow(human, r)
			printServerCost(human, r)
			row = append(row, r)
			rep.Results = append(rep.Results, r)
			rep.Errors += r.ErrorCount
		}
		if len(row) == 2 {
			ratio := ratioOf(row[0], row[1])
			printRatio(human, ratio)
			rep.Ratios = append(rep.Ratios, ratio)
		}
	}
	if cfg.ceiling {
		c, err := runCeiling(ctx, cfg, seed, prog)
		if err != nil {
			return err
		}
		rep.Ceiling = &c
		rep.Errors += c.ErrorCount
		printCeiling(human, rep)
	}
	if cfg.diskDir != "" {
		if err := runDiskReference(ctx, cfg, rep, runID, seed, prog, human); err != nil {
			return err
		}
	}
	if rep.Errors > 0 {
		printErrors(human, rep)
	}
	return nil
}

// runCeiling runs the point-get loop against an in-process server that answers 204 to
// everything: what this client and this machine can do when the server costs nothing.
func runCeiling(ctx context.Context, cfg *config, seed uint64, prog *progress) (Result, error) {
	endpoint, stop, err := emptyHandler()
	if err != nil {
		return Result{}, fmt.Errorf("starting the empty handler: %w", err)
	}
	defer stop()
	c, err := NewClient(endpoint, "", "", cfg.concurrency, cfg.timeout)
	if err != nil {
		return Result{}, err
	}
	defer c.Close()
	t := &target{label: "in-process", client: c, getStatus: 204}
	t.tables[readTable] = "ceiling"
	ceilingCfg := *cfg
	ceilingCfg.entities = max(cfg.entities, 1)
	wl, _ := findWorkload("point-get")
	wl.name = "empty-handler"
	r := runWorkload(ctx, &ceilingCfg, wl, t, seed, prog)
	return r, ctx.Err()
}

// printUsage writes bench's help: what it does, its workloads and the flags of fs.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, usageHead)
	for _, wl := range workloads {
		fmt.Fprintf(w, "  %-21s %s\n", wl.name, wl.about)
	}
	fmt.Fprint(w, "\nQueue workloads (--workloads queue, or by name; they drive --queue-endpoint):\n")
	for _, wl := range queueWorkloads {
		fmt.Fprintf(w, "  %-21s %s\n", wl.name, wl.about)
	}
	fmt.Fprint(w, "\nBlob workloads (--workloads blob, or by name; they drive --blob-endpoint):\n")
	for _, wl := range blobWorkloads {
		fmt.Fprintf(w, "  %-21s %s\n", wl.name, wl.about)
	}
	fmt.Fprintln(w, "\nFlags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parseFlags reads bench's flags. --help prints the usage to stdout and returns flag.ErrHelp;
// a wrong flag is an error that names it, without the usage.
func parseFlags(args []string, stdout io.Writer) (*config, endpointFlags, endpointFlags, error) {
	fs := flag.NewFlagSet("tabula bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Parse would print the whole usage for a wrong flag too
	var a, b endpointFlags
	cfg := &config{}
	var workloadList, shapeName string
	fs.StringVar(&a.url, "endpoint", "http://127.0.0.1:10002/devstoreaccount1", "`URL` of the table service root; path style, the last path segment is the account")
	fs.StringVar(&a.account, "account", "", "account `NAME` (default: from the endpoint)")
	fs.StringVar(&a.key, "key", "", "account `KEY`, base64 (default: the well-known devstoreaccount1 key)")
	fs.StringVar(&a.label, "label", "", "`NAME` of the endpoint in the report (default: its host:port)")
	fs.StringVar(&b.url, "compare", "", "`URL` of a second endpoint: every workload runs on --endpoint, then on this one, and the ratio is printed")
	fs.StringVar(&b.account, "compare-account", "", "account `NAME` at --compare")
	fs.StringVar(&b.key, "compare-key", "", "account `KEY` at --compare")
	fs.StringVar(&b.label, "compare-label", "", "`NAME` of the --compare endpoint in the report")
	fs.StringVar(&a.queueURL, "queue-endpoint", "http://127.0.0.1:10001/devstoreaccount1", "`URL` of the queue service root of --endpoint's account, for the queue workloads")
	fs.StringVar(&a.metrics, "metrics", metricsAuto, "`URL` of Tabula's Prometheus metrics for --endpoint (its console's /metrics), read before and after each workload to report the server's CPU per operation and its store's commits and WAL syncs; auto: port 10003 of an endpoint on 10002, if it answers; empty: none")
	fs.StringVar(&b.metrics, "compare-metrics", "", "`URL` of Tabula's Prometheus metrics for --compare (auto as for --metrics)")
	fs.StringVar(&b.queueURL, "compare-queue", "", "`URL` of the queue service root of the --compare endpoint's account")
	fs.Int64Var(&cfg.messages, "messages", 200_000, "messages preloaded for queue-get-delete, which must not run out within --duration")
	fs.Int64Var(&b.messages, "compare-messages", 0, "messages preloaded for queue-get-delete on the --compare endpoint (default: --messages); a slower endpoint needs fewer")
	fs.IntVar(&cfg.messageSize, "message-size", 1024, "`BYTES` of a message's text")
	fs.Int64Var(&cfg.queueDepth, "queue-depth", 1000, "messages kept in the queue of queue-get-at-depth")
	fs.DurationVar(&cfg.settle, "settle", 0, "`DURATION` to wait after the preloads before the first timed workload, so that a server's background work on them (an LSM's compactions) is done rather than measured")
	fs.StringVar(&a.blobURL, "blob-endpoint", "http://127.0.0.1:10000/devstoreaccount1", "`URL` of the blob service root of --endpoint's account, for the blob workloads")
	fs.StringVar(&b.blobURL, "compare-blob", "", "`URL` of the blob service root of the --compare endpoint's account")
	cfg.blobSize, cfg.blockSize, cfg.smallBlobs, cfg.listBlobs = 1<<30, 4<<20, 10_000, 10_000
	var smallSize int64 = 4 << 10
	fs.Var(sizeFlag{&cfg.blobSize}, "blob-size", "`SIZE` of the blob blob-upload writes and the downloads read (4096, 64MiB, 1GiB)")
	fs.Var(sizeFlag{&cfg.blockSize}, "block-size", "`SIZE` of a block of the uploads and of a range of blob-download-ranged; a multiple of 64KiB")
	fs.IntVar(&cfg.blobParallel, "blob-parallel", 8, "blocks or ranges in flight at once in blob-upload and blob-download-ranged")
	fs.Var(sizeFlag{&smallSize}, "small-size", "`SIZE` of a blob of blob-put-small and blob-get-small")
	fs.Int64Var(&cfg.smallBlobs, "small-blobs", cfg.smallBlobs, "blobs preloaded for blob-get-small")
	fs.Int64Var(&cfg.listBlobs, "list-blobs", cfg.listBlobs, "empty blobs preloaded into the container blob-list lists")
	fs.IntVar(&cfg.listPage, "list-page", 5000, "maxresults of a blob-list page (1 to 5000)")
	fs.IntVar(&cfg.blobLoaders, "blob-loaders", 64, "concurrent Put Blobs of the blob preloads")
	fs.StringVar(&cfg.diskDir, "disk-dir", "", "`DIR` on the data directory's filesystem: measure its synced sequential write rate with the big blob's bytes, and run the download workloads against a Go file server sending them from there")
	fs.IntVar(&cfg.concurrency, "concurrency", 16, "concurrent workers, each with one request in flight")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long each workload runs on each endpoint")
	fs.Int64Var(&cfg.entities, "entities", 100_000, "entities preloaded for the read and rewrite workloads")
	fs.IntVar(&cfg.partitions, "partitions", 10, "partitions the preloaded entities and the inserts are spread over")
	fs.IntVar(&cfg.entitySize, "entity-size", 1024, "approximate JSON `BYTES` of an entity, padded (default 1024 for typed10, 1400 for mixed11)")
	fs.StringVar(&shapeName, "entity-shape", defaultShapeName, "`SHAPE` of the entities: typed10 (ten properties of every EDM type) or mixed11 (eleven, as issue 17 measured)")
	fs.StringVar(&workloadList, "workloads", "all", "comma-separated `LIST` of workloads, or all, or none (with --ceiling)")
	fs.StringVar(&cfg.tablePrefix, "table", "bench", "`PREFIX` of the table names (a random run id and the table's role follow)")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the tables instead of deleting them at the end")
	fs.BoolVar(&cfg.json, "json", false, "write the results as one JSON document to stdout (the report goes to stderr)")
	fs.BoolVar(&cfg.progress, "progress", false, "draw the progress line even when stderr is not a terminal")
	fs.BoolVar(&cfg.ceiling, "ceiling", false, "also run the point-get loop against an in-process server answering 204 to everything (the client's ceiling)")
	fs.DurationVar(&cfg.timeout, "timeout", time.Minute, "limit on one HTTP request")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout, fs)
			return nil, a, b, err
		}
		return nil, a, b, fmt.Errorf("%w (see tabula bench --help)", err)
	}
	if fs.NArg() > 0 {
		return nil, a, b, fmt.Errorf("unexpected argument %q (see tabula bench --help)", fs.Arg(0))
	}
	cfg.smallSize = int(min(smallSize, 1<<31))
	var err error
	if cfg.workloads, err = parseWorkloads(workloadList); err != nil {
		return nil, a, b, err
	}
	switch {
	case a.url == "":
		return nil, a, b, fmt.Errorf("--endpoint must name the table service root")
	case cfg.concurrency < 1:
		return nil, a, b, fmt.Errorf("--concurrency must be at least 1")
	case cfg.duration <= 0:
		return nil, a, b, fmt.Errorf("--duration must be positive")
	case cfg.partitions < 1:
		return nil, a, b, fmt.Errorf("--partitions must be at least 1")
	case cfg.entities < 1 && usesTable(cfg.workloads, readTable):
		return nil, a, b, fmt.Errorf("--entities must be at least 1 for the read workloads")
	case cfg.timeout <= 0:
		return nil, a, b, fmt.Errorf("--timeout must be positive")
	case cfg.messageSize < 1 || cfg.messageSize > 64<<10:
		return nil, a, b, fmt.Errorf("--message-size must be 1 to 65536")
	case cfg.messages < 1 || cfg.queueDepth < 1:
		return nil, a, b, fmt.Errorf("--messages and --queue-depth must be at least 1")
	case b.messages < 0:
		return nil, a, b, fmt.Errorf("--compare-messages must be at least 1, or 0 for --messages")
	case cfg.blockSize < stampEvery || cfg.blockSize%stampEvery != 0 || cfg.blockSize > 4000<<20:
		return nil, a, b, fmt.Errorf("--block-size must be a multiple of 64KiB, at most 4000MiB (Azure's largest block)")
	case cfg.blobSize < 1 || blocksOf(cfg) > 50_000:
		return nil, a, b, fmt.Errorf("--blob-size must be at least 1 byte and at most 50,000 blocks of --block-size (Azure's limit)")
	case cfg.blobParallel < 1 || cfg.blobLoaders < 1:
		return nil, a, b, fmt.Errorf("--blob-parallel and --blob-loaders must be at least 1")
	case cfg.smallSize < 1 || cfg.smallSize > 64<<20:
		return nil, a, b, fmt.Errorf("--small-size must be 1 byte to 64MiB")
	case cfg.smallBlobs < 1 || cfg.listBlobs < 1:
		return nil, a, b, fmt.Errorf("--small-blobs and --list-blobs must be at least 1")
	case cfg.listPage < 1 || cfg.listPage > 5000:
		return nil, a, b, fmt.Errorf("--list-page must be 1 to 5000")
	}
	if cfg.diskDir != "" {
		if fi, err := os.Stat(cfg.diskDir); err != nil || !fi.IsDir() {
			return nil, a, b, fmt.Errorf("--disk-dir %q is not a directory", cfg.diskDir)
		}
	}
	if err := checkTablePrefix(cfg.tablePrefix); err != nil {
		return nil, a, b, err
	}
	sizeGiven := false
	fs.Visit(func(f *flag.Flag) { sizeGiven = sizeGiven || f.Name == "entity-size" })
	if cfg.shape, err = parseEntityShape(shapeName, cfg.entitySize, sizeGiven); err != nil {
		return nil, a, b, err
	}
	return cfg, a, b, nil
}

func parseWorkloads(list string) ([]workload, error) {
	switch strings.TrimSpace(list) {
	case "all":
		return workloads, nil
	case "none":
		return nil, nil
	case "queue":
		return queueWorkloads, nil
	case "blob":
		return blobWorkloads, nil
	}
	var out []workload
	seen := map[string]bool{}
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" || seen[name] {
			continue
		}
		wl, ok := findWorkload(name)
		if !ok {
			var names []string
			for _, wl := range allWorkloads() {
				names = append(names, wl.name)
			}
			return nil, fmt.Errorf("unknown workload %q; the workloads are %s", name, strings.Join(names, ", "))
		}
		seen[name] = true
		out = append(out, wl)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--workloads names no workload")
	}
	return out, nil
}

func usesTable(wls []workload, role tableRole) bool {
	for _, wl := range wls {
		if wl.table == role {
			return true
		}
	}
	return false
}

// runIDLen is the length of the random part of table names, which keeps runs (and --keep
// leftovers) apart.
const runIDLen = 6

// checkTablePrefix makes sure every table name built from prefix is valid: alphanumeric,
// starting with a letter, at most 63 characters; and so every queue and container name, which
// add "-" and their role.
func checkTablePrefix(prefix string) error {
	longest := 0
	for _, s := range tableSuffixes {
		longest = max(longest, len(s))
	}
	for _, s := range queueSuffixes {
		longest = max(longest, len("-"+s))
	}
	for _, s := range blobSuffixes {
		longest = max(longest, len("-"+s))
	}
	if prefix == "" || len(prefix)+runIDLen+longest > 63 {
		return fmt.Errorf("--table must be 1 to %d characters", 63-runIDLen-longest)
	}
	for i, c := range prefix {
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return fmt.Errorf("--table %q: a table name is letters and digits and starts with a letter", prefix)
		}
	}
	return nil
}

func randomTableID() string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, runIDLen)
	for i := range b {
		b[i] = chars[rand.IntN(len(chars))]
	}
	return string(b)
}

func hostOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return endpoint
	}
	return u.Host
}
