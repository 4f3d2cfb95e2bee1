// Command chart turns the JSON of `tabula bench --json` into an SVG bar chart of throughput per
// workload (log scale, one bar per endpoint, the ratio beside each pair) and a Markdown table
// for BENCHMARKS.md.
//
//	go run ./scripts/chart -in bench-out/results.json -svg docs/bench.svg -md bench-out/table.md
//
// The Markdown table is also printed to stdout. Only the standard library is used.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/tabula-dev/tabula/internal/bench"
)

func main() {
	in := flag.String("in", "bench-out/results.json", "`FILE` written by tabula bench --json")
	svgOut := flag.String("svg", "", "write the chart to `FILE`")
	mdOut := flag.String("md", "", "also write the Markdown table to `FILE`")
	flag.Parse()
	if err := run(*in, *svgOut, *mdOut); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func run(in, svgOut, mdOut string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var rep bench.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if len(rep.Results) == 0 {
		return fmt.Errorf("%s holds no results", in)
	}
	md := markdown(&rep)
	fmt.Print(md)
	if mdOut != "" {
		if err := os.WriteFile(mdOut, []byte(md), 0o644); err != nil {
			return err
		}
	}
	if svgOut != "" {
		f, err := os.Create(svgOut)
		if err != nil {
			return err
		}
		writeSVG(f, &rep)
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// group is one workload's results, one per endpoint in the report's endpoint order.
type group struct {
	workload string
	unit     string
	results  []*bench.Result // nil where an endpoint has no result
}

func groups(rep *bench.Report) []group {
	var out []group
	index := map[string]int{}
	for i := range rep.Results {
		r := &rep.Results[i]
		g, ok := index[r.Workload]
		if !ok {
			g = len(out)
			index[r.Workload] = g
			out = append(out, group{workload: r.Workload, unit: r.HeadlineUnit, results: make([]*bench.Result, len(rep.Endpoints))})
		}
		for e, ep := range rep.Endpoints {
			if ep.Label == r.Endpoint {
				out[g].results[e] = r
			}
		}
	}
	return out
}

func labels(rep *bench.Report) []string {
	var out []string
	for _, e := range rep.Endpoints {
		out = append(out, e.Label)
	}
	return out
}

// markdown renders the side-by-side table: the headline rate per endpoint, the ratio of the
// first to the second, and latencies.
func markdown(rep *bench.Report) string {
	var b strings.Builder
	eps := labels(rep)
	p := rep.Parameters
	shape := ""
	if p.EntityShape != "" {
		shape = " " + p.EntityShape
	}
	fmt.Fprintf(&b, "%d workers, %gs per workload, %s entities in %d partitions, %d-byte%s entities; run %s.\n\n",
		p.Concurrency, p.DurationSeconds, bench.Thousands(float64(p.Entities)), p.Partitions, p.EntityBytes, shape, rep.Timestamp.Format("2006-01-02 15:04 UTC"))
	b.WriteString("| workload | unit |")
	for _, e := range eps {
		fmt.Fprintf(&b, " %s |", e)
	}
	if len(eps) == 2 {
		fmt.Fprintf(&b, " %s / %s |", eps[0], eps[1])
	}
	for _, e := range eps {
		fmt.Fprintf(&b, " %s p50 / p99 |", e)
	}
	b.WriteString("\n|---|---|")
	b.WriteString(strings.Repeat("---:|", len(eps)))
	if len(eps) == 2 {
		b.WriteString("---:|")
	}
	b.WriteString(strings.Repeat("---:|", len(eps)))
	b.WriteString("\n")
	for _, g := range groups(rep) {
		fmt.Fprintf(&b, "| %s | %s |", g.workload, g.unit)
		for _, r := range g.results {
			if r == nil {
				b.WriteString(" |")
				continue
			}
			fmt.Fprintf(&b, " %s |", bench.Thousands(r.Headline))
		}
		if len(eps) == 2 {
			fmt.Fprintf(&b, " %s |", ratio(g.results[0], g.results[1]))
		}
		for _, r := range g.results {
			if r == nil {
				b.WriteString(" |")
				continue
			}
			fmt.Fprintf(&b, " %s / %s |", ms(r.LatencyMs.P50), ms(r.LatencyMs.P99))
		}
		b.WriteString("\n")
	}
	if c := rep.Ceiling; c != nil {
		fmt.Fprintf(&b, "\nEmpty-handler ceiling (the point-get loop against an in-process net/http server answering 204): %s requests/s, p50 %s.",
			bench.Thousands(c.OpsPerSec), ms(c.LatencyMs.P50))
		for _, r := range rep.Results {
			if r.Workload == "point-get" && c.OpsPerSec > 0 {
				fmt.Fprintf(&b, " Point get on %s: %.0f%% of it.", r.Endpoint, 100*r.OpsPerSec/c.OpsPerSec)
			}
		}
		b.WriteString("\n")
	}
	serverCosts(&b, rep)
	if rep.Errors > 0 {
		fmt.Fprintf(&b, "\n**%d operations failed in this run; its figures are not valid.**\n", rep.Errors)
	}
	return b.String()
}

// serverCosts renders what the servers whose metrics were read (--metrics) spent per
// workload: CPU per operation, and for writes the store's commits and WAL syncs.
func serverCosts(b *strings.Builder, rep *bench.Report) {
	var rows []bench.Result
	for _, r := range rep.Results {
		if r.Server != nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("\nWhat the server spent (its own metrics, read before and after each workload):\n\n")
	b.WriteString("| workload | endpoint | server CPU per op | commits/s | WAL syncs/s | commits per sync | records per sync |\n|---|---|---:|---:|---:|---:|---:|\n")
	dash := func(v float64, f string) string {
		if v == 0 {
			return "–"
		}
		return f
	}
	for _, r := range rows {
		c := r.Server
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Workload, r.Endpoint,
			dash(c.CPUSeconds, strconv.FormatFloat(c.CPUMicrosPerOp, 'f', 0, 64)+" µs"),
			dash(c.Commits, bench.Thousands(c.CommitsPerSec)), dash(c.Syncs, bench.Thousands(c.SyncsPerSec)),
			dash(c.Syncs, strconv.FormatFloat(c.CommitsPerSync, 'f', 2, 64)), dash(c.Syncs, strconv.FormatFloat(c.MutationsPerSync, 'f', 1, 64)))
	}
}

func ratio(a, b *bench.Result) string {
	if a == nil || b == nil || b.Headline <= 0 {
		return "–"
	}
	r := a.Headline / b.Headline
	if r < 10 {
		return strconv.FormatFloat(r, 'f', 2, 64) + "×"
	}
	return strconv.FormatFloat(r, 'f', 1, 64) + "×"
}

func ms(v float64) string {
	switch {
	case v < 1:
		return strconv.FormatFloat(v*1000, 'f', 0, 64) + " µs"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64) + " ms"
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
	default:
		return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
	}
}

// short writes a rate compactly for bar labels: 1.9k, 23.4k, 1.2M.
func short(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
}

// powerOfTen labels 10^e on the axis: 1, 10, 100, 1k, 10k, … 1M.
func powerOfTen(e int) string {
	if e < 0 || e >= 12 {
		return strconv.FormatFloat(math.Pow10(e), 'g', -1, 64)
	}
	return "1" + strings.Repeat("0", e%3) + []string{"", "k", "M", "G"}[e/3]
}

// Chart geometry, in SVG user units (pixels).
const (
	width     = 960
	labelW    = 230 // workload names
	ratioW    = 80  // ratios on the right
	plotX     = labelW
	plotW     = width - labelW - ratioW - 20
	barH      = 16
	barGap    = 3
	groupGap  = 14
	headerH   = 78
	axisH     = 40
	ceilColor = "#8a8f98"
)

var colors = []string{"#2563eb", "#ea7317", "#16a34a", "#9333ea"}

// writeSVG draws one horizontal bar per workload and endpoint on a shared log-scale axis of
// the workload's headline rate (entities/s, ops/s or examined/s, named beside the workload).
func writeSVG(w io.Writer, rep *bench.Report) {
	gs := groups(rep)
	eps := labels(rep)
	lo, hi := math.Inf(1), 0.0
	for _, g := range gs {
		for _, r := range g.results {
			if r != nil && r.Headline > 0 {
				lo, hi = math.Min(lo, r.Headline), math.Max(hi, r.Headline)
			}
		}
	}
	if c := rep.Ceiling; c != nil && c.OpsPerSec > 0 {
		lo, hi = math.Min(lo, c.OpsPerSec), math.Max(hi, c.OpsPerSec)
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	minExp, maxExp := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if maxExp == minExp {
		maxExp++
	}
	x := func(v float64) float64 {
		if v <= 0 {
			return plotX
		}
		return plotX + plotW*(math.Log10(v)-minExp)/(maxExp-minExp)
	}

	groupH := len(eps)*(barH+barGap) - barGap + groupGap
	rows := len(gs)
	if rep.Ceiling != nil {
		rows++
	}
	height := headerH + rows*groupH + axisH

	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	p := rep.Parameters
	title := "tabula bench: throughput per workload (log scale)"
	if len(eps) == 2 {
		title = fmt.Sprintf("tabula bench: %s vs %s, throughput per workload (log scale)", eps[0], eps[1])
	}
	fmt.Fprintf(w, `<text x="20" y="26" font-size="17" font-weight="bold">%s</text>`+"\n", esc(title))
	fmt.Fprintf(w, `<text x="20" y="46" fill="#555">%s</text>`+"\n", esc(fmt.Sprintf(
		"%d concurrent clients, %gs per workload, %s preloaded entities in %d partitions, %d-byte entities, client GOMAXPROCS %d, %s",
		p.Concurrency, p.DurationSeconds, bench.Thousands(float64(p.Entities)), p.Partitions, p.EntityBytes, p.GOMAXPROCS, rep.Timestamp.Format("2006-01-02"))))
	// Legend.
	lx := 20.0
	for i, e := range eps {
		fmt.Fprintf(w, `<rect x="%.0f" y="56" width="12" height="12" fill="%s"/><text x="%.0f" y="66">%s</text>`+"\n", lx, colors[i%len(colors)], lx+16, esc(e))
		lx += 30 + 7*float64(len(e))
	}
	if len(eps) == 2 {
		fmt.Fprintf(w, `<text x="%d" y="66" text-anchor="end" fill="#555">%s</text>`+"\n", width-20, esc(eps[0]+" / "+eps[1]))
	}

	// Grid: one line per power of ten.
	plotTop, plotBottom := headerH-6, height-axisH+4
	for e := minExp; e <= maxExp; e++ {
		gx := x(math.Pow(10, e))
		fmt.Fprintf(w, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", gx, plotTop, gx, plotBottom)
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>`+"\n", gx, plotBottom+16, powerOfTen(int(e)))
	}
	fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="middle" fill="#555">per second (entities, operations or entities examined, as labelled)</text>`+"\n", plotX+plotW/2, plotBottom+32)

	y := headerH
	bar := func(by int, v float64, color string) {
		bw := x(v) - plotX
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", plotX, by, math.Max(bw, 1), barH, color)
		fmt.Fprintf(w, `<text x="%.1f" y="%d" fill="#222">%s</text>`+"\n", plotX+math.Max(bw, 1)+4, by+barH-4, short(v))
	}
	for _, g := range gs {
		mid := y + (len(eps)*(barH+barGap)-barGap)/2
		fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-10, mid, esc(g.workload))
		fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="end" fill="#777" font-size="10">%s</text>`+"\n", labelW-10, mid+12, esc(g.unit))
		for i, r := range g.results {
			if r != nil {
				bar(y+i*(barH+barGap), r.Headline, colors[i%len(colors)])
			}
		}
		if len(eps) == 2 {
			fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="end" font-weight="bold">%s</text>`+"\n", width-20, mid+4, esc(ratio(g.results[0], g.results[1])))
		}
		y += groupH
	}
	if c := rep.Ceiling; c != nil {
		mid := y + barH/2
		fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="end">empty-handler ceiling</text>`+"\n", labelW-10, mid)
		fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="end" fill="#777" font-size="10">point-get loop vs 204, ops/s</text>`+"\n", labelW-10, mid+12)
		bar(y, c.OpsPerSec, ceilColor)
	}
	fmt.Fprintln(w, "</svg>")
}

func esc(s string) string { return html.EscapeString(s) }
