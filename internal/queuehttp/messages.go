package queuehttp

import (
	"bytes"
	"encoding/xml"
	"math"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/queue"
	"github.com/tabula-dev/tabula/internal/xmltext"
)

// xmlQueueMessage is the body of Put Message and Update Message.
type xmlQueueMessage struct {
	XMLName     xml.Name `xml:"QueueMessage"`
	MessageText *string  `xml:"MessageText"`
}

// parseMessageText reads a <QueueMessage> body and returns its text, XML-decoded, or nil when
// the body has no MessageText element.
func parseMessageText(body []byte) (*string, error) {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	if text, ok := plainMessageText(body); ok {
		return &text, nil
	}
	var x xmlQueueMessage
	if err := xml.Unmarshal(body, &x); err != nil {
		return nil, azerr.Newf(azerr.InvalidXMLDocument, "XML specified is not syntactically valid: %v.", err)
	}
	return x.MessageText, nil
}

// plainMessageText reads the body every SDK sends — an optional XML declaration, then
// <QueueMessage><MessageText>text</MessageText></QueueMessage> — without an XML decoder, when
// the text holds nothing but characters and the five predefined entities. Anything else
// (comments, CDATA, character references, attributes, line ends, which XML normalises) is
// left to encoding/xml: ok is false. A fuzz test holds the two to the same answers.
func plainMessageText(body []byte) (text string, ok bool) {
	const open, close = "<QueueMessage><MessageText>", "</MessageText></QueueMessage>"
	b := bytes.Trim(body, " \t\r\n") // XML white space, no more
	if bytes.HasPrefix(b, []byte("<?xml")) {
		end := bytes.Index(b, []byte("?>"))
		if end < 0 || !sdkDeclarations[string(b[:end+2])] {
			return "", false
		}
		b = bytes.TrimLeft(b[end+2:], " \t\r\n")
	}
	inner, found := bytes.CutPrefix(b, []byte(open))
	if !found {
		return "", false
	}
	inner, found = bytes.CutSuffix(inner, []byte(close))
	if !found || !utf8.Valid(inner) {
		return "", false
	}
	out := make([]byte, 0, len(inner))
	for i := 0; i < len(inner); {
		c := inner[i]
		switch {
		case c == '&':
			semi := bytes.IndexByte(inner[i:], ';')
			if semi < 0 {
				return "", false
			}
			switch string(inner[i : i+semi+1]) {
			case "&lt;":
				out = append(out, '<')
			case "&gt;":
				out = append(out, '>')
			case "&amp;":
				out = append(out, '&')
			case "&quot;":
				out = append(out, '"')
			case "&apos;":
				out = append(out, '\'')
			default:
				return "", false
			}
			i += semi + 1
			continue
		case c == '<', c == '\r', c < 0x20 && c != '\t' && c != '\n':
			return "", false
		case c >= 0x80:
			r, size := utf8.DecodeRune(inner[i:])
			if !isXMLChar(r) {
				return "", false
			}
			out = append(out, inner[i:i+size]...)
			i += size
			continue
		}
		out = append(out, c)
		i++
	}
	return string(out), true
}

// sdkDeclarations are the XML declarations the SDKs send (Go, .NET; Python; JS).
var sdkDeclarations = map[string]bool{
	`<?xml version="1.0" encoding="utf-8"?>`:                  true,
	`<?xml version="1.0" encoding="UTF-8"?>`:                  true,
	`<?xml version='1.0' encoding='utf-8'?>`:                  true,
	`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`: true,
}

// isXMLChar reports whether r may appear in an XML 1.0 document (beyond ASCII).
func isXMLChar(r rune) bool {
	return r >= 0x80 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// seconds turns a count of seconds from the query string into a Duration, saturating where
// a Duration ends (292 years: no limit of the service lies near).
func seconds(n int64) time.Duration {
	const most = math.MaxInt64 / int64(time.Second)
	return time.Duration(max(-most, min(n, most))) * time.Second
}

// timeoutParam reads a visibilitytimeout in [lowest, 7 days], def when absent.
func timeoutParam(rq *request, lowest, def int64) (time.Duration, error) {
	n, err := intParamOr(rq.Query, "visibilitytimeout", def)
	if err != nil {
		return 0, err
	}
	if highest := int64(queue.MaxVisibilityTimeout / time.Second); n < lowest || n > highest {
		return 0, outOfRange("visibilitytimeout", n, lowest, highest)
	}
	return seconds(n), nil
}

// putResponseBodyVersion is the first x-ms-version whose Put Message answers with the message's
// id, times and pop receipt; before it the 201 had no body (queue.md §2.1).
const putResponseBodyVersion = "2016-05-31"

// neverExpiresVersion is the first x-ms-version that takes messagettl=-1 and times to live
// beyond seven days (queue.md §2.1).
const neverExpiresVersion = "2017-07-29"

// putMessage answers Put Message. The request is judged whole before the queue is looked up:
// a malformed body is 400 InvalidXmlDocument even for a queue that does not exist, as the real
// service answers (the Python SDK's test_message_text_xml_invalid_chars recording).
func (s *Server) putMessage(rq *request, name string) error {
	visibility, err := timeoutParam(rq, 0, 0)
	if err != nil {
		return err
	}
	ttlSeconds, err := intParamOr(rq.Query, "messagettl", int64(queue.DefaultTimeToLive/time.Second))
	if err != nil {
		return err
	}
	ttl := seconds(ttlSeconds)
	switch {
	case ttlSeconds == -1:
		ttl = queue.NeverExpires
	case ttlSeconds < -1:
		ttl = 0 // refused by the service as the invalid value it is
	}
	if rq.Version != "" && rq.Version < neverExpiresVersion && (ttl == queue.NeverExpires || ttl > queue.DefaultTimeToLive) {
		return outOfRange("messagettl", ttlSeconds, 1, int64(queue.DefaultTimeToLive/time.Second))
	}
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	text, err := parseMessageText(body)
	if err != nil {
		return err
	}
	if text == nil {
		return azerr.Newf(azerr.InvalidXMLDocument, "XML specified is not syntactically valid: the body needs a <QueueMessage> with a <MessageText>.")
	}
	q, err := s.svc.Queue(rq.ctx, rq.Account, name)
	if err != nil {
		return err
	}
	m, err := s.svc.PutMessage(rq.ctx, q, *text, visibility, ttl)
	if err != nil {
		return err
	}
	if rq.Version != "" && rq.Version < putResponseBodyVersion {
		rq.writeEmpty(http.StatusCreated)
		return nil
	}
	var b bytes.Buffer
	b.WriteString(xmlHeader + "<QueueMessagesList><QueueMessage>")
	elem(&b, "MessageId", m.ID)
	elem(&b, "InsertionTime", httpTime(m.InsertionTime))
	elem(&b, "ExpirationTime", httpTime(m.ExpirationTime))
	elem(&b, "PopReceipt", m.PopReceipt)
	elem(&b, "TimeNextVisible", httpTime(m.TimeNextVisible))
	b.WriteString("</QueueMessage></QueueMessagesList>")
	rq.writeXML(http.StatusCreated, b.Bytes(), false)
	return nil
}

func (s *Server) getMessages(rq *request, name string) error {
	q, err := s.svc.Queue(rq.ctx, rq.Account, name)
	if err != nil {
		return err
	}
	n, err := countParam(rq)
	if err != nil {
		return err
	}
	visibility, err := timeoutParam(rq, 1, int64(queue.DefaultGetVisibilityTimeout/time.Second))
	if err != nil {
		return err
	}
	ms, err := s.svc.GetMessages(rq.ctx, q, n, visibility)
	if err != nil {
		return err
	}
	rq.writeXML(http.StatusOK, appendMessages(nil, ms, false), true)
	return nil
}

// peekMessages answers Peek Messages; a visibilitytimeout sent with peekonly is ignored
// (queue.md §5.4).
func (s *Server) peekMessages(rq *request, name string) error {
	q, err := s.svc.Queue(rq.ctx, rq.Account, name)
	if err != nil {
		return err
	}
	n, err := countParam(rq)
	if err != nil {
		return err
	}
	ms, err := s.svc.PeekMessages(rq.ctx, q, n)
	if err != nil {
		return err
	}
	rq.writeXML(http.StatusOK, appendMessages(nil, ms, true), true)
	return nil
}

// countParam reads numofmessages, 1 to 32, default 1.
func countParam(rq *request) (int, error) {
	n, err := intParamOr(rq.Query, "numofmessages", 1)
	if err != nil {
		return 0, err
	}
	if n < 1 || n > queue.MaxMessagesPerGet {
		return 0, outOfRange("numofmessages", n, 1, queue.MaxMessagesPerGet)
	}
	return int(n), nil
}

// appendMessages appends the <QueueMessagesList> of Get or Peek Messages.
func appendMessages(b []byte, ms []queue.Message, peeked bool) []byte {
	buf := bytes.NewBuffer(b)
	buf.WriteString(xmlHeader)
	if len(ms) == 0 {
		buf.WriteString("<QueueMessagesList />")
		return buf.Bytes()
	}
	buf.WriteString("<QueueMessagesList>")
	for _, m := range ms {
		buf.WriteString("<QueueMessage>")
		elem(buf, "MessageId", m.ID)
		elem(buf, "InsertionTime", httpTime(m.InsertionTime))
		elem(buf, "ExpirationTime", httpTime(m.ExpirationTime))
		if !peeked {
			elem(buf, "PopReceipt", m.PopReceipt)
			elem(buf, "TimeNextVisible", httpTime(m.TimeNextVisible))
		}
		elem(buf, "DequeueCount", strconv.FormatInt(m.DequeueCount, 10))
		elem(buf, "MessageText", m.Text)
		buf.WriteString("</QueueMessage>")
	}
	buf.WriteString("</QueueMessagesList>")
	return buf.Bytes()
}

func (s *Server) clearMessages(rq *request, name string) error {
	q, err := s.svc.Queue(rq.ctx, rq.Account, name)
	if err != nil {
		return err
	}
	if err := s.svc.ClearMessages(rq.ctx, q); err != nil {
		return err
	}
	rq.writeEmpty(http.StatusNoContent)
	return nil
}

func (s *Server) deleteMessage(rq *request, name, id string) error {
	q, err := s.svc.Queue(rq.ctx, rq.Account, name)
	if err != nil {
		return err
	}
	if !rq.Query.Has("popreceipt") {
		return missingParam("popreceipt")
	}
	if err := s.svc.DeleteMessage(rq.ctx, q, id, rq.Query.Get("popreceipt")); err != nil {
		return err
	}
	rq.writeEmpty(http.StatusNoContent)
	return nil
}

// updateMessage answers Update Message. A request without a body (Content-Length: 0, or a
// body without MessageText) changes only the visibility. As for Put Message, the request is
// judged whole before the queue is looked up.
func (s *Server) updateMessage(rq *request, name, id string) error {
	if !rq.Query.Has("popreceipt") {
		return missingParam("popreceipt")
	}
	if !rq.Query.Has("visibilitytimeout") {
		return missingParam("visibilitytimeout")
	}
	visibility, err := timeoutParam(rq, 0, 0)
	if err != nil {
		return err
	}
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	var text *string
	if len(bytes.TrimSpace(body)) > 0 {
		if text, err = parseMessageText(body); err != nil {
			return err
		}
	}
	q, err := s.svc.Queue(rq.ctx, rq.Account, name)
	if err != nil {
		return err
	}
	m, err := s.svc.UpdateMessage(rq.ctx, q, id, rq.Query.Get("popreceipt"), text, visibility)
	if err != nil {
		return err
	}
	h := rq.W.Header()
	h["x-ms-popreceipt"] = []string{m.PopReceipt}
	h["x-ms-time-next-visible"] = []string{httpTime(m.TimeNextVisible)}
	rq.writeEmpty(http.StatusNoContent)
	return nil
}

// httpTime is how the Queue service writes times: RFC 1123, whole seconds, GMT.
func httpTime(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// elem appends <name>value</name>, value escaped as Azure escapes text (package xmltext):
// quotes and newlines literal, which the JS SDK's reader needs. (The JS SDK cannot send a \r
// at all: its XML writer drops line ends. Go's sends and reads them exactly.)
func elem(b *bytes.Buffer, name, value string) {
	b.WriteString("<" + name + ">")
	b.Write(xmltext.AppendText(b.AvailableBuffer(), value))
	b.WriteString("</" + name + ">")
}
