package queue

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/tabula-dev/tabula/internal/store"
)

// How a queue's messages are stored. Each queue has a space of its own (Queue.Space), and
// each message two records in it:
//
//   - its message record in partition visiblePartition, row = TimeNextVisible (microseconds
//     since the Unix epoch, 8 bytes big-endian) followed by the message id (16 bytes). The
//     partition is the queue itself, in dequeue order: a Get Messages reads its head, up to
//     the current time, and nothing else. A dequeue or update moves the record to its new
//     row. The value holds the insertion time, the dequeue count and the text.
//   - its expiry record in partition expiryPartition, row = ExpirationTime (whole seconds,
//     8 bytes big-endian) followed by the id, value = the message record's current
//     TimeNextVisible: what the expiry sweep and Clear Messages walk, and what finds the
//     message record from them. It is rewritten with every move of the message record.
//
// Both records of a message always carry the same Version, which is also what the pop
// receipt names, and it packs the expiration time with a generation that every dequeue and
// update advances:
//
//	version = expiration seconds << generationBits | generation
//
// So a pop receipt (TimeNextVisible and version) names the message record's row and its
// exact state, and tells the expiry record's row; a commit conditioned on that version both
// checks the receipt and authenticates the expiration time it carries. A receipt is stale as
// soon as the record moved or changed: Delete and Update need no read to judge it.
const (
	visiblePartition = "v"
	expiryPartition  = "e"
)

// generationBits is the width of the generation in a version. Expiration seconds up to
// 9999-12-31 need 38 bits, leaving 25: a generation wraps after 33 million dequeues of one
// message, and a receipt could only be confused with one that old if the record also came
// back to the same microsecond of TimeNextVisible.
const generationBits = 25

const generationMask = 1<<generationBits - 1

// maxExpiration is when a message that never expires (messagettl=-1) expires: the latest
// time Azure shows, "Fri, 31 Dec 9999 23:59:59 GMT".
var maxExpiration = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

func makeVersion(expiration time.Time, generation int64) int64 {
	return expiration.Unix()<<generationBits | generation
}

// nextVersion is v with its generation advanced, skipping 0 when it wraps.
func nextVersion(v int64) int64 {
	g := v&generationMask + 1
	if g > generationMask {
		g = 1
	}
	return v&^generationMask | g
}

func expirationOf(version int64) time.Time { return time.Unix(version>>generationBits, 0).UTC() }

// messageID is a message's id: its insertion time in microseconds (8 bytes big-endian), so
// that messages visible at the same microsecond leave in insertion order, then 8 random
// bytes. Clients see it as a GUID.
type messageID [16]byte

func newMessageID(inserted time.Time) messageID {
	var id messageID
	binary.BigEndian.PutUint64(id[:8], uint64(inserted.UnixMicro()))
	rand.Read(id[8:]) // never fails (crypto/rand documentation)
	return id
}

func (id messageID) String() string {
	var s [36]byte
	hex.Encode(s[0:8], id[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], id[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], id[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], id[8:10])
	s[23] = '-'
	hex.Encode(s[24:], id[10:])
	return string(s[:])
}

// parseMessageID reads a message id in GUID form, in either case. ok is false for anything
// else: no message has such an id.
func parseMessageID(s string) (id messageID, ok bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, false
	}
	hexDigits := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if _, err := hex.Decode(id[:], []byte(hexDigits)); err != nil {
		return id, false
	}
	return id, true
}

func (id messageID) inserted() time.Time {
	return time.UnixMicro(int64(binary.BigEndian.Uint64(id[:8]))).UTC()
}

// visibleRow is the row of a message record.
func visibleRow(visible time.Time, id messageID) string {
	var b [24]byte
	binary.BigEndian.PutUint64(b[:8], uint64(visible.UnixMicro()))
	copy(b[8:], id[:])
	return string(b[:])
}

// visibleBound is the smallest row after every message record visible at t.
func visibleBound(t time.Time) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t.UnixMicro())+1)
	return string(b[:])
}

// expiryRow is the row of an expiry record.
func expiryRow(expiration time.Time, id messageID) string {
	var b [24]byte
	binary.BigEndian.PutUint64(b[:8], uint64(expiration.Unix()))
	copy(b[8:], id[:])
	return string(b[:])
}

// expiryBound is the smallest row after every expiry record of a message expired at t.
func expiryBound(t time.Time) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t.Unix())+1)
	return string(b[:])
}

// splitRow reads a visible or expiry row: its time field and the message id.
func splitRow(row string) (uint64, messageID, error) {
	var id messageID
	if len(row) != 24 {
		return 0, id, fmt.Errorf("queue: message row %x is corrupt", row)
	}
	copy(id[:], row[8:])
	return binary.BigEndian.Uint64([]byte(row[:8])), id, nil
}

func visibleKey(space string, visible time.Time, id messageID) store.Key {
	return store.Key{Space: space, Partition: visiblePartition, Row: visibleRow(visible, id)}
}

func expiryKey(space string, expiration time.Time, id messageID) store.Key {
	return store.Key{Space: space, Partition: expiryPartition, Row: expiryRow(expiration, id)}
}

// expiryValue is the value of an expiry record: the message record's TimeNextVisible.
func expiryValue(visible time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(visible.UnixMicro()))
}

func readExpiryValue(rec store.Record) (time.Time, error) {
	if len(rec.Value) != 8 {
		return time.Time{}, fmt.Errorf("queue: expiry record %v is corrupt", rec.Key)
	}
	return time.UnixMicro(int64(binary.BigEndian.Uint64(rec.Value))).UTC(), nil
}

// messageValue is the value of a message record.
type messageValue struct {
	dequeueCount int64
	text         string
}

const messageFormat = 1

func (v messageValue) encode() []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(v.text))
	b = append(b, messageFormat)
	b = binary.AppendUvarint(b, uint64(v.dequeueCount))
	return append(b, v.text...)
}

func decodeMessageValue(rec store.Record) (messageValue, error) {
	corrupt := fmt.Errorf("queue: message record %v is corrupt", rec.Key)
	if len(rec.Value) < 2 || rec.Value[0] != messageFormat {
		return messageValue{}, corrupt
	}
	n, size := binary.Uvarint(rec.Value[1:])
	if size <= 0 {
		return messageValue{}, corrupt
	}
	return messageValue{dequeueCount: int64(n), text: string(rec.Value[1+size:])}, nil
}

// popReceipt names one state of one message: the row of its message record (with the id
// the request names), its version, and a few bytes of the message's id, so that a receipt
// given with another message's id names nothing even when both messages were put in the
// same microsecond with the same expiration. Clients see it as 20 bytes of URL-safe base64,
// which survives a URL even when a client forgets to escape it.
type popReceipt struct {
	visible time.Time
	version int64
	id      messageID
}

const receiptSize = 20

func (r popReceipt) String() string {
	var b [receiptSize]byte
	binary.BigEndian.PutUint64(b[:8], uint64(r.visible.UnixMicro()))
	binary.BigEndian.PutUint64(b[8:16], uint64(r.version))
	copy(b[16:], r.id[12:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// names reports whether r may be a receipt of message id.
func (r popReceipt) names(id messageID) bool { return [4]byte(r.id[12:]) == [4]byte(id[12:]) }

// parsePopReceipt reads a pop receipt, which names a message with the id bytes it carries
// and zeros elsewhere. A receipt that is not 20 bytes of base64 (URL-safe as issued here, or
// standard, as Azure's receipts are) is 400 InvalidQueryParameterValue, as the real service
// answers "invalid" ("Invalid pop receipt format", the JS SDK's recorded delete_message_negative).
// One of that format this service did not issue is errForeignReceipt: it names no message, and
// the real service answers such receipts, made up or another message's, 404 MessageNotFound.
func parsePopReceipt(s string) (popReceipt, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != receiptSize {
		if std, serr := base64.StdEncoding.DecodeString(s); serr == nil && len(std) == receiptSize {
			return popReceipt{}, errForeignReceipt
		}
		return popReceipt{}, malformedReceipt(s)
	}
	r := popReceipt{
		visible: time.UnixMicro(int64(binary.BigEndian.Uint64(b[:8]))).UTC(),
		version: int64(binary.BigEndian.Uint64(b[8:16])),
	}
	if r.version <= 0 || r.version&generationMask == 0 {
		return popReceipt{}, errForeignReceipt
	}
	copy(r.id[12:], b[16:])
	return r, nil
}

// errForeignReceipt is a pop receipt of the right format that this service did not issue.
var errForeignReceipt = errors.New("a pop receipt this service did not issue")

func malformedReceipt(s string) error {
	return invalidParam("popreceipt", s, "Invalid pop receipt format")
}
