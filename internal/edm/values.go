package edm

import "github.com/tabula-dev/tabula/internal/azerr"

// ParseDateTime reads an Edm.DateTime as clients write it: YYYY-MM-DDThh:mm, optionally :ss
// and a fraction, then Z, a ±hh:mm offset (converted to UTC), or nothing (taken as UTC, as in
// the documentation's samples and as the real service stores "2008-07-10T00:00:00").
// Fraction digits beyond the seventh are truncated to the 100 ns resolution (UNSURE in the
// spec; the recommended choice). A well-formed value outside 1601-01-01..9999-12-31 is
// OutOfRangeInput; anything else unreadable is InvalidInput. Errors are *azerr.Error.
func ParseDateTime(s string) (Ticks, error) {
	t, res := parseDateTime(s)
	switch res {
	case dateMalformed:
		return 0, azerr.Newf(azerr.InvalidInput, "%s %q is not a valid Edm.DateTime value.", msgBadInput, clip(s))
	case dateOutOfRange:
		return 0, azerr.Newf(azerr.OutOfRangeInput, "One of the request inputs is out of range: %q is outside the Edm.DateTime range 1601-01-01T00:00:00Z to 9999-12-31T23:59:59.9999999Z.", clip(s))
	}
	return t, nil
}

type dateResult uint8

const (
	dateOK dateResult = iota
	dateMalformed
	dateOutOfRange
)

const (
	ticksPerSecond = 10_000_000
	ticksPerMinute = 60 * ticksPerSecond
	ticksPerDay    = 24 * 60 * ticksPerMinute
)

// parseDateTime is ParseDateTime without the error values. For dateOutOfRange the returned
// Ticks are the value read, for the error message.
func parseDateTime(s string) (Ticks, dateResult) {
	if len(s) < 16 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' {
		return 0, dateMalformed
	}
	year, ok1 := atoiFixed(s[0:4])
	month, ok2 := atoiFixed(s[5:7])
	day, ok3 := atoiFixed(s[8:10])
	hour, ok4 := atoiFixed(s[11:13])
	minute, ok5 := atoiFixed(s[14:16])
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return 0, dateMalformed
	}
	i := 16
	second, frac := 0, int64(0)
	if i < len(s) && s[i] == ':' {
		if i+3 > len(s) {
			return 0, dateMalformed
		}
		var ok bool
		if second, ok = atoiFixed(s[i+1 : i+3]); !ok {
			return 0, dateMalformed
		}
		i += 3
		if i < len(s) && s[i] == '.' {
			i++
			n := 0
			for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
				if n < 7 {
					frac = frac*10 + int64(s[i]-'0')
				}
				n++
			}
			if n == 0 {
				return 0, dateMalformed
			}
			for ; n < 7; n++ {
				frac *= 10
			}
		}
	}
	offset := 0 // minutes east of UTC
	switch {
	case i == len(s):
	case s[i] == 'Z' && i+1 == len(s):
	case (s[i] == '+' || s[i] == '-') && i+6 == len(s) && s[i+3] == ':':
		oh, ok1 := atoiFixed(s[i+1 : i+3])
		om, ok2 := atoiFixed(s[i+4 : i+6])
		if !ok1 || !ok2 || om > 59 || oh*60+om > 14*60 {
			return 0, dateMalformed
		}
		offset = oh*60 + om
		if s[i] == '-' {
			offset = -offset
		}
	default:
		return 0, dateMalformed
	}
	if year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month) ||
		hour > 23 || minute > 59 || second > 59 {
		return 0, dateMalformed
	}
	t := Ticks(daysFromCivil(year, month, day))*ticksPerDay +
		Ticks((hour*60+minute-offset)*60+second)*ticksPerSecond + Ticks(frac)
	if t < MinDateTime || t > MaxDateTime {
		return t, dateOutOfRange
	}
	return t, dateOK
}

// atoiFixed reads s, which must be all ASCII digits.
func atoiFixed(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func isLeap(year int) bool { return year%4 == 0 && (year%100 != 0 || year%400 == 0) }

var daysBeforeMonth = [13]int{0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334}

func daysIn(year, month int) int {
	if month == 2 && isLeap(year) {
		return 29
	}
	if month == 12 {
		return 31
	}
	return daysBeforeMonth[month+1] - daysBeforeMonth[month]
}

// daysFromCivil counts the days from 0001-01-01 to the given proleptic Gregorian date, the
// epoch of Ticks.
func daysFromCivil(year, month, day int) int {
	y := year - 1
	n := y*365 + y/4 - y/100 + y/400 + daysBeforeMonth[month] + day - 1
	if month > 2 && isLeap(year) {
		n++
	}
	return n
}

// parseGuid reads a GUID in any of the textual forms .NET's Guid parser accepts for 128-bit
// values — 8-4-4-4-12 hex digits, optionally in {} or (), or 32 bare hex digits — in any case,
// and returns the canonical lowercase 8-4-4-4-12 form the service writes.
func parseGuid(s string) (string, bool) {
	switch len(s) {
	case 38:
		if !(s[0] == '{' && s[37] == '}' || s[0] == '(' && s[37] == ')') {
			return "", false
		}
		s = s[1:37]
		fallthrough
	case 36:
		canonical := true
		for i := 0; i < 36; i++ {
			c := s[i]
			if i == 8 || i == 13 || i == 18 || i == 23 {
				if c != '-' {
					return "", false
				}
				continue
			}
			switch {
			case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
			case c >= 'A' && c <= 'F':
				canonical = false
			default:
				return "", false
			}
		}
		if canonical {
			return s, true
		}
		var b [36]byte
		for i := 0; i < 36; i++ {
			c := s[i]
			if c >= 'A' && c <= 'F' {
				c += 'a' - 'A'
			}
			b[i] = c
		}
		return string(b[:]), true
	case 32:
		var b [36]byte
		j := 0
		for i := 0; i < 32; i++ {
			if i == 8 || i == 12 || i == 16 || i == 20 {
				b[j] = '-'
				j++
			}
			c := s[i]
			switch {
			case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
			case c >= 'A' && c <= 'F':
				c += 'a' - 'A'
			default:
				return "", false
			}
			b[j] = c
			j++
		}
		return string(b[:]), true
	}
	return "", false
}
