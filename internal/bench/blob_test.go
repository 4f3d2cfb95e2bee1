package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/blobhttp"
	"github.com/tabula-dev/tabula/internal/store/pebble"
)

// startTabulaBlobs serves an in-memory Tabula blob endpoint and returns its service root.
func startTabulaBlobs(t *testing.T) string {
	t.Helper()
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewServer(blobhttp.New(blob.New(st, st), auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()}), nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/" + devAccount
}

// The string to sign and the signature of the spec's SharedKey vectors (blob.md §6.1).
func TestBlobStringToSignMatchesTheSpecVectors(t *testing.T) {
	key, _ := base64.StdEncoding.DecodeString(devKey)
	const date, version = "Mon, 02 Aug 2021 18:01:40 GMT", "2026-12-06"
	for _, c := range []struct {
		method, path, query string
		header              http.Header
		length              int
		want, sig           string
	}{
		{"PUT", "/devstoreaccount1/mycontainer/hello.txt", "",
			http.Header{"Content-Type": {"application/octet-stream"}, "X-Ms-Blob-Type": {"BlockBlob"}, "X-Ms-Meta-M1": {"v1"}}, 11,
			"PUT\n\n\n11\n\napplication/octet-stream\n\n\n\n\n\n\nx-ms-blob-type:BlockBlob\nx-ms-date:Mon, 02 Aug 2021 18:01:40 GMT\nx-ms-meta-m1:v1\nx-ms-version:2026-12-06\n/devstoreaccount1/devstoreaccount1/mycontainer/hello.txt",
			"dKi7xNpkWB6bKH6ebj6xdwzpnDNs128E6uPwSbnrETA="},
		{"GET", "/devstoreaccount1/mycontainer/myblob", "", nil, 0,
			"GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Mon, 02 Aug 2021 18:01:40 GMT\nx-ms-version:2026-12-06\n/devstoreaccount1/devstoreaccount1/mycontainer/myblob",
			"AfCZaH3PKAf8AW6q2p9tB1DcvJU/1nJ+gRwycRMSXqA="},
		{"GET", "/devstoreaccount1/mycontainer", "comp=list&include=metadata%2Csnapshots&restype=container", nil, 0,
			"GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Mon, 02 Aug 2021 18:01:40 GMT\nx-ms-version:2026-12-06\n/devstoreaccount1/devstoreaccount1/mycontainer\ncomp:list\ninclude:metadata,snapshots\nrestype:container",
			"EtGmJMNueagDTiSz8LI2NT/rw4aSFELmMZZK2xxD5Oc="},
	} {
		got := blobStringToSign(c.method, c.header, c.length, date, version, "/devstoreaccount1"+c.path, c.query)
		if got != c.want {
			t.Errorf("%s %s: string to sign\n%q\nwant\n%q", c.method, c.path, got, c.want)
		}
		if sig := signBlob(key, got); sig != c.sig {
			t.Errorf("%s %s: signature %s, want %s", c.method, c.path, sig, c.sig)
		}
	}
}

func TestBlobWorkloadsRunCleanAgainstTabula(t *testing.T) {
	tables, blobs := startTabula(t), startTabulaBlobs(t)
	const blobSize = 2<<20 + 100<<10 // a last block shorter than the others
	rep, report, err := runJSON(t, "--endpoint", tables, "--blob-endpoint", blobs, "--workloads", "blob",
		"--duration", "100ms", "--concurrency", "4", "--blob-size", "2148KiB", "--block-size", "256KiB", "--blob-parallel", "3",
		"--small-size", "700", "--small-blobs", "20", "--list-blobs", "120", "--list-page", "50", "--blob-loaders", "8",
		"--disk-dir", t.TempDir())
	if err != nil {
		t.Fatalf("bench failed: %v\n%s", err, report)
	}
	if len(rep.Results) != len(blobWorkloads) {
		t.Fatalf("got %d results, want one per blob workload\n%s", len(rep.Results), report)
	}
	for i, r := range rep.Results {
		wl := blobWorkloads[i]
		if r.Workload != wl.name || r.ErrorCount != 0 || r.Ops == 0 || r.HeadlineUnit != wl.headline || r.Headline <= 0 || r.LatencyMs.P50 <= 0 {
			t.Errorf("%s: %d ops, %d errors, %v %s, p50 %vms", r.Workload, r.Ops, r.ErrorCount, r.Headline, r.HeadlineUnit, r.LatencyMs.P50)
		}
		switch r.Workload {
		case "blob-upload", "blob-download-ranged", "blob-download":
			// Whole blobs only: a round started is finished.
			if r.Entities == 0 || r.Bytes != r.Entities*blobSize {
				t.Errorf("%s moved %d bytes in %d blobs of %d", r.Workload, r.Bytes, r.Entities, blobSize)
			}
		case "blob-list":
			// Pages of 50 of 120 blobs: 50, 50 or 20 each.
			if r.Pages != r.Ops || r.Entities < 20*r.Pages || r.Entities > 50*r.Pages {
				t.Errorf("blob-list: %d pages listed %d blobs", r.Pages, r.Entities)
			}
		}
	}
	if d := rep.Disk; d == nil || d.Bytes != blobSize || d.SyncAtEndMBPerSec <= 0 || d.SyncPerChunkMBPerSec <= 0 {
		t.Errorf("disk: %+v", d)
	}
	if len(rep.FileServer) != 2 {
		t.Fatalf("file server: %d results, want the two downloads\n%s", len(rep.FileServer), report)
	}
	for _, r := range rep.FileServer {
		if r.ErrorCount != 0 || r.Bytes == 0 || r.Bytes%blobSize != 0 {
			t.Errorf("file server %s: %d bytes, %d errors", r.Workload, r.Bytes, r.ErrorCount)
		}
	}
	if !strings.Contains(report, "the file server") || !strings.Contains(report, "of the disk's rate") {
		t.Errorf("the report does not compare with the yardsticks:\n%s", report)
	}
	t.Logf("\n%s", report)
}

// A download that returns other bytes than were uploaded fails the run.
func TestBlobDownloadOfWrongBytesFails(t *testing.T) {
	// A server that answers every request as if it were right, with zeros for bytes.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut:
			w.WriteHeader(http.StatusCreated)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusAccepted)
		default:
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(make([]byte, 1<<20)))
		}
	}))
	defer srv.Close()
	_, report, err := runJSON(t, "--endpoint", startTabula(t), "--blob-endpoint", srv.URL+"/"+devAccount,
		"--workloads", "blob-download-ranged,blob-download", "--duration", "50ms", "--blob-size", "1MiB", "--block-size", "256KiB")
	if err == nil {
		t.Fatalf("zeros for bytes went unreported\n%s", report)
	}
	for _, want := range []string{"wrong content: ranged Get Blob", "wrong content: Get Blob"} {
		if !strings.Contains(report, want) {
			t.Errorf("report does not say %q:\n%s", want, report)
		}
	}
}

func TestBlobSinkChecksEveryStampWhateverThePieces(t *testing.T) {
	const off, n = 3 * stampEvery, 5*stampEvery + 1234
	data := make([]byte, n)
	fillContent(data, off, false)
	for _, piece := range []int{1, 7, 4096, n} {
		var s blobSink
		s.reset(off)
		for i := 0; i < n; i += piece {
			s.Write(data[i:min(i+piece, n)])
		}
		if err := s.verify("x", n); err != nil {
			t.Errorf("pieces of %d: %v", piece, err)
		}
		if err := s.verify("x", n+1); err == nil || !strings.Contains(err.Error(), "wrong length") {
			t.Errorf("pieces of %d: a short body passed: %v", piece, err)
		}
	}
	for _, at := range []int{0, 5, 9, 2*stampEvery + 3, 4*stampEvery + 15} {
		bad := bytes.Clone(data)
		bad[at]++
		var s blobSink
		s.reset(off)
		s.ReadFrom(bytes.NewReader(bad))
		if err := s.verify("x", n); err == nil || !strings.Contains(err.Error(), "wrong content") {
			t.Errorf("a changed byte at %d passed: %v", at, err)
		}
	}
	var s blobSink
	s.reset(off + stampEvery) // the right bytes, read as if from the next segment
	s.Write(data)
	if err := s.verify("x", n); err == nil {
		t.Error("bytes from the wrong offset passed")
	}
}

// A round that started is finished after the deadline; none starts after it but the first.
func TestTransferFinishesTheBlobItStarted(t *testing.T) {
	cfg := &config{blobSize: 10, blockSize: 4}
	x := newTransfer(cfg, time.Now().Add(-time.Second), 0)
	if r, b, ok := x.claim(); !ok || r != 0 || b != 0 {
		t.Fatalf("the first blob did not start after the deadline: %d %d %v", r, b, ok)
	}
	for want := int64(1); want < 3; want++ {
		if r, b, ok := x.claim(); !ok || r != 0 || b != want {
			t.Fatalf("after the deadline, block %d of the started blob: %d %d %v", want, r, b, ok)
		}
	}
	if _, _, ok := x.claim(); ok {
		t.Fatal("a new blob started after the deadline")
	}
	if x.finish(0) || x.finish(0) || !x.finish(0) {
		t.Fatal("the third block of three did not complete the blob")
	}
	once := newTransfer(cfg, time.Now().Add(time.Hour), 1)
	claims := 0
	for _, _, ok := once.claim(); ok; _, _, ok = once.claim() {
		claims++
	}
	if claims != 3 {
		t.Fatalf("one round claimed %d blocks, want 3", claims)
	}
}

func TestBlobSizesAndFlagsAreChecked(t *testing.T) {
	for s, want := range map[string]int64{"4096": 4096, "4KiB": 4096, "4k": 4096, "64MiB": 64 << 20, "1GiB": 1 << 30, "2G": 2 << 30, "7B": 7} {
		if got, err := parseSize(s); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "x", "4XB", "-1", "1.5GiB", "99999999999G"} {
		if _, err := parseSize(s); err == nil {
			t.Errorf("%q parsed", s)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--block-size", "100000"}, "--block-size"},
		{[]string{"--blob-size", "4GiB", "--block-size", "64KiB"}, "50,000 blocks"},
		{[]string{"--list-page", "5001"}, "--list-page"},
		{[]string{"--disk-dir", "/nonexistent/dir"}, "--disk-dir"},
	} {
		var out, errOut bytes.Buffer
		if err := Main(context.Background(), c.args, &out, &errOut); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error about %s", c.args, err, c.want)
		}
	}
}

// Downloads without blob-upload before them upload their blob first; after it, they read the
// blob it committed first.
func TestBlobDownloadsReadTheFirstUploadOrTheirOwn(t *testing.T) {
	tables, blobs := startTabula(t), startTabulaBlobs(t)
	for _, c := range []struct{ workloads, want string }{
		{"blob-download", "uploaded the download blob to tabula"},
		{"blob-upload,blob-download", "the downloads on tabula read blob-upload's first blob"},
	} {
		rep, report, err := runJSON(t, "--endpoint", tables, "--blob-endpoint", blobs, "--label", "tabula", "--workloads", c.workloads,
			"--duration", "10ms", "--blob-size", "300KiB", "--block-size", "64KiB")
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.workloads, err, report)
		}
		if !strings.Contains(report, c.want) {
			t.Errorf("%s: the report does not say %q:\n%s", c.workloads, c.want, report)
		}
		if r := rep.Results[len(rep.Results)-1]; r.Bytes != r.Entities*300<<10 || r.Entities == 0 {
			t.Errorf("%s: blob-download read %d bytes in %d blobs", c.workloads, r.Bytes, r.Entities)
		}
	}
}
