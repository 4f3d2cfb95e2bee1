package edm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"
)

// The stored form of an entity (the value of its store record) holds its custom properties
// only: the store key carries PartitionKey and RowKey, and the record version carries
// Timestamp, so repeating them would only cost space. Layout, version 1:
//
//	byte     format version (1)
//	uvarint  number of properties
//	per property, in order:
//	  byte     Type
//	  uvarint  name length, name bytes
//	  value:   String, Guid, Binary   uvarint length, bytes
//	           Boolean                one byte, 0 or 1
//	           Int32, Int64           zig-zag varint
//	           DateTime               8 bytes, little-endian Ticks
//	           Double                 8 bytes, little-endian IEEE 754 bits
//
// A later version must keep reading version 1 records, which stay in stores indefinitely.
const binaryVersion = 1

// AppendBinary appends the stored form of e's custom properties to dst. Every property must
// have a valid Type (Validate ensures it); AppendBinary panics otherwise rather than store a
// record that cannot be read back.
func (e *Entity) AppendBinary(dst []byte) []byte {
	n := 1 + binary.MaxVarintLen64
	for i := range e.Properties {
		p := &e.Properties[i]
		n += 1 + 2*binary.MaxVarintLen32 + len(p.Name) + len(p.Value.Str) + len(p.Value.Bin) + 8
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, binaryVersion)
	dst = binary.AppendUvarint(dst, uint64(len(e.Properties)))
	for i := range e.Properties {
		p := &e.Properties[i]
		v := &p.Value
		dst = append(dst, byte(v.Type))
		dst = binary.AppendUvarint(dst, uint64(len(p.Name)))
		dst = append(dst, p.Name...)
		switch v.Type {
		case String, Guid:
			dst = binary.AppendUvarint(dst, uint64(len(v.Str)))
			dst = append(dst, v.Str...)
		case Binary:
			dst = binary.AppendUvarint(dst, uint64(len(v.Bin)))
			dst = append(dst, v.Bin...)
		case Boolean:
			b := byte(0)
			if v.Int != 0 {
				b = 1
			}
			dst = append(dst, b)
		case Int32, Int64:
			dst = binary.AppendVarint(dst, v.Int)
		case DateTime:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(v.Int))
		case Double:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.Float))
		default:
			panic(fmt.Sprintf("edm: AppendBinary of property %q with invalid type %d", p.Name, v.Type))
		}
	}
	return dst
}

// MarshalBinary returns the stored form of e's custom properties (see AppendBinary).
func (e *Entity) MarshalBinary() []byte { return e.AppendBinary(nil) }

// UnmarshalBinary reads a stored form into e.Properties, replacing them with a new slice.
// PartitionKey, RowKey and Timestamp are not part of it and are left as they are: the caller
// sets them from the store key and record version.
//
// b is not retained: strings share one copy of it, and each Binary value has its own. A
// malformed b (which only a corrupt store could produce) is an error, never a panic.
func UnmarshalBinary(b []byte, e *Entity) error {
	e.Properties = nil
	return unmarshalBinary(b, e, false)
}

// UnmarshalBinaryShared is UnmarshalBinary without copies, for scans that decode many
// records and keep few: strings and Binary values alias b, so e is only usable while b is
// unchanged, and e.Properties' backing array is reused from one call to the next.
func UnmarshalBinaryShared(b []byte, e *Entity) error {
	e.Properties = e.Properties[:0]
	return unmarshalBinary(b, e, true)
}

func unmarshalBinary(b []byte, e *Entity, shared bool) error {
	if len(b) == 0 || b[0] != binaryVersion {
		if len(b) == 0 {
			return errCorrupt("empty record")
		}
		return errCorrupt(fmt.Sprintf("unknown format version %d", b[0]))
	}
	r := reader{b: b, pos: 1}
	count := r.uvarint()
	// Every property takes at least three bytes, which bounds the allocation below.
	if r.err != nil || count > uint64(len(b)-r.pos)/3 {
		return errCorrupt("bad property count")
	}
	r.base = r.pos
	if shared {
		r.s = unsafe.String(unsafe.SliceData(b[r.pos:]), len(b)-r.pos)
	} else {
		r.s = string(b[r.pos:])
	}
	props := e.Properties
	if uint64(cap(props)) < count {
		props = make([]Property, count)
	} else {
		props = props[:count]
		clear(props)
	}
	for i := range props {
		p := &props[i]
		if r.pos >= len(b) {
			return errCorrupt("truncated")
		}
		typ := Type(b[r.pos])
		r.pos++
		p.Name = r.str()
		p.Value.Type = typ
		switch typ {
		case String, Guid:
			p.Value.Str = r.str()
		case Binary:
			if n := r.length(); r.err == nil && n > 0 {
				if shared {
					p.Value.Bin = b[r.pos : r.pos+n : r.pos+n]
				} else {
					p.Value.Bin = append([]byte(nil), b[r.pos:r.pos+n]...)
				}
				r.pos += n
			}
		case Boolean:
			if r.pos >= len(b) || b[r.pos] > 1 {
				return errCorrupt("bad Boolean")
			}
			p.Value.Int = int64(b[r.pos])
			r.pos++
		case Int32, Int64:
			n, k := binary.Varint(b[r.pos:])
			if k <= 0 || (typ == Int32 && n != int64(int32(n))) {
				return errCorrupt("bad integer")
			}
			p.Value.Int = n
			r.pos += k
		case DateTime, Double:
			if len(b)-r.pos < 8 {
				return errCorrupt("truncated")
			}
			u := binary.LittleEndian.Uint64(b[r.pos:])
			r.pos += 8
			if typ == DateTime {
				p.Value.Int = int64(u)
			} else {
				p.Value.Float = math.Float64frombits(u)
			}
		default:
			return errCorrupt(fmt.Sprintf("unknown type %d", typ))
		}
		if r.err != nil {
			return r.err
		}
	}
	if r.pos != len(b) {
		return errCorrupt("trailing bytes")
	}
	e.Properties = props
	return nil
}

// reader decodes lengths and strings from a record; s is string(b[base:]), so strings are
// substrings of one copy.
type reader struct {
	b    []byte
	s    string
	base int
	pos  int
	err  error
}

func (r *reader) uvarint() uint64 {
	v, k := binary.Uvarint(r.b[r.pos:])
	if k <= 0 {
		r.err = errCorrupt("bad varint")
		return 0
	}
	r.pos += k
	return v
}

// length reads a length that must fit in what remains of the record.
func (r *reader) length() int {
	if r.err != nil {
		return 0
	}
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)-r.pos) {
		r.err = errCorrupt("length beyond the record")
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

func (r *reader) str() string {
	n := r.length()
	if r.err != nil || n == 0 {
		return ""
	}
	s := r.s[r.pos-r.base : r.pos-r.base+n]
	r.pos += n
	return s
}

var errCorruptRecord = errors.New("edm: corrupt entity record")

func errCorrupt(what string) error { return fmt.Errorf("%w: %s", errCorruptRecord, what) }

// LookupBinary finds the property called name in a stored form without decoding the others:
// the cheap path for evaluating a filter over many records that it mostly rejects. The
// returned value aliases b, like UnmarshalBinaryShared's. found is false when the entity has
// no such property; err reports a corrupt record.
func LookupBinary(b []byte, name string) (v Value, found bool, err error) {
	if len(b) == 0 || b[0] != binaryVersion {
		return Value{}, false, errCorrupt("unknown format version")
	}
	r := reader{b: b, pos: 1}
	count := r.uvarint()
	for i := uint64(0); i < count && r.err == nil; i++ {
		if r.pos >= len(b) {
			return Value{}, false, errCorrupt("truncated")
		}
		typ := Type(b[r.pos])
		r.pos++
		n := r.length()
		if r.err != nil {
			break
		}
		match := n == len(name) && string(b[r.pos:r.pos+n]) == name
		r.pos += n
		v = Value{Type: typ}
		switch typ {
		case String, Guid, Binary:
			n := r.length()
			if r.err != nil {
				break
			}
			if match {
				if typ == Binary {
					v.Bin = b[r.pos : r.pos+n : r.pos+n]
				} else {
					v.Str = unsafe.String(unsafe.SliceData(b[r.pos:]), n)
				}
			}
			r.pos += n
		case Boolean:
			if r.pos >= len(b) {
				return Value{}, false, errCorrupt("truncated")
			}
			v.Int = int64(b[r.pos])
			r.pos++
		case Int32, Int64:
			x, k := binary.Varint(b[r.pos:])
			if k <= 0 {
				return Value{}, false, errCorrupt("bad integer")
			}
			v.Int = x
			r.pos += k
		case DateTime, Double:
			if len(b)-r.pos < 8 {
				return Value{}, false, errCorrupt("truncated")
			}
			u := binary.LittleEndian.Uint64(b[r.pos:])
			r.pos += 8
			if typ == DateTime {
				v.Int = int64(u)
			} else {
				v.Float = math.Float64frombits(u)
			}
		default:
			return Value{}, false, errCorrupt(fmt.Sprintf("unknown type %d", typ))
		}
		if match && r.err == nil {
			return v, true, nil
		}
	}
	if r.err != nil {
		return Value{}, false, r.err
	}
	return Value{}, false, nil
}
