package tablehttp

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/table"
)

// preflight answers a CORS preflight (OPTIONS, never authenticated) from the account's CORS
// rules: the first rule that allows the origin and the method decides, and then every
// requested header must be allowed by it.
func (s *Server) preflight(rq *request) error {
	rq.jsonErrors = false
	origin := rq.r.Header.Get("Origin")
	method := rq.r.Header.Get("Access-Control-Request-Method")
	if origin == "" || method == "" {
		return azerr.Newf(azerr.InvalidHeaderValue, "A required CORS header is not present: a preflight request needs Origin and Access-Control-Request-Method.")
	}
	props, err := s.svc.ServiceProperties(rq.ctx, rq.account)
	if err != nil {
		return err
	}
	rule := matchCorsRule(props.Cors, origin, method)
	if rule == nil {
		return azerr.New(azerr.CorsPreflightFailure)
	}
	requested := splitList(rq.r.Header.Get("Access-Control-Request-Headers"))
	for _, h := range requested {
		if !headerAllowed(rule.AllowedHeaders, h) {
			return azerr.Newf(azerr.CorsPreflightFailure, "CORS not enabled or no matching rule found for this request: header %q is not allowed.", h)
		}
	}
	h := rq.w.Header()
	h.Set("Access-Control-Allow-Origin", allowOrigin(rule, origin))
	h.Set("Access-Control-Allow-Methods", method)
	if len(requested) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(requested, ","))
	}
	h.Set("Access-Control-Max-Age", strconv.Itoa(rule.MaxAgeInSeconds))
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Content-Length", "0")
	rq.w.WriteHeader(http.StatusOK)
	return nil
}

// applyCORS adds the CORS response headers to an actual (non-preflight) request from a
// browser. The request itself is served either way: CORS is the browser's decision.
func (s *Server) applyCORS(rq *request) {
	origin := rq.r.Header.Get("Origin")
	props, err := s.svc.ServiceProperties(rq.ctx, rq.account)
	if err != nil || len(props.Cors) == 0 {
		return
	}
	h := rq.w.Header()
	rule := matchCorsRule(props.Cors, origin, rq.r.Method)
	if rule == nil {
		if rq.r.Method == http.MethodGet || rq.r.Method == http.MethodHead {
			h.Set("Vary", "Origin")
		}
		return
	}
	h.Set("Access-Control-Allow-Origin", allowOrigin(rule, origin))
	if len(rule.ExposedHeaders) > 0 {
		h.Set("Access-Control-Expose-Headers", strings.Join(rule.ExposedHeaders, ","))
	}
	if !slices.Contains(rule.AllowedOrigins, "*") {
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Set("Vary", "Origin")
	}
}

func matchCorsRule(rules []table.CorsRule, origin, method string) *table.CorsRule {
	for i := range rules {
		r := &rules[i]
		originOK := slices.ContainsFunc(r.AllowedOrigins, func(o string) bool { return o == "*" || strings.EqualFold(o, origin) })
		if originOK && slices.Contains(r.AllowedMethods, strings.ToUpper(method)) {
			return r
		}
	}
	return nil
}

func allowOrigin(r *table.CorsRule, origin string) string {
	if slices.Contains(r.AllowedOrigins, "*") {
		return "*"
	}
	return origin
}

// headerAllowed matches a requested header against a rule's list: exact (case-insensitive),
// a prefix entry ending in '*', or '*'.
func headerAllowed(allowed []string, h string) bool {
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(a, h) {
			return true
		}
		if p, ok := strings.CutSuffix(a, "*"); ok && len(h) >= len(p) && strings.EqualFold(h[:len(p)], p) {
			return true
		}
	}
	return false
}

// policyStore lets the authenticator read the stored access policies a SAS refers to (si=).
type policyStore struct{ svc *table.Service }

func (p policyStore) Policy(ctx context.Context, account, tableName, id string) (auth.AccessPolicy, bool, error) {
	t, err := p.svc.Table(ctx, account, tableName)
	if e, ok := err.(*azerr.Error); ok && e.Status == 404 {
		return auth.AccessPolicy{}, false, nil
	}
	if err != nil {
		return auth.AccessPolicy{}, false, err
	}
	for _, pol := range t.Policies {
		if pol.ID == id {
			return auth.AccessPolicy{ID: pol.ID, Start: pol.Start, Expiry: pol.Expiry, Permission: pol.Permission}, true, nil
		}
	}
	return auth.AccessPolicy{}, false, nil
}
