package batchwire

import (
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"github.com/tabula-dev/tabula/internal/uuid"
)

// EncodeChangesetResponse writes the body of the 202 response to a $batch holding a change set:
// one sub-response per operation, in order, when the change set succeeded, or the single
// sub-response of the failing operation when it did not. It returns the outer Content-Type
// ("multipart/mixed; boundary=batchresponse_<uuid>") and the body, laid out byte for byte as
// batch.md §5 and §6: CRLF line ends, boundaries batchresponse_<uuid> and
// changesetresponse_<uuid>, no preamble, every sub-response ending with CRLF before the next
// delimiter. Java's parser needs the "--batchresponse_" first line and the
// "HTTP/1.1 <3 digits> <reason>" status lines; JS finds sub-responses by "--changesetresponse_"
// and reads "ETag: " case-sensitively; Go reads each part with http.ReadResponse.
//
// Only the headers in each Response are written (see Response.Header for their order); the
// encoder adds none. responses should not be empty: an empty change-set response is valid MIME
// but no SDK expects one.
func EncodeChangesetResponse(responses []Response) (contentType string, body []byte) {
	return encodeChangesetResponse(responses, uuid.New(), uuid.New())
}

// EncodeQueryResponse writes the body of the 202 response to a $batch holding a single query
// (batch.md §7): the query's response directly under the batchresponse boundary.
func EncodeQueryResponse(r Response) (contentType string, body []byte) {
	return encodeQueryResponse(r, uuid.New())
}

func encodeChangesetResponse(responses []Response, batchID, changesetID string) (string, []byte) {
	batch, changeset := "batchresponse_"+batchID, "changesetresponse_"+changesetID
	size := 256
	for _, r := range responses {
		size += encodedSize(r)
	}
	b := make([]byte, 0, size)
	b = append(b, "--"+batch+"\r\nContent-Type: multipart/mixed; boundary="+changeset+"\r\n\r\n"...)
	for _, r := range responses {
		b = appendSubResponse(b, changeset, r)
	}
	b = append(b, "--"+changeset+"--\r\n--"+batch+"--\r\n"...)
	return "multipart/mixed; boundary=" + batch, b
}

func encodeQueryResponse(r Response, batchID string) (string, []byte) {
	batch := "batchresponse_" + batchID
	b := make([]byte, 0, 128+encodedSize(r))
	b = appendSubResponse(b, batch, r)
	b = append(b, "--"+batch+"--\r\n"...)
	return "multipart/mixed; boundary=" + batch, b
}

// encodedSize is the size of r's part in the response, give or take a few bytes.
func encodedSize(r Response) int {
	n := 160 + len(r.ContentID) + len(r.Body)
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// appendSubResponse appends one delimiter, the application/http part headers and the response.
// The CRLF after the body is the one that belongs to the next delimiter (RFC 2046), which is
// why a body-less response ends with an empty line and then one more CRLF.
func appendSubResponse(b []byte, boundary string, r Response) []byte {
	b = append(b, "--"+boundary+"\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"...)
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(r.Status)...)
	b = append(b, "\r\n"...)
	if r.ContentID != "" {
		b = appendHeader(b, "Content-ID", r.ContentID)
	}
	if onlyOrderedHeaders(r.Header) {
		// What the Table service's sub-responses carry: written in headerOrder without
		// collecting and sorting the keys, which cost more than the rest of the encoding.
		for _, c := range headerOrder {
			if r.ContentID != "" && c == "Content-Id" {
				continue
			}
			name := wireName(c)
			for _, v := range r.Header[c] {
				b = appendHeader(b, name, v)
			}
		}
	} else {
		for _, h := range orderedHeaders(r.Header) {
			if r.ContentID != "" && h.canonical == "Content-Id" {
				continue
			}
			name := wireName(h.canonical)
			for _, v := range r.Header[h.key] {
				b = appendHeader(b, name, v)
			}
		}
	}
	b = append(b, "\r\n"...)
	b = append(b, r.Body...)
	return append(b, "\r\n"...)
}

// headerOrder is the order in which the real service writes sub-response headers (Go and
// Python SDK recordings, 2019-02-02; Content-ID from a 2013-08-15 Node.js recording).
var headerOrder = []string{
	"Content-Id",
	"X-Content-Type-Options",
	"Cache-Control",
	"Preference-Applied",
	"Dataserviceversion",
	"Content-Type",
	"Location",
	"Dataserviceid",
	"Etag",
}

// onlyOrderedHeaders reports whether every key of h is one of headerOrder, spelled as there.
func onlyOrderedHeaders(h http.Header) bool {
	for k := range h {
		switch k {
		case "Content-Id", "X-Content-Type-Options", "Cache-Control", "Preference-Applied",
			"Dataserviceversion", "Content-Type", "Location", "Dataserviceid", "Etag":
		default:
			return false
		}
	}
	return true
}

// headerLine is one header of a sub-response, placed by its rank in headerOrder.
type headerLine struct {
	key       string // as in the http.Header map
	canonical string
	rank      int
}

// orderedHeaders returns the keys of h in headerOrder first, then the rest sorted by name.
func orderedHeaders(h http.Header) []headerLine {
	lines := make([]headerLine, 0, len(h))
	for k := range h {
		c := textproto.CanonicalMIMEHeaderKey(k)
		rank := slices.Index(headerOrder, c)
		if rank < 0 {
			rank = len(headerOrder)
		}
		lines = append(lines, headerLine{k, c, rank})
	}
	slices.SortFunc(lines, func(a, b headerLine) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return strings.Compare(a.canonical, b.canonical)
	})
	return lines
}

// wireName spells a canonical header key the way Azure writes it. JS matches "ETag: "
// case-sensitively, so the spelling is not cosmetic.
func wireName(canonical string) string {
	switch canonical {
	case "Etag":
		return "ETag"
	case "Dataserviceversion":
		return "DataServiceVersion"
	case "Dataserviceid":
		return "DataServiceId"
	case "Content-Id":
		return "Content-ID"
	}
	if strings.HasPrefix(canonical, "X-Ms-") {
		return strings.ToLower(canonical)
	}
	return canonical
}

// appendHeader appends "name: value" and CRLF. Like net/http, it turns CR and LF inside the
// value into spaces so that a value can never end the header block.
func appendHeader(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, ": "...)
	if !strings.ContainsAny(value, "\r\n") {
		b = append(b, value...)
		return append(b, "\r\n"...)
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; c == '\r' || c == '\n' {
			b = append(b, ' ')
		} else {
			b = append(b, c)
		}
	}
	return append(b, "\r\n"...)
}
