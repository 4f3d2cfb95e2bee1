package auth

import (
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
// values trimmed and joined with ',', in both sort orders clients use (one string when they
// agree, as they do for every header the SDKs send).
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
	sort.Slice(lines, func(i, j int) bool { return lines[i].name < lines[j].name })
	byCodePoint := render()
	cultureOrder := func(i, j int) bool { return cultureLess(lines[i].name, lines[j].name) }
	if sort.SliceIsSorted(lines, cultureOrder) {
		return []string{byCodePoint} // the usual case: the two orders agree
	}
	sort.SliceStable(lines, cultureOrder)
	return []string{render(), byCodePoint}
}

// cultureLess approximates the .NET invariant-culture order the real service sorts header names
// by: '-' is ignored at the first level and only breaks ties.
func cultureLess(a, b string) bool {
	i, j := 0, 0
	for {
		for i < len(a) && a[i] == '-' {
			i++
		}
		for j < len(b) && b[j] == '-' {
			j++
		}
		switch {
		case i == len(a) || j == len(b):
			if i == len(a) && j == len(b) {
				return a < b // equal but for dashes
			}
			return i == len(a)
		case a[i] != b[j]:
			return a[i] < b[j]
		}
		i++
		j++
	}
}

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
