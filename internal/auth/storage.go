package auth

import (
	"cmp"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The Blob and Queue services sign more of the request than the Table service (blob.md §6.1,
// queue.md §2.2): eleven standard headers, every x-ms- header, and every query parameter.
//
//	SharedKey:     VERB \n Content-Encoding \n Content-Language \n Content-Length \n
//	               Content-MD5 \n Content-Type \n Date \n If-Modified-Since \n If-Match \n
//	               If-None-Match \n If-Unmodified-Since \n Range \n
//	               CanonicalizedHeaders CanonicalizedResource
//	SharedKeyLite: VERB \n Content-MD5 \n Content-Type \n Date \n
//	               CanonicalizedHeaders "/" account path [?comp=value]

// contentLengthOmittedVersion is the first version whose string to sign leaves the
// Content-Length line empty for an empty body instead of writing 0.
const contentLengthOmittedVersion = "2015-02-21"

// emptyHeadersSignedVersion is the first version that keeps x-ms- headers with empty values in
// the canonicalized headers.
const emptyHeadersSignedVersion = "2016-05-31"

// storageStringsToSign returns the strings a Blob or Queue client may have signed for path,
// most likely first. There are several because clients disagree where the protocol leaves
// room: the Date line is empty when x-ms-date is sent (every SDK) but a client sending Date may
// sign it, and the x-ms- headers are sorted by code point (Python) or with a culture-aware
// comparison that ignores '-' at first (.NET, and Go's azblob, which ships its weights).
func storageStringsToSign(r *Request, account, path string, lite bool) []string {
	version := r.Header.Get("X-Ms-Version")
	dates := []string{""}
	if d := r.Header.Get("Date"); d != "" {
		if r.Header.Get("X-Ms-Date") != "" {
			dates = append(dates, d)
		} else {
			dates = []string{d}
		}
	}
	headerLists := canonicalizedHeaders(r.Header, version >= emptyHeadersSignedVersion || version == "")
	resource := "/" + account + path
	if lite {
		if _, ok := r.Query["comp"]; ok {
			resource += "?comp=" + r.Query.Get("comp")
		}
	} else {
		resource += canonicalizedQuery(r)
	}

	var out []string
	for _, date := range dates {
		var head string
		if lite {
			head = r.Method + "\n" + r.Header.Get("Content-Md5") + "\n" + r.Header.Get("Content-Type") + "\n" + date + "\n"
		} else {
			h := r.Header
			head = r.Method + "\n" + h.Get("Content-Encoding") + "\n" + h.Get("Content-Language") + "\n" +
				signedContentLength(r.ContentLength, version) + "\n" + h.Get("Content-Md5") + "\n" +
				h.Get("Content-Type") + "\n" + date + "\n" + h.Get("If-Modified-Since") + "\n" +
				h.Get("If-Match") + "\n" + h.Get("If-None-Match") + "\n" + h.Get("If-Unmodified-Since") + "\n" +
				h.Get("Range") + "\n"
		}
		for _, headers := range headerLists {
			if s := head + headers + resource; !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

func signedContentLength(n int64, version string) string {
	switch {
	case n > 0:
		return strconv.FormatInt(n, 10)
	case n == 0 && version != "" && version < contentLengthOmittedVersion:
		return "0"
	}
	return ""
}

// canonicalizedHeaders renders the x-ms- headers as "name:value\n" lines, name lower-cased,
// values trimmed and joined with ',', in each sort order clients use (one string when they
// agree, as they do for almost every request).
func canonicalizedHeaders(h http.Header, keepEmpty bool) []string {
	type line struct{ name, value string }
	var lines []line
	for name, values := range h {
		if len(name) < len("x-ms-") || !strings.EqualFold(name[:len("x-ms-")], "x-ms-") {
			continue
		}
		var value string
		if len(values) == 1 {
			value = strings.TrimSpace(values[0])
		} else {
			trimmed := make([]string, len(values))
			for i, v := range values {
				trimmed[i] = strings.TrimSpace(v)
			}
			value = strings.Join(trimmed, ",")
		}
		if value == "" && !keepEmpty {
			continue
		}
		lines = append(lines, line{strings.ToLower(name), value})
	}
	render := func() string {
		n := 0
		for _, l := range lines {
			n += len(l.name) + len(l.value) + 2
		}
		var b strings.Builder
		b.Grow(n)
		for _, l := range lines {
			b.WriteString(l.name)
			b.WriteByte(':')
			b.WriteString(l.value)
			b.WriteByte('\n')
		}
		return b.String()
	}
	// The orders clients sort names in: by code point (most), the service's own (the Go and
	// .NET SDKs), Python's ranking. They agree unless names differ first at punctuation or
	// a digit.
	orders := []func(a, b string) bool{
		func(a, b string) bool { return a < b },
		cultureLess,
		pythonLess,
	}
	var out []string
	for i, less := range orders {
		byName := func(i, j int) bool { return less(lines[i].name, lines[j].name) }
		if i > 0 && sort.SliceIsSorted(lines, byName) {
			continue // the same as an order before
		}
		sort.SliceStable(lines, byName)
		if s := render(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// cultureLess is the order the real service sorts x-ms-* header names in for Shared Key: the
// .NET invariant culture's, which the SDKs emulate (the Go and .NET SDKs with its weight
// tables, Python with a character ranking). It compares in two passes. First the characters
// that carry a primary weight, in primaryOrder, case ignored; the others ('-', '\” and
// what a header name cannot hold) are skipped; a name that runs out first sorts first.
// On a tie, the names are walked again side by side, looking only at '\” and '-': at the
// first place they differ, an ordinary character sorts before either, '\” before '-', and
// the end of a name before both.
func cultureLess(a, b string) bool { return compareCulture(a, b) < 0 }

// primaryOrder lists the characters a header name can hold that have a primary weight, from
// the lightest: punctuation first, '+' after it, then digits, then letters.
const primaryOrder = "!#$%&*.^_`|~+0123456789abcdefghijklmnopqrstuvwxyz"

// primaryRank is each byte's place in primaryOrder, from 1; 0 for none (skipped).
var primaryRank = func() (rank [256]uint8) {
	for i := 0; i < len(primaryOrder); i++ {
		c := primaryOrder[i]
		rank[c] = uint8(i + 1)
		if 'a' <= c && c <= 'z' {
			rank[c-'a'+'A'] = uint8(i + 1)
		}
	}
	return rank
}()

func compareCulture(a, b string) int {
	i, j := 0, 0
	for {
		for i < len(a) && primaryRank[a[i]] == 0 {
			i++
		}
		for j < len(b) && primaryRank[b[j]] == 0 {
			j++
		}
		if i == len(a) || j == len(b) {
			if i < len(a) {
				return 1
			}
			if j < len(b) {
				return -1
			}
			break
		}
		if ra, rb := primaryRank[a[i]], primaryRank[b[j]]; ra != rb {
			return cmp.Compare(ra, rb)
		}
		i++
		j++
	}
	for k := 0; ; k++ {
		wa, wb := dashWeight(a, k), dashWeight(b, k)
		switch {
		case wa == wb && wa == dashEnd:
			return 0
		case wa == wb:
		case wa == 0:
			return -1
		case wb == 0:
			return 1
		default:
			return cmp.Compare(wa, wb)
		}
	}
}

// The second pass's weights: 0 for an ordinary character.
const (
	dashEnd = 1 + iota
	dashApostrophe
	dashHyphen
)

func dashWeight(s string, k int) int {
	switch {
	case k >= len(s):
		return dashEnd
	case s[k] == '\'':
		return dashApostrophe
	case s[k] == '-':
		return dashHyphen
	}
	return 0
}

// pythonLess is azure-storage-*'s (Python) order: names compared character by character by
// their place in pythonOrder, a name that runs out first sorting first.
func pythonLess(a, b string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if ra, rb := pythonRank[a[i]], pythonRank[b[i]]; ra != rb {
			return ra < rb
		}
	}
	return len(a) < len(b)
}

// pythonOrder ranks the characters of header names as the Python SDKs do, from the lightest.
const pythonOrder = "-!#$%&*.^_|~+\"'(),/`0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz{}"

var pythonRank = func() (rank [256]uint8) {
	for i := range rank {
		rank[i] = 255 // not in the ranking: the Python SDK refuses to sign; last here
	}
	for i := 0; i < len(pythonOrder); i++ {
		rank[pythonOrder[i]] = uint8(i)
	}
	return rank
}()

// canonicalizedQuery renders every query parameter as "\nname:value", names lower-cased and
// sorted, several values of one name sorted and joined with ','.
func canonicalizedQuery(r *Request) string {
	params := map[string][]string{}
	for name, values := range r.Query {
		lower := strings.ToLower(name)
		params[lower] = append(params[lower], values...)
	}
	names := make([]string, 0, len(params))
	for name := range params {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		values := params[name]
		sort.Strings(values)
		b.WriteString("\n")
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(strings.Join(values, ","))
	}
	return b.String()
}
