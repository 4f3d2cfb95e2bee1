package tablehttp

import (
	"net/http"
	"strconv"
	"time"

	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/table"
	"github.com/tabula-dev/tabula/internal/xmltext"
)

// The Atom documents are laid out byte for byte as the real service wrote them to the Node.js
// library of 2013 (azure-sdk-for-node test/recordings: tableservice-tests, tableservice-
// tablequery-tests, tableservice-batch-tests, batchserviceclient-tests): an XML declaration
// with standalone="yes", CRLF line ends, two spaces per level, <updated> set to the response
// time in whole seconds, and the feed's own <author> only when it has no entry.

// atomContentType is the Content-Type of Atom responses.
var atomContentType = []string{"application/atom+xml;charset=utf-8"}

const (
	atomDeclaration = `<?xml version="1.0" encoding="utf-8" standalone="yes"?>` + "\r\n"
	atomNamespaces  = ` xmlns:d="` + edm.DataNamespace + `" xmlns:m="` + edm.MetadataNamespace + `"`
	atomDefaultNS   = ` xmlns="` + edm.AtomNamespace + `"`
	atomScheme      = "http://schemas.microsoft.com/ado/2007/08/dataservices/scheme"
)

// atomDoc writes the Atom documents of one response.
type atomDoc struct {
	rq      *request
	updated string // the response time: 2013-05-09T10:47:27Z
}

func newAtomDoc(rq *request) atomDoc {
	return atomDoc{rq: rq, updated: time.Now().UTC().Format("2006-01-02T15:04:05Z")}
}

// atomEntry is what distinguishes the entries of tables and entities.
type atomEntry struct {
	etag  string // the m:etag attribute, entities only
	id    string // {base}/Tables('t') or {base}/t(PartitionKey='p',RowKey='r')
	title string // the edit link's title: Tables, or the table name
	href  string // the edit link, relative to the base
	term  string // the category: {account}.Tables or {account}.{table}
	props func(b []byte, indent string) []byte
}

func (d atomDoc) tableEntry(name string) atomEntry {
	return atomEntry{
		id: d.rq.BaseURL + "/Tables('" + name + "')", title: "Tables", href: "Tables('" + name + "')",
		term: d.rq.Account + ".Tables",
		props: func(b []byte, indent string) []byte {
			b = append(b, indent...)
			b = append(b, "<m:properties>\r\n"...)
			b = edm.AppendAtomValue(b, indent+"  ", "TableName", &edm.Value{Type: edm.String, Str: name})
			b = append(b, indent...)
			return append(b, "</m:properties>\r\n"...)
		},
	}
}

func (d atomDoc) entityEntry(t table.Table, e *edm.Entity, sel []string) atomEntry {
	path := entityKeyPath(t.Name, e.PartitionKey, e.RowKey)
	return atomEntry{
		etag: edm.ETag(e.Timestamp), id: d.rq.BaseURL + "/" + path, title: t.Name, href: path,
		term: d.rq.Account + "." + t.Name,
		props: func(b []byte, indent string) []byte {
			return edm.AppendAtomProperties(b, e, sel, indent)
		},
	}
}

// entityKeyPath is {table}(PartitionKey='pk',RowKey='rk') with quotes in the keys doubled, as
// the id and edit link of an Atom entry write it.
func entityKeyPath(table, pk, rk string) string {
	return table + "(PartitionKey='" + doubleQuotes(pk) + "',RowKey='" + doubleQuotes(rk) + "')"
}

func doubleQuotes(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out := make([]byte, 0, len(s)+4)
			for j := 0; j < len(s); j++ {
				out = append(out, s[j])
				if s[j] == '\'' {
					out = append(out, '\'')
				}
			}
			return string(out)
		}
	}
	return s
}

// appendRootAttributes writes the xml:base attribute and the namespace declarations of a document's
// root element, the entity tag (if any) among them as the service orders them.
func (d atomDoc) appendRootAttributes(b []byte, etag string) []byte {
	b = append(b, ` xml:base="`...)
	b = xmltext.AppendAttr(b, d.rq.BaseURL+"/")
	b = append(b, '"')
	b = append(b, atomNamespaces...)
	b = appendETagAttr(b, etag)
	return append(b, atomDefaultNS...)
}

func appendETagAttr(b []byte, etag string) []byte {
	if etag == "" {
		return b
	}
	b = append(b, ` m:etag="`...)
	b = xmltext.AppendAttr(b, etag)
	return append(b, '"')
}

// appendEntry writes one entry: the document's root when top is set, else an entry of a feed.
func (d atomDoc) appendEntry(b []byte, e atomEntry, top bool) []byte {
	in := "  "
	if top {
		b = append(b, atomDeclaration...)
		b = append(b, "<entry"...)
		b = d.appendRootAttributes(b, e.etag)
		b = append(b, ">\r\n"...)
	} else {
		b = append(b, "  <entry"...)
		b = appendETagAttr(b, e.etag)
		b = append(b, ">\r\n"...)
		in = "    "
	}
	b = append(b, in...)
	b = append(b, "<id>"...)
	b = xmltext.AppendText(b, e.id)
	b = append(b, "</id>\r\n"...)
	b = append(b, in...)
	b = append(b, "<title type=\"text\"></title>\r\n"...)
	b = append(b, in...)
	b = append(b, "<updated>"...)
	b = append(b, d.updated...)
	b = append(b, "</updated>\r\n"...)
	b = append(b, in...)
	b = append(b, "<author>\r\n"...)
	b = append(b, in...)
	b = append(b, "  <name />\r\n"...)
	b = append(b, in...)
	b = append(b, "</author>\r\n"...)
	b = append(b, in...)
	b = append(b, `<link rel="edit" title="`...)
	b = xmltext.AppendAttr(b, e.title)
	b = append(b, `" href="`...)
	b = xmltext.AppendAttr(b, e.href)
	b = append(b, "\" />\r\n"...)
	b = append(b, in...)
	b = append(b, `<category term="`...)
	b = xmltext.AppendAttr(b, e.term)
	b = append(b, `" scheme="`+atomScheme+"\" />\r\n"...)
	b = append(b, in...)
	b = append(b, "<content type=\"application/xml\">\r\n"...)
	b = e.props(b, in+"  ")
	b = append(b, in...)
	b = append(b, "</content>\r\n"...)
	if top {
		return append(b, "</entry>"...)
	}
	return append(b, "  </entry>\r\n"...)
}

// appendFeed writes a feed named title ("Tables" or a table name) holding n entries.
func (d atomDoc) appendFeed(b []byte, title string, n int, entry func(i int) atomEntry) []byte {
	b = append(b, atomDeclaration...)
	b = append(b, "<feed"...)
	b = d.appendRootAttributes(b, "")
	b = append(b, ">\r\n  <title type=\"text\">"...)
	b = xmltext.AppendText(b, title)
	b = append(b, "</title>\r\n  <id>"...)
	b = xmltext.AppendText(b, d.rq.BaseURL+"/"+title)
	b = append(b, "</id>\r\n  <updated>"...)
	b = append(b, d.updated...)
	b = append(b, "</updated>\r\n"...)
	if n == 0 {
		// An Atom feed needs an author when its entries do not all have one.
		b = append(b, "  <author>\r\n    <name />\r\n  </author>\r\n"...)
	}
	b = append(b, `  <link rel="self" title="`...)
	b = xmltext.AppendAttr(b, title)
	b = append(b, `" href="`...)
	b = xmltext.AppendAttr(b, title)
	b = append(b, "\" />\r\n"...)
	for i := range n {
		b = d.appendEntry(b, entry(i), false)
	}
	return append(b, "</feed>"...)
}

// writeAtom sends an Atom document.
func (rq *request) writeAtom(status int, body []byte) {
	h := rq.W.Header()
	h["Content-Type"] = atomContentType
	h["Cache-Control"] = noCacheValue
	h["X-Content-Type-Options"] = noSniffValue
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	rq.W.WriteHeader(status)
	if rq.R.Method != http.MethodHead {
		_, _ = rq.W.Write(body)
	}
}
