package blob

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// Azure's limits (shared/spec/blob.md §17), at the newest service version. The HTTP layer
// applies the smaller ones of older versions where it must.
const (
	MaxBlobNameLength     = 1024
	MaxBlobNameSegments   = 254
	MaxMetadataSize       = 8 << 10
	MaxBlockIDLength      = 64
	MaxBlockSize          = 4000 << 20
	MaxPutBlobSize        = 5000 << 20
	MaxCommittedBlocks    = 50000
	MaxUncommittedBlocks  = 100000
	MaxBlockListEntries   = 50000
	MaxAppendBlockSize    = 100 << 20
	MaxAppendBlocks       = 50000
	PageSize              = 512
	MaxPageBlobSize       = 8 << 40
	MaxPutPageSize        = 4 << 20
	MaxRangeChecksumSize  = 4 << 20
	MaxStoredPolicies     = 5
	MaxPolicyIDLength     = 64
	MaxListResults        = 5000
	MaxTags               = 10
	MaxTagKeyLength       = 128
	MaxTagValueLength     = 256
	MinLeaseSeconds       = 15
	MaxLeaseSeconds       = 60
	InfiniteLease         = -1
	MaxBreakPeriodSeconds = 60
)

// ValidateContainerName applies Azure's container-name rules: 3–63 characters of a–z, 0–9
// and '-', a letter or digit at both ends, no "--"; or one of the special names $root, $web
// and $logs. Length is checked first (400 OutOfRangeInput), then characters (400
// InvalidResourceName, with the real message's typo).
func ValidateContainerName(name string) error {
	switch name {
	case "$root", "$web", "$logs":
		return nil
	}
	if len(name) < 3 || len(name) > 63 {
		return azerr.Newf(azerr.OutOfRangeInput, "The specified resource name length is not within the permissible limits. Container names must be 3 to 63 characters long; %q has %d.", name, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(name)-1 || name[i-1] == '-') {
			return azerr.Newf(azerr.InvalidResourceName, "The specifed resource name contains invalid characters. Container names are lower-case letters, digits and single hyphens, starting and ending with a letter or digit; %q is not.", name)
		}
	}
	return nil
}

// ValidateBlobName applies Azure's blob-name rules: 1–1,024 characters (counted as the
// service does, in UTF-16 units), at most 254 '/'-separated segments, valid UTF-8 without
// control characters. The non-characters U+FFFE and U+FFFF are names' own (the real service
// stores them, and lists such names percent-encoded, recorded by the JS SDK's tests); XML
// cannot carry them, which listings deal with. Too long is 400
// OutOfRangeInput, anything else 400 InvalidResourceName (the real codes are not documented
// for blobs; these are the container ones).
func ValidateBlobName(name string) error {
	units := 0
	for i, r := range name {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(name[i:]); size <= 1 {
				return azerr.Newf(azerr.InvalidResourceName, "The specifed resource name contains invalid characters. Blob names must be valid UTF-8.")
			}
		}
		if r < 0x20 || r == 0x7f {
			return azerr.Newf(azerr.InvalidResourceName, "The specifed resource name contains invalid characters. Blob names must not contain the character U+%04X.", r)
		}
		units += utf16.RuneLen(r)
	}
	if units < 1 || units > MaxBlobNameLength {
		return azerr.Newf(azerr.OutOfRangeInput, "The specified resource name length is not within the permissible limits. Blob names must be 1 to %d characters long; this one has %d.", MaxBlobNameLength, units)
	}
	if n := strings.Count(name, "/") + 1; n > MaxBlobNameSegments {
		return azerr.Newf(azerr.InvalidResourceName, "The specifed resource name contains invalid characters. A blob name may have at most %d path segments; this one has %d.", MaxBlobNameSegments, n)
	}
	return nil
}
