package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/xmltext"
)

// xmlDeclaration opens every XML body of the Blob and Queue services: a UTF-8 byte order mark
// and the declaration, as the real services write them.
const xmlDeclaration = "\ufeff<?xml version=\"1.0\" encoding=\"utf-8\"?>"

// ErrorTime is how error messages end with the time of the failure, as Azure writes it.
const ErrorTime = "2006-01-02T15:04:05.0000000Z"

// AppendXMLErrorBody appends the Blob and Queue services' error document (blob.md §2.4):
//
//	<?xml ...?><Error><Code>…</Code><Message>…\nRequestId:…\nTime:…</Message>[details]</Error>
//
// An AuthenticationFailed message carries its reason on a second line (package auth); that
// line becomes the AuthenticationErrorDetail element Azure sends.
func AppendXMLErrorBody(b []byte, e *azerr.Error, requestID string, now time.Time) []byte {
	msg, detail := authDetail(e)
	var buf bytes.Buffer
	buf.WriteString(xmlDeclaration + "<Error><Code>")
	buf.Write(xmltext.AppendText(nil, string(e.Code)))
	buf.WriteString("</Code><Message>")
	// The line breaks stay literal, as Azure writes them.
	buf.Write(xmltext.AppendText(nil, msg+"\nRequestId:"+requestID+"\nTime:"+now.UTC().Format(ErrorTime)))
	buf.WriteString("</Message>")
	if detail != "" {
		buf.WriteString("<AuthenticationErrorDetail>")
		buf.Write(xmltext.AppendText(nil, detail))
		buf.WriteString("</AuthenticationErrorDetail>")
	}
	for _, d := range e.Details {
		buf.WriteString("<" + d.Name + ">")
		buf.Write(xmltext.AppendText(nil, d.Value))
		buf.WriteString("</" + d.Name + ">")
	}
	buf.WriteString("</Error>")
	return append(b, buf.Bytes()...)
}

// authDetail splits an AuthenticationFailed message into the message and the reason package
// auth puts on its second line, Azure's AuthenticationErrorDetail; other errors have none.
func authDetail(e *azerr.Error) (message, detail string) {
	if e.Code != azerr.AuthenticationFailed {
		return e.Message, ""
	}
	message, detail, _ = strings.Cut(e.Message, "\n")
	return message, detail
}

// WriteXMLError answers rq with err as the Blob and Queue services do: status,
// x-ms-error-code, and the XML error body (none for HEAD, where the code header is all a
// client sees). An internal error's cause goes to log, not to the client; a 503 (a busy
// store, --throttle) is the request's own log line's business, and so is a 500
// CannotVerifyCopySource: a copy source on another server that cannot be reached is that
// server's failure, not this one's.
func WriteXMLError(rq *Request, err error, log *slog.Logger) {
	e := azerr.As(err)
	if e.Status == http.StatusInternalServerError && e.Code != azerr.CannotVerifyCopySource && rq.R.Context().Err() == nil {
		log.Error("request failed", "request_id", rq.ID, "method", rq.R.Method, "url", rq.R.URL.String(), "status", e.Status, "err", err)
	}
	rq.NoteFailure(err)
	h := rq.W.Header()
	for k, v := range e.Header {
		h[k] = v
	}
	h["x-ms-error-code"] = []string{string(e.Code)}
	if rw, ok := rq.W.(*responseRecorder); ok && rw.conn != nil && !rw.discard && rq.R.ProtoMajor == 1 {
		rw.conn.setReason(e.Message)
	}
	if rq.R.Method == http.MethodHead {
		h["Content-Length"] = []string{"0"}
		rq.W.WriteHeader(e.Status)
		return
	}
	body := AppendXMLErrorBody(nil, e, rq.ID, time.Now())
	h["Content-Type"] = []string{"application/xml"}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	rq.W.WriteHeader(e.Status)
	_, _ = rq.W.Write(body)
}
