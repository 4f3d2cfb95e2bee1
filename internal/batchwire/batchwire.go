// Package batchwire converts the body of an entity group transaction ($batch) and of a Blob
// Batch (flat.go) between its wire form — a MIME multipart/mixed document whose innermost
// parts are whole HTTP requests or responses — and plain Go values. It knows nothing of tables,
// entities or blobs: it does not route URLs, apply X-HTTP-Method, read JSON or execute
// anything. shared/spec/batch.md (and blob.md §16) is the reference for every byte written or
// accepted here.
package batchwire

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// Limits of an entity group transaction (batch.md §3).
const (
	// MaxOperations is the most operations one change set may hold.
	MaxOperations = 100
	// MaxBodySize is the largest $batch body the service accepts, in bytes.
	MaxBodySize = 4 << 20
)

// Part is one HTTP sub-request of a batch, exactly as the client wrote it.
type Part struct {
	// Method is the method token of the request line (POST, PUT, PATCH, MERGE, DELETE, GET or
	// anything else the client wrote). X-HTTP-Method is not applied: it stays in Header.
	Method string
	// URL is RawTarget parsed: usually absolute (https://account.table.core.windows.net/t(...)),
	// sometimes origin-form (/t(...)) or, from hand-written clients, relative (t(...)).
	URL *url.URL
	// RawTarget is the request target exactly as written in the request line.
	RawTarget string
	// Header holds the sub-request's own headers with canonicalised keys (not the headers of the
	// MIME part that carries it). Repeated headers keep every value.
	Header http.Header
	// Body is the sub-request body with surrounding whitespace removed; empty for DELETE and
	// for most GETs. Content-Length is not trusted (JS writes an extra CRLF before the body).
	// Body is not a copy: it aliases the body given to Decode.
	Body []byte
	// ContentID is the Content-ID of the MIME part or, failing that, of the sub-request (the
	// legacy Node.js library puts it among the request headers). Empty if neither has one.
	ContentID string
}

// Request is a decoded $batch body. Exactly one of Changeset and Query is set.
type Request struct {
	// Changeset holds the write operations of the batch's single change set, in order.
	Changeset []Part
	// Query is the one GET sent directly in the batch, outside any change set (legacy
	// clients, batch.md §7).
	Query *Part
	// ChangesetBoundary is the boundary of the change set, empty for a query.
	ChangesetBoundary string
}

// Response is one sub-response to write into a $batch response.
type Response struct {
	// Status is the sub-response's HTTP status code; it must have three digits.
	Status int
	// Header is written in the order the real service uses (batch.md §5.1) whatever the map
	// order: X-Content-Type-Options, Cache-Control, Preference-Applied, DataServiceVersion,
	// Content-Type, Location, DataServiceId, ETag, then any others sorted by name. Azure's own
	// spellings are used on the wire (ETag, DataServiceVersion, lower-case x-ms-*).
	Header http.Header
	// Body follows the header block as is (an entity or an odata.error document).
	Body []byte
	// ContentID, when set, is written as the sub-response's first header, Content-ID. The
	// real service does not echo it today; SDKs match responses by position.
	ContentID string
}

// ChangesetError is a failure that Azure reports inside the 202 change-set response, as the
// response of operation Index, rather than as the status of the $batch request itself. The
// caller renders Err as that single failing sub-response, prefixing its message with
// "<Index>:" exactly as for an operation that failed while executing.
//
// Every other error from Decode is an *azerr.Error to be answered as the top-level status.
// ChangesetError unwraps to its *azerr.Error, so azerr.As still finds the code.
type ChangesetError struct {
	Index int
	Err   *azerr.Error
}

func (e *ChangesetError) Error() string { return fmt.Sprintf("operation %d: %v", e.Index, e.Err) }

func (e *ChangesetError) Unwrap() error { return e.Err }
