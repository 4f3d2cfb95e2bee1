package auth

import (
	"bytes"
	"encoding/xml"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/xmltext"
)

// AccessPolicy is a stored access policy: a signed identifier set on a table, container or
// queue with Set ACL. A zero Start or Expiry, or an empty Permission, means the policy leaves
// that field to the SAS.
type AccessPolicy struct {
	ID         string    `json:"id"`
	Start      time.Time `json:"start,omitzero"`
	Expiry     time.Time `json:"expiry,omitzero"`
	Permission string    `json:"permission,omitempty"`
}

// MaxStoredPolicies is Azure's limit of stored access policies per table, container or queue.
const MaxStoredPolicies = 5

// maxPolicyIDLength is the longest signed identifier Azure accepts.
const maxPolicyIDLength = 64

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

// ParseSignedIdentifiers reads the body of Set Table/Container/Queue ACL: a <SignedIdentifiers>
// document with at most five identifiers, each an Id of at most 64 characters, unique, and an
// optional AccessPolicy whose Permission uses only letters from letters (the resource's SAS
// permissions). An empty body sets no policies.
//
// Errors: 400 InvalidXmlDocument for malformed XML, a missing or repeated Id, an Id too long
// or more than five identifiers (the real service answers a SignedIdentifier without Id this
// way, recording TestSetInvalidAccessPolicy); 400 InvalidXmlNodeValue for a Start or Expiry
// that is not an ISO 8601 time or date, or a permission letter outside letters.
func ParseSignedIdentifiers(body []byte, letters string) ([]AccessPolicy, error) {
	body = bytes.TrimSpace(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")))
	if len(body) == 0 {
		return nil, nil
	}
	var x xmlSignedIdentifiers
	if err := xml.Unmarshal(body, &x); err != nil {
		return nil, invalidXML("%v.", err)
	}
	if len(x.Identifiers) > MaxStoredPolicies {
		return nil, invalidXML("at most %d stored access policies are allowed, not %d.", MaxStoredPolicies, len(x.Identifiers))
	}
	var policies []AccessPolicy
	seen := map[string]bool{}
	for _, si := range x.Identifiers {
		if si.ID == nil || *si.ID == "" {
			return nil, invalidXML("every SignedIdentifier needs an Id.")
		}
		id := *si.ID
		if len(id) > maxPolicyIDLength || seen[id] {
			return nil, invalidXML("signed identifier %q is longer than %d characters or repeated.", id, maxPolicyIDLength)
		}
		seen[id] = true
		p := AccessPolicy{ID: id}
		if ap := si.AccessPolicy; ap != nil {
			var err error
			if ap.Start != nil && strings.TrimSpace(*ap.Start) != "" {
				if p.Start, err = parsePolicyTime(*ap.Start, "Start"); err != nil {
					return nil, err
				}
			}
			if ap.Expiry != nil && strings.TrimSpace(*ap.Expiry) != "" {
				if p.Expiry, err = parsePolicyTime(*ap.Expiry, "Expiry"); err != nil {
					return nil, err
				}
			}
			if ap.Permission != nil {
				p.Permission = *ap.Permission
				for _, c := range p.Permission {
					if !strings.ContainsRune(letters, c) {
						return nil, azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format: Permission %q may only use the letters %s.", p.Permission, letters)
					}
				}
			}
		}
		policies = append(policies, p)
	}
	return policies, nil
}

func invalidXML(format string, args ...any) error {
	return azerr.Newf(azerr.InvalidXMLDocument, "XML specified is not syntactically valid: "+format, args...)
}

// policyTimeLayouts are the forms Set ACL accepts for Start and Expiry: the reference lists
// YYYY-MM-DD, YYYY-MM-DDThh:mmTZD, YYYY-MM-DDThh:mm:ssTZD and fractional seconds.
var policyTimeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02"}

func parsePolicyTime(v, where string) (time.Time, error) {
	v = strings.TrimSpace(v)
	for _, layout := range policyTimeLayouts {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format: %s %q is not an ISO 8601 time or date.", where, v)
}

// policyTimeFormat is how Get ACL writes Start and Expiry, whatever form Set used.
const policyTimeFormat = "2006-01-02T15:04:05.0000000Z"

// AppendSignedIdentifiers appends the body of Get Table/Container/Queue ACL. An identifier
// whose policy sets nothing has no AccessPolicy element, however it was set (<AccessPolicy/>
// or none): Azure's answer, recorded for tables (the JS and Python SDKs' "null AP" and "empty
// signed identifier" tests) and queues (the JS SDK's, 2020).
func AppendSignedIdentifiers(b []byte, policies []AccessPolicy) []byte {
	if len(policies) == 0 {
		return append(b, "<SignedIdentifiers />"...)
	}
	var buf bytes.Buffer
	buf.WriteString("<SignedIdentifiers>")
	elem := func(name, value string) {
		buf.WriteString("<" + name + ">")
		buf.Write(xmltext.AppendText(nil, value))
		buf.WriteString("</" + name + ">")
	}
	for _, p := range policies {
		buf.WriteString("<SignedIdentifier>")
		elem("Id", p.ID)
		if !p.Start.IsZero() || !p.Expiry.IsZero() || p.Permission != "" {
			buf.WriteString("<AccessPolicy>")
			if !p.Start.IsZero() {
				elem("Start", p.Start.UTC().Format(policyTimeFormat))
			}
			if !p.Expiry.IsZero() {
				elem("Expiry", p.Expiry.UTC().Format(policyTimeFormat))
			}
			if p.Permission != "" {
				elem("Permission", p.Permission)
			}
			buf.WriteString("</AccessPolicy>")
		}
		buf.WriteString("</SignedIdentifier>")
	}
	buf.WriteString("</SignedIdentifiers>")
	return append(b, buf.Bytes()...)
}
