package tablehttp

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/xmltext"
)

// Response content types, as the real service writes them: header values shared by every
// response, like noCacheValue.
var jsonContentType = map[edm.Metadata][]string{
	edm.NoMetadata:      {"application/json;odata=nometadata;streaming=true;charset=utf-8"},
	edm.MinimalMetadata: {"application/json;odata=minimalmetadata;streaming=true;charset=utf-8"},
	edm.FullMetadata:    {"application/json;odata=fullmetadata;streaming=true;charset=utf-8"},
}

// errorStyle is the form of an error body.
type errorStyle uint8

const (
	errorsXML       errorStyle = iota // <m:error> in the metadata namespace, application/xml
	errorsJSON                        // {"odata.error":...}
	errorsLegacyXML                   // <error xmlns="...metadata">, before version 2013-08-15
)

// errorStyleOf decides the error format before routing: under versions before 2013-08-15 the
// legacy XML document, which the service then wrote for every error (the storage emulator
// picks its XML error writer by version alone); otherwise JSON unless the client asked for
// XML only.
func errorStyleOf(version string, query url.Values, h http.Header) errorStyle {
	if version != "" && version < versionJSON {
		return errorsLegacyXML
	}
	spec := query.Get("$format") + h.Get("Accept")
	if spec == "" || strings.Contains(strings.ToLower(spec), "json") || strings.Contains(spec, "*/*") {
		return errorsJSON
	}
	return errorsXML
}

// fail writes err as Azure writes errors: status, x-ms-error-code, and an odata.error JSON or
// m:error XML body whose message ends with the request id and time.
func (rq *request) fail(err error) {
	e := azerr.As(err)
	if e.Status == http.StatusInternalServerError && rq.R.Context().Err() == nil {
		// The cause stays in the server log; the client learns only that it may retry. (A
		// client that went away mid-request is no failure of the server's.)
		rq.log.Error("request failed", "request_id", rq.ID, "method", rq.R.Method, "url", rq.R.URL.String(), "err", err)
	}
	rq.NoteFailure(err)
	h := rq.W.Header()
	for k, v := range e.Header {
		h[k] = v
	}
	h.Set("x-ms-error-code", string(e.Code))
	if rq.R.Method == http.MethodHead {
		rq.W.WriteHeader(e.Status)
		return
	}
	body := errorBodyWithIndex(e, rq.ID, rq.errors, -1)
	switch rq.errors {
	case errorsJSON:
		// The metadata level asked for, as Azure echoes it on errors too (the legacy Go
		// SDK's recordings: odata=nometadata on a 404 and a 412).
		level := edm.MinimalMetadata
		if f, err := negotiate(rq); err == nil && !f.atom {
			level = f.level
		}
		h["Content-Type"] = jsonContentType[level]
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
	case errorsXML:
		h.Set("Content-Type", "application/xml")
	case errorsLegacyXML:
		// The 2011-08-18 errors recorded from the real service carry Cache-Control but no
		// Content-Type (azure-sdk-for-node tableservice-tests recordings: 409
		// TableAlreadyExists, 412 UpdateConditionNotSatisfied); nil keeps net/http from
		// sniffing one.
		h.Set("Cache-Control", "no-cache")
		h["Content-Type"] = nil
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	rq.W.WriteHeader(e.Status)
	_, _ = rq.W.Write(body)
}

// errorBody renders an error outside a changeset.
func errorBody(e *azerr.Error, requestID string, style errorStyle) []byte {
	return errorBodyWithIndex(e, requestID, style, -1)
}

// errorBodyWithIndex renders an error; an index ≥ 0, the failing operation of a $batch,
// prefixes the message as "index:".
func errorBodyWithIndex(e *azerr.Error, requestID string, style errorStyle, index int) []byte {
	msg := e.Message
	if index >= 0 {
		msg = strconv.Itoa(index) + ":" + msg
	}
	// Azure writes the time with all seven fraction digits: Time:2021-08-02T18:01:40.3296350Z.
	msg += "\nRequestId:" + requestID + "\nTime:" + string(edm.TicksOf(time.Now()).AppendText(nil, true))
	switch style {
	case errorsJSON:
		b := []byte(`{"odata.error":{"code":`)
		b = strconv.AppendQuote(b, string(e.Code))
		b = append(b, `,"message":{"lang":"en-US","value":`...)
		b = appendJSONString(b, msg)
		return append(b, "}}}"...)
	case errorsLegacyXML:
		// As recorded from the real service under version 2011-08-18 (azure-sdk-for-node
		// tableservice-tests): indented, CRLF between elements, the message's own line breaks
		// literal.
		b := []byte(atomDeclaration + `<error xmlns="` + edm.MetadataNamespace + `">` + "\r\n  <code>")
		b = xmltext.AppendText(b, string(e.Code))
		b = append(b, "</code>\r\n  <message xml:lang=\"en-US\">"...)
		b = xmltext.AppendText(b, msg)
		return append(b, "</message>\r\n</error>"...)
	}
	// The line breaks before RequestId and Time stay literal, as in Azure's XML errors.
	b := []byte(`<?xml version="1.0" encoding="utf-8"?><m:error xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><m:code>`)
	b = xmltext.AppendText(b, string(e.Code))
	b = append(b, `</m:code><m:message xml:lang="en-US">`...)
	b = xmltext.AppendText(b, msg)
	return append(b, `</m:message></m:error>`...)
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
	h := rq.W.Header()
	h["Content-Type"] = jsonContentType[level]
	h["Cache-Control"] = noCacheValue
	h["X-Content-Type-Options"] = noSniffValue
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	rq.W.WriteHeader(status)
	_, _ = rq.W.Write(body)
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
	h := rq.W.Header()
	h["Cache-Control"] = noCacheValue
	h["X-Content-Type-Options"] = noSniffValue
	h["Content-Length"] = zeroLengthValue
	rq.W.WriteHeader(status)
}
