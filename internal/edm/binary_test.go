package edm

import (
	"errors"
	"math/rand/v2"
	"testing"
)

func TestBinaryRoundTripsRandomEntities(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		e := randEntity(r)
		b := e.MarshalBinary()
		got := Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Timestamp: e.Timestamp}
		if err := UnmarshalBinary(b, &got); err != nil {
			t.Fatalf("entity %d: %v", i, err)
		}
		if diff := diffEntities(&got, &e); diff != "" {
			t.Fatalf("entity %d: %s", i, diff)
		}
		if string(e.AppendBinary([]byte("prefix"))) != "prefix"+string(b) {
			t.Fatalf("entity %d: AppendBinary does not append MarshalBinary's bytes", i)
		}
	}
}

func TestBinaryRoundTripsTheFixtureAndLeavesKeysAndTimestamp(t *testing.T) {
	e := fixtureEntity()
	b := e.MarshalBinary()
	got := Entity{PartitionKey: "set by", RowKey: "the caller", Timestamp: 42, Properties: []Property{{"Old", Value{Type: Int32}}}}
	if err := UnmarshalBinary(b, &got); err != nil {
		t.Fatal(err)
	}
	want := e
	want.PartitionKey, want.RowKey, want.Timestamp = "set by", "the caller", 42
	if diff := diffEntities(&got, &want); diff != "" {
		t.Fatal(diff)
	}
	// Nothing aliases the record.
	for i := range b {
		b[i] = 0
	}
	if diff := diffEntities(&got, &want); diff != "" {
		t.Fatalf("after clearing the record: %s", diff)
	}
}

func TestBinaryOfAnEntityWithoutPropertiesIsTwoBytes(t *testing.T) {
	e := Entity{PartitionKey: "p", RowKey: "r", Timestamp: MaxDateTime}
	b := e.MarshalBinary()
	if string(b) != "\x01\x00" {
		t.Fatalf("got %q", b)
	}
	got := Entity{Properties: []Property{{"Old", Value{Type: Int32}}}}
	if err := UnmarshalBinary(b, &got); err != nil || len(got.Properties) != 0 {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestUnmarshalBinaryRejectsCorruptRecords(t *testing.T) {
	e := fixtureEntity()
	good := e.MarshalBinary()
	var cases [][]byte
	for n := range len(good) {
		cases = append(cases, good[:n]) // every truncation
	}
	cases = append(cases,
		append(append([]byte{}, good...), 0),   // trailing byte
		append([]byte{2}, good[1:]...),         // unknown version
		[]byte{1, 0xff},                        // bad varint
		[]byte{1, 200},                         // count beyond the record
		[]byte{1, 1, 9, 1, 'a', 0},             // unknown type
		[]byte{1, 1, 0, 1, 'a', 0},             // type 0
		[]byte{1, 1, byte(Boolean), 1, 'a', 2}, // Boolean 2
		[]byte{1, 1, byte(Int32), 1, 'a', 0x80, 0x80, 0x80, 0x80, 0x10},                                // Int32 out of range
		[]byte{1, 1, byte(String), 5, 'a', 0},                                                          // name beyond the record
		[]byte{1, 1, byte(Binary), 1, 'a', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // huge length
	)
	for _, b := range cases {
		var got Entity
		err := UnmarshalBinary(b, &got)
		if !errors.Is(err, errCorruptRecord) {
			t.Errorf("%x: got %v, want a corrupt-record error", b, err)
		}
		if got.Properties != nil {
			t.Errorf("%x: properties set on error: %+v", b, got.Properties)
		}
	}
}

func TestAppendBinaryPanicsOnInvalidType(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	e := Entity{Properties: []Property{{"V", Value{}}}}
	e.MarshalBinary()
}
