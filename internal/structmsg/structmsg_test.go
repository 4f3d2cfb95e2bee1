package structmsg

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc64"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// le appends v's little-endian bytes: the tests spell messages out field by field.
func le(b []byte, v any) []byte {
	b, err := binary.Append(b, binary.LittleEndian, v)
	if err != nil {
		panic(err)
	}
	return b
}

func crcOf(s string) uint64 { return crc64.Checksum([]byte(s), crc64.MakeTable(Polynomial)) }

// TestTheServicesCRC64 pins the checksum to a value the real service answered as
// x-ms-content-crc64 (base64 of its 8 little-endian bytes) for the body "hello world".
func TestTheServicesCRC64(t *testing.T) {
	if got := base64.StdEncoding.EncodeToString(le(nil, crcOf("hello world"))); got != "vo7q9sPVKY0=" {
		t.Fatalf("CRC-64 of hello world = %s", got)
	}
}

// message spells out a message with CRC-64s whose segments hold the given strings.
func message(segments ...string) []byte {
	var body []byte
	all := ""
	for i, s := range segments {
		body = le(body, uint16(i+1))
		body = le(body, uint64(len(s)))
		body = append(body, s...)
		body = le(body, crcOf(s))
		all += s
	}
	body = le(body, crcOf(all))
	b := []byte{1}
	b = le(b, uint64(headerLen+len(body)))
	b = le(b, uint16(FlagCRC64))
	b = le(b, uint16(len(segments)))
	return append(b, body...)
}

func decodeAll(msg []byte, dataLen int64) ([]byte, error) {
	d, err := NewDecoder(bytes.NewReader(msg), int64(len(msg)), dataLen)
	if err != nil {
		return nil, err
	}
	got := make([]byte, dataLen)
	if _, err := io.ReadFull(d, got); err != nil {
		return nil, err
	}
	return got, nil
}

func TestDecodeSpelledOutMessages(t *testing.T) {
	for _, segs := range [][]string{{"hello world"}, {""}, {"hello ", "world"}, {"", "hello world", ""}} {
		msg := message(segs...)
		want := strings.Join(segs, "")
		got, err := decodeAll(msg, int64(len(want)))
		if err != nil || string(got) != want {
			t.Fatalf("%q: got %q, %v", segs, got, err)
		}
	}
	// The one layout Encode writes for a short body, byte for byte.
	var buf bytes.Buffer
	if err := Encode(&buf, strings.NewReader("hello world"), 11); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), message("hello world")) || int64(buf.Len()) != EncodedLen(11) {
		t.Fatalf("Encode wrote %x\nwant        %x", buf.Bytes(), message("hello world"))
	}
}

func TestDecodeWithoutChecksums(t *testing.T) {
	b := []byte{1}
	b = le(b, uint64(headerLen+segmentHeaderLen+3))
	b = le(b, uint16(0))
	b = le(b, uint16(1))
	b = le(b, uint16(1))
	b = le(b, uint64(3))
	b = append(b, "abc"...)
	got, err := decodeAll(b, 3)
	if err != nil || string(got) != "abc" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int64{0, 1, SegmentSize - 1, SegmentSize, SegmentSize + 1, 2*SegmentSize + 5} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		var buf bytes.Buffer
		if err := Encode(&buf, bytes.NewReader(data), n); err != nil {
			t.Fatal(err)
		}
		if int64(buf.Len()) != EncodedLen(n) {
			t.Fatalf("%d bytes: wrote %d, EncodedLen says %d", n, buf.Len(), EncodedLen(n))
		}
		got, err := decodeAll(buf.Bytes(), n)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: %v", n, err)
		}
	}
	if err := Encode(io.Discard, strings.NewReader("short"), 10); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a short source: %v", err)
	}
}

// TestALateFailureFailsTheWholeRead is the contract a caller storing as it reads relies on:
// a reader of exactly the data's length never succeeds on a message that fails, however
// late the failure.
func TestALateFailureFailsTheWholeRead(t *testing.T) {
	good := message("first segment ", "last segment")
	dataLen := int64(len("first segment last segment"))
	cases := map[string]func([]byte) []byte{
		"last data byte":      func(b []byte) []byte { b[len(b)-17] ^= 1; return b },
		"last segment's CRC":  func(b []byte) []byte { b[len(b)-16] ^= 1; return b },
		"message CRC":         func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"trailer cut":         func(b []byte) []byte { return b[:len(b)-1] },
		"first segment's CRC": func(b []byte) []byte { b[headerLen+segmentHeaderLen+14] ^= 1; return b },
	}
	for name, corrupt := range cases {
		msg := corrupt(bytes.Clone(good))
		d, err := NewDecoder(bytes.NewReader(msg), int64(len(good)), dataLen)
		if err != nil {
			t.Fatalf("%s: NewDecoder: %v", name, err)
		}
		_, err = io.ReadFull(d, make([]byte, dataLen))
		var fe *FormatError
		switch {
		case err == nil:
			t.Errorf("%s: read in full", name)
		case name == "trailer cut":
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%s: %v", name, err)
			}
		case !errors.As(err, &fe) || !fe.Checksum:
			t.Errorf("%s: %v, want a checksum error", name, err)
		}
		if _, again := d.Read(make([]byte, 1)); again == nil {
			t.Errorf("%s: a Read after the error succeeded", name)
		}
	}
}

func TestMalformedMessages(t *testing.T) {
	good := message("abc", "de")
	set := func(off int, v any) []byte {
		b := bytes.Clone(good)
		copy(b[off:], le(nil, v))
		return b
	}
	cases := []struct {
		name    string
		msg     []byte
		bodyLen int64 // 0: len(msg)
		dataLen int64
		want    string
	}{
		{"version 2", set(0, uint8(2)), 0, 5, "version 2"},
		{"length not the body's", set(1, uint64(99)), 0, 5, "says it is 99 bytes"},
		{"unknown flag", set(9, uint16(3)), 0, 5, "flags 0x3"},
		{"no segment", set(11, uint16(0)), 0, 5, "no segment"},
		{"segment misnumbered", set(headerLen, uint16(2)), 0, 5, "numbered 2"},
		{"more data than announced", good, 0, 4, "more than the 4 bytes"},
		{"less data than announced", good, 0, 6, "hold 5 bytes"},
		{"a segment past the end", set(headerLen+2, uint64(1000)), 0, 2000, "runs past the end"},
		{"one segment too many", set(11, uint16(3)), 0, 5, "runs past the end"},
		{"bytes after the trailer", append(bytes.Clone(good), 0), int64(len(good)) + 1, 5, "says it is"},
	}
	for _, c := range cases {
		bodyLen := c.bodyLen
		if bodyLen == 0 {
			bodyLen = int64(len(c.msg))
		}
		var err error
		if d, e := NewDecoder(bytes.NewReader(c.msg), bodyLen, c.dataLen); e != nil {
			err = e
		} else {
			_, err = io.ReadFull(d, make([]byte, c.dataLen))
		}
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Checksum || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a format error saying %q", c.name, err, c.want)
		}
	}
}

func TestParseHeader(t *testing.T) {
	for v, want := range map[string]bool{
		HeaderValue: true, "xsm/1.0;properties=CRC64": true, " XSM/1.0 ; properties = crc64 ": true,
		"": false, "XSM/1.0": false, "XSM/2.0; properties=crc64": false, "XSM/1.0; properties=md5": false,
	} {
		if ParseHeader(v) != want {
			t.Errorf("ParseHeader(%q) = %v", v, !want)
		}
	}
}

func FuzzDecoder(f *testing.F) {
	f.Add(message("hello ", "world"), int64(11))
	f.Add(message(""), int64(0))
	f.Fuzz(func(t *testing.T, msg []byte, dataLen int64) {
		if dataLen < 0 || dataLen > 1<<20 {
			return
		}
		d, err := NewDecoder(bytes.NewReader(msg), int64(len(msg)), dataLen)
		if err != nil {
			return
		}
		got, err := io.ReadAll(d)
		if err == nil && int64(len(got)) != dataLen {
			t.Fatalf("decoded %d bytes of %d without an error", len(got), dataLen)
		}
	})
}
