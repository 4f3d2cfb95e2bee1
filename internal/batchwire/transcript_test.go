package batchwire

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// Transcript files under testdata/decode hold Decode cases, in the spirit of Pebble's
// datadriven tests:
//
//	# comment
//	decode [crlf] [cr] [nofinalnl] [max=N] [len=N]
//	<outer Content-Type header value>
//	<body lines…>
//	----
//	<expected output, up to the next blank line>
//
// The body is the lines between the Content-Type line and "----", each ended by "\n" (the last
// one too unless nofinalnl); crlf turns every "\n" into "\r\n", and cr turns the two characters
// `\r` into a carriage return for bodies that mix line ends. len=N checks the body's size,
// which pins reconstructions of recorded bodies to the recorded Content-Length.
//
// Run with -rewrite to regenerate the expected outputs after a deliberate change.

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of transcript tests")

type transcriptCase struct {
	line     int      // line number of the command, for messages
	command  string   // the command line
	input    []string // lines between the command and "----"
	expected string
}

func TestDecodeTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/decode/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			runTranscript(t, file)
		})
	}
}

func runTranscript(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err = parseTranscript(string(data), func(text string) {
		out.WriteString(text)
	}, func(c transcriptCase) {
		got := runDecodeCase(t, file, c)
		if !*rewrite && got != c.expected {
			t.Errorf("%s:%d: %s\n--- expected\n%s\n--- got\n%s", file, c.line, c.command, c.expected, got)
		}
		out.WriteString(c.command + "\n")
		for _, l := range c.input {
			out.WriteString(l + "\n")
		}
		out.WriteString("----\n" + got + "\n")
	})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// parseTranscript calls text for every line outside a case (comments, blank lines) and each
// for every case, in file order.
func parseTranscript(data string, text func(string), each func(transcriptCase)) error {
	lines := strings.Split(data, "\n")
	for i := 0; i < len(lines); {
		line := lines[i]
		if !strings.HasPrefix(line, "decode") {
			if i < len(lines)-1 || line != "" {
				text(line + "\n")
			}
			i++
			continue
		}
		c := transcriptCase{line: i + 1, command: line}
		for i++; i < len(lines) && lines[i] != "----"; i++ {
			c.input = append(c.input, lines[i])
		}
		if i == len(lines) {
			return fmt.Errorf("line %d: no ---- after the input", c.line)
		}
		var expected []string
		for i++; i < len(lines) && lines[i] != ""; i++ {
			expected = append(expected, lines[i])
		}
		c.expected = strings.Join(expected, "\n")
		each(c)
	}
	return nil
}

func runDecodeCase(t *testing.T, file string, c transcriptCase) string {
	t.Helper()
	in, err := c.decodeInput()
	if err != nil {
		t.Fatalf("%s:%d: %v", file, c.line, err)
	}
	if in.wantLen >= 0 && len(in.body) != in.wantLen {
		t.Errorf("%s:%d: body is %d bytes, want %d", file, c.line, len(in.body), in.wantLen)
	}
	req, err := Decode(in.contentType, in.body, in.maxOperations)
	return dumpDecoded(req, err)
}

// decodeInput is what a decode command hands to Decode.
type decodeInput struct {
	contentType   string
	body          []byte
	maxOperations int
	wantLen       int // -1 when not checked
}

func (c transcriptCase) decodeInput() (decodeInput, error) {
	in := decodeInput{maxOperations: MaxOperations, wantLen: -1}
	crlf, cr, finalNL := false, false, true
	for _, arg := range strings.Fields(c.command)[1:] {
		key, value, _ := strings.Cut(arg, "=")
		switch key {
		case "crlf":
			crlf = true
		case "cr":
			cr = true
		case "nofinalnl":
			finalNL = false
		case "max", "len":
			n, err := strconv.Atoi(value)
			if err != nil {
				return in, fmt.Errorf("bad %s", arg)
			}
			if key == "max" {
				in.maxOperations = n
			} else {
				in.wantLen = n
			}
		default:
			return in, fmt.Errorf("unknown argument %q", arg)
		}
	}
	if len(c.input) == 0 {
		return in, errors.New("no Content-Type line")
	}
	body := strings.Join(c.input[1:], "\n")
	if finalNL {
		body += "\n"
	}
	if crlf {
		body = strings.ReplaceAll(body, "\n", "\r\n")
	}
	if cr {
		body = strings.ReplaceAll(body, `\r`, "\r")
	}
	in.contentType, in.body = c.input[0], []byte(body)
	return in, nil
}

// dumpDecoded renders what Decode returned, one fact per line.
func dumpDecoded(req *Request, err error) string {
	var b strings.Builder
	if err != nil {
		var ce *ChangesetError
		if errors.As(err, &ce) {
			fmt.Fprintf(&b, "changeset error at %d: ", ce.Index)
		} else {
			b.WriteString("error: ")
		}
		e := azerr.As(err)
		fmt.Fprintf(&b, "%d %s: %s", e.Status, e.Code, e.Message)
		return b.String()
	}
	if req.Query != nil {
		b.WriteString("query\n")
		dumpPart(&b, "query", *req.Query)
	} else {
		fmt.Fprintf(&b, "changeset %s\n", req.ChangesetBoundary)
		for i, p := range req.Changeset {
			dumpPart(&b, strconv.Itoa(i), p)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func dumpPart(b *strings.Builder, name string, p Part) {
	fmt.Fprintf(b, "%s: %s %s\n", name, p.Method, p.RawTarget)
	u := []string{}
	if p.URL.Scheme != "" {
		u = append(u, "scheme="+p.URL.Scheme)
	}
	if p.URL.Host != "" {
		u = append(u, "host="+p.URL.Host)
	}
	u = append(u, fmt.Sprintf("path=%q", p.URL.Path))
	if p.URL.RawQuery != "" {
		u = append(u, "query="+p.URL.RawQuery)
	}
	fmt.Fprintf(b, "  url: %s\n", strings.Join(u, " "))
	if p.ContentID != "" {
		fmt.Fprintf(b, "  content-id: %s\n", p.ContentID)
	}
	keys := make([]string, 0, len(p.Header))
	for k := range p.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range p.Header[k] {
			fmt.Fprintf(b, "  %s: %s\n", k, v)
		}
	}
	switch body := string(p.Body); {
	case p.Body == nil:
		b.WriteString("  no body\n")
	case strings.ContainsAny(body, "\r\n"):
		fmt.Fprintf(b, "  body %q\n", body)
	default:
		fmt.Fprintf(b, "  body %s\n", body)
	}
}
