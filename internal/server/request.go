// Package server is what every Tabula service endpoint — Table, Blob, Queue — shares on the
// wire: the basics of each request (request id, version echo, Date, the addressed account in
// path-style or host-style URLs), CORS, the Blob and Queue services' XML error bodies, and the
// listeners, with the limits and timeouts that keep one client from holding a server hostage
// and a shutdown that finishes in bounded time.
//
// It is a library, not a framework: each service's HTTP package runs a request through these
// pieces in its own ServeHTTP, so that the flow of a request reads top to bottom there.
package server

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/uuid"
)

// Request is what every service knows about the request it serves.
type Request struct {
	W  http.ResponseWriter
	R  *http.Request
	ID string // x-ms-request-id
	// Version is the x-ms-version the client sent; "" when it sent none.
	Version   string
	Account   string
	Secondary bool // addressed as {account}-secondary
	// PathStyle says the account was named by the first path segment, not by the host.
	PathStyle bool
	// Path is the resource path after the account, still percent-encoded, starting with '/'.
	Path string
	// BaseURL is the service root as the client addresses it, e.g.
	// http://127.0.0.1:10002/devstoreaccount1 (path style) or http://acct.table.example (host
	// style).
	BaseURL string
	// Query is the request's query string, parsed once.
	Query url.Values

	rec *record // what the request's log line and metrics will say
}

// Begin starts rq for the request r answered through w: it sets ID and Query and the headers
// every response carries (x-ms-request-id, x-ms-version — the client's, else its SAS's sv,
// else defaultVersion —,
// Date, Server, and the client's x-ms-client-request-id when it is one Azure would echo).
func Begin(rq *Request, w http.ResponseWriter, r *http.Request, defaultVersion string) {
	rq.W, rq.R, rq.ID, rq.Query = w, r, uuid.New(), r.URL.Query()
	rq.rec = recordOf(w)
	rq.rec.requestID = rq.ID
	rq.Version = r.Header.Get("X-Ms-Version")
	if rq.Version == "" && rq.Query.Has("sig") && CheckVersion(rq.Query.Get("sv")) == nil {
		// A request with a shared access signature and no x-ms-version runs at the
		// signature's version (sv), as Azure's do: a SAS URL opened in a browser.
		rq.Version = rq.Query.Get("sv")
	}
	h := w.Header()
	// The x-ms- names are written as Azure writes them, lower case, hence the direct map
	// assignments (Set would canonicalise them).
	h["x-ms-request-id"] = []string{rq.ID}
	if rq.Version != "" {
		h["x-ms-version"] = []string{rq.Version}
	} else {
		h["x-ms-version"] = []string{defaultVersion}
	}
	h["Date"] = dateValue(time.Now())
	h["Server"] = serverValue
	if id := r.Header.Get("X-Ms-Client-Request-Id"); id != "" && len(id) <= 1024 && isVisibleASCII(id) {
		h["x-ms-client-request-id"] = []string{id}
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

// CheckVersion rejects x-ms-version values that are not dates, and dates more than a year
// ahead, which no service version will be by the time a client sends it (Azure refuses the
// versions it does not know: 400 InvalidHeaderValue naming the header); any other date is
// served with the behaviour of the newest version at or before it.
func CheckVersion(v string) error {
	if v == "" {
		return nil
	}
	d, err := time.Parse("2006-01-02", v)
	if err == nil && d.After(time.Now().AddDate(1, 0, 0)) {
		err = errors.New("no such service version")
	}
	if err != nil {
		e := azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-version %q is not a service version.", v)
		e.Details = []azerr.Detail{{Name: "HeaderName", Value: "x-ms-version"}, {Name: "HeaderValue", Value: v}}
		return e
	}
	return nil
}

// Accounts are the storage accounts a server hosts (an *auth.Authenticator).
type Accounts interface {
	Account(name string) (auth.Account, bool)
}

// ResolveAccount finds the addressed account: host style when the first label of the Host is
// a hosted account (optionally with -secondary), otherwise path style from the first path
// segment. Deciding by the accounts hosted, rather than by whether the host is an IP, keeps
// path style working behind any host name (containers, proxies). An unknown account is 404
// ResourceNotFound.
func (rq *Request) ResolveAccount(accounts Accounts) error {
	r := rq.R
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
		if name, secondary := HostedAccount(accounts, label); name != "" {
			rq.Account, rq.Secondary, rq.Path = name, secondary, path
			rq.rec.account = name
			if rq.Path == "" {
				rq.Path = "/"
			}
			rq.BaseURL = scheme + "://" + r.Host
			return nil
		}
	}
	seg, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	name, secondary := HostedAccount(accounts, seg)
	if name == "" {
		return azerr.Newf(azerr.ResourceNotFound, "The specified resource does not exist. No account named %q is hosted here (path-style URLs start with /{account}/).", seg)
	}
	rq.Account, rq.Secondary, rq.Path, rq.PathStyle = name, secondary, "/"+rest, true
	rq.rec.account = name
	rq.BaseURL = scheme + "://" + r.Host + "/" + seg
	return nil
}

// HostedAccount names the account a host label or path segment addresses: the account itself,
// or its -secondary endpoint. name is "" when it addresses no hosted account.
func HostedAccount(accounts Accounts, label string) (name string, secondary bool) {
	if _, ok := accounts.Account(label); ok {
		return label, false
	}
	if base, ok := strings.CutSuffix(label, "-secondary"); ok {
		if _, ok := accounts.Account(base); ok {
			return base, true
		}
	}
	return "", false
}

// ClientIP is the address the request came from, for SAS sip checks.
func ClientIP(r *http.Request) net.IP {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return net.ParseIP(host)
}

// AuthRequest is what authentication needs of rq, for service.
func (rq *Request) AuthRequest(service auth.Service) *auth.Request {
	r := rq.R
	path, err := url.PathUnescape(rq.Path)
	if err != nil {
		path = rq.Path
	}
	return &auth.Request{
		Service:       service,
		Method:        r.Method,
		RawPath:       r.URL.EscapedPath(),
		Query:         rq.Query,
		Header:        r.Header,
		Version:       rq.Version,
		ContentLength: r.ContentLength,
		Account:       rq.Account,
		Path:          path,
		Host:          r.Host,
		Secure:        r.TLS != nil,
		TLSOffered:    TLSOffered(r.Context()),
		ClientIP:      ClientIP(r),
	}
}

// SecondaryIsReadOnly refuses a write on an account's -secondary endpoint, the read-only
// replica: 403 with the message Azure's clients quote ("Write operations are not allowed.",
// the Python tables suite's test_table_client_location_mode; the code is UNSURE).
func SecondaryIsReadOnly(account string) error {
	return azerr.Newf(azerr.InsufficientAccountPermissions, "Write operations are not allowed. The secondary endpoint (%s-secondary) is a read-only replica.", account)
}
