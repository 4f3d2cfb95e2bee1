package serviceprops

import (
	"bytes"
	"encoding/xml"
	"strconv"
	"strings"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/xmltext"
)

type xmlRetention struct {
	Enabled *bool `xml:"Enabled"`
	Days    *int  `xml:"Days"`
}

type xmlLogging struct {
	Version         *string       `xml:"Version"`
	Delete          *bool         `xml:"Delete"`
	Read            *bool         `xml:"Read"`
	Write           *bool         `xml:"Write"`
	RetentionPolicy *xmlRetention `xml:"RetentionPolicy"`
}

type xmlMetrics struct {
	Version         *string       `xml:"Version"`
	Enabled         *bool         `xml:"Enabled"`
	IncludeAPIs     *bool         `xml:"IncludeAPIs"`
	RetentionPolicy *xmlRetention `xml:"RetentionPolicy"`
}

type xmlCorsRule struct {
	AllowedOrigins  *string `xml:"AllowedOrigins"`
	AllowedMethods  *string `xml:"AllowedMethods"`
	AllowedHeaders  *string `xml:"AllowedHeaders"`
	ExposedHeaders  *string `xml:"ExposedHeaders"`
	MaxAgeInSeconds *int    `xml:"MaxAgeInSeconds"`
}

type xmlDeleteRetention struct {
	Enabled              *bool `xml:"Enabled"`
	Days                 *int  `xml:"Days"`
	AllowPermanentDelete *bool `xml:"AllowPermanentDelete"`
}

type xmlStaticWebsite struct {
	Enabled                  *bool   `xml:"Enabled"`
	IndexDocument            *string `xml:"IndexDocument"`
	ErrorDocument404Path     *string `xml:"ErrorDocument404Path"`
	DefaultIndexDocumentPath *string `xml:"DefaultIndexDocumentPath"`
}

type xmlServiceProperties struct {
	XMLName       xml.Name    `xml:"StorageServiceProperties"`
	Logging       *xmlLogging `xml:"Logging"`
	HourMetrics   *xmlMetrics `xml:"HourMetrics"`
	MinuteMetrics *xmlMetrics `xml:"MinuteMetrics"`
	Cors          *struct {
		Rules []xmlCorsRule `xml:"CorsRule"`
	} `xml:"Cors"`
	DeleteRetentionPolicy *xmlDeleteRetention `xml:"DeleteRetentionPolicy"`
	StaticWebsite         *xmlStaticWebsite   `xml:"StaticWebsite"`
	DefaultServiceVersion *string             `xml:"DefaultServiceVersion"`
}

func missingNode(name string) error {
	return azerr.Newf(azerr.MissingRequiredXMLNode, "A required XML node was not specified in the request body: %s.", name)
}

func badXML(format string, args ...any) error {
	return azerr.Newf(azerr.InvalidXMLDocument, "XML specified is not syntactically valid: "+format, args...)
}

func badValue(format string, args ...any) error {
	return azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format: "+format, args...)
}

// maxCorsRules is Azure's limit of CORS rules per service.
const maxCorsRules = 5

// corsMethods are the methods a CORS rule may allow.
var corsMethods = map[string]bool{"DELETE": true, "GET": true, "HEAD": true, "MERGE": true, "POST": true, "OPTIONS": true, "PUT": true, "PATCH": true}

// ParseUpdate reads the body of Set Service Properties for service and returns the change it
// asks for: each element present replaces the stored one, an omitted element keeps it, and
// <Cors/> with no rules removes them all. The Blob extras are read for the Blob service only.
//
// Errors: 400 InvalidXmlDocument for malformed XML and out-of-range values (Azure answers
// retention days of 366 this way), MissingRequiredXmlNode for a required child missing, and
// InvalidXmlNodeValue for a bad CORS rule.
func ParseUpdate(body []byte, service auth.Service) (func(*Properties), error) {
	var x xmlServiceProperties
	if err := xml.Unmarshal(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), &x); err != nil {
		return nil, badXML("%v.", err)
	}
	var next Properties
	var err error
	if x.Logging != nil {
		l := x.Logging
		switch {
		case l.Version == nil:
			return nil, missingNode("Logging/Version")
		case l.Delete == nil:
			return nil, missingNode("Logging/Delete")
		case l.Read == nil:
			return nil, missingNode("Logging/Read")
		case l.Write == nil:
			return nil, missingNode("Logging/Write")
		}
		next.Logging = Logging{Version: *l.Version, Read: *l.Read, Write: *l.Write, Delete: *l.Delete}
		if next.Logging.Retention, err = l.RetentionPolicy.toRetention("Logging"); err != nil {
			return nil, err
		}
	}
	if x.HourMetrics != nil {
		if next.HourMetrics, err = x.HourMetrics.toMetrics("HourMetrics"); err != nil {
			return nil, err
		}
	}
	if x.MinuteMetrics != nil {
		if next.MinuteMetrics, err = x.MinuteMetrics.toMetrics("MinuteMetrics"); err != nil {
			return nil, err
		}
	}
	if x.Cors != nil {
		if len(x.Cors.Rules) > maxCorsRules {
			return nil, badXML("at most %d CORS rules are allowed, not %d.", maxCorsRules, len(x.Cors.Rules))
		}
		for i, xr := range x.Cors.Rules {
			r, err := xr.toRule(i)
			if err != nil {
				return nil, err
			}
			next.Cors = append(next.Cors, r)
		}
	}
	blob := service == auth.Blob
	if blob && x.DeleteRetentionPolicy != nil {
		if next.DeleteRetentionPolicy, err = x.DeleteRetentionPolicy.toDeleteRetention(); err != nil {
			return nil, err
		}
	}
	if blob && x.StaticWebsite != nil {
		w := x.StaticWebsite
		if w.Enabled == nil {
			return nil, missingNode("StaticWebsite/Enabled")
		}
		next.StaticWebsite = StaticWebsite{Enabled: *w.Enabled, IndexDocument: deref(w.IndexDocument),
			ErrorDocument404Path: deref(w.ErrorDocument404Path), DefaultIndexDocumentPath: deref(w.DefaultIndexDocumentPath)}
	}
	if blob && x.DefaultServiceVersion != nil {
		v := strings.TrimSpace(*x.DefaultServiceVersion)
		if !isVersion(v) {
			return nil, badValue("DefaultServiceVersion %q is not a service version (YYYY-MM-DD).", v)
		}
		next.DefaultServiceVersion = v
	}
	return func(p *Properties) {
		if x.Logging != nil {
			p.Logging = next.Logging
		}
		if x.HourMetrics != nil {
			p.HourMetrics = next.HourMetrics
		}
		if x.MinuteMetrics != nil {
			p.MinuteMetrics = next.MinuteMetrics
		}
		if x.Cors != nil {
			p.Cors = next.Cors
		}
		if blob && x.DeleteRetentionPolicy != nil {
			p.DeleteRetentionPolicy = next.DeleteRetentionPolicy
		}
		if blob && x.StaticWebsite != nil {
			p.StaticWebsite = next.StaticWebsite
		}
		if blob && x.DefaultServiceVersion != nil {
			p.DefaultServiceVersion = next.DefaultServiceVersion
		}
	}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func isVersion(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if i != 4 && i != 7 && (v[i] < '0' || v[i] > '9') {
			return false
		}
	}
	return true
}

// retentionDays checks a retention period: Azure answers InvalidXmlDocument for days out of
// range (seen in a recording with 366).
func retentionDays(where string, days *int) (int, error) {
	if days == nil {
		return 0, missingNode(where + "/Days")
	}
	if *days < 1 || *days > 365 {
		return 0, badXML("%s/Days must be 1 to 365, not %d.", where, *days)
	}
	return *days, nil
}

func (x *xmlRetention) toRetention(where string) (RetentionPolicy, error) {
	if x == nil {
		return RetentionPolicy{}, missingNode(where + "/RetentionPolicy")
	}
	if x.Enabled == nil {
		return RetentionPolicy{}, missingNode(where + "/RetentionPolicy/Enabled")
	}
	r := RetentionPolicy{Enabled: *x.Enabled}
	if r.Enabled {
		var err error
		if r.Days, err = retentionDays(where+"/RetentionPolicy", x.Days); err != nil {
			return r, err
		}
	}
	return r, nil
}

func (x *xmlDeleteRetention) toDeleteRetention() (DeleteRetention, error) {
	if x.Enabled == nil {
		return DeleteRetention{}, missingNode("DeleteRetentionPolicy/Enabled")
	}
	r := DeleteRetention{Enabled: *x.Enabled}
	if x.AllowPermanentDelete != nil {
		r.AllowPermanentDelete = *x.AllowPermanentDelete
	}
	if r.Enabled {
		if x.Days == nil {
			// Not MissingRequiredXmlNode: the real service answers this one as a malformed
			// document (azblob's recorded TestAccountDeleteRetentionPolicyDaysOmitted).
			return r, badXML("DeleteRetentionPolicy/Days is required when the policy is enabled.")
		}
		var err error
		if r.Days, err = retentionDays("DeleteRetentionPolicy", x.Days); err != nil {
			return r, err
		}
	}
	return r, nil
}

func (x *xmlMetrics) toMetrics(where string) (Metrics, error) {
	if x.Version == nil {
		return Metrics{}, missingNode(where + "/Version")
	}
	if x.Enabled == nil {
		return Metrics{}, missingNode(where + "/Enabled")
	}
	m := Metrics{Version: *x.Version, Enabled: *x.Enabled}
	if m.Enabled {
		if x.IncludeAPIs == nil {
			return m, missingNode(where + "/IncludeAPIs")
		}
		m.IncludeAPIs = *x.IncludeAPIs
	}
	var err error
	m.Retention, err = x.RetentionPolicy.toRetention(where)
	return m, err
}

// SplitList splits a comma-separated CORS list, dropping blanks.
func SplitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func (x *xmlCorsRule) toRule(i int) (CorsRule, error) {
	where := "Cors/CorsRule[" + strconv.Itoa(i) + "]"
	switch {
	case x.AllowedOrigins == nil:
		return CorsRule{}, missingNode(where + "/AllowedOrigins")
	case x.AllowedMethods == nil:
		return CorsRule{}, missingNode(where + "/AllowedMethods")
	case x.AllowedHeaders == nil:
		return CorsRule{}, missingNode(where + "/AllowedHeaders")
	case x.ExposedHeaders == nil:
		return CorsRule{}, missingNode(where + "/ExposedHeaders")
	case x.MaxAgeInSeconds == nil:
		return CorsRule{}, missingNode(where + "/MaxAgeInSeconds")
	}
	r := CorsRule{
		AllowedOrigins: SplitList(*x.AllowedOrigins), AllowedMethods: SplitList(*x.AllowedMethods),
		AllowedHeaders: SplitList(*x.AllowedHeaders), ExposedHeaders: SplitList(*x.ExposedHeaders),
		MaxAgeInSeconds: *x.MaxAgeInSeconds,
	}
	if len(r.AllowedOrigins) == 0 || len(r.AllowedMethods) == 0 {
		return r, badValue("%s needs at least one origin and one method.", where)
	}
	for _, m := range r.AllowedMethods {
		if !corsMethods[m] {
			return r, badValue("%s/AllowedMethods has %q; allowed are DELETE, GET, HEAD, MERGE, POST, OPTIONS, PUT, PATCH.", where, m)
		}
	}
	if r.MaxAgeInSeconds < 0 {
		return r, badValue("%s/MaxAgeInSeconds must not be negative.", where)
	}
	if len(r.AllowedOrigins) > 64 || len(r.AllowedHeaders) > 64 || len(r.ExposedHeaders) > 64 {
		return r, badXML("%s lists more than 64 origins or headers.", where)
	}
	return r, nil
}

// AppendXML appends p as the body of Get Service Properties for service, in the real service's
// element order, without the XML declaration.
func AppendXML(b []byte, p Properties, service auth.Service) []byte {
	var w xmlWriter
	w.open("StorageServiceProperties")
	w.open("Logging")
	w.elem("Version", p.Logging.Version)
	w.elem("Read", strconv.FormatBool(p.Logging.Read))
	w.elem("Write", strconv.FormatBool(p.Logging.Write))
	w.elem("Delete", strconv.FormatBool(p.Logging.Delete))
	w.retention(p.Logging.Retention)
	w.close("Logging")
	w.metrics("HourMetrics", p.HourMetrics)
	w.metrics("MinuteMetrics", p.MinuteMetrics)
	if len(p.Cors) == 0 {
		w.buf.WriteString("<Cors />")
	} else {
		w.open("Cors")
		for _, r := range p.Cors {
			w.open("CorsRule")
			w.elem("AllowedMethods", strings.Join(r.AllowedMethods, ","))
			w.elem("AllowedOrigins", strings.Join(r.AllowedOrigins, ","))
			w.elem("AllowedHeaders", headerList(r.AllowedHeaders))
			w.elem("ExposedHeaders", headerList(r.ExposedHeaders))
			w.elem("MaxAgeInSeconds", strconv.Itoa(r.MaxAgeInSeconds))
			w.close("CorsRule")
		}
		w.close("Cors")
	}
	if service == auth.Blob {
		d := p.DeleteRetentionPolicy
		w.open("DeleteRetentionPolicy")
		w.elem("Enabled", strconv.FormatBool(d.Enabled))
		if d.Enabled {
			w.elem("Days", strconv.Itoa(d.Days))
			w.elem("AllowPermanentDelete", strconv.FormatBool(d.AllowPermanentDelete))
		}
		w.close("DeleteRetentionPolicy")
		s := p.StaticWebsite
		w.open("StaticWebsite")
		w.elem("Enabled", strconv.FormatBool(s.Enabled))
		if s.Enabled {
			w.optional("IndexDocument", s.IndexDocument)
			w.optional("ErrorDocument404Path", s.ErrorDocument404Path)
			w.optional("DefaultIndexDocumentPath", s.DefaultIndexDocumentPath)
		}
		w.close("StaticWebsite")
		w.optional("DefaultServiceVersion", p.DefaultServiceVersion)
	}
	w.close("StorageServiceProperties")
	return append(b, w.buf.Bytes()...)
}

type xmlWriter struct{ buf bytes.Buffer }

func (w *xmlWriter) open(name string)  { w.buf.WriteString("<" + name + ">") }
func (w *xmlWriter) close(name string) { w.buf.WriteString("</" + name + ">") }

func (w *xmlWriter) elem(name, value string) {
	w.open(name)
	w.buf.Write(xmltext.AppendText(w.buf.AvailableBuffer(), value))
	w.close(name)
}

func (w *xmlWriter) optional(name, value string) {
	if value != "" {
		w.elem(name, value)
	}
}

func (w *xmlWriter) retention(r RetentionPolicy) {
	w.open("RetentionPolicy")
	w.elem("Enabled", strconv.FormatBool(r.Enabled))
	if r.Enabled {
		w.elem("Days", strconv.Itoa(r.Days))
	}
	w.close("RetentionPolicy")
}

func (w *xmlWriter) metrics(name string, m Metrics) {
	w.open(name)
	w.elem("Version", m.Version)
	w.elem("Enabled", strconv.FormatBool(m.Enabled))
	if m.Enabled {
		w.elem("IncludeAPIs", strconv.FormatBool(m.IncludeAPIs))
	}
	w.retention(m.Retention)
	w.close(name)
}

// headerList writes a CORS rule's header names as the service lists them: the exact names,
// then the prefixes (ending in '*'), each in the order they were set (the Python SDK's
// recording of test_set_cors).
func headerList(names []string) string {
	ordered := make([]string, 0, len(names))
	for _, prefixes := range []bool{false, true} {
		for _, n := range names {
			if strings.HasSuffix(n, "*") == prefixes {
				ordered = append(ordered, n)
			}
		}
	}
	return strings.Join(ordered, ",")
}
