package postgres

import (
	"crypto/sha256"
	"strings"

	"github.com/tabula-dev/tabula/internal/store"
)

// A btree index entry of PostgreSQL holds at most 2704 bytes (a third of an 8 KiB page, less
// overheads: "index row size … exceeds btree version 4 maximum 2704"), but the keys Azure
// accepts are longer: PartitionKey and RowKey of up to 1024 UTF-16 code units each (edm
// .MaxKeyLength) are up to 3 KiB of UTF-8 apiece, 6 KiB together. So the primary key is not
// the key itself but (key_head, key_hash):
//
//   - key_head is the first keyHeadBytes bytes of an encoding of (space, partition_key,
//     row_key) whose bytewise order is the contract's key order. A prefix of such an
//     encoding orders keys consistently with it: head(a) < head(b) implies a < b. Keys with
//     equal heads (only keys whose encoding exceeds keyHeadBytes and which share those first
//     bytes) are ordered by the full columns, which the scans' ORDER BY names after
//     key_head; PostgreSQL sorts each such group on its own (an incremental sort) while
//     reading the index in key_head order.
//   - key_hash is the SHA-256 of the whole encoding: with key_head, it identifies the key.
//
// So a point read is one index lookup, and a scan of any range (a partition, a space) one
// index range scan between the heads of its bounds, filtered by the full key. The space,
// partition_key and row_key columns keep the key itself.
//
// The encoding is the one store/pebble uses for its keys: each component with 0x00 written
// as 0x00 0xFF and terminated by 0x00 0x01 (see the proof of order there). It is part of the
// schema: changing it needs a migration.
const keyHeadBytes = 2560

// encodeKey returns the order-preserving encoding of k.
func encodeKey(k store.Key) []byte {
	b := make([]byte, 0, len(k.Space)+len(k.Partition)+len(k.Row)+6)
	for _, c := range [...]string{k.Space, k.Partition, k.Row} {
		for {
			i := strings.IndexByte(c, 0x00)
			if i < 0 {
				break
			}
			b = append(b, c[:i+1]...)
			b = append(b, 0xFF)
			c = c[i+1:]
		}
		b = append(b, c...)
		b = append(b, 0x00, 0x01)
	}
	return b
}

// keyHead returns k's key_head column.
func keyHead(k store.Key) []byte {
	b := encodeKey(k)
	return b[:min(len(b), keyHeadBytes)]
}

// keyColumns returns k's key_head and key_hash columns.
func keyColumns(k store.Key) (head, hash []byte) {
	b := encodeKey(k)
	sum := sha256.Sum256(b)
	return b[:min(len(b), keyHeadBytes)], sum[:]
}
