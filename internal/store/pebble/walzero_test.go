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

// TestWALIsWrittenOverZeros checks that the WAL a commit syncs already holds zeros past its
// records (so the sync finds written blocks), that nothing but zeros follows the records, and
// that a store reopened from it, as after a crash, has every commit.
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

	f, err := crashed.Open("db/" + wal)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
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

// TestZeroAheadNeverWritesOverTheLog checks zeroAhead's arithmetic on a file: zeros start
// where the file's written blocks end (a recycled log's old size) or where the log's writes
// end, whichever is further, and reach walZeroAhead past the write about to be made.
func TestZeroAheadNeverWritesOverTheLog(t *testing.T) {
	fs := vfs.NewMem()
	prev, err := fs.Create("1.log", walCategory)
	if err != nil {
		t.Fatal(err)
	}
	old := bytes.Repeat([]byte("o"), 3000) // a recycled log's records
	if _, err := prev.Write(old); err != nil {
		t.Fatal(err)
	}
	prev.Close()
	raw, err := fs.ReuseForWrite("1.log", "2.log", walCategory) // written again from its start
	if err != nil {
		t.Fatal(err)
	}
	d := &disk{FS: fs, walZeroAhead: 1000}
	f := &diskFile{File: raw, disk: d, tail: &walTail{zeroed: int64(len(old))}}
	write := func(p string) {
		if _, err := f.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	write(strings.Repeat("a", 2000)) // within the old records: no zeros
	write(strings.Repeat("b", 1500)) // past them: zeros from 3000 to 3500+1000
	f.Close()
	r, err := fs.Open("2.log")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("a", 2000) + strings.Repeat("b", 1500) + strings.Repeat("\x00", 1000)
	if string(got) != want {
		t.Fatalf("file holds %q…, %d bytes; want %d bytes of the log's writes then 1000 zeros", got[:min(len(got), 40)], len(got), len(want))
	}
}
