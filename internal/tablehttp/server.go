// Package tablehttp speaks the Table service's HTTP protocol: it resolves the account, checks
// authorization, routes each request to the table service, and writes Azure's responses and
// errors. It holds no table semantics of its own.
package tablehttp

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/table"
	"github.com/tabula-dev/tabula/internal/uuid"
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
	w         http.ResponseWriter
	r         *http.Request
	id        string
	version   string
	account   string
	secondary bool
	// path is the resource path after the account, still percent-encoded.
	path string
	// baseURL is the service root as the client addresses it, e.g.
	// http://127.0.0.1:10002/devstoreaccount1 (path style) or https://acct.table.example (host style).
	baseURL string
	grant   *auth.Grant
	// query is the request's query string, parsed once.
	query url.Values
	// jsonErrors says whether errors are written as JSON odata.error (OData operations) or XML.
	jsonErrors bool
	ctx        context.Context
	log        *slog.Logger
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rq := &request{w: w, r: r, id: uuid.New(), ctx: r.Context(), log: s.log, query: r.URL.Query()}
	rq.version = r.Header.Get("x-ms-version")
	h := w.Header()
	h["x-ms-request-id"] = []string{rq.id}
	if rq.version != "" {
		h["x-ms-version"] = []string{rq.version}
	} else {
		h["x-ms-version"] = []string{defaultVersion}
	}
	h["Date"] = dateValue(time.Now())
	h["Server"] = serverValue
	if id := r.Header.Get("x-ms-client-request-id"); id != "" && len(id) <= 1024 && isVisibleASCII(id) {
		h["x-ms-client-request-id"] = []string{id}
	}
	rq.jsonErrors = acceptsJSON(rq.query, r.Header)
	if err := s.serve(rq); err != nil {
		rq.fail(err)
	}
}

var serverValue = []string{"Tabula"}

// lastDate is the Date header value of the current second, formatted once per second rather
// than once per response.
var lastDate atomic.Pointer[formattedDate]

type formattedDate struct {
	unix  int64
	value []string
}

func dateValue(now time.Time) []string {
	d := lastDate.Load()
	if d == nil || d.unix != now.Unix() {
		d = &formattedDate{unix: now.Unix(), value: []string{now.UTC().Format(http.TimeFormat)}}
		lastDate.Store(d)
	}
	return d.value
}

func isVisibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func (s *Server) serve(rq *request) error {
	r := rq.r
	if err := s.resolveAccount(rq); err != nil {
		return err
	}
	if r.Method == http.MethodOptions {
		return s.preflight(rq)
	}
	if r.Header.Get("Origin") != "" {
		s.applyCORS(rq)
	}
	if err := checkVersion(rq.version); err != nil {
		return err
	}
	grant, err := s.auth.Authenticate(rq.ctx, &auth.Request{
		Method:  r.Method,
		RawPath: r.URL.EscapedPath(),
		Query:   rq.query,
		Header:  r.Header,
		Account: rq.account,
		// Tabula serves plain HTTP; TLS, where used, is terminated in front of it. Judging
		// spr=https by the local connection would refuse every SAS the SDKs make by default
		// (they sign spr=https), so the protocol restriction is taken as met.
		Secure:   true,
		ClientIP: clientIP(r),
	})
	if err != nil {
		return err
	}
	rq.grant = grant
	return s.route(rq)
}

func clientIP(r *http.Request) net.IP {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return net.ParseIP(host)
}

// checkVersion rejects x-ms-version values that are not dates; any date is served with the
// current behaviour.
func checkVersion(v string) error {
	if v == "" {
		return nil
	}
	if _, err := time.Parse("2006-01-02", v); err != nil {
		return azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-version %q is not a service version.", v)
	}
	return nil
}

// resolveAccount finds the addressed account: host style when the first label of the Host is
// a hosted account (optionally with -secondary), otherwise path style from the first path
// segment. Deciding by the accounts we host, rather than by whether the host is an IP, keeps
// path style working behind any host name (containers, proxies).
func (s *Server) resolveAccount(rq *request) error {
	r := rq.r
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	path := r.URL.EscapedPath()
	if label, _, ok := strings.Cut(host, "."); ok {
		if name, secondary := s.hostedAccount(label); name != "" {
			rq.account, rq.secondary, rq.path = name, secondary, path
			rq.baseURL = scheme + "://" + r.Host
			return nil
		}
	}
	seg, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	name, secondary := s.hostedAccount(seg)
	if name == "" {
		return azerr.Newf(azerr.ResourceNotFound, "The specified resource does not exist. No account named %q is hosted here (path-style URLs start with /{account}/).", seg)
	}
	rq.account, rq.secondary, rq.path = name, secondary, "/"+rest
	rq.baseURL = scheme + "://" + r.Host + "/" + seg
	return nil
}

func (s *Server) hostedAccount(label string) (name string, secondary bool) {
	if _, ok := s.auth.Account(label); ok {
		return label, false
	}
	if base, ok := strings.CutSuffix(label, "-secondary"); ok {
		if _, ok := s.auth.Account(base); ok {
			return base, true
		}
	}
	return "", false
}
