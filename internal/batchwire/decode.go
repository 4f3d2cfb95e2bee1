package batchwire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// Decode reads a $batch body. contentType is the outer Content-Type header, which must be
// multipart/mixed with a boundary parameter (quoted or not).
//
// The body holds either one change set (a nested multipart/mixed part whose parts are
// application/http write requests) or one query (a single application/http GET part).
// Accepted variations, all seen from real clients: CRLF or bare-LF line ends (even mixed),
// MIME headers in any order and case, Content-ID on the MIME part or on the request, preamble
// and epilogue text, blank lines around the embedded request, absolute, origin-form or
// relative request targets, and a batch whose closing boundary is missing or not final once
// its change set has been closed (an early Rust SDK ended the body with "--batch_…" without
// the final "--").
// Content-Transfer-Encoding is not interpreted: every part is taken as binary.
//
// maxOperations bounds the change set; zero or less means MaxOperations. A larger change set
// yields a *ChangesetError for index 0 (batch.md §3 #3: the real service answers 202 with
// "0:The batch request operation exceeds the maximum 100 changes per change set.", as recorded
// in Azurite's table-batch-api-error-handling.md). Decode never returns more than
// maxOperations parts.
//
// Every other failure is an *azerr.Error for the top-level response: 413 RequestBodyTooLarge
// when body exceeds MaxBodySize, otherwise 400 InvalidInput with a message naming what is
// malformed (missing boundary, unterminated or empty change set, several change sets, a
// nested change set, a GET inside a change set, a write outside one, a part without a valid
// request line or headers).
//
// The bodies of the returned parts alias body, which must not change while they are in use.
func Decode(contentType string, body []byte, maxOperations int) (*Request, error) {
	if len(body) > MaxBodySize {
		return nil, azerr.New(azerr.RequestBodyTooLarge)
	}
	if maxOperations <= 0 {
		maxOperations = MaxOperations
	}
	boundary, err := multipartBoundary(contentType)
	if err != nil {
		return nil, invalid("The Content-Type of a batch request must be multipart/mixed with a boundary parameter: %v.", err)
	}

	batch := newMultipartReader(body, boundary)
	first, err := batch.next()
	if err != nil && err != errUnterminated {
		return nil, invalid("The batch body holds no part delimited by --%s.", boundary)
	}
	complete := err == nil
	req, err := decodeBatchPart(first, complete, boundary, maxOperations)
	if err != nil {
		return nil, err
	}
	if complete {
		if err := checkNothingFollows(batch); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// decodeBatchPart decodes the one meaningful part of the batch. complete reports whether the
// part was followed by a batch delimiter line.
func decodeBatchPart(part []byte, complete bool, batchBoundary string, maxOperations int) (*Request, error) {
	block, content := cutHeaderBlock(part)
	header, err := readPartHeader(string(block))
	if err != nil {
		return nil, invalid("The batch body holds no part delimited by --%s.", batchBoundary)
	}
	mediaType, params, err := partMediaType(header.contentType)
	if err != nil {
		return nil, invalid("The Content-Type of the batch part is malformed: %v.", err)
	}
	switch mediaType {
	case "multipart/mixed":
		cs := params["boundary"]
		if cs == "" {
			return nil, invalid("The change set Content-Type has no boundary parameter.")
		}
		if cs == batchBoundary {
			return nil, invalid("The change set boundary must differ from the batch boundary.")
		}
		// A missing batch close delimiter is tolerated here only: the change set's own close
		// delimiter proves that nothing was cut off.
		ops, err := decodeChangeset(content, cs, maxOperations)
		if err != nil {
			return nil, err
		}
		return &Request{Changeset: ops, ChangesetBoundary: cs}, nil
	case "application/http":
		if !complete {
			return nil, invalid("The batch body is not terminated by its closing boundary --%s--.", batchBoundary)
		}
		op, err := decodeOperation(cutOperation(part), header.contentID)
		if err != nil {
			return nil, invalid("The query in the batch is malformed: %v.", err)
		}
		if op.Method != http.MethodGet {
			return nil, invalid("An operation outside a change set must be a query (GET), not %s.", op.Method)
		}
		return &Request{Query: &op}, nil
	default:
		return nil, invalid("A batch part must be a change set (multipart/mixed) or a query (application/http), not %s.", mediaType)
	}
}

// checkNothingFollows rejects a second change set or query after the first one. A part that is
// blank (a stray "--batch_…" line before the end of the body) is not an operation and is
// ignored.
func checkNothingFollows(batch *multipartReader) error {
	for {
		part, err := batch.next()
		if err == io.EOF {
			return nil
		}
		if err != nil && err != errUnterminated {
			return invalid("The batch body is malformed after its change set: %v.", err)
		}
		if len(bytes.Trim(part, whitespace)) == 0 {
			continue
		}
		block, _ := cutHeaderBlock(part)
		header, err := readPartHeader(string(block))
		if err != nil {
			return invalid("The batch body is malformed after its change set: %v.", err)
		}
		if mt, _, _ := partMediaType(header.contentType); mt == "multipart/mixed" {
			return invalid("A batch request may contain only one change set.")
		}
		return invalid("A batch request holds either one change set or one query, not several parts.")
	}
}

// decodeChangeset reads the operations of a change set whose MIME body is content.
func decodeChangeset(content []byte, boundary string, maxOperations int) ([]Part, error) {
	cs := newMultipartReader(content, boundary)
	var ops []Part
	for i := 0; ; i++ {
		part, err := cs.next()
		if err == io.EOF && cs.closed {
			break
		}
		// A cut-off body is reported as such, whatever the cut-off part holds.
		if err == io.EOF || err == errUnterminated {
			return nil, invalid("The change set is not terminated by its closing boundary --%s--.", boundary)
		}
		if err != nil {
			return nil, invalid("The change set is malformed before operation %d: %v.", i, err)
		}
		raw := cutOperation(part)
		header, err := readPartHeader(raw.mimeHeader)
		if err != nil {
			return nil, invalid("Operation %d of the change set has malformed MIME headers: %v.", i, err)
		}
		if i == maxOperations {
			return nil, &ChangesetError{Index: 0, Err: azerr.Newf(azerr.InvalidInput,
				"The batch request operation exceeds the maximum %d changes per change set.", maxOperations)}
		}
		switch mt, _, err := partMediaType(header.contentType); {
		case err != nil:
			return nil, invalid("Operation %d of the change set has a malformed Content-Type: %v.", i, err)
		case strings.HasPrefix(mt, "multipart/"):
			return nil, invalid("Operation %d of the change set is a nested change set; change sets cannot be nested.", i)
		case mt != "application/http":
			return nil, invalid("Operation %d of the change set must be application/http, not %s.", i, mt)
		}
		op, err := decodeOperation(raw, header.contentID)
		if err != nil {
			return nil, invalid("Operation %d of the change set is malformed: %v.", i, err)
		}
		if op.Method == http.MethodGet {
			return nil, invalid("Operation %d of the change set is a query (GET); a query must be the only operation of its batch.", i)
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		return nil, invalid("The change set holds no operation.")
	}
	return ops, nil
}

// partHeader holds the MIME headers of a part that the decoder reads: the first value of each,
// empty when absent.
type partHeader struct {
	contentType, contentID string
}

// readPartHeader reads the header block of a MIME part.
func readPartHeader(block string) (partHeader, error) {
	var h partHeader
	var hasType, hasID bool
	err := readHeader(block, func(name, value string) {
		switch {
		case !hasType && strings.EqualFold(name, "Content-Type"):
			h.contentType, hasType = value, true
		case !hasID && strings.EqualFold(name, "Content-Id"):
			h.contentID, hasID = value, true
		}
	})
	return h, err
}

// whitespace is what may surround an embedded request: SDKs add blank lines before the request
// line and before or after the body.
const whitespace = " \t\r\n"

// rawOperation is an operation's MIME part cut into its pieces, not yet parsed.
type rawOperation struct {
	mimeHeader string // the header block of the MIME part
	request    string // the embedded request's line and header block
	body       []byte // the rest of the part: the request body, with surrounding whitespace
}

// cutOperation cuts an operation's MIME part into its pieces. Both header blocks are copied
// into one string, so that every name and value is a substring of it; the body is not copied.
func cutOperation(part []byte) rawOperation {
	mimeHeader, content := cutHeaderBlock(part)
	content = bytes.TrimLeft(content, whitespace)
	_, afterRequestLine := cutLine(content)
	_, body := cutHeaderBlock(afterRequestLine)
	head := string(part[:len(part)-len(body)])
	return rawOperation{
		mimeHeader: head[:len(mimeHeader)],
		request:    head[len(part)-len(content):],
		body:       body,
	}
}

// decodeOperation parses one embedded HTTP request; partContentID is the Content-ID of the
// MIME part that carries it. Part.Body aliases raw.body. The returned error completes the
// sentence "the operation is malformed: …".
func decodeOperation(raw rawOperation, partContentID string) (Part, error) {
	if raw.request == "" {
		return Part{}, errors.New("it has no request line")
	}
	requestLine, headerBlock := cutLineString(raw.request)
	method, target, err := parseRequestLine(requestLine)
	if err != nil {
		return Part{}, err
	}
	u, err := parseTarget(target)
	if err != nil {
		return Part{}, fmt.Errorf("its request target %q is not a valid URL", target)
	}
	header, err := readRequestHeader(headerBlock)
	if err != nil {
		return Part{}, fmt.Errorf("its headers are malformed: %v", err)
	}
	body := bytes.Trim(raw.body, whitespace)
	if len(body) == 0 {
		body = nil
	}

	contentID := partContentID
	if contentID == "" {
		contentID = header.Get("Content-Id")
	}
	return Part{
		Method:    method,
		URL:       u,
		RawTarget: target,
		Header:    header,
		Body:      body,
		ContentID: contentID,
	}, nil
}

// readRequestHeader reads the header block of an embedded request into a header with
// canonicalised keys.
func readRequestHeader(block string) (http.Header, error) {
	n := strings.Count(block, "\n") + 1 // at least the number of fields
	h := make(http.Header, n)
	values := make([]string, n) // one array for all values: fields are rarely repeated
	err := readHeader(block, func(name, value string) {
		key := http.CanonicalHeaderKey(name)
		if vv, repeated := h[key]; repeated {
			h[key] = append(vv, value)
			return
		}
		values[0] = value
		h[key], values = values[:1:1], values[1:]
	})
	return h, err
}

// parseRequestLine splits "METHOD SP request-target SP HTTP/x.y". The target is everything
// between the first and the last space: the Table service documentation's own sample writes
// "(PartitionKey='Channel_17', RowKey='3')" with a space inside it.
func parseRequestLine(line string) (method, target string, err error) {
	first := strings.IndexByte(line, ' ')
	last := strings.LastIndexByte(line, ' ')
	if first <= 0 || first == last {
		return "", "", fmt.Errorf("its request line %q is not of the form \"METHOD target HTTP/1.1\"", line)
	}
	method, target, proto := line[:first], strings.Trim(line[first+1:last], " "), line[last+1:]
	if !isToken(method) {
		return "", "", fmt.Errorf("its request line %q does not start with a method", line)
	}
	if target == "" {
		return "", "", fmt.Errorf("its request line %q has no request target", line)
	}
	if _, _, ok := http.ParseHTTPVersion(proto); !ok {
		return "", "", fmt.Errorf("its request line %q does not end with an HTTP version", line)
	}
	return method, target, nil
}

// parseTarget parses a request target. Absolute URLs and absolute paths are request-targets
// proper, where '#' is data; a relative reference is parsed as such.
func parseTarget(target string) (*url.URL, error) {
	if u, err := url.ParseRequestURI(target); err == nil {
		return u, nil
	}
	return url.Parse(target)
}

// multipartBoundary returns the boundary of a multipart/mixed Content-Type.
func multipartBoundary(contentType string) (string, error) {
	if strings.TrimSpace(contentType) == "" {
		return "", errors.New("the header is missing")
	}
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", err
	}
	if mediaType != "multipart/mixed" {
		return "", fmt.Errorf("got %s", mediaType)
	}
	b := params["boundary"]
	if b == "" {
		return "", errors.New("the boundary parameter is missing")
	}
	return b, nil
}

// partMediaType returns the media type of a MIME part's Content-Type, application/http when
// the part has none (the embedded request then speaks for itself).
func partMediaType(contentType string) (string, map[string]string, error) {
	// The plain value every SDK writes spares a parse and its parameter map.
	if contentType == "" || strings.EqualFold(contentType, "application/http") {
		return "application/http", nil, nil
	}
	return mime.ParseMediaType(contentType)
}

func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !tokenBytes[s[i]] {
			return false
		}
	}
	return s != ""
}

// tokenBytes marks the bytes of a token, the tchars of RFC 9110 §5.6.2; a table because header
// names are checked byte by byte.
var tokenBytes = func() (set [256]bool) {
	for _, c := range "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" {
		set[c] = true
	}
	return set
}()

func invalid(format string, args ...any) *azerr.Error {
	return azerr.Newf(azerr.InvalidInput, format, args...)
}
