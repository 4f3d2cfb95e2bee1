package store

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// ObjectIDLen is the length of the ids NewObjectID makes.
const ObjectIDLen = 32

// NewObjectID returns a new object id for a PutObject beginning at start: 16 lowercase hex
// digits of start in Unix nanoseconds, then 16 of randomness. Ids made this way never
// repeat (64 random bits per nanosecond), sort by start time (so a backend can find the ids
// begun before a time with a range scan), and are safe as file names.
func NewObjectID(start time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(start.UnixNano()))
	rand.Read(b[8:])
	return hex.EncodeToString(b[:])
}

// ObjectIDBefore returns the smallest id NewObjectID can make for a start at or after t:
// every id made for an earlier start sorts below it, bytewise.
func ObjectIDBefore(t time.Time) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t.UnixNano()))
	return hex.EncodeToString(b[:])
}

// ValidObjectID reports whether id has the form NewObjectID gives. Backends reject other
// ids before they reach a file name or a query.
func ValidObjectID(id string) bool {
	if len(id) != ObjectIDLen {
		return false
	}
	for i := range len(id) {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
