package xmltext

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestXMLEscapingSurvivesAnXMLReader(t *testing.T) {
	for _, s := range []string{
		"plain", "a & b < c > d", `quote " and apostrophe '`, "tab\tnew\nline", "crlf\r\nkept",
		"", "héllo wörld ✓ 😀", " leading and trailing ",
	} {
		doc := `<x a="` + string(AppendAttr(nil, s)) + `">` + string(AppendText(nil, s)) + `</x>`
		var v struct {
			A    string `xml:"a,attr"`
			Text string `xml:",chardata"`
		}
		if err := xml.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatalf("%q: %v in %s", s, err, doc)
		}
		if v.A != s || v.Text != s {
			t.Errorf("%q read back as attribute %q, text %q (%s)", s, v.A, v.Text, doc)
		}
	}
}

func TestXMLTextKeepsNewlinesLiteral(t *testing.T) {
	got := string(AppendText(nil, "one\ntwo\r<&>\x01\uFFFF"))
	if want := "one\ntwo&#xD;&lt;&amp;&gt;&#x1;&#xFFFF;"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := string(AppendText(nil, "bad\xffutf8")); !strings.Contains(got, "\uFFFD") {
		t.Fatalf("invalid UTF-8 kept: %q", got)
	}
}
