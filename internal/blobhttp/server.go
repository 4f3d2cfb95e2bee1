// Package blobhttp speaks the Blob service's HTTP protocol: it resolves the account, checks
// authorization, routes each request to the blob service, and writes Azure's responses and
// errors. It holds no blob semantics of its own: headers become arguments of internal/blob's
// calls, and what those return becomes headers and XML.
package blobhttp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/blobfetch"
	"github.com/tabula-dev/tabula/internal/server"
	"github.com/tabula-dev/tabula/internal/throttle"
)

// defaultVersion is the x-ms-version reported when a request sends none.
const defaultVersion = "2025-01-05"

// Server is the http.Handler of the blob endpoint.
type Server struct {
	svc  *blob.Service
	auth *auth.Authenticator
	log  *slog.Logger
	// Throttle, when set before serving, holds requests to Azure's scalability targets.
	Throttle *throttle.Limiter
	// Fetcher reads copy sources on other servers (remote.go); nil, set before serving,
	// refuses them: 404 CannotVerifyCopySource.
	Fetcher *blobfetch.Client
}

// New returns a Server answering for the accounts known to authn, backed by svc, which fetches
// copy sources on other servers as Azure does.
func New(svc *blob.Service, authn *auth.Authenticator, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	authn.SetPolicyStore(auth.Blob, policyStore{svc})
	return &Server{svc: svc, auth: authn, log: log, Fetcher: blobfetch.New(0, nil)}
}

// request is what every handler knows about the request it serves.
type request struct {
	server.Request
	grant *auth.Grant
	ctx   context.Context
	log   *slog.Logger
	// container and blob are the resource the path names, percent-decoded ("" when absent).
	container, blob string
	// fetched is the copy source on another server the request read, nil for none.
	fetched *fetchNote
	// sourceTags reads the tags of the request's copy source on another server (nil for
	// none), for a copy that takes them.
	sourceTags func(ctx context.Context) (blob.Tags, error)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rq := &request{ctx: r.Context(), log: s.log}
	server.Begin(&rq.Request, w, r, defaultVersion)
	if err := s.serve(rq); err != nil {
		var e *azerr.Error
		if errors.As(err, &e) && e.Status == http.StatusNotModified {
			// A read's If-None-Match or If-Modified-Since failed: 304 has no body.
			h := w.Header()
			for k, v := range e.Header {
				h[k] = v
			}
			h["x-ms-error-code"] = []string{string(e.Code)}
			w.WriteHeader(http.StatusNotModified)
			return
		}
		server.WriteXMLError(&rq.Request, err, rq.log)
	}
}

func (s *Server) serve(rq *request) error {
	r := rq.R
	if err := rq.ResolveAccount(s.auth); err != nil {
		return err
	}
	if r.Method == http.MethodOptions {
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
	return s.serveAddressed(rq)
}

// serveAddressed serves a request whose account is known: a request after serve's account
// and CORS steps, or a batch's sub-request, which takes the batch's.
func (s *Server) serveAddressed(rq *request) error {
	if err := server.CheckVersion(rq.Version); err != nil {
		return err
	}
	if err := parsePath(rq); err != nil {
		return err
	}
	// A lease id is a GUID on every operation, not only the lease ones (the JS SDK's live
	// query test sends "invalid" and reads 400).
	for _, name := range []string{"x-ms-lease-id", "x-ms-source-lease-id"} {
		if v := rq.R.Header.Get(name); v != "" && !blob.ValidLeaseID(v) {
			return invalidHeader(name, v, "not a GUID")
		}
	}
	ar := rq.AuthRequest(auth.Blob)
	ar.Path = blobName(ar.Path)
	c, routeErr := s.route(rq)
	if c.op != nil {
		rq.Name(c.op.Name, c.container)
	}
	grant, err := s.auth.Authenticate(rq.ctx, ar)
	if err != nil {
		return err
	}
	rq.grant = grant
	if routeErr != nil {
		return routeErr
	}
	return c.serve(rq)
}

// ErrorBody renders err the way the Blob service does when nothing about the request is known
// (net/http refused it before any handler ran).
func ErrorBody(e *azerr.Error, requestID string) (contentType string, body []byte) {
	return "application/xml", server.AppendXMLErrorBody(nil, e, requestID, time.Now())
}

// policyStore lets the authenticator read the stored access policies a SAS refers to (si=).
type policyStore struct{ svc *blob.Service }

func (p policyStore) Policy(ctx context.Context, account, container, id string) (auth.AccessPolicy, bool, error) {
	c, err := p.svc.GetContainer(ctx, account, container, "")
	var e *azerr.Error
	if errors.As(err, &e) && (e.Status == http.StatusNotFound || e.Status == http.StatusBadRequest) {
		return auth.AccessPolicy{}, false, nil
	}
	if err != nil {
		return auth.AccessPolicy{}, false, err
	}
	for _, pol := range c.Policies {
		if pol.ID == id {
			return pol, true, nil
		}
	}
	return auth.AccessPolicy{}, false, nil
}
