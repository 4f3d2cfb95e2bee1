package auth

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/xmltext"
)

// Get User Delegation Key is the same exchange on every service that signs user delegation
// SASes (blob.md §6.4; the Queue and Table services since 2025-07-05): a KeyInfo document in,
// a UserDelegationKey document out. Each service's HTTP layer reads the body and writes the
// answer; IssueDelegationKey does the rest.

// OpGetQueueUserDelegationKey and OpGetTableUserDelegationKey issue keys for queue and table
// SASes, as OpGetUserDelegationKey does for blob SASes: for bearer tokens only.
var (
	OpGetQueueUserDelegationKey = &Operation{Name: "Get User Delegation Key", Service: Queue, ResourceType: 's'}
	OpGetTableUserDelegationKey = &Operation{Name: "Get User Delegation Key", Service: Table, ResourceType: 's'}
)

// delegationKeyOp is Get User Delegation Key on each service, by the key's sks letter.
var delegationKeyOp = map[Service]*Operation{Blob: OpGetUserDelegationKey, Queue: OpGetQueueUserDelegationKey, Table: OpGetTableUserDelegationKey}

func isDelegationKeyOp(op *Operation) bool { return op != nil && delegationKeyOp[op.Service] == op }

// IssueDelegationKey answers Get User Delegation Key for account on service: g must be a bearer
// token's grant (403 AuthenticationFailed otherwise, as Azure answers an account key) with a
// role on the service; body is the request's KeyInfo; version, the service version the key is
// issued at, is what the key's SASes must name as skv. The answer is the UserDelegationKey
// document, its value derived from the account key so that nothing need be kept.
func (a *Authenticator) IssueDelegationKey(g *Grant, account string, service Service, version string, body []byte, now time.Time) ([]byte, error) {
	oid, tid, ok := g.Bearer()
	if !ok {
		return nil, azerr.Newf(azerr.AuthenticationFailed, "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.\nOnly a bearer token (Entra ID) may get a user delegation key.")
	}
	if err := g.Authorize(delegationKeyOp[service], Target{}); err != nil {
		return nil, err
	}
	if tid == "" {
		// Entra ID's tokens always name their tenant; a key without one (sktid) could sign no
		// SAS that Azure, or Tabula, takes.
		return nil, azerr.Newf(azerr.AuthenticationFailed, "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.\nThe bearer token names no tenant (tid claim): a user delegation key needs one.")
	}
	var info struct {
		XMLName          xml.Name `xml:"KeyInfo"`
		Start            *string  `xml:"Start"`
		Expiry           *string  `xml:"Expiry"`
		DelegatedUserTid string   `xml:"DelegatedUserTid"`
	}
	if err := xml.Unmarshal(body, &info); err != nil {
		return nil, azerr.Newf(azerr.InvalidXMLDocument, "XML specified is not syntactically valid: %v.", err)
	}
	if info.Expiry == nil {
		return nil, azerr.Newf(azerr.MissingRequiredXMLNode, "A required XML node was not specified in the request body: KeyInfo/Expiry.")
	}
	if tid := info.DelegatedUserTid; tid != "" && !isTenantID(tid) {
		// Azure asks Entra ID about the tenant; a value that is no tenant's id fails there.
		return nil, azerr.Newf(azerr.AuthenticationFailed, "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.\nThe delegated user tenant %q is not a tenant.", tid)
	}
	now = now.UTC()
	start := now
	if info.Start != nil && *info.Start != "" {
		var err error
		if start, err = time.Parse(time.RFC3339, *info.Start); err != nil {
			return nil, azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format: Start %q is not an ISO 8601 UTC time.", *info.Start)
		}
	}
	expiry, err := time.Parse(time.RFC3339, *info.Expiry)
	if err != nil {
		return nil, azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format: Expiry %q is not an ISO 8601 UTC time.", *info.Expiry)
	}
	if !expiry.After(start) || !expiry.After(now) || expiry.Sub(now) > MaxDelegationKeyLifetime {
		return nil, azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format: Expiry must be after Start and now, and at most %s from now.", MaxDelegationKeyLifetime)
	}
	k := DelegationKey{ObjectID: oid, TenantID: tid, Start: start.Truncate(time.Second), Expiry: expiry.Truncate(time.Second),
		Service: string(service.letter()), Version: version, DelegatedUserTenantID: info.DelegatedUserTid}
	value, ok := a.DelegationKeyValue(account, k)
	if !ok {
		return nil, fmt.Errorf("no key for hosted account %s", account)
	}
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><UserDelegationKey>`)
	elem := func(name, value string) {
		b.WriteString("<" + name + ">")
		b.Write(xmltext.AppendText(nil, value))
		b.WriteString("</" + name + ">")
	}
	elem("SignedOid", k.ObjectID)
	elem("SignedTid", k.TenantID)
	elem("SignedStart", FormatDelegationTime(k.Start))
	elem("SignedExpiry", FormatDelegationTime(k.Expiry))
	elem("SignedService", k.Service)
	elem("SignedVersion", k.Version)
	if k.DelegatedUserTenantID != "" {
		elem("SignedDelegatedUserTid", k.DelegatedUserTenantID)
	}
	elem("Value", value)
	b.WriteString("</UserDelegationKey>")
	return b.Bytes(), nil
}

// isTenantID reports whether s is a tenant id: a GUID other than the nil GUID.
func isTenantID(s string) bool {
	if len(s) != 36 || s == "00000000-0000-0000-0000-000000000000" {
		return false
	}
	for i, c := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'):
			return false
		}
	}
	return true
}
