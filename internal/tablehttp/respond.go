package tablehttp

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/edm"
)

// Response content types, as the real service writes them: header values shared by every
// response, like noCacheValue.
var jsonContentType = map[edm.Metadata][]string{
	edm.NoMetadata:      {"application/json;odata=nometadata;streaming=true;charset=utf-8"},
	edm.MinimalMetadata: {"application/json;odata=minimalmetadata;streaming=true;charset=utf-8"},
	edm.FullMetadata:    {"application/json;odata=fullmetadata;streaming=true;charset=utf-8"},
}

// negotiate picks the JSON metadata level from $format, else Accept. A missing or generic
// Accept gets minimal metadata, as the real service answers Accept: application/json. Atom is
// not served: modern service versions refuse it too.
func negotiate(rq *request) (edm.Metadata, error) {
	spec := rq.query.Get("$format")
	if spec == "" {
		spec = rq.r.Header.Get("Accept")
	}
	return negotiateHeader(spec)
}

// negotiateHeader reads an Accept (or $format) value.
func negotiateHeader(spec string) (edm.Metadata, error) {
	if spec == "" {
		return edm.MinimalMetadata, nil
	}
	sawAtom := false
	for _, item := range strings.Split(spec, ",") {
		mt, params, _ := strings.Cut(strings.TrimSpace(item), ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
		switch mt {
		case "application/json", "application/*", "*/*", "json":
			level := "minimalmetadata"
			for _, p := range strings.Split(params, ";") {
				k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(k, "odata") {
					level = strings.ToLower(strings.TrimSpace(v))
				}
			}
			switch level {
			case "nometadata":
				return edm.NoMetadata, nil
			case "minimalmetadata":
				return edm.MinimalMetadata, nil
			case "fullmetadata":
				return edm.FullMetadata, nil
			case "verbose":
				return 0, azerr.Newf(azerr.Code("JsonVerboseFormatNotSupported"), "The verbose JSON format is not supported; use odata=nometadata, minimalmetadata or fullmetadata.")
			}
		case "application/atom+xml", "application/xml", "atom":
			sawAtom = true
		}
	}
	if sawAtom {
		return 0, azerr.New(azerr.AtomFormatNotSupported)
	}
	return edm.MinimalMetadata, nil
}

// acceptsJSON decides the error format before routing: JSON unless the client asked for XML
// only.
func acceptsJSON(query url.Values, h http.Header) bool {
	spec := query.Get("$format") + h.Get("Accept")
	return spec == "" || strings.Contains(strings.ToLower(spec), "json") || strings.Contains(spec, "*/*")
}

// fail writes err as Azure writes errors: status, x-ms-error-code, and an odata.error JSON or
// m:error XML body whose message ends with the request id and time.
func (rq *request) fail(err error) {
	e := azerr.As(err)
	if e.Status == http.StatusInternalServerError {
		// The cause stays in the server log; the client learns only that it may retry.
		rq.log.Error("request failed", "request_id", rq.id, "method", rq.r.Method, "url", rq.r.URL.String(), "err", err)
	}
	h := rq.w.Header()
	for k, v := range e.Header {
		h[k] = v
	}
	h.Set("x-ms-error-code", string(e.Code))
	if rq.r.Method == http.MethodHead {
		rq.w.WriteHeader(e.Status)
		return
	}
	body := errorBody(e, rq.id, rq.jsonErrors)
	if rq.jsonErrors {
		h["Content-Type"] = jsonContentType[edm.MinimalMetadata]
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
	} else {
		h.Set("Content-Type", "application/xml")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	rq.w.WriteHeader(e.Status)
	_, _ = rq.w.Write(body)
}

// errorBody renders an error outside a changeset.
func errorBody(e *azerr.Error, requestID string, asJSON bool) []byte {
	return errorBodyWithIndex(e, requestID, asJSON, -1)
}

// errorBodyWithIndex renders an error; an index ≥ 0, the failing operation of a $batch,
// prefixes the message as "index:".
func errorBodyWithIndex(e *azerr.Error, requestID string, asJSON bool, index int) []byte {
	msg := e.Message
	if index >= 0 {
		msg = strconv.Itoa(index) + ":" + msg
	}
	msg += "\nRequestId:" + requestID + "\nTime:" + edm.TicksOf(time.Now()).String()
	if asJSON {
		b := []byte(`{"odata.error":{"code":`)
		b = strconv.AppendQuote(b, string(e.Code))
		b = append(b, `,"message":{"lang":"en-US","value":`...)
		b = appendJSONString(b, msg)
		return append(b, "}}}"...)
	}
	var sb strings.Builder
	sb.WriteString(`<?xml version="1.0" encoding="utf-8"?><m:error xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><m:code>`)
	_ = xml.EscapeText(&sb, []byte(e.Code))
	sb.WriteString(`</m:code><m:message xml:lang="en-US">`)
	_ = xml.EscapeText(&sb, []byte(msg))
	sb.WriteString(`</m:message></m:error>`)
	return []byte(sb.String())
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// Header values every response of a kind carries, shared rather than allocated per response
// (net/http copies a header's values before writing them and never modifies them).
var (
	noCacheValue            = []string{"no-cache"}
	noSniffValue            = []string{"nosniff"}
	zeroLengthValue         = []string{"0"}
	dataServiceVersionValue = []string{"3.0;"}
)

// writeJSON sends a 200/201 OData JSON body at the given metadata level.
func (rq *request) writeJSON(status int, level edm.Metadata, body []byte) {
	h := rq.w.Header()
	h["Content-Type"] = jsonContentType[level]
	h["Cache-Control"] = noCacheValue
	h["X-Content-Type-Options"] = noSniffValue
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	rq.w.WriteHeader(status)
	_, _ = rq.w.Write(body)
}

// bodyBuffers recycles response bodies: a point read's kilobyte of JSON, or a query page's
// megabyte, would otherwise be allocated and collected per request.
var bodyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBody keeps the pool from holding on to a rare outsized page.
const maxPooledBody = 4 << 20

// writeBuiltJSON is writeJSON of the body build appends to a recycled buffer.
func (rq *request) writeBuiltJSON(status int, level edm.Metadata, build func([]byte) []byte) {
	buf := bodyBuffers.Get().(*[]byte)
	body := build((*buf)[:0])
	rq.writeJSON(status, level, body) // net/http has copied or sent body when Write returns
	if cap(body) <= maxPooledBody {
		*buf = body[:0]
		bodyBuffers.Put(buf)
	}
}

// writeEmpty sends a bodiless response.
func (rq *request) writeEmpty(status int) {
	h := rq.w.Header()
	h["Cache-Control"] = noCacheValue
	h["X-Content-Type-Options"] = noSniffValue
	h["Content-Length"] = zeroLengthValue
	rq.w.WriteHeader(status)
}
