package cli

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tabula-dev/tabula/internal/edm"
)

// everyTypeNDJSON writes n entities with properties of every EDM type, including the values
// that are easy to lose on the way (a Double that looks like an integer, NaN and the
// infinities, -0, Int64s beyond 2^53, DateTimes to the 100 ns, strings JSON must escape),
// in partitions of varied sizes and not in key order. Properties are in name order, since the
// SDK sends them so.
func everyTypeNDJSON(t *testing.T, n int) []byte {
	t.Helper()
	rnd := rand.New(rand.NewPCG(1, 2))
	doubles := []float64{5, 0.1, -0.0, 1e300, -2.5e-308, 5e-324, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, 123456789.125}
	int64s := []int64{0, 1<<53 + 1, math.MaxInt64, math.MinInt64, -42}
	int32s := []int64{0, math.MaxInt32, math.MinInt32, 7}
	strs := []string{"", "plain", `quote " and \ backslash`, "new\nline\ttab", "<html> & 'apostrophes'", "日本語 😀", "\u2028\u2029", "\x01\x1f\x7f"}
	var out []byte
	for i := range n {
		r := row{hasPK: true, hasRK: true}
		r.PartitionKey = fmt.Sprintf("p%02d", (i*7)%(1+i%53))
		r.RowKey = fmt.Sprintf("r%06d", (i*7919)%n)
		props := []edm.Property{
			{Name: "Bin", Value: edm.Value{Type: edm.Binary, Bin: randomBytes(rnd, i%70)}},
			{Name: "Bool", Value: edm.Value{Type: edm.Boolean, Int: int64(i % 2)}},
			{Name: "Date", Value: edm.Value{Type: edm.DateTime, Int: int64(edm.MinDateTime) + rnd.Int64N(int64(edm.MaxDateTime-edm.MinDateTime))}},
			{Name: "Double", Value: edm.Value{Type: edm.Double, Float: doubles[i%len(doubles)]}},
			{Name: "Guid", Value: edm.Value{Type: edm.Guid, Str: fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rnd.Uint32(), rnd.Uint32()&0xffff, rnd.Uint32()&0xffff, rnd.Uint32()&0xffff, rnd.Uint64()&0xffffffffffff)}},
			{Name: "Int32", Value: edm.Value{Type: edm.Int32, Int: int32s[i%len(int32s)]}},
			{Name: "Int64", Value: edm.Value{Type: edm.Int64, Int: int64s[i%len(int64s)]}},
			{Name: "Str", Value: edm.Value{Type: edm.String, Str: strs[i%len(strs)] + strconv.Itoa(i)}},
		}
		// Not every entity has every property.
		for j, p := range props {
			if (i+j)%11 != 0 {
				r.Properties = append(r.Properties, p)
			}
		}
		out = appendEntityJSON(out, &r, jsonOptions{})
		out = append(out, '\n')
	}
	return out
}

func randomBytes(rnd *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rnd.Uint32())
	}
	return b
}

var timestampMember = regexp.MustCompile(`"Timestamp@odata.type":"Edm.DateTime","Timestamp":"[^"]*",`)

// withoutTimestamps drops the Timestamps of an export (the service's, different in every
// table) and sorts its lines (an export is in key order, the input was not).
func withoutTimestamps(t *testing.T, export []byte) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(timestampMember.ReplaceAllString(string(export), ""), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	slices.Sort(lines)
	return lines
}

func sortedLines(b []byte) []string {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	slices.Sort(lines)
	return lines
}

func diffLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d lines, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: line %d differs:\n got %s\nwant %s", what, i, got[i], want[i])
		}
	}
}

// batchCounter counts the entity group transactions that succeeded and, at the limit-th, calls
// stop: an import interrupted mid-way, at a point it cannot foresee.
type batchCounter struct {
	next  policy.Transporter
	ok    atomic.Int64
	limit int64
	stop  func()
}

func (b *batchCounter) Do(req *http.Request) (*http.Response, error) {
	resp, err := b.next.Do(req)
	if err == nil && strings.HasSuffix(req.URL.Path, "/$batch") && resp.StatusCode == http.StatusAccepted {
		if b.ok.Add(1) == b.limit {
			b.stop()
		}
	}
	return resp, err
}

// An import of 10,000 entities with every EDM type, interrupted half-way, says how many
// leading lines are stored, and they are; going on with --skip completes it, and an export then
// gives back exactly the entities of the file, every type and value intact. Importing that
// export elsewhere and exporting again changes nothing.
func TestImportExportRoundTripKeepsEveryEDMTypeAndResumes(t *testing.T) {
	cs := startTabula(t)
	dir := t.TempDir()
	input := everyTypeNDJSON(t, 10_000)
	in := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(in, input, 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	counter := &batchCounter{next: http.DefaultClient, limit: 40, stop: cancel}
	r := tabula(ctx, cs, "", Env{Transport: counter}, "import", "source", in)
	if r.err == nil {
		t.Fatal("the interrupted import succeeded")
	}
	m := regexp.MustCompile(`the first (\d+) lines are stored; to go on from there: tabula import source --skip (\d+) ` + regexp.QuoteMeta(in) + `$`).FindStringSubmatch(r.err.Error())
	if m == nil || m[1] != m[2] {
		t.Fatalf("the interrupted import said: %v", r.err)
	}
	stored, _ := strconv.Atoi(m[1])
	if stored == 0 || stored >= 10_000 {
		t.Fatalf("%d lines stored after 40 transactions", stored)
	}
	have := map[string]bool{}
	for _, line := range withoutTimestamps(t, []byte(must(t, cs, "", "export", "source").stdout)) {
		have[line] = true
	}
	inputLines := strings.Split(strings.TrimSuffix(string(input), "\n"), "\n")
	for i, line := range inputLines[:stored] {
		if !have[line] {
			t.Fatalf("line %d, reported stored, is not: %s", i+1, line)
		}
	}

	r = must(t, cs, "", "import", "source", "--skip", m[1], in)
	if !strings.HasPrefix(r.stderr, "imported "+thousands(int64(10_000-stored))+" entities into source") {
		t.Fatalf("the resumed import said %q", r.stderr)
	}
	exported := filepath.Join(dir, "source.ndjson")
	must(t, cs, "", "export", "source", exported)
	first, err := os.ReadFile(exported)
	if err != nil {
		t.Fatal(err)
	}
	diffLines(t, "export of the resumed import", withoutTimestamps(t, first), sortedLines(input))

	must(t, cs, "", "import", "copy", exported)
	second := must(t, cs, "", "export", "copy").stdout
	diffLines(t, "export of the export's import", withoutTimestamps(t, []byte(second)), withoutTimestamps(t, first))

	// The export is in key order, as the service returns entities.
	var keys []string
	for _, line := range strings.Split(strings.TrimSuffix(second, "\n"), "\n") {
		r, err := decodeRow([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, r.PartitionKey+"\x00"+r.RowKey)
	}
	if !slices.IsSorted(keys) || len(keys) != 10_000 {
		t.Fatalf("export: %d entities, sorted %v", len(keys), slices.IsSorted(keys))
	}
}

// Importing a file again, whole, fails on nothing and duplicates nothing: an import interrupted
// without a word (kill -9) is resumed by starting it again.
func TestImportingAgainChangesNothing(t *testing.T) {
	cs := startTabula(t)
	input := everyTypeNDJSON(t, 500)
	must(t, cs, string(input), "import", "twice")
	must(t, cs, string(input), "import", "twice")
	diffLines(t, "the import done twice", withoutTimestamps(t, []byte(must(t, cs, "", "export", "twice").stdout)), sortedLines(input))
}

// A line the service refuses stops the import with that line's number and the service's
// reason; the lines before it are stored.
func TestImportNamesTheLineTheServiceRefused(t *testing.T) {
	cs := startTabula(t)
	var input strings.Builder
	for i := range 150 {
		if i == 120 {
			fmt.Fprintf(&input, `{"PartitionKey":"p","RowKey":"bad/key","N":%d}`+"\n", i)
			continue
		}
		fmt.Fprintf(&input, `{"PartitionKey":"p","RowKey":"%03d","N":%d}`+"\n", i, i)
	}
	err := fails(t, cs, input.String(), "import", "refused", "--parallel", "1")
	if !strings.Contains(err.Error(), "line 121: 400 Bad Request OutOfRangeInput") || !strings.Contains(err.Error(), "the first 100 lines are stored; to go on from there: tabula import refused --skip 100") {
		t.Fatalf("got %v", err)
	}
	got := must(t, cs, "", "entity", "query", "refused", "--select", "RowKey").stdout
	if n := strings.Count(got, "\n"); n != 120 {
		t.Fatalf("%d entities stored, want the 120 before the bad line", n)
	}
}

// A line that is not an entity is reported before anything of its transaction is sent.
func TestImportNamesALineThatIsNotAnEntity(t *testing.T) {
	cs := startTabula(t)
	input := `{"PartitionKey":"p","RowKey":"1"}` + "\n\n" + `{"PartitionKey":"p","RowKey":"2","When@odata.type":"Edm.DateTime","When":"yesterday"}` + "\n"
	err := fails(t, cs, input, "import", "typed")
	if !strings.Contains(err.Error(), "line 3: not an entity:") || !strings.Contains(err.Error(), "the first 2 lines are stored") {
		t.Fatalf("got %v", err)
	}
}

// Two lines for the same entity in one file: the later wins, as two upserts would.
func TestImportKeepsTheLastLineOfAnEntity(t *testing.T) {
	cs := startTabula(t)
	input := `{"PartitionKey":"p","RowKey":"1","V":1}` + "\n" + `{"PartitionKey":"p","RowKey":"2","V":2}` + "\n" + `{"PartitionKey":"p","RowKey":"1","V":3}` + "\n"
	must(t, cs, input, "import", "twice")
	got := must(t, cs, "", "entity", "get", "twice", "p", "1").stdout
	if !strings.Contains(got, `"V":3}`) {
		t.Fatalf("got %s", got)
	}
}
