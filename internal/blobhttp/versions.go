package blobhttp

import (
	"strconv"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// Version gates (blob.md §2.1): behaviour that depends on x-ms-version and that SDKs can
// observe. The .NET, Java and Python SDKs can be told to send versions back to 2019-02-02;
// everything older than that is left to the newest behaviour. A request without a version is
// served the newest behaviour.
const (
	versionLargeBlocks     = "2019-12-12" // Put Blob up to 5,000 MiB and Put Block up to 4,000 MiB
	versionPagedPageRanges = "2020-10-02" // Get Page Ranges takes marker and maxresults
	versionFindInContainer = "2021-04-10" // Find Blobs by Tags of one container exists
	versionLargeAppends    = "2022-11-02" // Append Block up to 100 MiB
)

// atLeast reports whether the request's version is v or newer.
func (rq *request) atLeast(v string) bool { return rq.Version == "" || rq.Version >= v }

// Older versions' body limits.
const (
	putBlobLimit2016  = 256 << 20 // 2016-05-31 to 2019-12-12
	putBlockLimit2016 = 100 << 20
	putBlobLimitOld   = 64 << 20 // before 2016-05-31
	putBlockLimitOld  = 4 << 20
	appendBlockOld    = 4 << 20 // before 2022-11-02
)

// bodyLimit refuses a body of size bytes that the request's version does not allow for op
// ("Put Blob", "Put Block" or "Append Block"): 413 RequestBodyTooLarge. The newest limits
// are the blob service's own.
func bodyLimit(rq *request, op string, size int64) error {
	limit := int64(-1)
	switch op {
	case "Put Blob":
		switch {
		case rq.atLeast(versionLargeBlocks):
		case rq.atLeast("2016-05-31"):
			limit = putBlobLimit2016
		default:
			limit = putBlobLimitOld
		}
	case "Put Block":
		switch {
		case rq.atLeast(versionLargeBlocks):
		case rq.atLeast("2016-05-31"):
			limit = putBlockLimit2016
		default:
			limit = putBlockLimitOld
		}
	case "Append Block":
		if !rq.atLeast(versionLargeAppends) {
			limit = appendBlockOld
		}
	}
	if limit < 0 || size <= limit {
		return nil
	}
	e := azerr.Newf(azerr.RequestBodyTooLarge, "The request body is too large and exceeds the maximum permissible limit. %[2]s takes at most %[1]d bytes at version %[3]s.", limit, op, rq.Version)
	e.Details = []azerr.Detail{{Name: "MaxLimit", Value: strconv.FormatInt(limit, 10)}}
	return e
}
