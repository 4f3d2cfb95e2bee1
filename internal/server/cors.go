package server

import (
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/serviceprops"
)

// Preflight answers a CORS preflight (OPTIONS, never authenticated) from the service's CORS
// rules for the account: the first rule that allows the origin and the method decides, and
// then every requested header must be allowed by it. Refusals carry Azure's exact messages;
// the reason, which Azure does not tell the client, goes to log.
func Preflight(rq *Request, rules []serviceprops.CorsRule, log *slog.Logger) error {
	origin := rq.R.Header.Get("Origin")
	method := rq.R.Header.Get("Access-Control-Request-Method")
	if origin == "" || method == "" {
		log.Debug("CORS preflight without Origin or Access-Control-Request-Method", "request_id", rq.ID)
		return azerr.Newf(azerr.InvalidHeaderValue, "A required CORS header is not present.")
	}
	rule := matchCorsRule(rules, origin, method)
	if rule == nil {
		log.Debug("CORS preflight matches no rule", "request_id", rq.ID, "origin", origin, "method", method)
		return azerr.New(azerr.CorsPreflightFailure)
	}
	requested := serviceprops.SplitList(rq.R.Header.Get("Access-Control-Request-Headers"))
	for _, h := range requested {
		if !headerAllowed(rule.AllowedHeaders, h) {
			log.Debug("CORS preflight asks for a header no rule allows", "request_id", rq.ID, "origin", origin, "header", h)
			return azerr.New(azerr.CorsPreflightFailure)
		}
	}
	h := rq.W.Header()
	h.Set("Access-Control-Allow-Origin", allowOrigin(rule, origin))
	h.Set("Access-Control-Allow-Methods", method)
	if len(requested) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(requested, ","))
	}
	h.Set("Access-Control-Max-Age", strconv.Itoa(rule.MaxAgeInSeconds))
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Content-Length", "0")
	rq.W.WriteHeader(http.StatusOK)
	return nil
}

// ApplyCORS adds the CORS response headers to an actual (non-preflight) request from a
// browser. The request itself is served either way: CORS is the browser's decision.
func ApplyCORS(rq *Request, rules []serviceprops.CorsRule) {
	if len(rules) == 0 {
		return
	}
	origin := rq.R.Header.Get("Origin")
	h := rq.W.Header()
	rule := matchCorsRule(rules, origin, rq.R.Method)
	if rule == nil {
		if rq.R.Method == http.MethodGet || rq.R.Method == http.MethodHead {
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

func matchCorsRule(rules []serviceprops.CorsRule, origin, method string) *serviceprops.CorsRule {
	for i := range rules {
		r := &rules[i]
		originOK := slices.ContainsFunc(r.AllowedOrigins, func(o string) bool { return o == "*" || strings.EqualFold(o, origin) })
		if originOK && slices.Contains(r.AllowedMethods, strings.ToUpper(method)) {
			return r
		}
	}
	return nil
}

func allowOrigin(r *serviceprops.CorsRule, origin string) string {
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
