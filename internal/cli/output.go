package cli

import (
	"bufio"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/tabula-dev/tabula/internal/edm"
)

// isTerminal reports whether w is a terminal: tables and progress bars are for people, NDJSON
// for pipes and files.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// outputFlag defines --output (and -o) on fs.
func outputFlag(fs *flag.FlagSet) *string {
	p := fs.String("output", "auto", "`FORMAT`: table (aligned columns), ndjson (one JSON object a line; entities typed as export writes them), or auto: table on a terminal, ndjson otherwise")
	fs.StringVar(p, "o", "auto", "short for --output")
	return p
}

// asTable resolves --output for writing to w.
func asTable(output string, w io.Writer) (bool, error) {
	switch output {
	case "table":
		return true, nil
	case "ndjson", "json":
		return false, nil
	case "auto", "":
		return isTerminal(w), nil
	}
	return false, fmt.Errorf("--output %q: want table, ndjson or auto", output)
}

// writeNDJSON writes rows one a line.
func writeNDJSON(w io.Writer, rows []row, o jsonOptions) error {
	bw := bufio.NewWriter(w)
	var line []byte
	for i := range rows {
		line = appendEntityJSON(line[:0], &rows[i], o)
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// maxCell bounds a table cell, in characters; longer values are cut with "…".
const maxCell = 48

// writeTable writes rows as aligned columns: PartitionKey, RowKey, Timestamp, then every
// custom property, in the order first seen; each only if some row has it, so that a $select
// shows what it selected and no empty column besides. A row without a property leaves its
// cell empty. No rows, no columns: nothing is written.
func writeTable(w io.Writer, rows []row) error {
	var hasPK, hasRK, hasTimestamp bool
	index := map[string]int{}
	for i := range rows {
		hasPK, hasRK = hasPK || rows[i].hasPK, hasRK || rows[i].hasRK
		hasTimestamp = hasTimestamp || rows[i].Timestamp != 0
		for _, p := range rows[i].Properties {
			if _, ok := index[p.Name]; !ok {
				index[p.Name] = len(index)
			}
		}
	}
	var cols []string
	if hasPK {
		cols = append(cols, "PartitionKey")
	}
	if hasRK {
		cols = append(cols, "RowKey")
	}
	if hasTimestamp {
		cols = append(cols, "Timestamp")
	}
	system := len(cols)
	custom := make([]string, len(index))
	for name, i := range index {
		custom[i] = name
	}
	cols = append(cols, custom...)
	if len(cols) == 0 {
		return nil
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	cells := make([]string, len(cols))
	for i := range rows {
		r := &rows[i]
		clear(cells)
		next := 0
		if hasPK {
			cells[next] = cell(r.PartitionKey)
			next++
		}
		if hasRK {
			cells[next] = cell(r.RowKey)
			next++
		}
		if hasTimestamp && r.Timestamp != 0 {
			cells[next] = r.Timestamp.String()
		}
		for _, p := range r.Properties {
			cells[system+index[p.Name]] = cell(valueText(&p.Value))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// writeVertical writes one entity as NAME, TYPE, VALUE lines, values in full.
func writeVertical(w io.Writer, r *row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if r.etag != "" {
		fmt.Fprintf(tw, "ETag\t\t%s\n", r.etag)
	}
	if r.hasPK {
		fmt.Fprintf(tw, "PartitionKey\tEdm.String\t%s\n", printable(r.PartitionKey))
	}
	if r.hasRK {
		fmt.Fprintf(tw, "RowKey\tEdm.String\t%s\n", printable(r.RowKey))
	}
	if r.Timestamp != 0 {
		fmt.Fprintf(tw, "Timestamp\tEdm.DateTime\t%s\n", r.Timestamp)
	}
	for _, p := range r.Properties {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, p.Value.Type.Name(), printable(valueText(&p.Value)))
	}
	return tw.Flush()
}

// valueText is v as a person reads it: numbers, dates and GUIDs as in JSON without quotes,
// binary as base64.
func valueText(v *edm.Value) string {
	switch v.Type {
	case edm.String, edm.Guid:
		return v.Str
	case edm.Boolean:
		return strconv.FormatBool(v.Int != 0)
	case edm.Int32, edm.Int64:
		return strconv.FormatInt(v.Int, 10)
	case edm.Double:
		switch {
		case math.IsNaN(v.Float):
			return "NaN"
		case math.IsInf(v.Float, 1):
			return "Infinity"
		case math.IsInf(v.Float, -1):
			return "-Infinity"
		}
		return formatDouble(v.Float)
	case edm.DateTime:
		return edm.Ticks(v.Int).String()
	case edm.Binary:
		return base64.StdEncoding.EncodeToString(v.Bin)
	}
	return ""
}

// cell is s made printable and cut to maxCell characters.
func cell(s string) string {
	s = printable(s)
	if utf8.RuneCountInString(s) <= maxCell {
		return s
	}
	n := 0
	for i := range s {
		if n == maxCell-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// printable escapes the control characters of s (a newline or tab would break the columns).
func printable(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case isControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }
