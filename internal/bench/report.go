package bench

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Report is the document --json writes: everything a run measured and how. scripts/chart
// reads it.
type Report struct {
	Tool       string     `json:"tool"` // "tabula bench"
	Timestamp  time.Time  `json:"timestamp"`
	Parameters Parameters `json:"parameters"`
	Endpoints  []Endpoint `json:"endpoints"`
	// Results holds one entry per workload and endpoint, in the order they ran (with
	// --compare: each workload on the first endpoint, then on the second).
	Results []Result `json:"results"`
	// Ratios compares the first endpoint with the second, per workload (--compare only).
	Ratios []Ratio `json:"ratios,omitempty"`
	// Ceiling is the point-get loop against an in-process server answering 204 to everything
	// (--ceiling only): the most this client can do on this machine.
	Ceiling *Result `json:"ceiling,omitempty"`
	// Disk is the synced sequential write rate of --disk-dir's filesystem, and FileServer the
	// download workloads against a Go file server sending the big blob's bytes from a file
	// there (--disk-dir only): the yardsticks of the large-blob workloads (disk.go).
	Disk       *DiskRate `json:"disk,omitempty"`
	FileServer []Result  `json:"file_server,omitempty"`
	// Errors is the total of failed operations; the run failed if it is not zero.
	Errors int64 `json:"errors"`
}

// Parameters are the run's settings.
type Parameters struct {
	Concurrency     int      `json:"concurrency"`
	DurationSeconds float64  `json:"duration_seconds"`
	Entities        int64    `json:"entities"`
	Partitions      int      `json:"partitions"`
	EntitySize      int      `json:"entity_size"`  // as asked (--entity-size)
	EntityBytes     int      `json:"entity_bytes"` // JSON bytes of a typical entity as sent
	EntityShape     string   `json:"entity_shape"` // --entity-shape
	Workloads       []string `json:"workloads"`
	TablePrefix     string   `json:"table_prefix"`
	GOMAXPROCS      int      `json:"gomaxprocs"` // of the client
	// The queue workloads' settings, when any ran.
	Messages    int64 `json:"messages,omitempty"`
	MessageSize int   `json:"message_size,omitempty"`
	QueueDepth  int64 `json:"queue_depth,omitempty"`
	// The blob workloads' settings, when any ran.
	BlobSize     int64 `json:"blob_size,omitempty"`
	BlockSize    int64 `json:"block_size,omitempty"`
	BlobParallel int   `json:"blob_parallel,omitempty"`
	SmallSize    int   `json:"small_size,omitempty"`
	SmallBlobs   int64 `json:"small_blobs,omitempty"`
	ListBlobs    int64 `json:"list_blobs,omitempty"`
	ListPage     int   `json:"list_page,omitempty"`
}

// Endpoint is one server under test.
type Endpoint struct {
	Label   string   `json:"label"`
	URL     string   `json:"url"`
	Account string   `json:"account"`
	Tables  []string `json:"tables"`
	// PreloadSeconds is how long loading the read table took (not part of any workload).
	PreloadSeconds float64 `json:"preload_seconds,omitempty"`
	// QueueURL, Queues and QueuePreloadSeconds are the same for the queue workloads.
	QueueURL            string   `json:"queue_url,omitempty"`
	Queues              []string `json:"queues,omitempty"`
	QueuePreloadSeconds float64  `json:"queue_preload_seconds,omitempty"`
	// BlobURL, Containers and BlobPreloadSeconds are the same for the blob workloads.
	BlobURL            string   `json:"blob_url,omitempty"`
	Containers         []string `json:"containers,omitempty"`
	BlobPreloadSeconds float64  `json:"blob_preload_seconds,omitempty"`
	// MetricsURL is where the server's own metrics were read (--metrics), if anywhere.
	MetricsURL string `json:"metrics_url,omitempty"`
}

// Result is one workload on one endpoint. Rates divide by the elapsed time, from the first
// operation's start to the last one's end. Latencies are of successful operations only.
type Result struct {
	Workload       string  `json:"workload"`
	Endpoint       string  `json:"endpoint"` // the endpoint's label
	Ops            int64   `json:"ops"`      // successful operations
	Entities       int64   `json:"entities"` // entities written, read or returned by them (messages, blobs)
	Pages          int64   `json:"pages,omitempty"`
	Bytes          int64   `json:"bytes,omitempty"` // blob bytes written or read
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	OpsPerSec      float64 `json:"ops_per_sec"`
	EntitiesPerSec float64 `json:"entities_per_sec"`
	PagesPerSec    float64 `json:"pages_per_sec,omitempty"`
	// ExaminedPerSec is, for the filtered table scan, the table size times scans per second:
	// the entities the server has to look at.
	ExaminedPerSec float64 `json:"examined_per_sec,omitempty"`
	// MBPerSec is blob bytes a second, in 10^6 bytes.
	MBPerSec float64 `json:"mb_per_sec,omitempty"`
	// Headline is the rate comparisons use, in HeadlineUnit (entities/s, ops/s, examined/s,
	// messages/s, blobs/s, pages/s, MB/s).
	Headline     float64      `json:"headline_per_sec"`
	HeadlineUnit string       `json:"headline_unit"`
	LatencyMs    Latency      `json:"latency_ms"`
	ErrorCount   int64        `json:"error_count"`
	Errors       []ErrorCount `json:"errors,omitempty"`
	// Server is what the server spent, when its metrics could be read (--metrics).
	Server *ServerCost `json:"server,omitempty"`

	examined int64
}

// Latency summarises the latency histogram, in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// ErrorCount is one kind of failure: its key is the HTTP status and Azure error code, or the
// transport failure, and Example is the first instance's message or body.
type ErrorCount struct {
	Key     string `json:"key"`
	Count   int64  `json:"count"`
	Example string `json:"example"`
}

// Ratio is the first endpoint's headline rate over the second's for one workload; zero when
// the second did nothing.
type Ratio struct {
	Workload string  `json:"workload"`
	Unit     string  `json:"unit"`
	A        string  `json:"a"`
	B        string  `json:"b"`
	Ratio    float64 `json:"ratio"`
}

func (r *Result) finish(h *Histogram, elapsed time.Duration, errs map[string]*ErrorCount) {
	sec := elapsed.Seconds()
	r.OpsPerSec = float64(r.Ops) / sec
	r.EntitiesPerSec = float64(r.Entities) / sec
	r.PagesPerSec = float64(r.Pages) / sec
	r.ExaminedPerSec = float64(r.examined) / sec
	r.MBPerSec = float64(r.Bytes) / sec / 1e6
	switch r.HeadlineUnit {
	case headlineOps:
		r.Headline = r.OpsPerSec
	case headlineExamined:
		r.Headline = r.ExaminedPerSec
	case headlinePages:
		r.Headline = r.PagesPerSec
	case headlineMB:
		r.Headline = r.MBPerSec
	default:
		r.Headline = r.EntitiesPerSec
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	r.LatencyMs = Latency{P50: ms(h.Quantile(0.5)), P99: ms(h.Quantile(0.99)), P999: ms(h.Quantile(0.999)), Mean: ms(h.Mean()), Max: ms(h.Max())}
	r.Errors = sortedErrors(errs)
	for _, e := range r.Errors {
		r.ErrorCount += e.Count
	}
}

func ratioOf(a, b Result) Ratio {
	r := Ratio{Workload: a.Workload, Unit: a.HeadlineUnit, A: a.Endpoint, B: b.Endpoint}
	if b.Headline > 0 {
		r.Ratio = a.Headline / b.Headline
	}
	return r
}

// The text report: a header, then one row per result as it arrives, then the errors.

const rowFormat = "%-22s %-16s %11s %11s %9s %12s %8s %9s %9s %9s %7s\n"

func printHeader(w io.Writer, rep *Report) {
	p := rep.Parameters
	fmt.Fprintf(w, "tabula bench: %d workers, %s per workload", p.Concurrency, time.Duration(p.DurationSeconds*float64(time.Second)))
	tables := false
	for _, name := range p.Workloads {
		if wl, _ := findWorkload(name); wl.queue == noQueue && wl.blob == nil {
			tables = true
		}
	}
	if tables {
		fmt.Fprintf(w, ", %s entities in %d partitions, %d-byte %s entities (JSON)", Thousands(float64(p.Entities)), p.Partitions, p.EntityBytes, p.EntityShape)
	}
	if p.MessageSize > 0 {
		fmt.Fprintf(w, ", %d-byte messages (%s preloaded for queue-get-delete, %s kept for queue-get-at-depth; a message counts as an entity)",
			p.MessageSize, Thousands(float64(p.Messages)), Thousands(float64(p.QueueDepth)))
	}
	if p.BlobSize > 0 {
		fmt.Fprintf(w, ", a %s blob in %s blocks or ranges, %d in flight", fmtBytes(p.BlobSize), fmtBytes(p.BlockSize), p.BlobParallel)
	}
	if p.SmallSize > 0 {
		fmt.Fprintf(w, ", %s small blobs", fmtBytes(int64(p.SmallSize)))
		if p.SmallBlobs > 0 {
			fmt.Fprintf(w, " (%s preloaded)", Thousands(float64(p.SmallBlobs)))
		}
	}
	if p.ListBlobs > 0 {
		fmt.Fprintf(w, ", List Blobs pages of %s in %s blobs", Thousands(float64(p.ListPage)), Thousands(float64(p.ListBlobs)))
	}
	if p.BlobSize > 0 || p.SmallSize > 0 || p.ListBlobs > 0 {
		fmt.Fprint(w, " (a blob counts as an entity)")
	}
	fmt.Fprintln(w)
	for _, e := range rep.Endpoints {
		fmt.Fprintf(w, "  %-10s %s", e.Label, e.URL)
		if e.PreloadSeconds > 0 {
			fmt.Fprintf(w, "  (preloaded in %s, %s entities/s)", fmtMs(e.PreloadSeconds*1000), Thousands(float64(p.Entities)/e.PreloadSeconds))
		}
		if e.QueueURL != "" {
			fmt.Fprintf(w, "  queues %s", e.QueueURL)
		}
		if e.QueuePreloadSeconds > 0 {
			fmt.Fprintf(w, "  (queues preloaded in %s)", fmtMs(e.QueuePreloadSeconds*1000))
		}
		if e.BlobURL != "" {
			fmt.Fprintf(w, "  blobs %s", e.BlobURL)
		}
		if e.BlobPreloadSeconds > 0 {
			fmt.Fprintf(w, "  (containers preloaded in %s)", fmtMs(e.BlobPreloadSeconds*1000))
		}
		if e.MetricsURL != "" {
			fmt.Fprintf(w, "  server metrics %s", e.MetricsURL)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, rowFormat, "workload", "endpoint", "ops/s", "entities/s", "pages/s", "examined/s", "MB/s", "p50", "p99", "p999", "errors")
}

func printRow(w io.Writer, r Result) {
	dash := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return Thousands(v)
	}
	fmt.Fprintf(w, rowFormat, r.Workload, r.Endpoint, Thousands(r.OpsPerSec), Thousands(r.EntitiesPerSec), dash(r.PagesPerSec), dash(r.ExaminedPerSec), dash(r.MBPerSec),
		fmtMs(r.LatencyMs.P50), fmtMs(r.LatencyMs.P99), fmtMs(r.LatencyMs.P999), strconv.FormatInt(r.ErrorCount, 10))
}

func printRatio(w io.Writer, r Ratio) {
	fmt.Fprintf(w, "%-22s %s/%s = %s (%s)\n", "", r.A, r.B, fmtRatio(r.Ratio), r.Unit)
}

func printCeiling(w io.Writer, rep *Report) {
	c := rep.Ceiling
	fmt.Fprintf(w, "\nempty-handler ceiling: the point-get loop against an in-process net/http server answering 204\n")
	printRow(w, *c)
	for _, r := range rep.Results {
		if r.Workload == "point-get" && c.OpsPerSec > 0 {
			fmt.Fprintf(w, "  point-get on %s: %.0f%% of the ceiling\n", r.Endpoint, 100*r.OpsPerSec/c.OpsPerSec)
		}
	}
}

// printDisk prints the yardsticks of --disk-dir and how the large-blob workloads compare
// with them.
func printDisk(w io.Writer, rep *Report) {
	d := rep.Disk
	fmt.Fprintf(w, "\ndisk (%s): %s written in %s writes: %s MB/s with one fdatasync at the end, %s MB/s with fdatasync after each write\n",
		d.Dir, fmtBytes(d.Bytes), fmtBytes(d.ChunkBytes), Thousands(d.SyncAtEndMBPerSec), Thousands(d.SyncPerChunkMBPerSec))
	for _, r := range rep.Results {
		if r.Workload == "blob-upload" && r.MBPerSec > 0 {
			fmt.Fprintf(w, "  blob-upload on %s: %.0f%% of the disk's rate synced at the end, %.0f%% of it synced per write\n",
				r.Endpoint, 100*r.MBPerSec/d.SyncAtEndMBPerSec, 100*r.MBPerSec/d.SyncPerChunkMBPerSec)
		}
	}
	if len(rep.FileServer) == 0 {
		return
	}
	fmt.Fprintf(w, "\nthe download workloads against an in-process Go file server (net/http.ServeFile) sending the same bytes from %s\n", d.Dir)
	for _, f := range rep.FileServer {
		printRow(w, f)
		for _, r := range rep.Results {
			if r.Workload == f.Workload && f.MBPerSec > 0 {
				fmt.Fprintf(w, "  %s on %s: %s the file server\n", r.Workload, r.Endpoint, fmtRatio(r.MBPerSec/f.MBPerSec))
			}
		}
	}
}

func printErrors(w io.Writer, rep *Report) {
	all := append([]Result(nil), rep.Results...)
	if rep.Ceiling != nil {
		all = append(all, *rep.Ceiling)
	}
	all = append(all, rep.FileServer...)
	fmt.Fprintf(w, "\nERRORS: %d operations failed\n", rep.Errors)
	for _, r := range all {
		for _, e := range r.Errors {
			fmt.Fprintf(w, "  %s on %s: %d × %s\n      e.g. %s\n", r.Workload, r.Endpoint, e.Count, e.Key, oneLine(e.Example))
		}
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Thousands formats v rounded to an integer with thousands separators; below 10 it keeps a
// decimal, so that slow scans do not all read "1". The chart script formats with it too.
func Thousands(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "-"
	}
	if v < 10 && v > 0 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// fmtMs formats milliseconds with three significant digits and a unit that keeps them readable.
func fmtMs(ms float64) string {
	switch {
	case ms == 0:
		return "-"
	case ms < 1:
		return strconv.FormatFloat(ms*1000, 'f', 0, 64) + "µs"
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 2, 64) + "ms"
	case ms < 100:
		return strconv.FormatFloat(ms, 'f', 1, 64) + "ms"
	case ms < 10000:
		return strconv.FormatFloat(ms, 'f', 0, 64) + "ms"
	default:
		return strconv.FormatFloat(ms/1000, 'f', 1, 64) + "s"
	}
}

func fmtRatio(r float64) string {
	switch {
	case r == 0:
		return "-"
	case r < 10:
		return strconv.FormatFloat(r, 'f', 2, 64) + "×"
	default:
		return strconv.FormatFloat(r, 'f', 1, 64) + "×"
	}
}
