// Command blobbars reads what scripts/bench-blob.sh measured and sets it against issue 12's
// bars for the Blob service, as a Markdown table (printed, and written to -md).
//
//	go run ./scripts/blobbars -compare bench-out/blob-compare.json \
//	    -list-small bench-out/blob-list-small.json -list-large bench-out/blob-list-large.json \
//	    -rss-hwm-kib 123456 -rss-blob 4GiB -md bench-out/blob-bars.md
//
// A bar whose inputs are missing is left out. Only the standard library is used.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/tabula-dev/tabula/internal/bench"
)

func main() {
	compare := flag.String("compare", "", "`FILE`: tabula bench --json of the blob workloads, Tabula then Azurite, with --disk-dir")
	listSmall := flag.String("list-small", "", "`FILE`: tabula bench --json of blob-list over the small container (Tabula first)")
	listLarge := flag.String("list-large", "", "`FILE`: tabula bench --json of blob-list over the large container (Tabula)")
	rssKiB := flag.Int64("rss-hwm-kib", 0, "Tabula's peak resident memory (VmHWM) in KiB while it uploaded and downloaded the -rss-blob blob")
	rssBlob := flag.String("rss-blob", "4GiB", "the blob size of the memory measurement, for the table")
	mdOut := flag.String("md", "", "also write the table to `FILE`")
	flag.Parse()
	md, err := bars(*compare, *listSmall, *listLarge, *rssKiB, *rssBlob)
	if err != nil {
		fmt.Fprintln(os.Stderr, "blobbars:", err)
		os.Exit(1)
	}
	fmt.Print(md)
	if *mdOut != "" {
		if err := os.WriteFile(*mdOut, []byte(md), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "blobbars:", err)
			os.Exit(1)
		}
	}
}

func load(path string) (*bench.Report, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep bench.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &rep, nil
}

// find returns the result of workload on the endpoint at index i of the report's endpoints.
func find(rep *bench.Report, workload string, i int) *bench.Result {
	if rep == nil || i >= len(rep.Endpoints) {
		return nil
	}
	for k := range rep.Results {
		if r := &rep.Results[k]; r.Workload == workload && r.Endpoint == rep.Endpoints[i].Label {
			return r
		}
	}
	return nil
}

func fileServer(rep *bench.Report, workload string) *bench.Result {
	if rep == nil {
		return nil
	}
	for k := range rep.FileServer {
		if r := &rep.FileServer[k]; r.Workload == workload {
			return r
		}
	}
	return nil
}

type table struct{ b strings.Builder }

func (t *table) row(bar, measured string, met bool) {
	verdict := "met"
	if !met {
		verdict = "**not met**"
	}
	fmt.Fprintf(&t.b, "| %s | %s | %s |\n", bar, measured, verdict)
}

func mb(v float64) string { return bench.Thousands(v) + " MB/s" }

func bars(comparePath, listSmallPath, listLargePath string, rssKiB int64, rssBlob string) (string, error) {
	cmp, err := load(comparePath)
	if err != nil {
		return "", err
	}
	small, err := load(listSmallPath)
	if err != nil {
		return "", err
	}
	large, err := load(listLargePath)
	if err != nil {
		return "", err
	}
	var t table
	t.b.WriteString("| bar | measured | |\n|---|---|---|\n")
	up, upAz := find(cmp, "blob-upload", 0), find(cmp, "blob-upload", 1)
	if up != nil && cmp.Disk != nil {
		d := cmp.Disk
		t.row("upload ≥ 50% of the disk's synced sequential write rate",
			fmt.Sprintf("%s = %.0f%% of %s (one fdatasync at the end; %.0f%% of %s with fdatasync per %d MiB write)",
				mb(up.MBPerSec), 100*up.MBPerSec/d.SyncAtEndMBPerSec, mb(d.SyncAtEndMBPerSec),
				100*up.MBPerSec/d.SyncPerChunkMBPerSec, mb(d.SyncPerChunkMBPerSec), d.ChunkBytes>>20),
			up.MBPerSec >= 0.5*d.SyncAtEndMBPerSec)
	}
	ratioBar := func(bar, workload string, want float64, unit func(*bench.Result) (float64, string)) {
		a, b := find(cmp, workload, 0), find(cmp, workload, 1)
		if a == nil || b == nil {
			return
		}
		va, s := unit(a)
		vb, sb := unit(b)
		if vb <= 0 {
			t.row(bar, s+" against nothing: Azurite's run failed", false)
			return
		}
		t.row(bar, fmt.Sprintf("%s against %s = %.1f×", s, sb, va/vb), va >= want*vb)
	}
	mbOf := func(r *bench.Result) (float64, string) { return r.MBPerSec, mb(r.MBPerSec) }
	blobsOf := func(r *bench.Result) (float64, string) { return r.OpsPerSec, bench.Thousands(r.OpsPerSec) + " blobs/s" }
	if up != nil && upAz != nil {
		ratioBar("upload ≥ 3× Azurite", "blob-upload", 3, mbOf)
	}
	for _, wl := range []string{"blob-download-ranged", "blob-download"} {
		r, f := find(cmp, wl, 0), fileServer(cmp, wl)
		if r != nil && f != nil && f.MBPerSec > 0 {
			t.row(wl+" within 2× of a Go file server", fmt.Sprintf("%s against %s = %.2f×", mb(r.MBPerSec), mb(f.MBPerSec), r.MBPerSec/f.MBPerSec), r.MBPerSec >= f.MBPerSec/2)
		}
		ratioBar(wl+" ≥ 3× Azurite", wl, 3, mbOf)
	}
	ratioBar("4 KiB Put Blob, 16 clients, ≥ 10× Azurite", "blob-put-small", 10, blobsOf)
	ratioBar("4 KiB Get Blob, 16 clients, ≥ 10× Azurite", "blob-get-small", 10, blobsOf)
	if rssKiB > 0 {
		t.row("server RSS < 300 MiB while a "+rssBlob+" blob is uploaded and downloaded",
			fmt.Sprintf("peak (VmHWM) %.0f MiB", float64(rssKiB)/1024), rssKiB < 300<<10)
	}
	s, l := find(small, "blob-list", 0), find(large, "blob-list", 0)
	if s != nil && l != nil && l.PagesPerSec > 0 {
		ratio := s.PagesPerSec / l.PagesPerSec
		t.row(fmt.Sprintf("a List Blobs page of %s costs the same at %s and %s blobs (within 1.5×)",
			bench.Thousands(float64(small.Parameters.ListPage)), bench.Thousands(float64(small.Parameters.ListBlobs)), bench.Thousands(float64(large.Parameters.ListBlobs))),
			fmt.Sprintf("%s pages/s (p50 %.1f ms) against %s pages/s (p50 %.1f ms) = %.2f×",
				bench.Thousands(s.PagesPerSec), s.LatencyMs.P50, bench.Thousands(l.PagesPerSec), l.LatencyMs.P50, ratio),
			ratio <= 1.5)
	}
	if large != nil && len(large.Endpoints) > 0 && large.Endpoints[0].BlobPreloadSeconds > 0 {
		sec := large.Endpoints[0].BlobPreloadSeconds
		fmt.Fprintf(&t.b, "\nPreload of the %s-blob container (empty Put Blobs, then one listing of it all): %.0f s, %s blobs/s\n",
			bench.Thousands(float64(large.Parameters.ListBlobs)), sec, bench.Thousands(float64(large.Parameters.ListBlobs)/sec))
	}
	if a := find(small, "blob-list", 1); s != nil && a != nil && a.PagesPerSec > 0 {
		fmt.Fprintf(&t.b, "\nList Blobs at %s blobs: %s pages/s against Azurite's %s = %.1f× (no bar)\n",
			bench.Thousands(float64(small.Parameters.ListBlobs)), bench.Thousands(s.PagesPerSec), bench.Thousands(a.PagesPerSec), s.PagesPerSec/a.PagesPerSec)
	}
	return t.b.String(), nil
}
