package pebble

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"

	"github.com/tabula-dev/tabula/internal/store"
)

// Pebble compares keys bytewise, so a store.Key is stored under an encoding whose byte order
// is the contract's (Space, Partition, Row) order. Each component is written escaped and
// terminated:
//
//	component = { any byte but 0x00 | 0x00 0xFF } 0x00 0x01
//	key       = component(Space) component(Partition) component(Row)
//
// Order is preserved because, comparing two components a and b: if a is a proper prefix of
// b, a's encoding reaches its terminator 0x00 0x01 where b's has either a byte ≥ 0x01 or the
// escape 0x00 0xFF, both greater; otherwise the first differing bytes x < y compare the same
// way encoded (a 0x00 becomes 0x00 0xFF, still below any y ≥ 0x01). Since the terminator
// never occurs inside an encoded component, no encoded component is a prefix of another, so
// the first differing component alone decides the order of whole keys, and every key of a
// space (or of a partition) starts with the same encoded prefix.
//
// This encoding is the on-disk format: changing it makes existing stores unreadable.
const (
	escape     = 0x00
	escapedNul = 0xFF // escape escapedNul is a 0x00 byte inside a component
	terminator = 0x01 // escape terminator ends a component
)

var errCorruptKey = errors.New("pebble store: corrupt key encoding")

// appendComponent appends the encoding of one key component to dst.
func appendComponent(dst []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, escape)
		if i < 0 {
			break
		}
		dst = append(dst, s[:i+1]...)
		dst = append(dst, escapedNul)
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, escape, terminator)
}

// appendPartitionPrefix appends the encoded prefix shared by every key of one partition.
func appendPartitionPrefix(dst []byte, space, partition string) []byte {
	return appendComponent(appendComponent(dst, space), partition)
}

// appendKey appends the encoding of k to dst.
func appendKey(dst []byte, k store.Key) []byte {
	return appendComponent(appendPartitionPrefix(dst, k.Space, k.Partition), k.Row)
}

// spaceBounds returns [lower, upper) enclosing exactly the encoded keys of space: lower is
// the space's encoded prefix and upper is that prefix with its final terminator byte
// incremented, which sorts after every key extending the prefix and before every key of a
// greater space (those differ from the prefix at or before its final 0x00 0x01, with a byte
// that is ≥ 0x01 or with 0x00 0xFF).
func spaceBounds(space string) (lower, upper []byte) {
	lower = appendComponent(nil, space)
	upper = bytes.Clone(lower)
	upper[len(upper)-1]++
	return lower, upper
}

// nextComponent splits the first encoded component off b, returning it still escaped and
// without its terminator.
func nextComponent(b []byte) (escaped, rest []byte, err error) {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], escape)
		if j < 0 || i+j+1 == len(b) {
			return nil, nil, errCorruptKey
		}
		i += j + 1
		switch b[i] {
		case terminator:
			return b[:i-1], b[i+1:], nil
		case escapedNul:
			i++
		default:
			return nil, nil, errCorruptKey
		}
	}
}

// unescape returns the component that escaped (as split off by nextComponent) encodes.
func unescape(escaped []byte) string {
	if bytes.IndexByte(escaped, escape) < 0 {
		return string(escaped)
	}
	var sb strings.Builder
	sb.Grow(len(escaped))
	for len(escaped) > 0 {
		i := bytes.IndexByte(escaped, escape)
		if i < 0 {
			sb.Write(escaped)
			break
		}
		sb.Write(escaped[:i+1]) // the 0x00 itself; its escapedNul companion is dropped
		escaped = escaped[i+2:]
	}
	return sb.String()
}

// decodeKey is the inverse of appendKey.
func decodeKey(b []byte) (store.Key, error) {
	var parts [3]string
	for i := range parts {
		escaped, rest, err := nextComponent(b)
		if err != nil {
			return store.Key{}, err
		}
		parts[i], b = unescape(escaped), rest
	}
	if len(b) != 0 {
		return store.Key{}, errCorruptKey
	}
	return store.Key{Space: parts[0], Partition: parts[1], Row: parts[2]}, nil
}

// A stored value is the record's Version as 8 big-endian bytes followed by the record's
// Value. Fixed width rather than varint: versions are .NET ticks (~6e17), for which a varint
// is 9 bytes anyway.
const versionLen = 8

var errCorruptValue = errors.New("pebble store: corrupt value encoding")

// putValue writes the encoding of (version, value) into dst, which must be exactly
// versionLen+len(value) bytes long.
func putValue(dst []byte, version int64, value []byte) {
	binary.BigEndian.PutUint64(dst, uint64(version))
	copy(dst[versionLen:], value)
}

// decodeValue splits a stored value. The returned value aliases b.
func decodeValue(b []byte) (version int64, value []byte, err error) {
	if len(b) < versionLen {
		return 0, nil, errCorruptValue
	}
	return int64(binary.BigEndian.Uint64(b)), b[versionLen:], nil
}
