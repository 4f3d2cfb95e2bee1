package pebble

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tabula-dev/tabula/internal/store"
)

// TestWALIsWrittenOverZeros checks that the WAL a commit syncs already holds about
// walZeroAhead bytes of zeros past its records (so the sync finds written blocks), and that a
// store reopened from it, as after a crash, has every commit.
func TestWALIsWrittenOverZeros(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := mustOpenFS(t, "db", fs)
	ctx := context.Background()
	value := bytes.Repeat([]byte("v"), 1000)
	for i := range 200 {
		m := store.Mutation{Key: store.Key{Space: "t", Partition: "p", Row: fmt.Sprintf("r%04d", i)}, Version: 1, Value: value}
		if err := s.Commit(ctx, []store.Mutation{m}); err != nil {
			t.Fatal(err)
		}
	}
	ahead := walZeroAheadFor(s.space.memTableBytes)
	var wal string
	names, _ := fs.List("db")
	for _, n := range names {
		if strings.HasSuffix(n, ".log") && n > wal {
			wal = n
		}
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{}) // what a power loss now would leave
	s.Close()

	data := readFile(t, crashed, "db/"+wal)
	records := len(bytes.TrimRight(data, "\x00"))
	if records < 200*len(value) {
		t.Fatalf("%s holds %d bytes before its zeros, want the 200 records' %d at least", wal, records, 200*len(value))
	}
	if zeros := len(data) - records; zeros < int(ahead)/2 {
		t.Errorf("%s has %d bytes of zeros past its records, want about %d", wal, zeros, ahead)
	}

	s = mustOpenFS(t, "db", crashed)
	defer s.Close()
	for i := range 200 {
		k := store.Key{Space: "t", Partition: "p", Row: fmt.Sprintf("r%04d", i)}
		if r, err := s.Get(ctx, k); err != nil || !bytes.Equal(r.Value, value) {
			t.Fatalf("%v after reopening: %v", k, err)
		}
	}
}

// TestZeroAheadNeverWritesOverTheLog checks a recycled log opened through disk: zeros start
// where the file's written blocks end (its old size) or where the log's writes end,
// whichever is further, and reach walZeroAhead past the write about to be made.
func TestZeroAheadNeverWritesOverTheLog(t *testing.T) {
	fs := vfs.NewMem()
	prev, err := fs.Create("1.log", walCategory)
	if err != nil {
		t.Fatal(err)
	}
	// A recycled log's records. Written from a copy: under -race Pebble's in-memory files
	// scramble what they were given to write, to catch callers that reuse it.
	old := strings.Repeat("o", 3000)
	if _, err := prev.Write([]byte(old)); err != nil {
		t.Fatal(err)
	}
	prev.Close()
	d := &disk{FS: fs, wal: &walStats{}, walZeroAhead: 1000}
	f, err := d.ReuseForWrite("1.log", "2.log", walCategory) // written again from its start
	if err != nil {
		t.Fatal(err)
	}
	write := func(p string) {
		if _, err := f.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	write(strings.Repeat("a", 2000)) // within the old records: no zeros
	if got, want := string(readFile(t, fs, "2.log")), strings.Repeat("a", 2000)+old[2000:]; got != want {
		t.Fatalf("after a write within the old records the file holds %q…, %d bytes; want the write, then the rest of the old records", got[:min(len(got), 40)], len(got))
	}
	write(strings.Repeat("b", 1500)) // past them: zeros from 3000 to 3500+1000
	f.Close()
	got := readFile(t, fs, "2.log")
	want := strings.Repeat("a", 2000) + strings.Repeat("b", 1500) + strings.Repeat("\x00", 1000)
	if string(got) != want {
		t.Fatalf("file holds %q…, %d bytes; want %d bytes of the log's writes then 1000 zeros", got[:min(len(got), 40)], len(got), len(want))
	}
}

func readFile(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
