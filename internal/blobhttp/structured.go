package blobhttp

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/structmsg"
)

// Structured message bodies (blob.md §4.2): with `x-ms-structured-body: XSM/1.0;
// properties=crc64` an upload's body frames its content in segments with CRC-64s, and
// x-ms-structured-content-length is the content's length; a download asking for it gets
// the range framed the same way. The service stores and serves the content, never the
// framing: storing the framing (as a server ignoring the header would) corrupts the blob.

// content is what an upload writes: the request body, or the content of the structured
// message it frames, checked as it is read (a failed check fails the Read that would
// complete the content, so nothing built on a failing message is committed).
type content struct {
	io.Reader
	size       int64
	structured bool
}

// uploadContent reads the request's content framing: Content-Length, and the structured
// message headers when present (the message's own header is read and checked here).
func uploadContent(rq *request) (content, error) {
	size, err := contentLength(rq)
	if err != nil {
		return content{}, err
	}
	structured, err := wantsStructured(rq)
	if err != nil || !structured {
		return content{Reader: rq.R.Body, size: size}, err
	}
	raw := rq.R.Header.Get("x-ms-structured-content-length")
	if raw == "" {
		return content{}, missingHeader("x-ms-structured-content-length")
	}
	dataLen, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || dataLen < 0 {
		return content{}, invalidHeader("x-ms-structured-content-length", raw, "not a length in bytes")
	}
	d, err := structmsg.NewDecoder(rq.R.Body, size, dataLen)
	if err != nil {
		return content{}, structuredError(err)
	}
	return content{Reader: structuredReader{d}, size: dataLen, structured: true}, nil
}

// answer tells the client its structured message was understood, as the service does.
func (c content) answer(h http.Header) {
	if c.structured {
		h["x-ms-structured-body"] = []string{structmsg.HeaderValue}
	}
}

// structuredReader gives the decoder's failures as the service's errors.
type structuredReader struct{ d *structmsg.Decoder }

func (r structuredReader) Read(p []byte) (int, error) {
	n, err := r.d.Read(p)
	if err != nil && err != io.EOF {
		err = structuredError(err)
	}
	return n, err
}

// structuredError is a broken message as a 400: Crc64Mismatch for a checksum, InvalidInput
// for the framing (the real service's code for the latter is UNSURE); a body that ends
// early stays what it is.
func structuredError(err error) error {
	var fe *structmsg.FormatError
	if !errors.As(err, &fe) {
		return err
	}
	if fe.Checksum {
		return azerr.Newf(azerr.CRC64Mismatch, "The CRC64 value specified in the request did not match with the CRC64 value calculated by the server: %s.", fe.Msg)
	}
	return azerr.Newf(azerr.InvalidInput, "One of the request inputs is not valid: %s.", fe.Msg)
}

// wantsStructured reports whether the request's x-ms-structured-body asks for a structured
// message: an upload sends one, a download asks for its range as one.
func wantsStructured(rq *request) (bool, error) {
	v, ok := rq.R.Header["X-Ms-Structured-Body"]
	if !ok {
		return false, nil
	}
	if len(v) != 1 || !structmsg.ParseHeader(v[0]) {
		return false, invalidHeader("x-ms-structured-body", rq.R.Header.Get("x-ms-structured-body"), "the one structured body known is "+structmsg.HeaderValue)
	}
	return true, nil
}
