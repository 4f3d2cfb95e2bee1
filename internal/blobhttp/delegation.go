package blobhttp

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
)

// getUserDelegationKey serves Get User Delegation Key (blob.md §6.4): a bearer token's holder
// gets a key to sign user delegation SASes with. Any other credential is refused with 403
// AuthenticationFailed, as the real service does; the key's value is derived from the account
// key (auth.DelegationKey), so nothing is stored.
func (s *Server) getUserDelegationKey(rq *request) error {
	if err := rq.Note(auth.OpGetUserDelegationKey.Name, ""); err != nil {
		return err
	}
	oid, tid, ok := rq.grant.Bearer()
	if !ok {
		return azerr.Newf(azerr.AuthenticationFailed, "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.\nOnly a bearer token (Entra ID) may get a user delegation key.")
	}
	if err := rq.grant.Authorize(auth.OpGetUserDelegationKey, auth.Target{}); err != nil {
		return err
	}
	body, err := readXMLBody(rq, 64<<10)
	if err != nil {
		return err
	}
	var info struct {
		XMLName xml.Name `xml:"KeyInfo"`
		Start   *string  `xml:"Start"`
		Expiry  *string  `xml:"Expiry"`
	}
	if err := xml.Unmarshal(body, &info); err != nil {
		return azerr.Newf(azerr.InvalidXMLDocument, "XML specified is not syntactically valid: %v.", err)
	}
	if info.Expiry == nil {
		return azerr.Newf(azerr.MissingRequiredXMLNode, "A required XML node was not specified in the request body: KeyInfo/Expiry.")
	}
	now := time.Now().UTC()
	start := now
	if info.Start != nil && *info.Start != "" {
		if start, err = time.Parse(time.RFC3339, *info.Start); err != nil {
			return azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format: Start %q is not an ISO 8601 UTC time.", *info.Start)
		}
	}
	expiry, err := time.Parse(time.RFC3339, *info.Expiry)
	if err != nil {
		return azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format: Expiry %q is not an ISO 8601 UTC time.", *info.Expiry)
	}
	if !expiry.After(start) || expiry.Sub(now) > auth.MaxDelegationKeyLifetime {
		return azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format: Expiry must be after Start and at most %s from now.", auth.MaxDelegationKeyLifetime)
	}
	version := rq.Version
	if version == "" {
		version = defaultVersion
	}
	k := auth.DelegationKey{ObjectID: oid, TenantID: tid, Start: start.Truncate(time.Second), Expiry: expiry.Truncate(time.Second), Service: "b", Version: version}
	value, ok := s.auth.DelegationKeyValue(rq.Account, k)
	if !ok {
		return fmt.Errorf("no key for hosted account %s", rq.Account)
	}
	w := newXML()
	w.open("UserDelegationKey")
	w.elem("SignedOid", k.ObjectID)
	w.elem("SignedTid", k.TenantID)
	w.elem("SignedStart", auth.FormatDelegationTime(k.Start))
	w.elem("SignedExpiry", auth.FormatDelegationTime(k.Expiry))
	w.elem("SignedService", k.Service)
	w.elem("SignedVersion", k.Version)
	w.elem("Value", value)
	w.close("UserDelegationKey")
	return rq.writeXML(http.StatusOK, w.Bytes())
}
