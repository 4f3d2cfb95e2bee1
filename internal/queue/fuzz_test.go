package queue

import (
	"testing"
	"time"
)

// Pop receipts and message ids come from clients: any string is refused cleanly or names
// exactly what the service would have issued.
func FuzzPopReceipt(f *testing.F) {
	id := newMessageID(time.Unix(1700000000, 0))
	f.Add(popReceipt{visible: time.UnixMicro(1700000000123456), version: makeVersion(maxExpiration, 7), id: id}.String())
	f.Add("AgAAAAMAAAAAAAAAHFrsOFDq2AE=")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parsePopReceipt(s)
		if err != nil {
			return
		}
		if again, err := parsePopReceipt(r.String()); err != nil || again != r {
			t.Fatalf("%q parsed as %+v, which prints as %q and parses as %+v, %v", s, r, r.String(), again, err)
		}
	})
}

func FuzzMessageID(f *testing.F) {
	f.Add(newMessageID(time.Now()).String())
	f.Add("00000000-0000-0000-0000-00000000000Z")
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := parseMessageID(s)
		if !ok {
			return
		}
		again, ok := parseMessageID(id.String())
		if !ok || again != id {
			t.Fatalf("%q parsed as %x, printed %q", s, id, id.String())
		}
	})
}
