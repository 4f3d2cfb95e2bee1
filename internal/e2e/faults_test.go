package e2e

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/tabula-dev/tabula/internal/store/pebble"
)

// openPebbleOn opens the embedded store on fs, closed when t ends.
func openPebbleOn(t *testing.T, fs vfs.FS) *pebble.Store {
	t.Helper()
	st, err := pebble.Open("db", pebble.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestFullDiskAnswersServerBusyAndStillDeletes fills the disk (as statfs reports it) under a
// running server: writes that add data get 503 ServerBusy, which every SDK retries, with a
// message saying why; reads, deleting entities (alone or in a batch) and deleting a table
// still work; and writes are accepted again once space is back, without a restart.
func TestFullDiskAnswersServerBusyAndStillDeletes(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	const gib = 1 << 30
	mem.TestingSetDiskUsage(vfs.DiskUsage{TotalBytes: gib, AvailBytes: gib, UsedBytes: 0})
	s := startServer(t, openPebbleOn(t, mem))
	c := s.newTable(t, "fulldisk")
	addEntity(t, c, map[string]any{"PartitionKey": "p", "RowKey": "a", "V": 1})
	addEntity(t, c, map[string]any{"PartitionKey": "p", "RowKey": "b", "V": 1})

	mem.TestingSetDiskUsage(vfs.DiskUsage{TotalBytes: gib, AvailBytes: 10 << 20, UsedBytes: gib - 10<<20})
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for err == nil && time.Now().Before(deadline) { // free space is measured about every second
		_, err = c.UpsertEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "c", "V": 2}), nil)
		time.Sleep(100 * time.Millisecond)
	}
	wantAzureError(t, err, http.StatusServiceUnavailable, "ServerBusy")
	if !strings.Contains(err.Error(), "storage is full") {
		t.Errorf("the 503 does not say the storage is full: %v", err)
	}
	_, err = c.SubmitTransaction(ctx, []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeAdd, Entity: marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "d"})},
	}, nil)
	// A whole-request 503, which SDKs retry, not a failed operation inside a 202.
	wantAzureError(t, err, http.StatusServiceUnavailable, "ServerBusy")

	if props, _ := getProps(t, c, "p", "a"); props["V"] != float64(1) {
		t.Errorf("read on a full disk: %v", props)
	}
	if _, err := c.DeleteEntity(ctx, "p", "a", nil); err != nil {
		t.Fatalf("DeleteEntity on a full disk: %v", err)
	}
	if _, err := c.SubmitTransaction(ctx, []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeDelete, Entity: marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "b"})},
	}, nil); err != nil {
		t.Fatalf("a transaction of deletions on a full disk: %v", err)
	}
	if _, err := s.service.DeleteTable(ctx, "fulldisk", nil); err != nil {
		t.Fatalf("DeleteTable on a full disk: %v", err)
	}
	_, err = s.service.CreateTable(ctx, "another", nil)
	wantAzureError(t, err, http.StatusServiceUnavailable, "ServerBusy")

	mem.TestingSetDiskUsage(vfs.DiskUsage{TotalBytes: gib, AvailBytes: gib, UsedBytes: 0})
	deadline = time.Now().Add(5 * time.Second)
	for {
		_, err = s.service.CreateTable(ctx, "another", nil)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("CreateTable once space is back: %v", err)
	}
}

// TestFailedDiskAnswersAtOnceAndKeepsServingReads fails the disk under a running server
// (every write of the write-ahead log gets EIO): the write in flight is answered within
// seconds, as one that may or may not have happened, later writes at once with 500
// InternalError, and reads go on.
func TestFailedDiskAnswersAtOnceAndKeepsServingReads(t *testing.T) {
	ctx := context.Background()
	var failing atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if failing.Load() && strings.HasSuffix(op.Path, ".log") && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.EIO}
		}
		return nil
	}))
	s := startServer(t, openPebbleOn(t, fs))
	c := s.newTable(t, "faileddisk")
	addEntity(t, c, map[string]any{"PartitionKey": "p", "RowKey": "kept", "V": 1})

	failing.Store(true)
	start := time.Now()
	_, err := c.AddEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "x"}), nil)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the write as the disk failed was answered after %v", d)
	}
	wantAzureError(t, err, http.StatusInternalServerError, "OperationTimedOut")

	start = time.Now()
	_, err = c.AddEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "y"}), nil)
	if d := time.Since(start); d > time.Second {
		t.Errorf("a write on a failed disk was answered after %v", d)
	}
	wantAzureError(t, err, http.StatusInternalServerError, "InternalError")

	if props, _ := getProps(t, c, "p", "kept"); props["V"] != float64(1) {
		t.Errorf("read on a failed disk: %v", props)
	}
	pager := c.NewListEntitiesPager(nil)
	if _, err := pager.NextPage(ctx); err != nil {
		t.Errorf("query on a failed disk: %v", err)
	}
}
