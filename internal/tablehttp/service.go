package tablehttp

import (
	"bytes"
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/table"
)

// The service-level and ACL operations speak plain XML, not OData.

const xmlHeader = `<?xml version="1.0" encoding="utf-8"?>`

func (rq *request) writeXML(status int, body string) {
	h := rq.w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	rq.w.WriteHeader(status)
	if rq.r.Method != http.MethodHead {
		_, _ = rq.w.Write([]byte(body))
	}
}

// routeXML serves the operations selected by restype/comp: service properties and stats on
// the service root, ACLs on a table.
func (s *Server) routeXML(rq *request, res resource, method string) error {
	rq.jsonErrors = false
	q := rq.query
	restype, comp := q.Get("restype"), q.Get("comp")
	switch {
	case res.kind == resService && restype == "service" && comp == "properties":
		switch method {
		case http.MethodGet:
			return s.authorized(rq, auth.OpGetServiceProperties, "", "", "", s.getServiceProperties)
		case http.MethodPut:
			return s.authorized(rq, auth.OpSetServiceProperties, "", "", "", s.setServiceProperties)
		}
		return unsupportedVerb(method)
	case res.kind == resService && restype == "service" && comp == "stats":
		if method == http.MethodGet {
			return s.authorized(rq, auth.OpGetServiceStats, "", "", "", s.getServiceStats)
		}
		return unsupportedVerb(method)
	case res.kind == resEntities && comp == "acl" && restype == "":
		switch method {
		case http.MethodGet, http.MethodHead:
			return s.authorized(rq, auth.OpGetTableACL, res.table, "", "", func(rq *request) error { return s.getTableACL(rq, res.table) })
		case http.MethodPut:
			return s.authorized(rq, auth.OpSetTableACL, res.table, "", "", func(rq *request) error { return s.setTableACL(rq, res.table) })
		}
		return unsupportedVerb(method)
	case res.kind == resService && restype == "":
		return azerr.Newf(azerr.MissingRequiredQueryParameter, "A required query parameter was not specified for this request: the service root needs restype=service&comp=properties or comp=stats.")
	}
	return azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid: restype=%q, comp=%q is not an operation on %s.", restype, comp, rq.path)
}

func unsupportedVerb(method string) error {
	return azerr.Newf(azerr.UnsupportedHTTPVerb, "The resource doesn't support the specified HTTP verb %s.", method)
}

// --- service properties ---

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

type xmlServiceProperties struct {
	XMLName       xml.Name    `xml:"StorageServiceProperties"`
	Logging       *xmlLogging `xml:"Logging"`
	HourMetrics   *xmlMetrics `xml:"HourMetrics"`
	MinuteMetrics *xmlMetrics `xml:"MinuteMetrics"`
	Cors          *struct {
		Rules []xmlCorsRule `xml:"CorsRule"`
	} `xml:"Cors"`
}

func missingNode(name string) error {
	return azerr.Newf(azerr.MissingRequiredXMLNode, "A required XML node was not specified in the request body: %s.", name)
}

func badXML(format string, args ...any) error {
	return azerr.Newf(azerr.InvalidXMLDocument, "XML specified is not syntactically valid: "+format, args...)
}

func (x *xmlRetention) toRetention(where string) (table.RetentionPolicy, error) {
	if x == nil {
		return table.RetentionPolicy{}, missingNode(where + "/RetentionPolicy")
	}
	if x.Enabled == nil {
		return table.RetentionPolicy{}, missingNode(where + "/RetentionPolicy/Enabled")
	}
	r := table.RetentionPolicy{Enabled: *x.Enabled}
	if r.Enabled {
		if x.Days == nil {
			return r, missingNode(where + "/RetentionPolicy/Days")
		}
		// Azure answers InvalidXmlDocument for days out of range (seen in a recording with 366).
		if *x.Days < 1 || *x.Days > 365 {
			return r, badXML("%s/RetentionPolicy/Days must be 1 to 365, not %d.", where, *x.Days)
		}
		r.Days = *x.Days
	}
	return r, nil
}

func (x *xmlMetrics) toMetrics(where string) (table.Metrics, error) {
	if x.Version == nil {
		return table.Metrics{}, missingNode(where + "/Version")
	}
	if x.Enabled == nil {
		return table.Metrics{}, missingNode(where + "/Enabled")
	}
	m := table.Metrics{Version: *x.Version, Enabled: *x.Enabled}
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

var corsMethods = map[string]bool{"DELETE": true, "GET": true, "HEAD": true, "MERGE": true, "POST": true, "OPTIONS": true, "PUT": true, "PATCH": true}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func (x *xmlCorsRule) toRule(i int) (table.CorsRule, error) {
	where := "Cors/CorsRule[" + strconv.Itoa(i) + "]"
	switch {
	case x.AllowedOrigins == nil:
		return table.CorsRule{}, missingNode(where + "/AllowedOrigins")
	case x.AllowedMethods == nil:
		return table.CorsRule{}, missingNode(where + "/AllowedMethods")
	case x.AllowedHeaders == nil:
		return table.CorsRule{}, missingNode(where + "/AllowedHeaders")
	case x.ExposedHeaders == nil:
		return table.CorsRule{}, missingNode(where + "/ExposedHeaders")
	case x.MaxAgeInSeconds == nil:
		return table.CorsRule{}, missingNode(where + "/MaxAgeInSeconds")
	}
	r := table.CorsRule{
		AllowedOrigins: splitList(*x.AllowedOrigins), AllowedMethods: splitList(*x.AllowedMethods),
		AllowedHeaders: splitList(*x.AllowedHeaders), ExposedHeaders: splitList(*x.ExposedHeaders),
		MaxAgeInSeconds: *x.MaxAgeInSeconds,
	}
	if len(r.AllowedOrigins) == 0 || len(r.AllowedMethods) == 0 {
		return r, azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format: %s needs at least one origin and one method.", where)
	}
	for _, m := range r.AllowedMethods {
		if !corsMethods[m] {
			return r, azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format: %s/AllowedMethods has %q; allowed are DELETE, GET, HEAD, MERGE, POST, OPTIONS, PUT, PATCH.", where, m)
		}
	}
	if r.MaxAgeInSeconds < 0 {
		return r, azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format: %s/MaxAgeInSeconds must not be negative.", where)
	}
	if len(r.AllowedOrigins) > 64 || len(r.AllowedHeaders) > 64 || len(r.ExposedHeaders) > 64 {
		return r, badXML("%s lists more than 64 origins or headers.", where)
	}
	return r, nil
}

// setServiceProperties applies Set Table Service Properties: each element present replaces
// the stored one, an omitted element keeps it, and <Cors/> with no rules removes them all.
func (s *Server) setServiceProperties(rq *request) error {
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	var x xmlServiceProperties
	if err := xml.Unmarshal(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), &x); err != nil {
		return badXML("%v.", err)
	}
	if x.Cors != nil && len(x.Cors.Rules) > 5 {
		return badXML("at most 5 CORS rules are allowed, not %d.", len(x.Cors.Rules))
	}
	var next table.ServiceProperties
	if x.Logging != nil {
		l := x.Logging
		switch {
		case l.Version == nil:
			return missingNode("Logging/Version")
		case l.Delete == nil:
			return missingNode("Logging/Delete")
		case l.Read == nil:
			return missingNode("Logging/Read")
		case l.Write == nil:
			return missingNode("Logging/Write")
		}
		next.Logging = table.Logging{Version: *l.Version, Read: *l.Read, Write: *l.Write, Delete: *l.Delete}
		if next.Logging.Retention, err = l.RetentionPolicy.toRetention("Logging"); err != nil {
			return err
		}
	}
	if x.HourMetrics != nil {
		if next.HourMetrics, err = x.HourMetrics.toMetrics("HourMetrics"); err != nil {
			return err
		}
	}
	if x.MinuteMetrics != nil {
		if next.MinuteMetrics, err = x.MinuteMetrics.toMetrics("MinuteMetrics"); err != nil {
			return err
		}
	}
	if x.Cors != nil {
		for i, xr := range x.Cors.Rules {
			r, err := xr.toRule(i)
			if err != nil {
				return err
			}
			next.Cors = append(next.Cors, r)
		}
	}
	err = s.svc.SetServiceProperties(rq.ctx, rq.account, func(p *table.ServiceProperties) error {
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
		return nil
	})
	if err != nil {
		return err
	}
	rq.w.Header().Set("Content-Length", "0")
	rq.w.WriteHeader(http.StatusAccepted)
	return nil
}

func appendElem(b *strings.Builder, name, value string) {
	b.WriteString("<" + name + ">")
	_ = xml.EscapeText(b, []byte(value))
	b.WriteString("</" + name + ">")
}

func appendRetention(b *strings.Builder, r table.RetentionPolicy) {
	b.WriteString("<RetentionPolicy>")
	appendElem(b, "Enabled", strconv.FormatBool(r.Enabled))
	if r.Enabled {
		appendElem(b, "Days", strconv.Itoa(r.Days))
	}
	b.WriteString("</RetentionPolicy>")
}

func appendMetrics(b *strings.Builder, name string, m table.Metrics) {
	b.WriteString("<" + name + ">")
	appendElem(b, "Version", m.Version)
	appendElem(b, "Enabled", strconv.FormatBool(m.Enabled))
	if m.Enabled {
		appendElem(b, "IncludeAPIs", strconv.FormatBool(m.IncludeAPIs))
	}
	appendRetention(b, m.Retention)
	b.WriteString("</" + name + ">")
}

// getServiceProperties writes the properties in the real service's element order.
func (s *Server) getServiceProperties(rq *request) error {
	p, err := s.svc.ServiceProperties(rq.ctx, rq.account)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(xmlHeader + "<StorageServiceProperties><Logging>")
	appendElem(&b, "Version", p.Logging.Version)
	appendElem(&b, "Read", strconv.FormatBool(p.Logging.Read))
	appendElem(&b, "Write", strconv.FormatBool(p.Logging.Write))
	appendElem(&b, "Delete", strconv.FormatBool(p.Logging.Delete))
	appendRetention(&b, p.Logging.Retention)
	b.WriteString("</Logging>")
	appendMetrics(&b, "HourMetrics", p.HourMetrics)
	appendMetrics(&b, "MinuteMetrics", p.MinuteMetrics)
	if len(p.Cors) == 0 {
		b.WriteString("<Cors />")
	} else {
		b.WriteString("<Cors>")
		for _, r := range p.Cors {
			b.WriteString("<CorsRule>")
			appendElem(&b, "AllowedMethods", strings.Join(r.AllowedMethods, ","))
			appendElem(&b, "AllowedOrigins", strings.Join(r.AllowedOrigins, ","))
			appendElem(&b, "AllowedHeaders", strings.Join(r.AllowedHeaders, ","))
			appendElem(&b, "ExposedHeaders", strings.Join(r.ExposedHeaders, ","))
			appendElem(&b, "MaxAgeInSeconds", strconv.Itoa(r.MaxAgeInSeconds))
			b.WriteString("</CorsRule>")
		}
		b.WriteString("</Cors>")
	}
	b.WriteString("</StorageServiceProperties>")
	rq.writeXML(http.StatusOK, b.String())
	return nil
}

// getServiceStats reports geo-replication. Tabula has one copy of the data, which its
// secondary endpoint serves too, so replication is always live and current. Azure answers
// only on the secondary endpoint; Tabula also answers on the primary, which is what local
// users of an SDK client built on the primary URL expect.
func (s *Server) getServiceStats(rq *request) error {
	rq.writeXML(http.StatusOK, xmlHeader+"<StorageServiceStats><GeoReplication><Status>live</Status><LastSyncTime>"+
		time.Now().UTC().Format(http.TimeFormat)+"</LastSyncTime></GeoReplication></StorageServiceStats>")
	return nil
}

// --- table ACL ---

type xmlSignedIdentifiers struct {
	XMLName     xml.Name `xml:"SignedIdentifiers"`
	Identifiers []struct {
		ID           *string `xml:"Id"`
		AccessPolicy *struct {
			Start      *string `xml:"Start"`
			Expiry     *string `xml:"Expiry"`
			Permission *string `xml:"Permission"`
		} `xml:"AccessPolicy"`
	} `xml:"SignedIdentifier"`
}

// MaxStoredPolicies is Azure's limit of stored access policies per table.
const MaxStoredPolicies = 5

func parseACLTime(v, where string) (time.Time, error) {
	ticks, err := edm.ParseDateTime(strings.TrimSpace(v))
	if err != nil {
		return time.Time{}, azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format: %s %q is not an ISO 8601 UTC time.", where, v)
	}
	return ticks.Time(), nil
}

func (s *Server) setTableACL(rq *request, tableName string) error {
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	var policies []table.AccessPolicy
	if body = bytes.TrimSpace(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))); len(body) > 0 {
		var x xmlSignedIdentifiers
		if err := xml.Unmarshal(body, &x); err != nil {
			return badXML("%v.", err)
		}
		if len(x.Identifiers) > MaxStoredPolicies {
			return badXML("a table has at most %d stored access policies, not %d.", MaxStoredPolicies, len(x.Identifiers))
		}
		seen := map[string]bool{}
		for _, si := range x.Identifiers {
			if si.ID == nil || *si.ID == "" {
				return missingNode("SignedIdentifier/Id")
			}
			id := *si.ID
			if len(id) > 64 || seen[id] {
				return badXML("signed identifier %q is longer than 64 characters or repeated.", id)
			}
			seen[id] = true
			p := table.AccessPolicy{ID: id}
			if ap := si.AccessPolicy; ap != nil {
				p.HasPolicy = true
				if ap.Start != nil && *ap.Start != "" {
					if p.Start, err = parseACLTime(*ap.Start, "Start"); err != nil {
						return err
					}
				}
				if ap.Expiry != nil && *ap.Expiry != "" {
					if p.Expiry, err = parseACLTime(*ap.Expiry, "Expiry"); err != nil {
						return err
					}
				}
				if ap.Permission != nil {
					p.Permission = *ap.Permission
					for _, c := range p.Permission {
						if !strings.ContainsRune("raud", c) {
							return azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format: Permission %q may only use r, a, u and d.", p.Permission)
						}
					}
				}
			}
			policies = append(policies, p)
		}
	}
	if err := s.svc.SetTablePolicies(rq.ctx, rq.account, tableName, policies); err != nil {
		return err
	}
	rq.w.Header().Set("Content-Length", "0")
	rq.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getTableACL(rq *request, tableName string) error {
	t, err := s.svc.Table(rq.ctx, rq.account, tableName)
	if err != nil {
		return err
	}
	if len(t.Policies) == 0 {
		rq.writeXML(http.StatusOK, xmlHeader+"<SignedIdentifiers />")
		return nil
	}
	var b strings.Builder
	b.WriteString(xmlHeader + "<SignedIdentifiers>")
	for _, p := range t.Policies {
		b.WriteString("<SignedIdentifier>")
		appendElem(&b, "Id", p.ID)
		if p.HasPolicy {
			b.WriteString("<AccessPolicy>")
			if !p.Start.IsZero() {
				appendElem(&b, "Start", string(edm.TicksOf(p.Start).AppendText(nil, true)))
			}
			if !p.Expiry.IsZero() {
				appendElem(&b, "Expiry", string(edm.TicksOf(p.Expiry).AppendText(nil, true)))
			}
			if p.Permission != "" {
				appendElem(&b, "Permission", p.Permission)
			}
			b.WriteString("</AccessPolicy>")
		}
		b.WriteString("</SignedIdentifier>")
	}
	b.WriteString("</SignedIdentifiers>")
	rq.writeXML(http.StatusOK, b.String())
	return nil
}
