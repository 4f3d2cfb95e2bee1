package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// SignSharedKey returns the SharedKey (Table service variant) signature:
// Base64(HMAC-SHA256(key, VERB\nContent-MD5\nContent-Type\nDate\nCanonicalizedResource)).
func SignSharedKey(key []byte, method, contentMD5, contentType, date, canonicalResource string) string {
	return base64.StdEncoding.EncodeToString(mac(key, method+"\n"+contentMD5+"\n"+contentType+"\n"+date+"\n"+canonicalResource))
}

// SignSharedKeyLite returns the SharedKeyLite (Table service variant) signature:
// Base64(HMAC-SHA256(key, Date\nCanonicalizedResource)).
func SignSharedKeyLite(key []byte, date, canonicalResource string) string {
	return base64.StdEncoding.EncodeToString(mac(key, date+"\n"+canonicalResource))
}

func mac(key []byte, stringToSign string) []byte {
	h := hmac.New(sha256.New, key)
	io.WriteString(h, stringToSign)
	return h.Sum(nil)
}

// keyMAC checks HMAC-SHA256 signatures under one account key. hmac.New allocates and hashes the
// key into its pads on every call; pooled HMACs keep that state, so a check only hashes the
// message.
type keyMAC struct{ pool sync.Pool }

// macScratch is one pooled HMAC with room for a message and its sum.
type macScratch struct {
	h   hash.Hash
	buf []byte
}

func newKeyMAC(key []byte) *keyMAC {
	key = bytes.Clone(key)
	k := &keyMAC{}
	k.pool.New = func() any { return &macScratch{h: hmac.New(sha256.New, key)} }
	return k
}

// signed reports whether sig is the HMAC of stringToSign, comparing in constant time.
func (k *keyMAC) signed(stringToSign string, sig []byte) bool {
	s := k.pool.Get().(*macScratch)
	defer k.pool.Put(s)
	s.h.Reset()
	// Copied, as Write takes bytes and converting the string would allocate.
	s.buf = append(s.buf[:0], stringToSign...)
	s.h.Write(s.buf)
	return hmac.Equal(s.h.Sum(s.buf[:0]), sig)
}

// decodeSignature appends the bytes of a base64 signature to dst, which the caller can keep on
// its stack. Text that is not base64 yields what decodes before the error, as DecodeString does.
func decodeSignature(dst []byte, encoded string) []byte {
	sig, _ := base64.StdEncoding.AppendDecode(dst, []byte(encoded))
	return sig
}

// signedByAnyKey reports whether sig is the HMAC of stringToSign under one of the keys.
func signedByAnyKey(keys []*keyMAC, stringToSign string, sig []byte) bool {
	for _, k := range keys {
		if k.signed(stringToSign, sig) {
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
	acct, ok := a.hosted(name)
	if !ok {
		return nil, authenticationFailed(fmt.Sprintf("The account %q in the Authorization header is not hosted by this server.", name))
	}
	// A key proves ownership of its own account only. The router has already stripped
	// "-secondary", and clients sign secondary requests with the primary name.
	if !strings.EqualFold(name, r.Account) {
		return nil, authenticationFailed(fmt.Sprintf("The Authorization header is for account %q but the request addresses account %q.", name, r.Account))
	}

	// The request's time is x-ms-date when present and Date otherwise (Azurite checks Date
	// first, which breaks clients that send both with different values); both Table schemes
	// sign it. Header names are spelled canonically so that Get need not allocate a canonical
	// copy.
	date := r.Header.Get("X-Ms-Date")
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

	// The strings to sign for one spelling of the path: one for the Table service, a few for
	// Blob and Queue (storage.go). The first string of the path as received is the one named
	// in the refusal.
	var stringsToSign func(path string) []string
	if r.Service == Table {
		stringsToSign = func(path string) []string { return []string{tableStringToSign(r, name, path, date, lite)} }
	} else {
		stringsToSign = func(path string) []string { return storageStringsToSign(r, name, path, lite) }
	}

	rawPath := r.RawPath
	if rawPath == "" {
		rawPath = "/"
	}
	first := stringsToSign(rawPath)
	// A signature that is not base64 cannot match; it still gets the mismatch answer below.
	var sigBuf [64]byte
	sig := decodeSignature(sigBuf[:0], encodedSig)
	for _, s := range first {
		if signedByAnyKey(acct.macs, s, sig) {
			return &Grant{account: acct.Name}, nil
		}
	}
	alternatives := alternativePaths(rawPath, name)
	if r.Service == Table {
		if p, ok := repeatedAccountPath(rawPath, name); ok {
			alternatives = append(alternatives, p)
		}
	}
	for _, path := range alternatives {
		for _, s := range stringsToSign(path) {
			if signedByAnyKey(acct.macs, s, sig) {
				return &Grant{account: acct.Name}, nil
			}
		}
	}
	// Azure's own wording for this detail.
	return nil, authenticationFailed(fmt.Sprintf("The MAC signature found in the HTTP request '%s' is not the same as any computed signature. Server used following string to sign: '%s'.", encodedSig, first[0]))
}

// tableStringToSign is the Table service's string to sign. Its canonicalized resource, the
// same in both schemes, is "/" + account + path [+ "?comp=" + value]: of the query only comp
// counts. It starts with the name as the client wrote it in the header: that is the string it
// signed. It is built in one concatenation: one allocation.
func tableStringToSign(r *Request, account, path, date string, lite bool) string {
	compSuffix := ""
	if _, ok := r.Query["comp"]; ok {
		compSuffix = "?comp=" + r.Query.Get("comp")
	}
	if lite {
		return date + "\n/" + account + path + compSuffix
	}
	return r.Method + "\n" + r.Header.Get("Content-Md5") + "\n" + r.Header.Get("Content-Type") + "\n" +
		date + "\n/" + account + path + compSuffix
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

// repeatedAccountPath reads the path Python's azure-data-tables sends to a path-style
// secondary endpoint, /{account}-secondary/{account}/rest: it puts the secondary segment in
// front of the primary URL's path, and signs that primary path, /{account}/rest. Only the Table
// service reads paths so (a table's path holds no '/'; a container may bear the account's
// name).
func repeatedAccountPath(rawPath, account string) (string, bool) {
	primary, ok := primaryPath(rawPath, account)
	if !ok {
		return "", false
	}
	rest := primary[len("/"+account):]
	if len(rest) <= len(account)+1 || !strings.EqualFold(rest[1:len(account)+1], account) || rest[len(account)+1] != '/' {
		return "", false
	}
	return rest, true
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
