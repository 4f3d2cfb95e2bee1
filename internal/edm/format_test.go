package edm

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The formatters below were rewritten for speed; these tests hold them to simple reference
// implementations (time.Format, strconv, rune-by-rune escaping) over many random values.

// interestingTicks are edge cases for DateTime formatting: range ends, year, month and leap
// boundaries, and fractions with and without trailing zeros.
func interestingTicks() []Ticks {
	ts := []Ticks{0, 1, MinDateTime, MinDateTime + 1, MaxDateTime, MaxDateTime - 9_999_999, unixEpochTicks}
	for _, s := range []string{
		"1601-01-01T00:00:00Z", "1601-12-31T23:59:59.9999999Z", "1900-02-28T23:59:59Z", "1900-03-01T00:00:00Z",
		"2000-02-29T12:00:00.5Z", "2021-08-02T18:01:40.1925388Z", "2021-08-02T18:01:40.1000000Z",
		"2021-08-02T18:01:40.0000001Z", "2024-12-31T23:59:59.999Z", "9999-12-31T00:00:00Z",
	} {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			panic(err)
		}
		ts = append(ts, TicksOf(tm))
	}
	return ts
}

// randomTicks mixes arbitrary ticks with whole seconds and short fractions, so that the
// trailing-zero trimming sees every fraction length.
func randomTicks(r *rand.Rand) Ticks {
	t := Ticks(r.Int64N(int64(MaxDateTime) + 1))
	return t - t%Ticks([]int64{1, 10, 100, 1000, 10_000, 100_000, 1_000_000, ticksPerSecond}[r.IntN(8)])
}

func TestTicksAppendTextMatchesTimeFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ts := interestingTicks()
	// Outside years 1-9999 AppendText defers to the time package.
	ts = append(ts, -1, -ticksPerDay*400, MaxDateTime+1, MaxDateTime+ticksPerDay*366)
	for range 200_000 {
		ts = append(ts, randomTicks(r))
	}
	for _, tk := range ts {
		tm := tk.Time()
		if got, want := string(tk.AppendText(nil, true)), tm.Format("2006-01-02T15:04:05.0000000Z"); got != want {
			t.Fatalf("%d: AppendText(fixed7) = %s, want %s", tk, got, want)
		}
		// ".9999999" trims trailing zeros and drops the point of a zero fraction.
		if got, want := tk.String(), tm.Format("2006-01-02T15:04:05.9999999Z"); got != want {
			t.Fatalf("%d: String() = %s, want %s", tk, got, want)
		}
	}
}

func TestETagMatchesItsDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ts := interestingTicks()
	for range 20_000 {
		ts = append(ts, randomTicks(r))
	}
	for _, tk := range ts {
		stamp := tk.Time().Format("2006-01-02T15:04:05.0000000Z")
		want := `W/"datetime'` + strings.ReplaceAll(stamp, ":", "%3A") + `'"`
		if got := ETag(tk); got != want {
			t.Fatalf("ETag(%d) = %s, want %s", tk, got, want)
		}
		wantJSON, _ := json.Marshal(want)
		if got := appendETagJSON(nil, tk); string(got) != string(wantJSON) {
			t.Fatalf("appendETagJSON(%d) = %s, want %s", tk, got, wantJSON)
		}
	}
}

// appendDoubleReference is appendDouble as first written, formatting twice: 'e' for the
// exponent, then 'f' for exponents -4..14.
func appendDoubleReference(dst []byte, f float64) []byte {
	var buf [32]byte
	sci := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	e := len(sci) - 1
	for sci[e] != 'e' {
		e--
	}
	exp := 0
	for _, c := range sci[e+2:] {
		exp = exp*10 + int(c-'0')
	}
	if sci[e+1] == '-' {
		exp = -exp
	}
	if exp > -5 && exp < 15 {
		start := len(dst)
		dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
		for _, c := range dst[start:] {
			if c == '.' {
				return dst
			}
		}
		return append(dst, '.', '0')
	}
	dst = append(dst, sci[:e]...)
	dst = append(dst, 'E', sci[e+1])
	if exp < 0 {
		exp = -exp
	}
	if exp < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(exp), 10)
}

func TestAppendDoubleMatchesTheTwoFormatVersion(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	fs := []float64{0, math.Copysign(0, -1), 1, -1, 5, 0.1, 1e-5, 1e-4, 9.9999e-5, 1e14, 1e15, 999999999999999,
		999999999999999.9, 9.999999999999999e14, 123456789012345.6, math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.MaxInt64, 1 << 53, 0.30000000000000004}
	for range 300_000 {
		var f float64
		switch r.IntN(3) {
		case 0: // any finite bit pattern
			f = math.Float64frombits(r.Uint64())
		case 1: // a short decimal around the fixed/scientific boundaries
			f = float64(r.IntN(100_000)) * math.Pow10(r.IntN(30)-12)
		default: // an integer
			f = float64(r.Int64N(1<<53)) / float64(int64(1)<<r.IntN(20))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		if r.IntN(2) == 0 {
			f = -f
		}
		fs = append(fs, f)
	}
	for _, f := range fs {
		if got, want := string(appendDouble(nil, f)), string(appendDoubleReference(nil, f)); got != want {
			t.Fatalf("appendDouble(%v) = %s, want %s", f, got, want)
		}
	}
}

// escapeReference escapes s rune by rune, as appendStringContent is specified to.
func escapeReference(s string) string {
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		var r rune
		r, w = utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			b.WriteString(`\ufffd`)
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hexDigits[r>>4])
			b.WriteByte(hexDigits[r&0xF])
		default:
			b.WriteString(s[i : i+w])
		}
	}
	return b.String()
}

// stringPieces are what random strings are made of: plain runs of every length around the
// 8-byte chunks, escapes, multi-byte and invalid UTF-8, and truncated sequences.
var stringPieces = []string{
	"a", "abcdefg", "abcdefgh", "0123456789abcdefX", " ", "~", "\x7f", `"`, `\`, "\n", "\x00", "\x1f",
	"é", "€", "😀", "\u2028", "\ufffd", "日本語", "\xff", "\xc3", "\xe2\x82", "\xf0\x9f\x98", "\xed\xa0\x80", "\xc0\xaf",
}

func TestAppendStringContentMatchesTheReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 100_000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(stringPieces[r.IntN(len(stringPieces))])
		}
		s := b.String()
		if got, want := string(appendStringContent(nil, s)), escapeReference(s); got != want {
			t.Fatalf("appendStringContent(%q) = %q, want %q", s, got, want)
		}
	}
}

func FuzzAppendStringContent(f *testing.F) {
	for _, s := range stringPieces {
		f.Add(s + "abcdefgh" + s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendStringContent([]byte("x"), s)
		if want := "x" + escapeReference(s); string(got) != want {
			t.Fatalf("appendStringContent(%q) = %q, want %q", s, got, want)
		}
	})
}

// A response is formatted into a buffer allocated once: the size hint covers the output when
// no string needs escapes, for the longest scalar values too.
func TestJSONSizeHintCoversTheOutput(t *testing.T) {
	longest := Entity{PartitionKey: "p", RowKey: "r", Timestamp: MaxDateTime, Properties: []Property{
		{"D", Value{Type: DateTime, Int: int64(MaxDateTime)}},
		{"L", Value{Type: Int64, Int: math.MinInt64}},
		{"I", Value{Type: Int32, Int: math.MinInt32}},
		{"F", Value{Type: Double, Float: -1.2345678901234567e-300}},
		{"N", Value{Type: Double, Float: math.Inf(-1)}},
		{"B", Value{Type: Boolean}},
		{"G", Value{Type: Guid, Str: "c9da6455-213d-42c9-9a79-3e9149a57833"}},
		{"X", Value{Type: Binary, Bin: []byte{1}}},
	}}
	dates := Entity{Timestamp: MaxDateTime}
	for _, name := range []string{"A", "B", "C", "D"} {
		dates.Properties = append(dates.Properties, Property{name, Value{Type: DateTime, Int: int64(MaxDateTime)}})
	}
	for _, e := range []Entity{fixtureEntity(), longest, dates, {PartitionKey: "it's", RowKey: "r"}, {}} {
		for _, level := range []Metadata{NoMetadata, MinimalMetadata, FullMetadata} {
			opts := fixtureOptions(level)
			if n, hint := len(AppendJSON(nil, &e, opts)), jsonSizeHint(&e, opts); n > hint {
				t.Errorf("level %d, %s/%s: %d bytes written, hint %d", level, e.PartitionKey, e.RowKey, n, hint)
			}
		}
	}
}
