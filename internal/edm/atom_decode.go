package edm

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// The namespaces of the Atom payload format (json-format.md §5). Readers match them by URI,
// whatever prefixes a client declares.
const (
	AtomNamespace     = "http://www.w3.org/2005/Atom"
	DataNamespace     = "http://schemas.microsoft.com/ado/2007/08/dataservices"
	MetadataNamespace = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"
)

// DecodeAtom reads one Atom <entry> entity body, as legacy clients send it to Insert, Update,
// Merge and the upserts (and inside $batch) with Content-Type application/atom+xml.
//
// The properties are the children of the entry's content/m:properties element (or of an
// m:properties element directly under the entry): each a d:{Name} element whose text is the
// value, typed by its m:type attribute (Edm.String when absent), or absent when m:null="true".
// Everything else in the entry (id, title, updated, author, link, category) is ignored, as the
// service ignores it. Timestamp is skipped; PartitionKey and RowKey go to the keys, with a key
// typed other than Edm.String reported in KeyErr, as for JSON. Values are read by the same
// rules as JSON strings (valueFromText), after the XML lexical forms are taken into account:
// surrounding white space is ignored for the non-string types, and Edm.Boolean also takes
// 1 and 0, Edm.Double INF and -INF, as .NET's XmlConvert writes and reads them. A name given
// twice is DuplicatePropertiesSpecified.
//
// Malformed XML, an element nested inside a property, an unknown m:type, or content after the
// entry is 400 InvalidInput with a message saying what is wrong. Like DecodeJSON, DecodeAtom
// checks no limits: that is Validate's work.
func DecodeAtom(body []byte) (Decoded, error) {
	a := atomDecoder{dec: xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(body, utf8BOM)))}
	if err := a.entry(); err != nil {
		return Decoded{}, err
	}
	return a.out, nil
}

var utf8BOM = []byte("\xEF\xBB\xBF")

type atomDecoder struct {
	dec   *xml.Decoder
	out   Decoded
	names map[string]struct{}
}

func atomError(format string, args ...any) *azerr.Error {
	return azerr.Newf(azerr.InvalidInput, msgBadInput+" "+format, args...)
}

// token returns the next token, turning a syntax error or an early end into InvalidInput.
func (a *atomDecoder) token() (xml.Token, error) {
	t, err := a.dec.Token()
	if err == io.EOF {
		return nil, atomError("The request body ends before its Atom entry does.")
	}
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		return nil, atomError("The request body is not well-formed XML: %s (line %d).", se.Msg, se.Line)
	}
	if err != nil {
		return nil, atomError("The request body is not well-formed XML: %v.", err)
	}
	return t, nil
}

// entry reads the document: one <entry> root, then nothing but white space and comments.
func (a *atomDecoder) entry() error {
	for {
		t, err := a.token()
		if err != nil {
			return err
		}
		switch t := t.(type) {
		case xml.StartElement:
			if t.Name.Space != AtomNamespace || t.Name.Local != "entry" {
				return atomError("The request body must be an Atom entry (an <entry> element in the %s namespace), not <%s>.", AtomNamespace, t.Name.Local)
			}
			if err := a.entryChildren(); err != nil {
				return err
			}
			return a.end()
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return atomError("The request body has text outside its Atom entry.")
			}
		}
	}
}

// end checks that nothing but white space, comments and processing instructions follows the
// entry.
func (a *atomDecoder) end() error {
	for {
		t, err := a.dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return atomError("The request body is not well-formed XML after its Atom entry: %v.", err)
		}
		switch t := t.(type) {
		case xml.StartElement:
			return atomError("The request body holds more than one root element.")
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return atomError("The request body has text after its Atom entry.")
			}
		}
	}
}

// entryChildren reads the entry's children up to its end tag, taking the properties from
// content/m:properties or m:properties and skipping the rest.
func (a *atomDecoder) entryChildren() error {
	for {
		t, err := a.token()
		if err != nil {
			return err
		}
		switch t := t.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			switch {
			case t.Name.Space == MetadataNamespace && t.Name.Local == "properties":
				err = a.properties()
			case t.Name.Space == AtomNamespace && t.Name.Local == "content":
				err = a.content()
			default:
				err = a.dec.Skip()
			}
			if err != nil {
				return a.wrap(err)
			}
		}
	}
}

// content reads an Atom content element, looking for m:properties inside.
func (a *atomDecoder) content() error {
	for {
		t, err := a.token()
		if err != nil {
			return err
		}
		switch t := t.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			if t.Name.Space == MetadataNamespace && t.Name.Local == "properties" {
				err = a.properties()
			} else {
				err = a.dec.Skip()
			}
			if err != nil {
				return a.wrap(err)
			}
		}
	}
}

// wrap turns an error of encoding/xml met while skipping into InvalidInput.
func (a *atomDecoder) wrap(err error) error {
	var ae *azerr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return atomError("The request body is not well-formed XML: %v.", err)
}

// properties reads the children of m:properties, each one property.
func (a *atomDecoder) properties() error {
	for {
		t, err := a.token()
		if err != nil {
			return err
		}
		switch t := t.(type) {
		case xml.EndElement:
			return nil
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return atomError("The m:properties element holds text outside any property.")
			}
		case xml.StartElement:
			if err := a.property(t); err != nil {
				return err
			}
		}
	}
}

// property reads one d:{Name} element.
func (a *atomDecoder) property(start xml.StartElement) error {
	name := start.Name.Local
	if start.Name.Space != DataNamespace {
		return atomError("Property <%s> is not in the %s namespace.", clip(name), DataNamespace)
	}
	var typeName string
	typed, null := false, false
	for _, at := range start.Attr {
		if at.Name.Space != MetadataNamespace {
			continue // xml:space and the like
		}
		switch at.Name.Local {
		case "type":
			typeName, typed = at.Value, true
		case "null":
			null = strings.TrimSpace(at.Value) == "true"
		}
	}
	var text strings.Builder
	for done := false; !done; {
		t, err := a.token()
		if err != nil {
			return err
		}
		switch t := t.(type) {
		case xml.CharData:
			text.Write(t)
		case xml.StartElement:
			return atomError("Property %s holds an element <%s>; property values must be text.", quote(name), clip(t.Name.Local))
		case xml.EndElement:
			done = true
		}
	}
	if err := a.checkDuplicate(name); err != nil {
		return err
	}
	typ := String
	if typed {
		var ok bool
		if typ, ok = ParseType(typeName); !ok {
			return atomError("Property %s has an unknown type %s; the Table service supports Edm.String, Edm.Boolean, Edm.Int32, Edm.Int64, Edm.Double, Edm.DateTime, Edm.Guid and Edm.Binary.", quote(name), quote(typeName))
		}
	}
	switch {
	case null:
		return nil // absent, as a JSON null is
	case name == "Timestamp":
		return nil // server-owned; ignored if sent
	case name == "PartitionKey" || name == "RowKey":
		if typ != String {
			a.out.setKey(name, "", "annotated as "+typ.Name())
		} else {
			a.out.setKey(name, text.String(), "")
		}
		return nil
	}
	v, err := valueFromText(name, typ, atomLexical(typ, text.String()), nil)
	if err != nil {
		return err
	}
	a.out.Properties = append(a.out.Properties, Property{Name: name, Value: v})
	return nil
}

func (a *atomDecoder) checkDuplicate(name string) error {
	if a.names == nil {
		a.names = make(map[string]struct{})
	}
	if _, dup := a.names[name]; dup {
		return azerr.Newf(azerr.DuplicatePropertiesSpecified, "A property is specified more than one time: %s appears twice in the request body.", quote(name))
	}
	a.names[name] = struct{}{}
	return nil
}

// atomLexical maps the XML Schema spellings of a value (as .NET's XmlConvert reads them) onto
// the forms valueFromText reads: white space around a non-string value is dropped (inside
// Edm.Binary too, where base64 may be wrapped), 1 and 0 are Edm.Boolean true and false, INF
// and -INF are Edm.Double's infinities.
func atomLexical(typ Type, text string) string {
	switch typ {
	case String:
		return text
	case Binary:
		return strings.Join(strings.Fields(text), "")
	}
	text = strings.Trim(text, " \t\r\n")
	switch {
	case typ == Boolean && text == "1":
		return "true"
	case typ == Boolean && text == "0":
		return "false"
	case typ == Double && text == "INF":
		return "Infinity"
	case typ == Double && text == "-INF":
		return "-Infinity"
	}
	return text
}
