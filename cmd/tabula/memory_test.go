package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

func TestInMemoryLimitTakesSizesSharesAndZero(t *testing.T) {
	const machine = 24 << 30
	available := func() (int64, error) { return machine, nil }
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "50%", want: machine / 2}, {in: "100%", want: machine}, {in: "12.5%", want: machine / 8},
		{in: "4GiB", want: 4 << 30}, {in: "4G", want: 4 << 30}, {in: "512MiB", want: 512 << 20},
		{in: "512M", want: 512 << 20}, {in: "1.5GiB", want: 3 << 29}, {in: "2048", want: 2048},
		{in: "2048B", want: 2048}, {in: "1TiB", want: 1 << 40}, {in: " 64 KiB ", want: 64 << 10}, {in: "0", want: 0},
		{in: "0%", bad: true}, {in: "150%", bad: true}, {in: "half", bad: true}, {in: "-1GiB", bad: true},
		{in: "4GB", bad: true}, {in: "", bad: true}, {in: "1e30", bad: true},
	} {
		got, err := memoryLimitOf(tc.in, available)
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), "--in-memory-limit") {
				t.Errorf("memoryLimitOf(%q) = %d, %v; want an error naming the flag", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("memoryLimitOf(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	if _, err := memoryLimitOf("50%", func() (int64, error) { return 0, errors.New("no /proc") }); err == nil || !strings.Contains(err.Error(), "give a size instead") {
		t.Errorf("a share of a memory that cannot be told: %v", err)
	}
}

func TestMemTotalReadsMeminfo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(path, []byte("MemFree:         1000 kB\nMemTotal:       24600000 kB\nBuffers: 1 kB\n"), 0o644)
	if n, err := memTotal(path); err != nil || n != 24600000<<10 {
		t.Errorf("memTotal = %d, %v; want %d", n, err, 24600000<<10)
	}
	os.WriteFile(path, []byte("MemFree: 1000 kB\n"), 0o644)
	if _, err := memTotal(path); err == nil {
		t.Error("a meminfo without MemTotal gave no error")
	}
	if n, err := availableMemory(); err != nil || n <= 0 {
		t.Errorf("availableMemory on this machine = %d, %v", n, err)
	}
}

// TestTheMemoryLimitFollowsWhatTheStoreHolds: the process's soft memory limit stays
// heapHeadroom above an in-memory store's data, so the collector never chases memory it
// cannot free.
func TestTheMemoryLimitFollowsWhatTheStoreHolds(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	var held atomic.Int64
	held.Store(3 << 30)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { followStoreMemory(ctx, held.Load); close(done) }()
	defer func() { cancel(); <-done }()

	waitForLimit := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for debug.SetMemoryLimit(-1) != want {
			if time.Now().After(deadline) {
				t.Fatalf("memory limit %d, want %d", debug.SetMemoryLimit(-1), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitForLimit(heapHeadroom + 3<<30)
	held.Store(1 << 30)
	waitForLimit(heapHeadroom + 1<<30)
}

// An in-memory Tabula near its --in-memory-limit answers an upload 503 ServerBusy, as on a
// full disk, and goes on serving: what it holds stays readable, deletions work and free the
// memory soon after. Without the limit, the process would grow until the kernel killed it.
func TestAnInMemoryServerRefusesUploadsBeyondItsLimit(t *testing.T) {
	_, out := startTabulaOutput(t, "--in-memory", "--in-memory-limit", "48MiB")
	if !strings.Contains(out.banner, "--in-memory-limit") {
		t.Errorf("the banner does not state the memory limit:\n%s", out.banner)
	}
	ctx := t.Context()
	noRetry := &azblob.ClientOptions{}
	noRetry.Retry.MaxRetries = -1
	svc, err := azblob.NewClientFromConnectionString(out.connectionString, noRetry)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateContainer(ctx, "bounded", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.UploadBuffer(ctx, "bounded", "small", []byte("kept"), nil); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 8<<20)
	var refusal error
	for i := 0; i < 12 && refusal == nil; i++ {
		_, refusal = svc.UploadBuffer(ctx, "bounded", fmt.Sprintf("big%d", i), big, nil)
		time.Sleep(100 * time.Millisecond)
	}
	if !bloberror.HasCode(refusal, bloberror.ServerBusy) {
		t.Fatalf("96 MiB into a 48 MiB in-memory server: %v, want 503 ServerBusy", refusal)
	}
	resp, err := svc.DownloadStream(ctx, "bounded", "small", nil)
	if err != nil {
		t.Fatalf("reading at the limit: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "kept" {
		t.Errorf("read %q at the limit", got)
	}
	// Deleting frees the memory within about a minute (inMemoryBlobGrace), and uploads
	// are taken again.
	pager := svc.NewListBlobsFlatPager("bounded", nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			if *b.Name != "small" {
				if _, err := svc.DeleteBlob(ctx, "bounded", *b.Name, nil); err != nil {
					t.Fatalf("deleting at the limit: %v", err)
				}
			}
		}
	}
	deadline := time.Now().Add(inMemoryBlobGrace + 2*inMemoryCollectInterval + 10*time.Second)
	for {
		_, err := svc.UploadBuffer(ctx, "bounded", "after", big, nil)
		if err == nil {
			break
		}
		if !bloberror.HasCode(err, bloberror.ServerBusy) || time.Now().After(deadline) {
			t.Fatalf("an upload after deleting the big blobs: %v", err)
		}
		time.Sleep(time.Second)
	}
}
