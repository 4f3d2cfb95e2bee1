package batchwire

import (
	"bytes"
	"io"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/uuid"
)

// The Blob service's batch (blob.md §16) is flat: its multipart/mixed body holds the
// application/http sub-requests directly, with no change set around them, and its response
// answers each one in a part of its own.

// DecodeParts reads the body of a flat batch. contentType is the outer Content-Type header,
// which must be multipart/mixed with a boundary parameter (quoted or not). It accepts the same
// variations as Decode (CRLF or bare LF, MIME headers in any order and case, blank lines
// around the embedded request, a body after its headers, which flat batches' Delete and Set
// Tier never use) and returns every part in order: the caller applies the count limit, since
// the service answers an oversized batch in its own way.
//
// Failures are 413 RequestBodyTooLarge when body exceeds MaxBodySize and otherwise 400
// InvalidInput naming what is malformed: no boundary, no closing delimiter, a part that is
// not application/http or holds no valid request line or headers. A batch without parts is
// not an error here.
//
// The bodies of the returned parts alias body.
func DecodeParts(contentType string, body []byte) ([]Part, error) {
	if len(body) > MaxBodySize {
		return nil, azerr.New(azerr.RequestBodyTooLarge)
	}
	boundary, err := multipartBoundary(contentType)
	if err != nil {
		var ok bool
		if boundary, ok = unquotedBoundary(contentType); !ok {
			return nil, invalid("The Content-Type of a batch request must be multipart/mixed with a boundary parameter: %v.", err)
		}
	}
	r := newMultipartReader(body, boundary)
	var parts []Part
	for i := 0; ; i++ {
		part, err := r.next()
		if err == io.EOF && r.closed {
			return parts, nil
		}
		if err == io.EOF && i == 0 && len(bytes.Trim(body, whitespace)) == 0 {
			return nil, nil // an empty body: a batch of nothing
		}
		if err == io.EOF || err == errUnterminated {
			return nil, invalid("The batch body is not terminated by its closing boundary --%s--.", boundary)
		}
		if err != nil {
			return nil, invalid("The batch body is malformed before sub-request %d: %v.", i, err)
		}
		raw := cutOperation(part)
		header, err := readPartHeader(raw.mimeHeader)
		if err != nil {
			return nil, invalid("Sub-request %d of the batch has malformed MIME headers: %v.", i, err)
		}
		if mt, _, err := partMediaType(header.contentType); err != nil || mt != "application/http" {
			return nil, invalid("Sub-request %d of the batch must be application/http, not %q.", i, header.contentType)
		}
		op, err := decodeOperation(raw, header.contentID)
		if err != nil {
			return nil, invalid("Sub-request %d of the batch is malformed: %v.", i, err)
		}
		parts = append(parts, op)
	}
}

// unquotedBoundary reads the boundary of a multipart/mixed Content-Type that MIME's grammar
// refuses: older Python SDKs wrote the email library's boundaries, which hold '=', without
// quotes ("boundary================5779720402057910344==").
func unquotedBoundary(contentType string) (string, bool) {
	mediaType, params, _ := strings.Cut(contentType, ";")
	if !strings.EqualFold(strings.TrimSpace(mediaType), "multipart/mixed") {
		return "", false
	}
	for _, p := range strings.Split(params, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(name, "boundary") {
			value = strings.Trim(strings.TrimSpace(value), `"`)
			return value, value != ""
		}
	}
	return "", false
}

// PartResponse is one part of a flat batch's response.
type PartResponse struct {
	// ContentID is echoed as the part's Content-ID header; a part without one (the answer
	// to the batch as a whole, or to a sub-request that had none) has no such header.
	ContentID string
	Status    int
	// Reason follows the status code on the status line. The Blob service puts its error
	// message there; success answers carry the standard phrase.
	Reason string
	// Header lines are written in this order, each name in Azure's spelling whatever its
	// case here (lower-case x-ms- names, ETag).
	Header []HeaderLine
	Body   []byte
}

// HeaderLine is one header of a PartResponse.
type HeaderLine struct{ Name, Value string }

// EncodePartsResponse writes the body of a flat batch's 202 response: one part per response,
// in order. It returns the outer Content-Type, "multipart/mixed; boundary=batchresponse_<uuid>"
// with the boundary unquoted and free of '=' (JS takes everything after the '='), and the body,
// laid out as the real service does: CRLF line ends, each part's headers Content-Type and
// Content-ID only, and nothing after the close delimiter (the C++ SDK requires the body to end
// there).
func EncodePartsResponse(responses []PartResponse) (contentType string, body []byte) {
	return encodePartsResponse(responses, "batchresponse_"+uuid.New())
}

func encodePartsResponse(responses []PartResponse, boundary string) (string, []byte) {
	size := 64
	for _, r := range responses {
		size += 128 + len(boundary) + len(r.Reason) + len(r.Body)
		for _, h := range r.Header {
			size += len(h.Name) + len(h.Value) + 4
		}
	}
	b := make([]byte, 0, size)
	for _, r := range responses {
		b = append(b, "--"+boundary+"\r\nContent-Type: application/http\r\n"...)
		if r.ContentID != "" {
			b = appendHeader(b, "Content-ID", r.ContentID)
		}
		b = append(b, "\r\nHTTP/1.1 "...)
		b = strconv.AppendInt(b, int64(r.Status), 10)
		b = append(b, ' ')
		b = appendReason(b, r.Reason)
		b = append(b, "\r\n"...)
		for _, h := range r.Header {
			b = appendHeader(b, wireName(textproto.CanonicalMIMEHeaderKey(h.Name)), h.Value)
		}
		b = append(b, "\r\n"...)
		if len(r.Body) > 0 {
			b = append(b, r.Body...)
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, "--"+boundary+"--"...)
	return "multipart/mixed; boundary=" + boundary, b
}

// appendReason appends a reason phrase, control characters turned into spaces so that it
// stays on its status line.
func appendReason(b []byte, reason string) []byte {
	for i := 0; i < len(reason); i++ {
		if c := reason[i]; c < ' ' || c == 0x7f {
			b = append(b, ' ')
		} else {
			b = append(b, c)
		}
	}
	return b
}
