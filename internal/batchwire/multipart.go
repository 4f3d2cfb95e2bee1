package batchwire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// multipartReader splits a multipart body held in memory into its parts (RFC 2046 §5.1.1)
// without copying them. It replaces mime/multipart, whose per-part readers, buffers and header
// maps made up most of the cost of decoding a $batch.
//
// A delimiter line is "--" and the boundary at the start of a line, "--" more for the close
// delimiter, then optional transport padding (spaces and tabs) and the line end or the end of
// the input. The line end before a delimiter line belongs to it, not to the part. Lines may
// end in CRLF or bare LF, each line either way. A boundary followed by anything but padding, a
// line end or "--" is part of a longer word ("--batch_x" in "--batch_xy"), not a delimiter;
// a delimiter line with anything else after its padding is malformed.
type multipartReader struct {
	nlDashBoundary []byte // "\n--" boundary
	dashBoundary   []byte // "--" boundary
	rest           []byte // the input from the next delimiter line on
	atDelimiter    bool   // rest starts at a delimiter line; false once the input is used up
	closed         bool   // the close delimiter has been read
}

// errUnterminated comes with a part that runs to the end of the input.
var errUnterminated = errors.New("the part is not followed by a delimiter line")

// newMultipartReader returns a reader at the first delimiter line of body. Lines before it are
// preamble, even those that only start like a delimiter line.
func newMultipartReader(body []byte, boundary string) *multipartReader {
	nlDashBoundary := []byte("\n--" + boundary)
	r := &multipartReader{nlDashBoundary: nlDashBoundary, dashBoundary: nlDashBoundary[1:]}
	for b := body; ; {
		i := r.delimiterIndex(b)
		if i < 0 {
			return r
		}
		if _, _, ok := r.cutDelimiterLine(b[i:]); ok {
			r.rest, r.atDelimiter = b[i:], true
			return r
		}
		_, b = cutLine(b[i:])
	}
}

// next reads the delimiter line at the reader's position and returns the part after it, up to
// the line end before the next delimiter line. It returns io.EOF and no part once the close
// delimiter has been read (r.closed is then set) or when no delimiter line is left, and
// errUnterminated with the part when the input ends before another delimiter line.
func (r *multipartReader) next() ([]byte, error) {
	if !r.atDelimiter {
		return nil, io.EOF
	}
	rest, closing, ok := r.cutDelimiterLine(r.rest)
	if !ok {
		r.atDelimiter = false
		line, _ := cutLine(r.rest)
		return nil, fmt.Errorf("its delimiter line %q is malformed", line)
	}
	if closing {
		r.atDelimiter, r.closed = false, true
		return nil, io.EOF
	}
	i := r.delimiterIndex(rest)
	if i < 0 {
		r.atDelimiter = false
		return rest, errUnterminated
	}
	r.rest = rest[i:]
	if i == 0 { // the part is empty: the delimiter line directly follows the previous one
		return rest[:0], nil
	}
	return bytes.TrimSuffix(rest[:i-1], []byte("\r")), nil
}

// cutDelimiterLine cuts b, which starts with the dash boundary, after its first line. closing
// reports a close delimiter; ok is false if the line is not a well-formed delimiter line.
func (r *multipartReader) cutDelimiterLine(b []byte) (rest []byte, closing, ok bool) {
	afterBoundary, rest := cutLine(b[len(r.dashBoundary):])
	padding, closing := bytes.CutPrefix(afterBoundary, []byte("--"))
	return rest, closing, len(bytes.TrimLeft(padding, " \t")) == 0
}

// delimiterIndex returns the index of the first delimiter line of b, which starts at a line
// start, or -1 if there is none.
func (r *multipartReader) delimiterIndex(b []byte) int {
	for start := 0; ; {
		if r.startsDelimiterLine(b[start:]) {
			return start
		}
		i := bytes.Index(b[start:], r.nlDashBoundary)
		if i < 0 {
			return -1
		}
		start += i + 1
	}
}

// startsDelimiterLine reports whether b starts with a delimiter line, well formed or not.
func (r *multipartReader) startsDelimiterLine(b []byte) bool {
	after, ok := bytes.CutPrefix(b, r.dashBoundary)
	if !ok {
		return false
	}
	return len(after) == 0 || strings.IndexByte(" \t\r\n", after[0]) >= 0 ||
		bytes.HasPrefix(after, []byte("--"))
}

// cutLine cuts b after its first line, returning the line without its CRLF or LF line end.
func cutLine(b []byte) (line, rest []byte) {
	line, rest, _ = bytes.Cut(b, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), rest
}

// cutHeaderBlock cuts b after its header block: the lines before the first empty line, which
// belongs to neither. Without an empty line all of b is the header block: RFC 2046 lets a
// MIME part without a body omit it, and the legacy Node.js library's DELETE does so inside
// the embedded request.
func cutHeaderBlock(b []byte) (block, rest []byte) {
	for i := 0; ; {
		n := bytes.IndexByte(b[i:], '\n')
		if n < 0 {
			return b, nil
		}
		if n == 0 || n == 1 && b[i] == '\r' {
			return b[:i], b[i+n+1:]
		}
		i += n + 1
	}
}

// readHeader calls field with the name and value of each field of a header block, in order,
// up to an empty line or the end of block. It applies the rules of net/textproto's
// ReadMIMEHeader and keeps its error texts: the name is passed as written (it may hold spaces,
// which are not canonicalised away), the value without surrounding spaces and tabs, and a line
// starting with a space or tab continues the value before it after one space.
func readHeader(block string, field func(name, value string)) error {
	if isContinuation(block) {
		line, _ := cutLineString(block)
		return fmt.Errorf("malformed MIME header initial line: %q", line)
	}
	for {
		line, rest := cutLineString(block)
		if line == "" {
			return nil
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return fmt.Errorf("malformed MIME header: missing colon: %q", line)
		}
		value = trimBlankRight(value)
		if isContinuation(rest) {
			value, rest = joinContinuations(value, rest)
		}
		block = rest
		if !isFieldName(name) || !isFieldValue(value) {
			return fmt.Errorf("malformed MIME header line: %q", name+":"+value)
		}
		field(name, trimBlankLeft(value))
	}
}

// isContinuation reports whether lines starts with a continuation line, one that starts with a
// space or tab.
func isContinuation(lines string) bool {
	return lines != "" && (lines[0] == ' ' || lines[0] == '\t')
}

// joinContinuations appends the continuation lines that start rest to value, each after one
// space, in one buffer: a field may have a great many of them.
func joinContinuations(value, rest string) (joined, after string) {
	var b strings.Builder
	b.WriteString(value)
	for isContinuation(rest) {
		var line string
		line, rest = cutLineString(rest)
		b.WriteByte(' ')
		b.WriteString(trimBlankLeft(trimBlankRight(line)))
	}
	return b.String(), rest
}

// trimBlankLeft is strings.TrimLeft(s, " \t") without the cost of a cutset.
func trimBlankLeft(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	return s
}

// trimBlankRight is strings.TrimRight(s, " \t") without the cost of a cutset.
func trimBlankRight(s string) string {
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// cutLineString is cutLine for a string.
func cutLineString(s string) (line, rest string) {
	line, rest, _ = strings.Cut(s, "\n")
	return strings.TrimSuffix(line, "\r"), rest
}

// isFieldName reports whether s is a header field name as net/textproto takes it: a token,
// except that spaces are tolerated.
func isFieldName(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && !tokenBytes[s[i]] {
			return false
		}
	}
	return s != ""
}

// isFieldValue reports whether s holds only visible characters, spaces, tabs and obs-text
// (RFC 9110 §5.5).
func isFieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
