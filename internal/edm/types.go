// Package edm holds the Entity Data Model of the Table service: the eight property types,
// entities, their limits and validation, and their encodings (JSON on the wire, a compact
// binary form in the store).
package edm

import (
	"strconv"
	"time"
)

// Type is one of the eight EDM property types the Table service stores.
type Type uint8

const (
	String Type = iota + 1
	Boolean
	Int32
	Int64
	Double
	DateTime
	Guid
	Binary
)

var typeNames = [...]string{
	String:   "Edm.String",
	Boolean:  "Edm.Boolean",
	Int32:    "Edm.Int32",
	Int64:    "Edm.Int64",
	Double:   "Edm.Double",
	DateTime: "Edm.DateTime",
	Guid:     "Edm.Guid",
	Binary:   "Edm.Binary",
}

// Name is the type's name as written in @odata.type annotations, e.g. "Edm.Int64".
func (t Type) Name() string {
	if t >= String && t <= Binary {
		return typeNames[t]
	}
	return "Edm.Unknown(" + strconv.Itoa(int(t)) + ")"
}

// ParseType maps an annotation such as "Edm.Guid" to its Type.
func ParseType(name string) (Type, bool) {
	for t := String; t <= Binary; t++ {
		if typeNames[t] == name {
			return t, true
		}
	}
	return 0, false
}

// Value is one typed property value. Exactly one field carries the value, chosen by Type:
//
//	String          Str (valid UTF-8)
//	Guid            Str, canonical lowercase 8-4-4-4-12 form
//	Boolean         Int, 0 or 1
//	Int32, Int64    Int
//	DateTime        Int, in Ticks
//	Double          Float (NaN and ±Inf allowed)
//	Binary          Bin
type Value struct {
	Type  Type
	Str   string
	Int   int64
	Float float64
	Bin   []byte
}

// Property is a named custom property.
type Property struct {
	Name  string
	Value Value
}

// Entity is a stored entity: its keys, its server-owned Timestamp, and its custom properties in
// the order they were written (responses keep that order, as the real service does).
type Entity struct {
	PartitionKey string
	RowKey       string
	Timestamp    Ticks
	Properties   []Property
}

// Get returns the custom property called name.
func (e *Entity) Get(name string) (Value, bool) {
	for i := range e.Properties {
		if e.Properties[i].Name == name {
			return e.Properties[i].Value, true
		}
	}
	return Value{}, false
}

// Ticks counts 100-nanosecond intervals since 0001-01-01T00:00:00Z, the resolution and epoch
// of Edm.DateTime (and .NET's DateTime.Ticks), so that stored times round-trip exactly.
type Ticks int64

// MinDateTime is the earliest Edm.DateTime the Table service accepts (1601-01-01T00:00:00Z).
// MaxDateTime is the latest (9999-12-31T23:59:59.9999999Z).
const (
	MinDateTime Ticks = 504911232000000000
	MaxDateTime Ticks = 3155378975999999999
)

// unixEpochTicks is 1970-01-01T00:00:00Z in Ticks.
const unixEpochTicks Ticks = 621355968000000000

// TicksOf converts t to Ticks, truncating below 100 ns.
func TicksOf(t time.Time) Ticks {
	sec := t.Unix()
	return unixEpochTicks + Ticks(sec)*10_000_000 + Ticks(t.Nanosecond()/100)
}

// Time converts ticks back to a UTC time.Time.
func (t Ticks) Time() time.Time {
	d := t - unixEpochTicks
	sec := int64(d) / 10_000_000
	rem := int64(d) % 10_000_000
	if rem < 0 {
		sec--
		rem += 10_000_000
	}
	return time.Unix(sec, rem*100).UTC()
}

// String formats ticks the way the Table service writes DateTime values:
// yyyy-MM-ddTHH:mm:ss, then a fraction of 1-7 digits with trailing zeros removed (omitted when
// zero), then Z.
func (t Ticks) String() string { return string(t.AppendText(nil, false)) }

// AppendText appends the formatted time. With fixed7 the fraction always has 7 digits, as in
// Timestamp values and ETags.
func (t Ticks) AppendText(dst []byte, fixed7 bool) []byte {
	tm := t.Time()
	if t >= 0 && t <= MaxDateTime {
		// Years 1-9999, always four digits: writing them directly costs a fraction of
		// AppendFormat, and responses format a Timestamp or two per entity.
		year, month, day := tm.Date()
		hour, minute, second := tm.Clock()
		dst = append(dst,
			byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
			byte('0'+month/10), byte('0'+month%10), '-',
			byte('0'+day/10), byte('0'+day%10), 'T',
			byte('0'+hour/10), byte('0'+hour%10), ':',
			byte('0'+minute/10), byte('0'+minute%10), ':',
			byte('0'+second/10), byte('0'+second%10))
	} else {
		// Only corrupt data holds such ticks; keep the time package's form of their years.
		dst = tm.AppendFormat(dst, "2006-01-02T15:04:05")
	}
	frac := int64(t-unixEpochTicks) % 10_000_000
	if frac < 0 {
		frac += 10_000_000
	}
	if frac != 0 || fixed7 {
		var digits [7]byte
		for i := 6; i >= 0; i-- {
			digits[i] = byte('0' + frac%10)
			frac /= 10
		}
		n := 7
		if !fixed7 {
			for n > 1 && digits[n-1] == '0' {
				n--
			}
		}
		dst = append(dst, '.')
		dst = append(dst, digits[:n]...)
	}
	return append(dst, 'Z')
}

// ETag is the weak validator the Table service derives from an entity's Timestamp:
// W/"datetime'2021-09-20T21%3A54%3A20.9694602Z'".
func ETag(timestamp Ticks) string {
	var buf [64]byte
	b := append(buf[:0], `W/"datetime'`...)
	b = appendETagTime(b, timestamp)
	return string(append(b, `'"`...))
}

// appendETagTime writes t with a 7-digit fraction and its colons percent-encoded, as ETags
// carry it.
func appendETagTime(dst []byte, t Ticks) []byte {
	var buf [40]byte
	for _, c := range t.AppendText(buf[:0], true) {
		if c == ':' {
			dst = append(dst, "%3A"...)
		} else {
			dst = append(dst, c)
		}
	}
	return dst
}
