package bench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// batchSize is the number of entities in one entity group transaction: Azure's maximum.
const batchSize = 100

// batchBuilder writes $batch bodies (one change set of inserts) by hand, the way the SDKs lay
// them out: CRLF line ends, an absolute URL on each request line, and no Content-ID (responses
// are matched by position).
type batchBuilder struct {
	// insertURL is the absolute URL each sub-request posts to: the table's entity set.
	insertURL string
	batchID   string
	csID      string
	scratch   []byte // one entity's JSON, to know its length before writing it
}

func newBatchBuilder(c *Client, table string, rng *rand.Rand) *batchBuilder {
	return &batchBuilder{
		insertURL: c.scheme + "://" + c.host + c.basePath + "/" + table,
		batchID:   "batch_" + randomID(rng),
		csID:      "changeset_" + randomID(rng),
	}
}

// contentType is the Content-Type of the $batch request.
func (bb *batchBuilder) contentType() string { return "multipart/mixed; boundary=" + bb.batchID }

// appendBody appends a body inserting n entities; entity(i, dst) appends the JSON of the i-th.
func (bb *batchBuilder) appendBody(b []byte, n int, entity func(i int, dst []byte) []byte) []byte {
	b = append(b, "--"...)
	b = append(b, bb.batchID...)
	b = append(b, "\r\nContent-Type: multipart/mixed; boundary="...)
	b = append(b, bb.csID...)
	b = append(b, "\r\n\r\n"...)
	for i := range n {
		bb.scratch = entity(i, bb.scratch[:0])
		b = append(b, "--"...)
		b = append(b, bb.csID...)
		b = append(b, "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nPOST "...)
		b = append(b, bb.insertURL...)
		b = append(b, " HTTP/1.1\r\n"+
			"Content-Type: application/json\r\n"+
			"Accept: application/json;odata=minimalmetadata\r\n"+
			"Prefer: return-no-content\r\n"+
			"DataServiceVersion: 3.0;\r\n"+
			"Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(bb.scratch)), 10)
		b = append(b, "\r\n\r\n"...)
		b = append(b, bb.scratch...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "--"...)
	b = append(b, bb.csID...)
	b = append(b, "--\r\n--"...)
	b = append(b, bb.batchID...)
	b = append(b, "--\r\n"...)
	return b
}

func randomID(rng *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = hexDigits[rng.IntN(16)]
	}
	return string(b[:])
}

// checkBatchResponse verifies that a $batch answer reports every one of n operations as done.
// A change set fails as a whole: Azure answers 202 Accepted with a single sub-response holding
// the failing operation's status and error, so the sub-responses' status lines are what tell.
func checkBatchResponse(r response, n int) error {
	if r.status != 202 {
		return statusError(r)
	}
	ok := 0
	rest := r.body
	for {
		i := bytes.Index(rest, []byte("HTTP/1.1 "))
		if i < 0 {
			break
		}
		rest = rest[i+len("HTTP/1.1 "):]
		if len(rest) < 3 {
			break
		}
		status, err := strconv.Atoi(string(rest[:3]))
		if err != nil {
			return &opError{key: "batch: malformed response", detail: truncate(string(r.body), 300)}
		}
		if status < 200 || status > 299 {
			sub := response{status: status, header: nil, body: rest}
			e := statusError(sub)
			e.key = "batch " + e.key
			return e
		}
		ok++
	}
	if ok != n {
		return &opError{key: "batch: wrong number of sub-responses",
			detail: fmt.Sprintf("%d successful sub-responses for %d operations", ok, n)}
	}
	return nil
}
