// Package uuid makes random (version 4) UUIDs in their usual lower-case text form, which is
// what Azure uses for request ids and for the boundaries of $batch responses.
package uuid

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns a new random UUID, such as "0f8fad5b-d9cb-469f-a165-70867728950e".
func New() string {
	var u [16]byte
	rand.Read(u[:])         // never fails (crypto/rand documentation)
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:])
}
