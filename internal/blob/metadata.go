package blob

import (
	"slices"
	"strings"
	"unicode"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// Metadata is a container's or blob's user metadata: the x-ms-meta-NAME headers, NAME
// (keeping the case it was set with) to value. Names are unique ignoring case.
type Metadata map[string]string

// Validate applies Azure's metadata rules (shared/spec/blob.md §5): every name a C#
// identifier (400 InvalidMetadata; empty: 400 EmptyMetadataKey), no two names equal ignoring
// case (400 InvalidMetadata), names and values together at most 8 KiB (400
// MetadataTooLarge).
func (m Metadata) Validate() error {
	size := 0
	lower := make(map[string]bool, len(m))
	for _, name := range m.Names() {
		if name == "" {
			return azerr.New(azerr.EmptyMetadataKey)
		}
		if !isIdentifier(name) {
			return azerr.Newf(azerr.InvalidMetadata, "The metadata specified is invalid. It has characters that are not permitted. %q is not a valid metadata name: names must be C# identifiers.", name)
		}
		l := strings.ToLower(name)
		if lower[l] {
			return azerr.Newf(azerr.InvalidMetadata, "The metadata specified is invalid. The name %q is given more than once (names are compared ignoring case).", name)
		}
		lower[l] = true
		size += len(name) + len(m[name])
	}
	if size > MaxMetadataSize {
		return azerr.Newf(azerr.MetadataTooLarge, "The size of the specified metadata exceeds the maximum size permitted. Names and values together take %d bytes; at most %d are allowed.", size, MaxMetadataSize)
	}
	return nil
}

// Names returns the names in a stable order: by name ignoring case, as listings show them.
func (m Metadata) Names() []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := strings.Compare(strings.ToLower(a), strings.ToLower(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return names
}

// isIdentifier reports whether name is a C# identifier: a letter or '_', then letters,
// digits and '_'.
func isIdentifier(name string) bool {
	for i, r := range name {
		switch {
		case r == '_' || unicode.IsLetter(r):
		case i > 0 && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r)):
		default:
			return false
		}
	}
	return true
}
