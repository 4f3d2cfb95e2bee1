// Package queuehttp speaks the Queue service's HTTP protocol: it resolves the account, checks
// authorization, routes each request to the queue service, and writes Azure's XML responses
// and errors. It holds no queue semantics of its own.
package queuehttp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/queue"
	"github.com/tabula-dev/tabula/internal/server"
	"github.com/tabula-dev/tabula/internal/throttle"
)

// defaultVersion is the x-ms-version reported when a request sends none: the version the
// Go azqueue SDK sends, whose behaviour this package implements.
const defaultVersion = "2024-08-04"

// Server is the http.Handler of the queue endpoint.
type Server struct {
	svc  *queue.Service
	auth *auth.Authenticator
	log  *slog.Logger
	// Throttle, when set before serving, holds requests to Azure's scalability targets.
	Throttle *throttle.Limiter
}

// New returns a Server answering for the accounts known to authn, backed by svc.
func New(svc *queue.Service, authn *auth.Authenticator, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	authn.SetPolicyStore(auth.Queue, policyStore{svc})
	return &Server{svc: svc, auth: authn, log: log}
}

// request is what every handler knows about the request it serves.
type request struct {
	server.Request
	grant *auth.Grant
	ctx   context.Context
	log   *slog.Logger
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rq := &request{ctx: r.Context(), log: s.log}
	server.Begin(&rq.Request, w, r, defaultVersion)
	if err := s.serve(rq); err != nil {
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
	if err := server.CheckVersion(rq.Version); err != nil {
		return err
	}
	c, routeErr := s.route(rq)
	if c.op != nil {
		rq.Name(c.op.Name, c.queue)
	}
	grant, err := s.auth.Authenticate(rq.ctx, rq.AuthRequest(auth.Queue))
	if err != nil {
		return err
	}
	rq.grant = grant
	if routeErr != nil {
		return routeErr
	}
	return c.serve(rq)
}

// ErrorBody renders err as the Queue service does, for refusals made before any handler ran.
func ErrorBody(e *azerr.Error, requestID string) (contentType string, body []byte) {
	return "application/xml", server.AppendXMLErrorBody(nil, e, requestID, time.Now())
}

// xmlHeader opens every XML body: a byte order mark and the declaration, as the real service
// writes them.
const xmlHeader = "\ufeff<?xml version=\"1.0\" encoding=\"utf-8\"?>"

// Header values shared by every response of a kind (net/http never modifies them).
var (
	xmlContentType  = []string{"application/xml"}
	noCacheValue    = []string{"no-cache"}
	zeroLengthValue = []string{"0"}
)

// writeXML sends an XML body; listings and reads of messages are marked uncacheable, as the
// real service marks them.
func (rq *request) writeXML(status int, body []byte, noCache bool) {
	h := rq.W.Header()
	h["Content-Type"] = xmlContentType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	if noCache {
		h["Cache-Control"] = noCacheValue
	}
	rq.W.WriteHeader(status)
	if rq.R.Method != http.MethodHead {
		_, _ = rq.W.Write(body)
	}
}

// writeEmpty sends a bodiless response.
func (rq *request) writeEmpty(status int) {
	rq.W.Header()["Content-Length"] = zeroLengthValue
	rq.W.WriteHeader(status)
}

// maxBodyBytes caps what a request body may hold. The largest legitimate one is a message of
// 64 KiB of text whose every character XML escaping made several times longer.
const maxBodyBytes = 1 << 20

// readBody reads the request body, refusing one longer than maxBodyBytes.
func readBody(rq *request) ([]byte, error) {
	tooLarge := func() error {
		e := azerr.Newf(azerr.RequestBodyTooLarge, "The request body is too large and exceeds the maximum permissible limit. The request may carry at most %d bytes.", maxBodyBytes)
		e.Details = []azerr.Detail{{Name: "MaxLimit", Value: strconv.Itoa(maxBodyBytes)}}
		return e
	}
	if rq.R.ContentLength > maxBodyBytes {
		return nil, tooLarge()
	}
	body, err := io.ReadAll(io.LimitReader(rq.R.Body, maxBodyBytes+1))
	if e := (*azerr.Error)(nil); errors.As(err, &e) {
		return nil, e // the body stalled (internal/server)
	}
	if err != nil {
		return nil, azerr.Newf(azerr.InvalidInput, "One of the request inputs is not valid: the request body could not be read (%v).", err)
	}
	if len(body) > maxBodyBytes {
		return nil, tooLarge()
	}
	return body, nil
}

// policyStore lets the authenticator read the stored access policies a queue SAS refers to
// (si=).
type policyStore struct{ svc *queue.Service }

func (p policyStore) Policy(ctx context.Context, account, queueName, id string) (auth.AccessPolicy, bool, error) {
	q, err := p.svc.Queue(ctx, account, queueName)
	if e, ok := err.(*azerr.Error); ok && e.Status < 500 {
		return auth.AccessPolicy{}, false, nil
	}
	if err != nil {
		return auth.AccessPolicy{}, false, err
	}
	for _, pol := range q.Policies {
		if pol.ID == id {
			return pol, true, nil
		}
	}
	return auth.AccessPolicy{}, false, nil
}
