package blob

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/store"
)

// ParseRange accepts exactly the two forms, with Start ≤ End, and what it accepts prints
// back as itself.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-0", "bytes=10-", "bytes=5-4", "bytes=-5", "bytes=1-2-3", "items=0-1", " bytes=3-9 ", "bytes=+1-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		r, ok := ParseRange(v)
		if !ok {
			return
		}
		if r.Start < 0 || r.End >= 0 && r.End < r.Start || r.End < -1 {
			t.Fatalf("%q parsed as %+v", v, r)
		}
		again := fmt.Sprintf("bytes=%d-", r.Start)
		if r.End >= 0 {
			again += fmt.Sprint(r.End)
		}
		if r2, ok := ParseRange(again); !ok || r2 != r {
			t.Fatalf("%q → %+v → %q → %+v", v, r, again, r2)
		}
	})
}

// Lease ids parse to GUIDs whose forms all compare equal.
func FuzzParseLeaseID(f *testing.F) {
	for _, s := range []string{idA, bareA, "{" + idA + "}", "(" + idA + ")", "{" + idA + ")", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		g, ok := parseLeaseID(v)
		if !ok {
			return
		}
		hex := fmt.Sprintf("%x", g[:])
		hyphenated := hex[:8] + "-" + hex[8:12] + "-" + hex[12:16] + "-" + hex[16:20] + "-" + hex[20:]
		for _, form := range []string{hex, strings.ToUpper(hex), hyphenated, "{" + hyphenated + "}", "(" + hyphenated + ")"} {
			if !sameLeaseID(v, form) {
				t.Fatalf("%q and %q differ", v, form)
			}
		}
	})
}

// Pieces and markers decode what they encode, and refuse, without panicking, what they did
// not.
func FuzzDecodePiece(f *testing.F) {
	f.Add(appendPiece(nil, []byte("block"), piece{Len: 5, Obj: "obj", Off: 7}))
	f.Add(appendPiece(nil, nil, piece{Len: 9}))
	f.Add([]byte{0x82, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		block, p, _, err := decodePiece(b)
		if err != nil {
			return
		}
		again := appendPiece(nil, block, p)
		block2, p2, rest2, err := decodePiece(again)
		if err != nil || len(rest2) != 0 || !bytes.Equal(block2, block) || p2 != p {
			t.Fatalf("%x decoded as %q %+v, encoded as %x, decoded as %q %+v (%v)", b, block, p, again, block2, p2, err)
		}
	})
}

func FuzzDecodeMarker(f *testing.F) {
	f.Add(encodeMarker(store.Key{Partition: "dir/name", Row: rowBase}))
	f.Add("")
	f.Add("%%")
	f.Fuzz(func(t *testing.T, m string) {
		k, err := decodeMarker("space", m)
		if err != nil {
			return
		}
		if again := encodeMarker(k); again != m {
			if k2, _ := decodeMarker("space", again); k2 != k {
				t.Fatalf("%q → %v → %q → %v", m, k, again, k2)
			}
		}
	})
}
