package edm

import (
	"unicode"
	"unicode/utf8"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// The Table service's limits (data-model.md §4).
const (
	// MaxKeyLength is the longest PartitionKey or RowKey, in UTF-16 code units. The docs say
	// "up to 1 KiB" and "up to 1024 characters"; the spec recommends 1024 code units (a stub
	// validated against Azure uses the same).
	MaxKeyLength = 1024
	// MaxProperties is the most custom properties an entity may have: 255 including
	// PartitionKey, RowKey and Timestamp.
	MaxProperties = 252
	// MaxPropertyNameLength is the longest property name, in UTF-16 code units.
	MaxPropertyNameLength = 255
	// MaxStringLength is the longest Edm.String value, in UTF-16 code units (64 KiB).
	MaxStringLength = 32 * 1024
	// MaxBinaryLength is the longest Edm.Binary value, in bytes.
	MaxBinaryLength = 64 * 1024
	// MaxEntitySize is the largest entity, as Size counts it.
	MaxEntitySize = 1 << 20
)

// Validate checks e against the Table service limits, in this order: the keys (ValidateKey),
// the number of custom properties, each property's name and value size, and the entity size.
// It returns the first violation as an *azerr.Error, or nil. It does not look for duplicate
// names (DecodeJSON does) nor check value ranges (the decoder only produces valid ones).
func (e *Entity) Validate() error {
	if err := ValidateKey("PartitionKey", e.PartitionKey); err != nil {
		return err
	}
	if err := ValidateKey("RowKey", e.RowKey); err != nil {
		return err
	}
	if len(e.Properties) > MaxProperties {
		return azerr.New(azerr.TooManyProperties)
	}
	for i := range e.Properties {
		p := &e.Properties[i]
		if err := validatePropertyName(p.Name); err != nil {
			return err
		}
		switch v := &p.Value; v.Type {
		case String:
			// A string has at most as many UTF-16 code units as UTF-8 bytes: only a long
			// one needs counting.
			if len(v.Str) > MaxStringLength && utf16Len(v.Str) > MaxStringLength {
				return azerr.New(azerr.PropertyValueTooLarge)
			}
		case Binary:
			if len(v.Bin) > MaxBinaryLength {
				return azerr.New(azerr.PropertyValueTooLarge)
			}
		case Boolean, Int32, Int64, Double, DateTime, Guid:
		default:
			return azerr.Newf(azerr.InvalidInput, "%s Property %s has no valid type.", msgBadInput, quote(p.Name))
		}
	}
	if e.sizeBound() > MaxEntitySize && e.Size() > MaxEntitySize {
		return azerr.New(azerr.EntityTooLarge)
	}
	return nil
}

// ValidateKey checks one PartitionKey or RowKey value; name is "PartitionKey" or "RowKey".
//
// A key longer than MaxKeyLength UTF-16 code units is PropertyValueTooLarge with the 64KB
// text: that is what a stub validated against Azure records for a 2048-character key
// (Andrei15193/CloudStub, Execute_WhenPartitionKeyExceedsLimit_ThrowsException); the spec
// had suggested KeyValueTooLarge, which no evidence shows Azure using.
//
// A key holding '/', '\', '#', '?', U+0000-U+001F or U+007F-U+009F (or invalid UTF-8) is
// OutOfRangeInput "The '{name}' parameter of value '{value}' is out of range.", as the same
// stub records for every one of those characters (Azurite answers InvalidInput instead).
func ValidateKey(name, value string) error {
	if len(value) > MaxKeyLength && utf16Len(value) > MaxKeyLength {
		return azerr.New(azerr.PropertyValueTooLarge)
	}
	if !validKeyChars(value) {
		return azerr.Newf(azerr.OutOfRangeInput, "The '%s' parameter of value '%s' is out of range.", name, value)
	}
	return nil
}

// validKeyChars reports whether s is valid UTF-8 free of the characters keys may not hold.
func validKeyChars(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == 0x7F, c == '/', c == '\\', c == '#', c == '?':
			return false
		case c >= utf8.RuneSelf:
			return utf8.ValidString(s[i:]) && validKeyCharsTail(s[i:])
		}
	}
	return true
}

// validKeyCharsTail is validKeyChars for the rest of a string known to be valid UTF-8.
func validKeyCharsTail(s string) bool {
	for _, r := range s {
		if r < 0x20 || (r >= 0x7F && r <= 0x9F) || r == '/' || r == '\\' || r == '#' || r == '?' {
			return false
		}
	}
	return true
}

// validatePropertyName applies the property-name rules (data-model.md §2): at most 255
// UTF-16 code units, else PropertyNameTooLong; a C# identifier that is also an XML name
// (a letter or '_' first, then letters, digits, '_', connector punctuation and combining
// marks), and not one of the system names, else PropertyNameInvalid.
func validatePropertyName(name string) error {
	if len(name) > MaxPropertyNameLength && utf16Len(name) > MaxPropertyNameLength {
		return azerr.New(azerr.PropertyNameTooLong)
	}
	switch name {
	case "PartitionKey", "RowKey", "Timestamp":
		return azerr.Newf(azerr.PropertyNameInvalid, "The property name is invalid: %s is a system property.", name)
	}
	if !validPropertyName(name) {
		return azerr.New(azerr.PropertyNameInvalid)
	}
	return nil
}

func validPropertyName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		if r < utf8.RuneSelf {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
			case r >= '0' && r <= '9' && i > 0:
			default:
				return false
			}
			continue
		}
		if r == utf8.RuneError {
			return false // invalid UTF-8 (a real U+FFFD is not a letter either)
		}
		if unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) {
			continue
		}
		if i == 0 || !(unicode.IsDigit(r) || unicode.In(r, unicode.Pc, unicode.Mn, unicode.Mc)) {
			return false
		}
	}
	return true
}

// Size is the entity size as the service's published approximation counts it
// (data-model.md §5): 4 bytes, plus the keys as UTF-16, plus for each custom property
// 8 bytes, its name as UTF-16 and its value's size.
func (e *Entity) Size() int { return e.size(utf16Len) }

// SizeOver returns Size if the entity may be larger than n, and otherwise an upper bound of
// Size that is at most n: a caller that only cares about entities larger than n does not
// count the UTF-16 units of the strings of one that clearly is not.
func (e *Entity) SizeOver(n int) int {
	if b := e.sizeBound(); b <= n {
		return b
	}
	return e.Size()
}

// sizeBound is an upper bound of Size that reads no string: a string has at most as many
// UTF-16 code units as UTF-8 bytes.
func (e *Entity) sizeBound() int { return e.size(func(s string) int { return len(s) }) }

// size is Size with units counting a string's UTF-16 code units (or a bound of them).
func (e *Entity) size(units func(string) int) int {
	n := 4 + 2*(units(e.PartitionKey)+units(e.RowKey))
	for i := range e.Properties {
		p := &e.Properties[i]
		n += 8 + 2*units(p.Name)
		switch p.Value.Type {
		case String:
			n += 2*units(p.Value.Str) + 4
		case Binary:
			n += len(p.Value.Bin) + 4
		case Boolean:
			n++
		case Int32:
			n += 4
		case Int64, Double, DateTime:
			n += 8
		case Guid:
			n += 16
		}
	}
	return n
}

// utf16Len counts the UTF-16 code units of valid UTF-8 s: one per rune, two for runes beyond
// the BMP (whose UTF-8 form starts with a byte >= 0xF0).
func utf16Len(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c&0xC0 != 0x80 {
			n++
		}
		if c >= 0xF0 {
			n++
		}
	}
	return n
}
