// Package tablehttp speaks the Table service's HTTP protocol: it resolves the account, checks
// authorization, routes each request to the table service, and writes Azure's responses and
// errors. It holds no table semantics of its own.
package tablehttp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/insight"
	"github.com/tabula-dev/tabula/internal/server"
	"github.com/tabula-dev/tabula/internal/table"
	"github.com/tabula-dev/tabula/internal/throttle"
)

// MaxBodyBytes is Azure's cap on a request body (and on a $batch payload): 4 MiB.
const MaxBodyBytes = 4 << 20

// defaultVersion is the x-ms-version reported when a request sends none.
const defaultVersion = "2019-02-02"

// Server is the http.Handler of the table endpoint.
type Server struct {
	svc  *table.Service
	auth *auth.Authenticator
	log  *slog.Logger

	// Throttle, when set before serving, holds requests to Azure's scalability targets;
	// Insights, when set, watches the workload for what the design guide warns about.
	Throttle *throttle.Limiter
	Insights *insight.Observer
}

// New returns a Server answering for the accounts known to authn, backed by svc.
func New(svc *table.Service, authn *auth.Authenticator, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	authn.SetPolicyStore(auth.Table, policyStore{svc})
	return &Server{svc: svc, auth: authn, log: log}
}

// request is what every handler knows about the request it serves.
type request struct {
	server.Request
	grant *auth.Grant
	// errors is the form error bodies take: JSON odata.error (OData operations), XML m:error,
	// or the legacy XML error document of versions before 2013-08-15.
	errors errorStyle
	ctx    context.Context
	log    *slog.Logger
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rq := &request{ctx: r.Context(), log: s.log}
	server.Begin(&rq.Request, w, r, defaultVersion)
	rq.errors = errorStyleOf(rq.Version, rq.Query, r.Header)
	if err := s.serve(rq); err != nil {
		rq.fail(err)
	}
}

func (s *Server) serve(rq *request) error {
	r := rq.R
	if err := rq.ResolveAccount(s.auth); err != nil {
		return err
	}
	// Python's azure-data-tables addresses a path-style secondary endpoint as
	// /{account}-secondary/{account}/… (auth.repeatedAccountPath): the second account
	// segment is not a table.
	if rq.Secondary && rq.PathStyle {
		if rest, ok := cutPrefixFold(rq.Path, "/"+rq.Account+"/"); ok {
			rq.Path = "/" + rest
		}
	}
	if r.Method == http.MethodOptions {
		rq.xmlErrors()
		props, err := s.svc.ServiceProperties(rq.ctx, rq.Account)
		if err != nil {
			return err
		}
		return server.Preflight(&rq.Request, props.Cors, rq.log)
	}
	if r.Header.Get("Origin") != "" {
		if props, err := s.svc.ServiceProperties(rq.ctx, rq.Account); err == nil {
			server.ApplyCORS(&rq.Request, props.Cors)
		}
	}
	if err := server.CheckVersion(rq.Version); err != nil {
		return err
	}
	c, routeErr := s.route(rq)
	if c.op != nil {
		rq.Name(c.op.Name, c.table)
	}
	grant, err := s.auth.Authenticate(rq.ctx, rq.AuthRequest(auth.Table))
	if err != nil {
		return err
	}
	rq.grant = grant
	if c.xml {
		rq.xmlErrors()
	}
	if routeErr != nil {
		return routeErr
	}
	return c.serve(rq)
}

// xmlErrors makes the request's errors XML, as for the operations that speak plain XML (the
// legacy form stays under old versions).
func (rq *request) xmlErrors() {
	if rq.errors == errorsJSON {
		rq.errors = errorsXML
	}
}

// xmlErrorStyle is the XML error form of the request's service version.
func (rq *request) xmlErrorStyle() errorStyle {
	if rq.errors == errorsLegacyXML {
		return errorsLegacyXML
	}
	return errorsXML
}

// ErrorBody renders err the way the Table service does when nothing about the request is known
// (net/http refused it before any handler ran): as the XML m:error document.
func ErrorBody(e *azerr.Error, requestID string) (contentType string, body []byte) {
	return "application/xml", errorBody(e, requestID, errorsXML)
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return "", false
	}
	return s[len(prefix):], true
}
