package blobhttp

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"io"
	"net/url"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/xmltext"
)

// xmlDeclaration opens every XML body, with the byte order mark the real service writes.
const xmlDeclaration = "\ufeff<?xml version=\"1.0\" encoding=\"utf-8\"?>"

// xmlWriter builds an XML body by hand: the documents are flat and their element order
// matters to nobody but readers of recordings, which this keeps identical.
type xmlWriter struct{ bytes.Buffer }

func newXML() *xmlWriter {
	w := &xmlWriter{}
	w.WriteString(xmlDeclaration)
	return w
}

func (w *xmlWriter) open(name string)  { w.WriteString("<" + name + ">") }
func (w *xmlWriter) close(name string) { w.WriteString("</" + name + ">") }

// elem writes <name>value</name>, or <name /> for an empty value.
func (w *xmlWriter) elem(name, value string) {
	if value == "" {
		w.WriteString("<" + name + " />")
		return
	}
	w.open(name)
	w.Write(xmltext.AppendText(w.AvailableBuffer(), value))
	w.close(name)
}

// optional writes <name>value</name> only for a non-empty value.
func (w *xmlWriter) optional(name, value string) {
	if value != "" {
		w.elem(name, value)
	}
}

// name writes a listing's <Name>: as it is, or, when it holds a character XML 1.0 cannot
// carry (blob names may hold U+FFFE and U+FFFF), percent-encoded in <Name
// Encoded="true">, as the real service writes it and every SDK decodes it.
func (w *xmlWriter) name(v string) {
	for _, r := range v {
		if !xmlChar(r) {
			w.WriteString(`<Name Encoded="true">`)
			// Spaces as %20, not +: JavaScript's decodeURIComponent leaves + as it is.
			w.WriteString(strings.ReplaceAll(url.QueryEscape(v), "+", "%20"))
			w.close("Name")
			return
		}
	}
	w.elem("Name", v)
}

// xmlChar reports whether XML 1.0 can carry r (its production Char).
func xmlChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

func (w *xmlWriter) attr(name, value string) {
	w.WriteString(" " + name + "=\"")
	w.Write(xmltext.AppendAttr(w.AvailableBuffer(), value))
	w.WriteString("\"")
}

func (w *xmlWriter) metadata(md blob.Metadata) {
	if len(md) == 0 {
		w.WriteString("<Metadata />")
		return
	}
	w.open("Metadata")
	for _, name := range md.Names() {
		w.elem(name, md[name])
	}
	w.close("Metadata")
}

func (w *xmlWriter) tags(t blob.Tags) {
	w.open("Tags")
	w.open("TagSet")
	for _, k := range sortedKeys(t) {
		w.open("Tag")
		w.elem("Key", k)
		w.elem("Value", t[k])
		w.close("Tag")
	}
	w.close("TagSet")
	w.close("Tags")
}

func invalidXML(err error) *azerr.Error {
	return azerr.Newf(azerr.InvalidXMLDocument, "XML specified is not syntactically valid: %v.", err)
}

// parseBlockList reads a Put Block List body (blob.md §10.2): Latest, Committed and
// Uncommitted elements inside BlockList, in document order, each a base64 block id.
func parseBlockList(body []byte) ([]blob.BlockListEntry, error) {
	d := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))))
	var list []blob.BlockListEntry
	depth := 0
	sawRoot := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, invalidXML(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch {
			case depth == 1:
				if t.Name.Local != "BlockList" {
					return nil, invalidXML(errors.New("the root element must be BlockList"))
				}
				sawRoot = true
			case depth == 2:
				var kind blob.BlockListKind
				switch t.Name.Local {
				case "Latest":
					kind = blob.Latest
				case "Committed":
					kind = blob.Committed
				case "Uncommitted":
					kind = blob.Uncommitted
				default:
					return nil, invalidXML(errors.New("BlockList holds Latest, Committed and Uncommitted elements only"))
				}
				var v string
				if err := d.DecodeElement(&v, &t); err != nil {
					return nil, invalidXML(err)
				}
				depth--
				id, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
				if err != nil {
					return nil, azerr.Newf(azerr.InvalidBlockList, "The specified block list is invalid: %q is not a base64 block id.", v)
				}
				list = append(list, blob.BlockListEntry{Kind: kind, ID: id})
				if len(list) > blob.MaxBlockListEntries {
					return nil, azerr.Newf(azerr.BlockListTooLong, "The block list may not contain more than %d blocks.", blob.MaxBlockListEntries)
				}
			default:
				return nil, invalidXML(errors.New("unexpected nested element"))
			}
		case xml.EndElement:
			depth--
		}
	}
	if !sawRoot {
		return nil, invalidXML(errors.New("no BlockList element"))
	}
	return list, nil
}

// parseTags reads a Set Blob Tags body: <Tags><TagSet><Tag><Key/><Value/></Tag>…</TagSet></Tags>.
func parseTags(body []byte) (blob.Tags, error) {
	var x struct {
		XMLName xml.Name `xml:"Tags"`
		Tags    []struct {
			Key   string `xml:"Key"`
			Value string `xml:"Value"`
		} `xml:"TagSet>Tag"`
	}
	body = bytes.TrimSpace(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")))
	if len(body) == 0 {
		return blob.Tags{}, nil
	}
	if err := xml.Unmarshal(body, &x); err != nil {
		return nil, invalidXML(err)
	}
	t := blob.Tags{}
	for _, tag := range x.Tags {
		if _, dup := t[tag.Key]; dup {
			return nil, azerr.Newf(azerr.InvalidTag, "The tags specified are invalid: the key %q is given more than once.", tag.Key)
		}
		t[tag.Key] = tag.Value
	}
	return t, nil
}
