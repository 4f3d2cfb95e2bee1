package queuehttp

import (
	"bytes"
	"encoding/xml"
	"testing"
)

// A message text read from a body, written back as the service writes it and read again, is
// the same text: what a client reads is what it sent.
func FuzzMessageTextRoundTrip(f *testing.F) {
	f.Add(`<QueueMessage><MessageText>a &lt;b&gt; &amp; "c" &#xD;&#xA; é</MessageText></QueueMessage>`)
	f.Add(`<?xml version="1.0"?><QueueMessage><MessageText><![CDATA[<x>]]></MessageText></QueueMessage>`)
	f.Add(`<QueueMessage/>`)
	f.Fuzz(func(t *testing.T, body string) {
		text, err := parseMessageText([]byte(body))
		if err != nil || text == nil {
			return
		}
		var b bytes.Buffer
		b.WriteString("<QueueMessage>")
		elem(&b, "MessageText", *text)
		b.WriteString("</QueueMessage>")
		again, err := parseMessageText(b.Bytes())
		if err != nil || again == nil || *again != *text {
			t.Fatalf("%q read as %q, written as %q, read back as %v, %v", body, *text, b.String(), again, err)
		}
	})
}

func FuzzParseResource(f *testing.F) {
	for _, p := range []string{"/", "/q", "/q/messages", "/q/messages/id", "/q/messages/id/x", "/q%2Fr", "//", "/q/"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		res, err := parseResource(p)
		if err != nil {
			return
		}
		if (res.kind != resService && res.queue == "") || (res.kind == resMessage) != (res.messageID != "") {
			t.Fatalf("%q parsed as %+v", p, res)
		}
	})
}

// The fast reader of message bodies answers exactly as encoding/xml does whenever it answers.
func FuzzPlainMessageTextAgreesWithEncodingXML(f *testing.F) {
	f.Add(`<?xml version="1.0" encoding="utf-8"?><QueueMessage><MessageText>a &lt;b&gt; &amp; &quot;c&quot; &apos; é 漢</MessageText></QueueMessage>`)
	f.Add("<QueueMessage><MessageText>line\nline\ttab</MessageText></QueueMessage>")
	f.Add("<QueueMessage><MessageText>&#65;</MessageText></QueueMessage>")
	f.Add("<QueueMessage><MessageText></MessageText></QueueMessage>")
	f.Add("  <QueueMessage><MessageText>x</MessageText></QueueMessage>\n")
	f.Fuzz(func(t *testing.T, body string) {
		fast, ok := plainMessageText([]byte(body))
		if !ok {
			return
		}
		var x xmlQueueMessage
		if err := xml.Unmarshal([]byte(body), &x); err != nil || x.MessageText == nil || *x.MessageText != fast {
			t.Fatalf("%q: fast reader says %q, encoding/xml %v, %v", body, fast, x.MessageText, err)
		}
	})
}
