package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// SignSharedKey returns the SharedKey (Table service variant) signature:
// Base64(HMAC-SHA256(key, VERB\nContent-MD5\nContent-Type\nDate\nCanonicalizedResource)).
func SignSharedKey(key []byte, method, contentMD5, contentType, date, canonicalResource string) string {
	return base64.StdEncoding.EncodeToString(mac(key, sharedKeyStringToSign(method, contentMD5, contentType, date, canonicalResource)))
}

// SignSharedKeyLite returns the SharedKeyLite (Table service variant) signature:
// Base64(HMAC-SHA256(key, Date\nCanonicalizedResource)).
func SignSharedKeyLite(key []byte, date, canonicalResource string) string {
	return base64.StdEncoding.EncodeToString(mac(key, date+"\n"+canonicalResource))
}

func sharedKeyStringToSign(method, contentMD5, contentType, date, canonicalResource string) string {
	return method + "\n" + contentMD5 + "\n" + contentType + "\n" + date + "\n" + canonicalResource
}

func mac(key []byte, stringToSign string) []byte {
	h := hmac.New(sha256.New, key)
	io.WriteString(h, stringToSign)
	return h.Sum(nil)
}

// signedByAnyKey reports whether sig is the HMAC of stringToSign under one of keys, comparing in
// constant time.
func signedByAnyKey(keys [][]byte, stringToSign string, sig []byte) bool {
	for _, key := range keys {
		if hmac.Equal(mac(key, stringToSign), sig) {
			return true
		}
	}
	return false
}

// authenticateSharedKey checks "SharedKey[Lite] account:signature" (auth.md §1–3).
func (a *Authenticator) authenticateSharedKey(r *Request, credentials string, lite bool) (*Grant, error) {
	name, encodedSig, ok := strings.Cut(credentials, ":")
	if !ok || name == "" || encodedSig == "" || strings.ContainsAny(name, " \t") {
		return nil, malformedAuthorization()
	}
	acct, ok := a.Account(name)
	if !ok {
		return nil, authenticationFailed(fmt.Sprintf("The account %q in the Authorization header is not hosted by this server.", name))
	}
	// A key proves ownership of its own account only. The router has already stripped
	// "-secondary", and clients sign secondary requests with the primary name.
	if !strings.EqualFold(name, r.Account) {
		return nil, authenticationFailed(fmt.Sprintf("The Authorization header is for account %q but the request addresses account %q.", name, r.Account))
	}

	// Both Table schemes sign x-ms-date when present and Date otherwise (Azurite checks Date
	// first, which breaks clients that send both with different values).
	date := r.Header.Get("x-ms-date")
	if date == "" {
		date = r.Header.Get("Date")
	}
	if date == "" {
		return nil, authenticationFailed("Request date header not specified: send x-ms-date or Date.")
	}
	sent, err := http.ParseTime(date)
	if err != nil {
		return nil, authenticationFailed(fmt.Sprintf("The request date %q is not an RFC 1123 date.", date))
	}
	if skew := a.MaxClockSkew; skew > 0 {
		now := a.now()
		if d := now.Sub(sent); d > skew || d < -skew {
			return nil, authenticationFailed(fmt.Sprintf("Request date %s is more than %s away from the server time %s.",
				formatTime(sent), skew, formatTime(now)))
		}
	}

	// The canonicalized resource starts with the name as the client wrote it in the header:
	// that is the string it signed.
	_, compPresent := r.Query["comp"]
	comp := r.Query.Get("comp")
	stringToSign := func(path string) string {
		resource := canonicalizedResource(name, path, comp, compPresent)
		if lite {
			return date + "\n" + resource
		}
		return sharedKeyStringToSign(r.Method, r.Header.Get("Content-MD5"), r.Header.Get("Content-Type"), date, resource)
	}

	rawPath := r.RawPath
	if rawPath == "" {
		rawPath = "/"
	}
	first := stringToSign(rawPath)
	// A signature that is not base64 cannot match; it still gets the mismatch answer below.
	sig, _ := base64.StdEncoding.DecodeString(encodedSig)
	if signedByAnyKey(acct.Keys, first, sig) {
		return &Grant{account: acct.Name}, nil
	}
	for _, path := range alternativePaths(rawPath, name) {
		if signedByAnyKey(acct.Keys, stringToSign(path), sig) {
			return &Grant{account: acct.Name}, nil
		}
	}
	// Azure's own wording for this detail.
	return nil, authenticationFailed(fmt.Sprintf("The MAC signature found in the HTTP request '%s' is not the same as any computed signature. Server used following string to sign: '%s'.", encodedSig, first))
}

// canonicalizedResource is the Table-service form shared by both schemes:
// "/" + account + path [+ "?comp=" + value]. Of the query only comp counts.
func canonicalizedResource(account, path, comp string, compPresent bool) string {
	resource := "/" + account + path
	if compPresent {
		resource += "?comp=" + comp
	}
	return resource
}

// alternativePaths lists the other spellings of rawPath a client may have signed, for when the
// path as received does not verify. Clients sign the path as they built it, and what arrives can
// differ: an HTTP stack or proxy re-encodes it, or the client signed it before encoding. Entity
// key paths are where this happens ('…', spaces, non-ASCII, characters doubled inside quotes).
// The list is short and ordered; rawPath itself is not in it.
func alternativePaths(rawPath, account string) []string {
	var out []string
	add := func(p string) {
		if p != rawPath && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	bases := []string{rawPath}
	// A path-style secondary request arrives as /account-secondary/…; Azurite verifies it as if
	// it were /account/…, so clients tested against Azurite may sign that.
	if primary, ok := primaryPath(rawPath, account); ok {
		add(primary)
		bases = append(bases, primary)
	}
	for _, base := range bases {
		decoded, err := url.PathUnescape(base)
		if err != nil {
			continue
		}
		add(decoded)
		add(escapePath(decoded, keepPathChar))
		add(escapePath(decoded, keepURIComponentChar))
		add(escapePath(decoded, keepPythonQuoteChar))
		add((&url.URL{Path: decoded}).EscapedPath())
	}
	return out
}

// primaryPath rewrites a leading /{account}-secondary segment to /{account}.
func primaryPath(rawPath, account string) (string, bool) {
	rest, ok := strings.CutPrefix(rawPath, "/")
	if !ok {
		return "", false
	}
	segment, tail, hasTail := strings.Cut(rest, "/")
	if !strings.EqualFold(segment, account+"-secondary") {
		return "", false
	}
	if !hasTail {
		return "/" + account, true
	}
	return "/" + account + "/" + tail, true
}

// escapePath percent-encodes (upper-case hex) every byte of s that keep rejects.
func escapePath(s string, keep func(byte) bool) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if keep(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// keepPathChar keeps what RFC 3986 allows in a path (unreserved, sub-delims, ':', '@', '/'):
// the minimal encoding produced by WHATWG URL parsers (JS new URL), .NET Uri and yarl.
func keepPathChar(c byte) bool {
	return isUnreserved(c) || strings.IndexByte("!$&'()*+,;=:@/", c) >= 0
}

// keepURIComponentChar is JS encodeURIComponent applied to key values inside a template whose
// own characters ('/', '(', ')', '=', ',', '$') stay literal: the legacy azure-storage (Node)
// convention.
func keepURIComponentChar(c byte) bool {
	return isUnreserved(c) || strings.IndexByte("!*'()/=,$", c) >= 0
}

// keepPythonQuoteChar is Python's quote(path, safe="/()$=',~"): the legacy azure-storage-table
// and azure-cosmosdb-table convention.
func keepPythonQuoteChar(c byte) bool {
	return isUnreserved(c) || strings.IndexByte("/()$=',", c) >= 0
}

// formatTime renders t as Azure does in authentication details.
func formatTime(t time.Time) string { return t.UTC().Format(http.TimeFormat) }
