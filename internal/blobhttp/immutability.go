package blobhttp

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/blob"
)

// Version-level immutability over HTTP: Set and Delete Blob Immutability Policy, Set Blob
// Legal Hold, the headers that give a new version its protection, and those that report it.

// protection reads the protection a write gives the version it makes:
// x-ms-immutability-policy-until-date (RFC 1123), x-ms-immutability-policy-mode and
// x-ms-legal-hold.
func protection(h http.Header) (blob.Protection, error) {
	var p blob.Protection
	var err error
	if p.Until, err = policyDate(h); err != nil {
		return p, err
	}
	p.Mode = h.Get("x-ms-immutability-policy-mode")
	if p.Mode != "" && p.Until.IsZero() {
		return p, missingHeader("x-ms-immutability-policy-until-date")
	}
	if v := h.Get("x-ms-legal-hold"); v != "" {
		hold, err := parseHold(v)
		if err != nil {
			return p, err
		}
		p.LegalHold = &hold
	}
	return p, nil
}

// policyDate reads x-ms-immutability-policy-until-date (RFC 1123), zero when absent.
func policyDate(h http.Header) (time.Time, error) {
	v := h.Get("x-ms-immutability-policy-until-date")
	if v == "" {
		return time.Time{}, nil
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return t, invalidHeader("x-ms-immutability-policy-until-date", v, "not an RFC 1123 date")
	}
	return t, nil
}

func parseHold(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, invalidHeader("x-ms-legal-hold", v, "not true or false")
}

func (s *Server) setImmutabilityPolicy(rq *request) error {
	h := rq.R.Header
	until, err := policyDate(h)
	if err != nil {
		return err
	}
	if until.IsZero() {
		return missingHeader("x-ms-immutability-policy-until-date")
	}
	// Only If-Unmodified-Since applies (the REST reference).
	cond := blob.Conditions{IfUnmodifiedSince: httpDate(h, "If-Unmodified-Since")}
	policy, err := s.svc.SetImmutabilityPolicy(rq.ctx, rq.path(), until, h.Get("x-ms-immutability-policy-mode"), cond)
	if err != nil {
		return err
	}
	answerPolicy(rq.W.Header(), &policy)
	return rq.done(http.StatusOK)
}

func (s *Server) deleteImmutabilityPolicy(rq *request) error {
	if err := s.svc.DeleteImmutabilityPolicy(rq.ctx, rq.path()); err != nil {
		return err
	}
	return rq.done(http.StatusOK)
}

func (s *Server) setLegalHold(rq *request) error {
	v := rq.R.Header.Get("x-ms-legal-hold")
	if v == "" {
		return missingHeader("x-ms-legal-hold")
	}
	hold, err := parseHold(v)
	if err != nil {
		return err
	}
	if err := s.svc.SetLegalHold(rq.ctx, rq.path(), hold); err != nil {
		return err
	}
	rq.W.Header()["x-ms-legal-hold"] = []string{strconv.FormatBool(hold)}
	return rq.done(http.StatusOK)
}

// answerPolicy writes a version's policy as Get Blob and Set Blob Immutability Policy report
// it: the date, and the mode in lower case.
func answerPolicy(h http.Header, p *blob.ImmutabilityPolicy) {
	if p == nil {
		return
	}
	h["x-ms-immutability-policy-until-date"] = httpTime(p.Until)
	h["x-ms-immutability-policy-mode"] = []string{p.Mode}
}

// answerProtection writes a version's policy and legal hold, where it has them (a hold
// never set is not reported).
func answerProtection(h http.Header, b *blob.Blob) {
	answerPolicy(h, b.Immutability)
	if b.LegalHold != nil {
		h["x-ms-legal-hold"] = []string{strconv.FormatBool(*b.LegalHold)}
	}
}

// writeProtection writes a listed version's policy and legal hold when the listing includes
// them (include=immutabilitypolicy, include=legalhold), at the end of its properties.
func writeProtection(w *xmlWriter, b *blob.Blob, inc map[string]bool) {
	if p := b.Immutability; p != nil && inc["immutabilitypolicy"] {
		w.elem("ImmutabilityPolicyUntilDate", p.Until.Format(http.TimeFormat))
		w.elem("ImmutabilityPolicyMode", p.Mode)
	}
	if b.LegalHold != nil && inc["legalhold"] {
		w.elem("LegalHold", strconv.FormatBool(*b.LegalHold))
	}
}
