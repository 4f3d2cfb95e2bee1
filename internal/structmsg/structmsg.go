// Package structmsg reads and writes Azure Storage's structured message body (XSM/1.0), the
// framing newer SDKs opt into for CRC-64 validation of what they upload and download
// (`x-ms-structured-body: XSM/1.0; properties=crc64`).
//
// A message is a header, one or more segments and a trailer, every integer little-endian:
//
//	header   uint8 version (1) · uint64 message length (header to trailer) · uint16 flags · uint16 segments
//	segment  uint16 number (1, 2, …) · uint64 data length · data · [uint64 CRC-64 of the data]
//	trailer  [uint64 CRC-64 of all the segments' data]
//
// The CRC-64s are there when flags has FlagCRC64; they are the Blob service's
// x-ms-content-crc64 (polynomial 0x9A6C9329AC4BC9B5, reflected, as hash/crc64 computes it).
package structmsg

import (
	"encoding/binary"
	"fmt"
	"hash/crc64"
	"io"
	"strings"
)

// HeaderValue is the x-ms-structured-body value of the one format version and property the
// service knows, in requests and in the responses that answer them.
const HeaderValue = "XSM/1.0; properties=crc64"

// FlagCRC64 says each segment, and the message, end with a CRC-64 of their data.
const FlagCRC64 = 1

// SegmentSize is the data length of each segment Encode writes but the last: the SDKs'
// default.
const SegmentSize = 4 << 20

const (
	headerLen        = 1 + 8 + 2 + 2
	segmentHeaderLen = 2 + 8
	crcLen           = 8
)

var table = crc64.MakeTable(Polynomial)

// Polynomial is the CRC-64 the service uses for x-ms-content-crc64 and in messages.
const Polynomial = 0x9A6C9329AC4BC9B5

// ParseHeader reports whether v, an x-ms-structured-body value, asks for the format this
// package reads and writes. Spaces around the parts and the case of the words do not matter.
func ParseHeader(v string) bool {
	version, props, ok := strings.Cut(v, ";")
	if !ok || !strings.EqualFold(strings.TrimSpace(version), "XSM/1.0") {
		return false
	}
	name, value, ok := strings.Cut(strings.TrimSpace(props), "=")
	return ok && strings.EqualFold(strings.TrimSpace(name), "properties") && strings.EqualFold(strings.TrimSpace(value), "crc64")
}

// FormatError says how a message broke the format, or which checksum did not match.
type FormatError struct {
	// Checksum is set when the framing was sound but a segment's or the message's CRC-64
	// was not that of its data.
	Checksum bool
	Msg      string
}

func (e *FormatError) Error() string { return e.Msg }

func malformed(format string, args ...any) error {
	return &FormatError{Msg: fmt.Sprintf(format, args...)}
}

// Decoder reads the data of one structured message. Its contract, which lets a caller store
// what it reads as it goes and still refuse a message that fails at its very end:
//   - every segment's CRC-64 is checked before the Read that returns the segment's last byte
//     returns, and the trailer before the Read that returns the message's last byte: a
//     failing check makes that Read return 0 bytes and the error, so a reader of exactly
//     DataLen bytes (io.ReadFull, io.LimitReader) never succeeds on a message that fails;
//   - NewDecoder reads and checks the header at once, and, for a message without data, all
//     of it;
//   - errors are *FormatError, or the underlying reader's (io.ErrUnexpectedEOF when it ends
//     early); after an error every Read returns it again.
type Decoder struct {
	r        io.Reader
	bodyLen  int64
	dataLen  int64  // what the segments must add up to
	left     int64  // bytes of the message still to read, header excluded
	segments uint16 // segments announced
	next     uint16 // number of the segment to read next
	inSeg    int64  // data of the current segment still to return
	crc      bool
	segCRC   uint64
	msgCRC   uint64
	given    int64 // data returned so far
	done     bool
	err      error
}

// NewDecoder starts reading a message of bodyLen bytes (the request's Content-Length) whose
// data is dataLen bytes (x-ms-structured-content-length).
func NewDecoder(r io.Reader, bodyLen, dataLen int64) (*Decoder, error) {
	d := &Decoder{r: r, bodyLen: bodyLen, dataLen: dataLen}
	var h [headerLen]byte
	if err := d.full(h[:]); err != nil {
		return nil, err
	}
	if h[0] != 1 {
		return nil, malformed("the structured message is version %d; only version 1 is known", h[0])
	}
	msgLen := binary.LittleEndian.Uint64(h[1:])
	if msgLen != uint64(bodyLen) {
		return nil, malformed("the structured message says it is %d bytes long, and the body is %d bytes", msgLen, bodyLen)
	}
	flags := binary.LittleEndian.Uint16(h[9:])
	if flags&^FlagCRC64 != 0 {
		return nil, malformed("the structured message has flags %#x; only %#x (CRC-64) is known", flags, FlagCRC64)
	}
	d.crc = flags&FlagCRC64 != 0
	d.segments = binary.LittleEndian.Uint16(h[11:])
	if d.segments == 0 {
		return nil, malformed("the structured message has no segment")
	}
	d.left = bodyLen - headerLen
	d.next = 1
	if err := d.advance(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Decoder) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if d.done {
		return 0, io.EOF
	}
	if int64(len(p)) > d.inSeg {
		p = p[:d.inSeg]
	}
	n, err := io.ReadFull(d.r, p)
	d.left -= int64(n)
	d.inSeg -= int64(n)
	d.given += int64(n)
	if d.crc {
		d.segCRC = crc64.Update(d.segCRC, table, p[:n])
		d.msgCRC = crc64.Update(d.msgCRC, table, p[:n])
	}
	if err != nil {
		d.err = unexpectedEOF(err)
		return 0, d.err
	}
	if d.inSeg == 0 {
		if err := d.advance(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// advance is called where a segment's data ends (and once before the first): it checks the
// segment's CRC-64, then reads the next segment's header, passing over empty segments, or
// the trailer after the last.
func (d *Decoder) advance() error {
	if d.next > 1 && d.crc {
		if err := d.checkCRC(d.segCRC, "segment %d", d.next-1); err != nil {
			return err
		}
	}
	for d.next <= d.segments {
		var h [segmentHeaderLen]byte
		if err := d.full(h[:]); err != nil {
			return err
		}
		if num := binary.LittleEndian.Uint16(h[:]); num != d.next {
			return d.fail(malformed("the structured message's segment %d is numbered %d", d.next, num))
		}
		n := binary.LittleEndian.Uint64(h[2:])
		if n > uint64(d.dataLen-d.given) {
			return d.fail(malformed("the structured message's segments hold more than the %d bytes x-ms-structured-content-length says", d.dataLen))
		}
		if int64(n) > d.left {
			return d.fail(malformed("the structured message runs past the end of its %d bytes", d.bodyLen))
		}
		d.next++
		d.inSeg, d.segCRC = int64(n), 0
		if n > 0 {
			return nil
		}
		if d.crc {
			if err := d.checkCRC(0, "segment %d", d.next-1); err != nil {
				return err
			}
		}
	}
	if d.given != d.dataLen {
		return d.fail(malformed("the structured message's segments hold %d bytes, and x-ms-structured-content-length says %d", d.given, d.dataLen))
	}
	if d.crc {
		if err := d.checkCRC(d.msgCRC, "the message"); err != nil {
			return err
		}
	}
	if d.left != 0 {
		return d.fail(malformed("the structured message ends %d bytes before the body does", d.left))
	}
	d.done = true
	return nil
}

// checkCRC reads a CRC-64 and compares it with want; what names it in the error.
func (d *Decoder) checkCRC(want uint64, what string, args ...any) error {
	var b [crcLen]byte
	if err := d.full(b[:]); err != nil {
		return err
	}
	if got := binary.LittleEndian.Uint64(b[:]); got != want {
		return d.fail(&FormatError{Checksum: true, Msg: fmt.Sprintf("the CRC-64 of "+what+" in the structured message is not that of its data", args...)})
	}
	return nil
}

// full reads len(b) bytes of framing, which must lie within the message.
func (d *Decoder) full(b []byte) error {
	if d.left < int64(len(b)) && d.next > 0 {
		return d.fail(malformed("the structured message runs past the end of its %d bytes", d.bodyLen))
	}
	if _, err := io.ReadFull(d.r, b); err != nil {
		return d.fail(unexpectedEOF(err))
	}
	if d.next > 0 {
		d.left -= int64(len(b))
	}
	return nil
}

func (d *Decoder) fail(err error) error {
	d.err = err
	return err
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// segmentsFor is how many segments Encode writes for dataLen bytes: one at least.
func segmentsFor(dataLen int64) int64 {
	return max(1, (dataLen+SegmentSize-1)/SegmentSize)
}

// EncodedLen is the length of the message Encode writes for dataLen bytes.
func EncodedLen(dataLen int64) int64 {
	return headerLen + segmentsFor(dataLen)*(segmentHeaderLen+crcLen) + dataLen + crcLen
}

// Encode writes the dataLen bytes read from r to w as a message with CRC-64s, in segments of
// SegmentSize bytes, streaming: memory does not grow with dataLen. It writes EncodedLen(dataLen)
// bytes, or returns an error (r ending early is io.ErrUnexpectedEOF).
func Encode(w io.Writer, r io.Reader, dataLen int64) error {
	segments := segmentsFor(dataLen)
	if segments > 0xffff {
		return fmt.Errorf("structmsg: %d bytes need %d segments, more than a message holds", dataLen, segments)
	}
	var h [headerLen]byte
	h[0] = 1
	binary.LittleEndian.PutUint64(h[1:], uint64(EncodedLen(dataLen)))
	binary.LittleEndian.PutUint16(h[9:], FlagCRC64)
	binary.LittleEndian.PutUint16(h[11:], uint16(segments))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	var msgCRC uint64
	left := dataLen
	for i := int64(1); i <= segments; i++ {
		n := min(left, SegmentSize)
		var sh [segmentHeaderLen]byte
		binary.LittleEndian.PutUint16(sh[:], uint16(i))
		binary.LittleEndian.PutUint64(sh[2:], uint64(n))
		if _, err := w.Write(sh[:]); err != nil {
			return err
		}
		seg := crcWriter{w: w, msg: &msgCRC}
		if copied, err := io.CopyN(&seg, r, n); err != nil {
			if copied < n && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if err := writeCRC(w, seg.sum); err != nil {
			return err
		}
		left -= n
	}
	return writeCRC(w, msgCRC)
}

// crcWriter passes a segment's data to w, keeping its CRC-64 and the message's.
type crcWriter struct {
	w   io.Writer
	sum uint64
	msg *uint64
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.sum = crc64.Update(c.sum, table, p[:n])
	*c.msg = crc64.Update(*c.msg, table, p[:n])
	return n, err
}

func writeCRC(w io.Writer, v uint64) error {
	var b [crcLen]byte
	binary.LittleEndian.PutUint64(b[:], v)
	_, err := w.Write(b[:])
	return err
}
