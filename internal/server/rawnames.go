package server

import (
	"bytes"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Azure keeps the case a client gave a metadata name (x-ms-meta-Author) and hands it back so,
// in headers and in listings; Python's, Java's and Go's SDKs return names as the service
// sends them, so an application that sets "Author" looks up "Author". net/http canonicalises
// every request header name before a handler sees it (X-Ms-Meta-Author), losing that case.
//
// So each connection's bytes are followed as they pass through azureConn.Read: a
// metaNameScanner walks HTTP/1.1's framing (request line, header lines, then the body by its
// Content-Length or its chunks, skipped without being looked at) and notes, per request, the
// x-ms-meta-* names as they were written. observe takes the note of the request it serves
// (requests on a connection are served one at a time, in order) and renames the request's
// metadata headers to "x-ms-meta-" + the name as sent. Each note is checked against the
// request line of the request that takes it; a request none matches stops the scanner for
// the connection, and names then stay canonical. Connections are HTTP/1.1 only (tlsConfig).

// metaPrefix is what a metadata header's name starts with, in any case.
const metaPrefix = "x-ms-meta-"

// maxScanLine bounds what a scanner keeps of one line: a header's name is near its start,
// and the request line is checked by its length and this much of its text.
const maxScanLine = 1 << 10

// maxPendingNotes bounds the notes of requests read but not yet served (pipelining).
const maxPendingNotes = 64

type scanState uint8

const (
	scanRequestLine scanState = iota
	scanHeaders
	scanBody      // a Content-Length body: remaining bytes to skip
	scanChunkSize // a chunk-size line of a chunked body
	scanChunkData // a chunk and its CRLF: remaining bytes to skip
	scanTrailers  // trailer lines after the last chunk
	scanStopped   // the framing was not followed: no more notes
)

// requestNote is what the scanner learnt of one request.
type requestNote struct {
	lineLen  int    // the request line's length, without its CRLF
	lineHash uint64 // the FNV-1a hash of its first maxScanLine bytes
	meta     []string
}

// metaNameScanner follows one connection's request stream. It is fed by the reads of the
// connection (net/http's serving goroutine, and its background read while a handler runs)
// and read by observe: both under mu.
type metaNameScanner struct {
	mu        sync.Mutex
	state     scanState
	line      []byte // the current line's first maxScanLine bytes
	lineLen   int    // the current line's full length
	lastByte  byte   // the current line's last byte
	remaining int64
	cur       requestNote
	length    int64 // the current request's Content-Length
	chunked   bool
	notes     []requestNote // read, not yet taken by observe
}

// feed follows the bytes p, read from the connection in order.
func (s *metaNameScanner) feed(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(p) > 0 {
		switch s.state {
		case scanStopped:
			return
		case scanBody, scanChunkData:
			n := int64(len(p))
			if n > s.remaining {
				n = s.remaining
			}
			p = p[n:]
			s.remaining -= n
			if s.remaining == 0 {
				if s.state == scanBody {
					s.state = scanRequestLine
				} else {
					s.state = scanChunkSize
				}
			}
		default:
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				s.addToLine(p)
				return
			}
			var line []byte
			var full int
			if s.lineLen == 0 { // the whole line is in this read: looked at in place
				line, full = p[:i], i
				if full > 0 && line[full-1] == '\r' {
					full--
				}
				line = line[:min(full, maxScanLine)]
			} else {
				s.addToLine(p[:i])
				full = s.lineLen
				if s.lastByte == '\r' {
					full--
				}
				line = s.line[:min(len(s.line), full)]
			}
			s.endLine(line, full)
			s.line, s.lineLen, s.lastByte = s.line[:0], 0, 0
			p = p[i+1:]
		}
	}
}

func (s *metaNameScanner) addToLine(p []byte) {
	if room := maxScanLine - len(s.line); room > 0 {
		if len(p) < room {
			room = len(p)
		}
		s.line = append(s.line, p[:room]...)
	}
	s.lineLen += len(p)
	if len(p) > 0 {
		s.lastByte = p[len(p)-1]
	}
}

// endLine handles one complete line (without its line end); full is its length.
func (s *metaNameScanner) endLine(line []byte, full int) {
	switch s.state {
	case scanRequestLine:
		if full == 0 {
			return // an empty line before a request is ignored, as net/http does
		}
		s.cur = requestNote{lineLen: full, lineHash: hashLine(line)}
		s.length, s.chunked = 0, false
		s.state = scanHeaders
	case scanHeaders:
		if full == 0 {
			s.endHeaders()
			return
		}
		s.header(line)
	case scanChunkSize:
		size, ok := chunkSize(line)
		switch {
		case !ok:
			s.stop()
		case size == 0:
			s.state = scanTrailers
		default:
			s.state, s.remaining = scanChunkData, size+2 // the chunk, then its CRLF
		}
	case scanTrailers:
		if full == 0 {
			s.state = scanRequestLine
		}
	}
}

func (s *metaNameScanner) header(line []byte) {
	if line[0] == ' ' || line[0] == '\t' {
		return // a folded continuation: no name
	}
	switch line[0] | 0x20 { // only names starting x, c or t matter
	case 'x', 'c', 't':
	default:
		return
	}
	colon := bytes.IndexByte(line, ':')
	if colon < 0 {
		return // malformed or cut at maxScanLine: net/http judges it
	}
	name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
	switch {
	case len(name) > len(metaPrefix) && strings.EqualFold(string(name[:len(metaPrefix)]), metaPrefix):
		s.cur.meta = append(s.cur.meta, string(name))
	case strings.EqualFold(string(name), "Content-Length"):
		n, err := strconv.ParseInt(string(value), 10, 64)
		if err != nil || n < 0 {
			s.stop() // net/http refuses the request and closes the connection
			return
		}
		s.length = n
	case strings.EqualFold(string(name), "Transfer-Encoding"):
		s.chunked = true // net/http serves chunked alone and refuses any other coding
	}
}

func (s *metaNameScanner) endHeaders() {
	if len(s.notes) >= maxPendingNotes {
		s.stop()
		return
	}
	s.notes = append(s.notes, s.cur)
	s.cur = requestNote{}
	switch {
	case s.chunked:
		s.state = scanChunkSize
	case s.length > 0:
		s.state, s.remaining = scanBody, s.length
	default:
		s.state = scanRequestLine
	}
}

func (s *metaNameScanner) stop() {
	s.state, s.notes, s.line = scanStopped, nil, nil
}

// chunkSize reads a chunk-size line: hexadecimal digits, then perhaps extensions.
func chunkSize(line []byte) (int64, bool) {
	if i := bytes.IndexAny(line, "; \t"); i >= 0 {
		line = line[:i]
	}
	n, err := strconv.ParseInt(string(line), 16, 64)
	if err != nil || n < 0 || n > 1<<50 {
		return 0, false
	}
	return n, true
}

// A request line's FNV-1a hash.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func hashLine(b []byte) uint64 {
	h := uint64(fnvOffset)
	for _, c := range b {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h
}

// take hands out the note of the request r, the next one the connection served: nil when it
// names no metadata. Notes of requests net/http answered itself (OPTIONS *) are passed over;
// when no note is r's, the scanner has lost the framing and stops.
func (s *metaNameScanner) take(r *http.Request) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == scanStopped {
		return nil
	}
	for i := range s.notes {
		if s.notes[i].isLineOf(r) {
			meta := s.notes[i].meta
			s.notes = s.notes[:copy(s.notes, s.notes[i+1:])]
			return meta
		}
	}
	s.stop()
	return nil
}

// isLineOf tells whether the note was taken from r's request line: "METHOD target version".
func (n *requestNote) isLineOf(r *http.Request) bool {
	parts := [...]string{r.Method, " ", r.RequestURI, " ", r.Proto}
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	if size != n.lineLen {
		return false
	}
	h, left := uint64(fnvOffset), maxScanLine
	for _, p := range parts {
		for i := 0; i < len(p) && left > 0; i, left = i+1, left-1 {
			h = (h ^ uint64(p[i])) * fnvPrime
		}
	}
	return h == n.lineHash
}

// MetaName reads the metadata name of a request header key: ok for an x-ms-meta-* header.
// The name keeps the case the client wrote it in when renameMetaHeaders recovered it (the key
// then starts "x-ms-meta-"); where only net/http's canonical "X-Ms-Meta-Name" is known, the
// name is lower case, how most clients write them.
func MetaName(key string) (name string, ok bool) {
	if name, ok := strings.CutPrefix(key, metaPrefix); ok {
		return name, true
	}
	if len(key) < len(metaPrefix) || !strings.EqualFold(key[:len(metaPrefix)], metaPrefix) {
		return "", false
	}
	return strings.ToLower(key[len(metaPrefix):]), true
}

// renameMetaHeaders gives r's metadata headers the names the client wrote: "x-ms-meta-" (so
// that a handler can tell them from names whose case is unknown, which keep net/http's
// "X-Ms-Meta-") and the name's own case. A name sent in several cases becomes several
// headers, one per case, each with its own values.
func renameMetaHeaders(r *http.Request, raw []string) {
	canonical := make([]string, len(raw))
	for i, name := range raw {
		canonical[i] = textproto.CanonicalMIMEHeaderKey(name)
	}
	for i, key := range canonical {
		values, ok := r.Header[key]
		if !ok || slices.Index(canonical, key) != i {
			continue // not a header of r, or renamed with its first name
		}
		// Each line sent gave the key one value; a key that does not add up is left as
		// net/http made it.
		if n := countOf(canonical, key); n != len(values) {
			continue
		}
		delete(r.Header, key)
		k := 0
		for j := i; j < len(raw); j++ {
			if canonical[j] == key {
				name := metaPrefix + raw[j][len(metaPrefix):]
				r.Header[name] = append(r.Header[name], values[k])
				k++
			}
		}
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}
