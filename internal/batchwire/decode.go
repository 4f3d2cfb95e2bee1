package batchwire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// Decode reads a $batch body. contentType is the outer Content-Type header, which must be
// multipart/mixed with a boundary parameter (quoted or not).
//
// The body holds either one change set (a nested multipart/mixed part whose parts are
// application/http write requests) or one query (a single application/http GET part).
// Accepted variations, all seen from real clients: CRLF or bare-LF line ends, MIME headers in
// any order and case, Content-ID on the MIME part or on the request, preamble and epilogue
// text, blank lines around the embedded request, absolute, origin-form or relative request
// targets, and a batch whose closing boundary is missing or not final once its change set has
// been closed (an early Rust SDK ended the body with "--batch_…" without the final "--").
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

	batch := multipart.NewReader(bytes.NewReader(body), boundary)
	first, err := batch.NextRawPart()
	if err != nil {
		return nil, invalid("The batch body holds no part delimited by --%s.", boundary)
	}
	req, complete, err := decodeBatchPart(first, boundary, maxOperations, len(body))
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
// part was properly followed by a batch delimiter, so that more parts may follow it.
func decodeBatchPart(p *multipart.Part, batchBoundary string, maxOperations int, sizeHint int) (req *Request, complete bool, err error) {
	buf := bytes.NewBuffer(make([]byte, 0, sizeHint+bytes.MinRead))
	_, readErr := buf.ReadFrom(p)
	content := buf.Bytes()
	complete = readErr == nil
	if readErr != nil && readErr != io.ErrUnexpectedEOF {
		return nil, false, invalid("The batch body is malformed: %v.", readErr)
	}

	mediaType, params, err := partMediaType(p.Header)
	if err != nil {
		return nil, false, invalid("The Content-Type of the batch part is malformed: %v.", err)
	}
	switch mediaType {
	case "multipart/mixed":
		cs := params["boundary"]
		if cs == "" {
			return nil, false, invalid("The change set Content-Type has no boundary parameter.")
		}
		if cs == batchBoundary {
			return nil, false, invalid("The change set boundary must differ from the batch boundary.")
		}
		// A missing batch close delimiter is tolerated here only: the change set's own close
		// delimiter proves that nothing was cut off.
		ops, err := decodeChangeset(content, cs, maxOperations)
		if err != nil {
			return nil, false, err
		}
		return &Request{Changeset: ops, ChangesetBoundary: cs}, complete, nil
	case "application/http":
		if !complete {
			return nil, false, invalid("The batch body is not terminated by its closing boundary --%s--.", batchBoundary)
		}
		op, err := decodeOperation(p.Header, content, bufio.NewReader(nil))
		if err != nil {
			return nil, false, invalid("The query in the batch is malformed: %v.", err)
		}
		if op.Method != http.MethodGet {
			return nil, false, invalid("An operation outside a change set must be a query (GET), not %s.", op.Method)
		}
		return &Request{Query: &op}, true, nil
	default:
		return nil, false, invalid("A batch part must be a change set (multipart/mixed) or a query (application/http), not %s.", mediaType)
	}
}

// checkNothingFollows rejects a second change set or query after the first one. A part that is
// empty (a stray "--batch_…" line before the end of the body) is not an operation and is
// ignored.
func checkNothingFollows(batch *multipart.Reader) error {
	p, err := batch.NextRawPart()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return invalid("The batch body is malformed after its change set: %v.", err)
	}
	content, _ := io.ReadAll(p)
	if len(p.Header) == 0 && len(bytes.Trim(content, whitespace)) == 0 {
		return nil
	}
	if mt, _, _ := partMediaType(p.Header); mt == "multipart/mixed" {
		return invalid("A batch request may contain only one change set.")
	}
	return invalid("A batch request holds either one change set or one query, not several parts.")
}

// decodeChangeset reads the operations of a change set whose MIME body is content.
func decodeChangeset(content []byte, boundary string, maxOperations int) ([]Part, error) {
	cs := multipart.NewReader(bytes.NewReader(content), boundary)
	var ops []Part
	br := bufio.NewReader(nil) // shared by every operation's header block
	for i := 0; ; i++ {
		p, err := cs.NextRawPart()
		if err == io.EOF {
			// Go's reader also answers a bare io.EOF when the body ends inside the MIME headers
			// of a part; only the close delimiter proves the change set complete.
			if !hasCloseDelimiter(content, boundary) {
				return nil, invalid("The change set is not terminated by its closing boundary --%s--.", boundary)
			}
			break
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, invalid("The change set is not terminated by its closing boundary --%s--.", boundary)
			}
			return nil, invalid("Operation %d of the change set has malformed MIME headers: %v.", i, err)
		}
		if i == maxOperations {
			return nil, &ChangesetError{Index: 0, Err: azerr.Newf(azerr.InvalidInput,
				"The batch request operation exceeds the maximum %d changes per change set.", maxOperations)}
		}
		opContent, err := io.ReadAll(p)
		if err != nil {
			return nil, invalid("The change set is not terminated by its closing boundary --%s--.", boundary)
		}
		switch mt, _, err := partMediaType(p.Header); {
		case err != nil:
			return nil, invalid("Operation %d of the change set has a malformed Content-Type: %v.", i, err)
		case strings.HasPrefix(mt, "multipart/"):
			return nil, invalid("Operation %d of the change set is a nested change set; change sets cannot be nested.", i)
		case mt != "application/http":
			return nil, invalid("Operation %d of the change set must be application/http, not %s.", i, mt)
		}
		op, err := decodeOperation(p.Header, opContent, br)
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

// hasCloseDelimiter reports whether content has a line "--boundary--", optionally followed by
// spaces or tabs (RFC 2046 transport padding). It only confirms what the MIME reader parsed.
func hasCloseDelimiter(content []byte, boundary string) bool {
	closing := []byte("--" + boundary + "--")
	for len(content) > 0 {
		var line []byte
		line, content, _ = bytes.Cut(content, []byte("\n"))
		rest, ok := bytes.CutPrefix(line, closing)
		if ok && len(bytes.TrimRight(rest, " \t\r")) == 0 {
			return true
		}
	}
	return false
}

// whitespace is what may surround an embedded request: SDKs add blank lines before the request
// line and before or after the body.
const whitespace = " \t\r\n"

// decodeOperation parses one embedded HTTP request. mimeHeader is the header of the MIME part
// that carries it; br is a reader to reuse for the header block. Part.Body aliases content. The
// returned error completes the sentence "the operation is malformed: …".
func decodeOperation(mimeHeader textproto.MIMEHeader, content []byte, br *bufio.Reader) (Part, error) {
	content = bytes.TrimLeft(content, whitespace)
	if len(content) == 0 {
		return Part{}, errors.New("it has no request line")
	}
	line, rest, _ := bytes.Cut(content, []byte("\n"))
	method, target, err := parseRequestLine(string(bytes.TrimSuffix(line, []byte("\r"))))
	if err != nil {
		return Part{}, err
	}
	u, err := parseTarget(target)
	if err != nil {
		return Part{}, fmt.Errorf("its request target %q is not a valid URL", target)
	}

	src := bytes.NewReader(rest)
	br.Reset(src)
	header, err := textproto.NewReader(br).ReadMIMEHeader()
	// The header block of a body-less request may end with the part instead of a blank line
	// (the legacy Node.js library's DELETE).
	if err != nil && err != io.EOF {
		return Part{}, fmt.Errorf("its headers are malformed: %v", err)
	}
	body := bytes.Trim(rest[len(rest)-src.Len()-br.Buffered():], whitespace)
	if len(body) == 0 {
		body = nil
	}

	contentID := mimeHeader.Get("Content-Id")
	if contentID == "" {
		contentID = header.Get("Content-Id")
	}
	return Part{
		Method:    method,
		URL:       u,
		RawTarget: target,
		Header:    http.Header(header),
		Body:      body,
		ContentID: contentID,
	}, nil
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

// partMediaType returns the media type of a MIME part, application/http when the part has no
// Content-Type (the embedded request then speaks for itself).
func partMediaType(h textproto.MIMEHeader) (string, map[string]string, error) {
	ct := h.Get("Content-Type")
	if ct == "" {
		return "application/http", nil, nil
	}
	return mime.ParseMediaType(ct)
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func invalid(format string, args ...any) *azerr.Error {
	return azerr.Newf(azerr.InvalidInput, format, args...)
}
