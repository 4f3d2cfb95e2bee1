package tablehttp

import (
	"net/http"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/edm"
)

// The service versions that changed the payload formats (json-format.md §1).
const (
	// versionJSON is the first version with JSON payloads: before it only Atom is spoken, and
	// errors are the legacy <error> document.
	versionJSON = "2013-08-15"
	// versionJSONOnly is the first version without Atom.
	versionJSONOnly = "2015-12-11"
)

// format is a negotiated response payload: Atom, or JSON at a metadata level.
type format struct {
	atom  bool
	level edm.Metadata
}

// negotiate picks the response format of an OData operation from $format, else Accept.
func negotiate(rq *request) (format, error) {
	spec := rq.Query.Get("$format")
	if spec == "" {
		spec = rq.R.Header.Get("Accept")
	}
	return negotiateHeader(spec, rq.Version, rq.R.Header)
}

// negotiateHeader reads an Accept (or $format) value as the service does under version (""
// when the request named none), h holding the request's DataServiceVersion headers.
//
// The real service speaks Atom up to version 2015-04-05 and JSON from 2013-08-15 on
// (json-format.md §1; the storage emulator's TableProtocolHead enforces the same bounds).
// Where both exist the first media type of the list that is supported wins, and a wildcard or
// a missing Accept gets the service's default: Atom before 2015-12-11 — WCF Data Services'
// default, which the Node.js library of 2013 relied on — and minimal-metadata JSON after, as
// the real service answers Accept: application/json. A request that names no version gets
// JSON by default but may ask for either.
//
// Refusals: JSON asked under a version before 2013-08-15, or with a MaxDataServiceVersion
// (else DataServiceVersion) below 3.0 before 2015-12-11, is 415 JsonFormatNotSupported; Atom
// asked from 2015-12-11 on is 415 AtomFormatNotSupported, unless the list also names JSON
// (which then wins, as before); odata=verbose is JsonVerboseFormatNotSupported.
func negotiateHeader(spec, version string, h http.Header) (format, error) {
	def := format{level: edm.MinimalMetadata, atom: version != "" && version < versionJSONOnly}
	if spec == "" {
		return def, nil
	}
	atomOK := version == "" || version < versionJSONOnly
	sawAtom := false
	for _, item := range strings.Split(spec, ",") {
		mt, params, _ := strings.Cut(strings.TrimSpace(item), ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
		switch mt {
		case "application/json", "json":
			if !jsonAllowed(version, h) {
				return format{}, azerr.New(azerr.JSONFormatNotSupported)
			}
			level := "minimalmetadata"
			for _, p := range strings.Split(params, ";") {
				k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(k, "odata") {
					level = strings.ToLower(strings.TrimSpace(v))
				}
			}
			switch level {
			case "nometadata":
				return format{level: edm.NoMetadata}, nil
			case "minimalmetadata":
				return format{level: edm.MinimalMetadata}, nil
			case "fullmetadata":
				return format{level: edm.FullMetadata}, nil
			case "verbose":
				return format{}, azerr.Newf(azerr.Code("JsonVerboseFormatNotSupported"), "The verbose JSON format is not supported; use odata=nometadata, minimalmetadata or fullmetadata.")
			}
			return format{level: edm.MinimalMetadata}, nil
		case "application/atom+xml", "application/xml", "atom":
			if atomOK {
				return format{atom: true}, nil
			}
			sawAtom = true
		case "application/*", "*/*":
			return def, nil
		}
	}
	if sawAtom {
		return format{}, azerr.New(azerr.AtomFormatNotSupported)
	}
	return def, nil
}

// jsonAllowed reports whether JSON may be spoken under version: not before 2013-08-15, and
// before 2015-12-11 only to clients whose MaxDataServiceVersion (else DataServiceVersion)
// admits OData 3.0. Modern SDKs always do, so the headers are not read for them.
func jsonAllowed(version string, h http.Header) bool {
	switch {
	case version == "" || version >= versionJSONOnly:
		return true
	case version < versionJSON:
		return false
	}
	dsv := h.Get("MaxDataServiceVersion")
	if dsv == "" {
		dsv = h.Get("DataServiceVersion")
	}
	major, digits := 0, 0
	for ; digits < len(dsv) && dsv[digits] >= '0' && dsv[digits] <= '9' && major < 100; digits++ {
		major = major*10 + int(dsv[digits]-'0')
	}
	// An unreadable value leaves the default, OData 3.0, as the emulator's reading does.
	return digits == 0 || major >= 3
}

// bodyIsAtom reports whether a request body is Atom, by its Content-Type: application/atom+xml
// or application/xml (legacy clients send "application/atom+xml;type=entry"). Anything else,
// or none, is read as JSON. Each format is refused outside the versions that speak it, with
// the codes of negotiateHeader.
func bodyIsAtom(contentType, version string, h http.Header) (bool, error) {
	mt, _, _ := strings.Cut(contentType, ";")
	switch strings.ToLower(strings.TrimSpace(mt)) {
	case "application/atom+xml", "application/xml":
		if version != "" && version >= versionJSONOnly {
			return false, azerr.New(azerr.AtomFormatNotSupported)
		}
		return true, nil
	case "application/json":
		if !jsonAllowed(version, h) {
			return false, azerr.New(azerr.JSONFormatNotSupported)
		}
	}
	return false, nil
}

// decodeEntity reads an entity body in the format its Content-Type names.
func decodeEntity(h http.Header, body []byte, version string) (edm.Decoded, error) {
	atom, err := bodyIsAtom(h.Get("Content-Type"), version, h)
	if err != nil {
		return edm.Decoded{}, err
	}
	if atom {
		return edm.DecodeAtom(body)
	}
	return edm.DecodeJSON(body)
}
