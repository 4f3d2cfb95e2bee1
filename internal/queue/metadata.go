package queue

import (
	"slices"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// Metadata is a queue's user metadata, the x-ms-meta-* pairs, in the order they were given.
// Names keep their case but are compared ignoring it.
type Metadata []MetadataPair

// MetadataPair is one name and its value.
type MetadataPair struct {
	Name  string `json:"n"`
	Value string `json:"v"`
}

// MaxMetadataSize is Azure's limit on the names and values of one resource's metadata, in
// bytes (shared/spec/blob.md §5; the Queue service is assumed to enforce Blob's limit).
const MaxMetadataSize = 8 << 10

// Validate applies Azure's metadata rules: every name a C# identifier (here: an ASCII letter
// or underscore, then letters, digits and underscores — header names cannot carry more),
// no name twice ignoring case, and at most MaxMetadataSize bytes of names and values.
func (m Metadata) Validate() error {
	size := 0
	for i, p := range m {
		if p.Name == "" {
			return azerr.Newf(azerr.EmptyMetadataKey, "The key for one of the metadata key-value pairs is empty (the value was %q).", p.Value)
		}
		if !isIdentifier(p.Name) {
			return azerr.Newf(azerr.InvalidMetadata, "The metadata specified is invalid. It has characters that are not permitted: %q is not a C# identifier.", p.Name)
		}
		for _, q := range m[:i] {
			if strings.EqualFold(q.Name, p.Name) {
				return azerr.Newf(azerr.InvalidMetadata, "The metadata specified is invalid. The names %q and %q differ only in case.", q.Name, p.Name)
			}
		}
		size += len(p.Name) + len(p.Value)
	}
	if size > MaxMetadataSize {
		return azerr.Newf(azerr.MetadataTooLarge, "The size of the specified metadata exceeds the maximum size permitted: %d bytes of names and values, at most %d.", size, MaxMetadataSize)
	}
	return nil
}

func isIdentifier(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Equal reports whether m and o hold the same pairs, names compared ignoring case and values
// exactly, in any order. Create Queue uses it to tell a repeated creation (204) from a
// conflicting one (409).
func (m Metadata) Equal(o Metadata) bool {
	if len(m) != len(o) {
		return false
	}
	return slices.Equal(m.sorted(), o.sorted())
}

func (m Metadata) sorted() []MetadataPair {
	out := make([]MetadataPair, len(m))
	for i, p := range m {
		out[i] = MetadataPair{Name: strings.ToLower(p.Name), Value: p.Value}
	}
	slices.SortFunc(out, func(a, b MetadataPair) int { return strings.Compare(a.Name, b.Name) })
	return out
}
