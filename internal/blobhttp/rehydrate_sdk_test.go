package blobhttp_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

// archivedBlob uploads data (with metadata md) as block blob name of c and moves it to the
// Archive tier.
func archivedBlob(t *testing.T, c *container.Client, name string, data []byte, md map[string]*string) *blockblob.Client {
	t.Helper()
	b := c.NewBlockBlobClient(name)
	if _, err := b.UploadBuffer(t.Context(), data, &blockblob.UploadBufferOptions{Metadata: md}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SetTier(t.Context(), blob.AccessTierArchive, nil); err != nil {
		t.Fatal(err)
	}
	return b
}

// movableClock makes the service's clock one the test moves with advance; the server's
// goroutines read it atomically (HTTP round trips are no synchronization the race detector
// sees).
func (e *env) movableClock() (now func() time.Time, advance func(time.Duration)) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now = func() time.Time { return time.Unix(0, clock.Load()) }
	e.svc.Now = now
	return now, func(d time.Duration) { clock.Add(int64(d)) }
}

// An archived blob's bytes are offline, also to copies: only an asynchronous Copy Blob into
// an online tier under another name reads them, and its destination rehydrates (Azure's
// "Blob rehydration from the Archive tier"). Every other copy is 409 BlobArchived.
func TestACopyOfAnArchivedBlobRehydrates(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		now, advance := e.movableClock()
		c := e.container("archive")
		data := bytes.Repeat([]byte("cold data "), 1000)
		src := archivedBlob(t, c, "src", data, map[string]*string{"kept": to.Ptr("yes")})

		// What Azure refuses.
		dst := c.NewBlockBlobClient("dst")
		_, err := dst.StartCopyFromURL(ctx, src.URL(), nil)
		wantStatus(t, err, 409, "BlobArchived")
		_, err = dst.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{Tier: to.Ptr(blob.AccessTierArchive)})
		wantStatus(t, err, 409, "BlobArchived")
		_, err = src.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{Tier: to.Ptr(blob.AccessTierHot)})
		wantStatus(t, err, 409, "BlobArchived")
		readable := readableURL(t, src)
		_, err = dst.CopyFromURL(ctx, readable, &blob.CopyFromURLOptions{Tier: to.Ptr(blob.AccessTierHot)})
		wantStatus(t, err, 409, "BlobArchived")
		_, err = dst.UploadBlobFromURL(ctx, readable, nil)
		wantStatus(t, err, 409, "BlobArchived")
		_, err = dst.StageBlockFromURL(ctx, blockIDs(1)[0], readable, nil)
		wantStatus(t, err, 409, "BlobArchived")
		if _, err := dst.GetProperties(ctx, nil); err == nil {
			t.Fatal("a refused copy left a destination")
		}

		// The copy into Cool: pending, its destination in Archive until rehydrated.
		started, err := dst.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{Tier: to.Ptr(blob.AccessTierCool), RehydratePriority: to.Ptr(blob.RehydratePriorityHigh)})
		if err != nil {
			t.Fatal(err)
		}
		if *started.CopyStatus != blob.CopyStatusTypePending {
			t.Fatalf("copy status %s, want pending", *started.CopyStatus)
		}
		props, err := dst.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *props.AccessTier != "Archive" || props.ArchiveStatus == nil || *props.ArchiveStatus != "rehydrate-pending-to-cool" || *props.RehydratePriority != "High" ||
			*props.CopyStatus != blob.CopyStatusTypePending || *props.CopyProgress != fmt.Sprintf("0/%d", len(data)) || props.CopyCompletionTime != nil ||
			*props.CopyID != *started.CopyID || *props.Metadata["Kept"] != "yes" {
			t.Fatalf("while rehydrating: tier %v, archive status %v, priority %v, copy %v %v %v, metadata %v",
				*props.AccessTier, props.ArchiveStatus, props.RehydratePriority, *props.CopyStatus, *props.CopyProgress, props.CopyCompletionTime, props.Metadata)
		}
		page, err := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Copy: true}, Prefix: to.Ptr("dst")}).NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if item := page.Segment.BlobItems[0].Properties; *item.ArchiveStatus != blob.ArchiveStatusRehydratePendingToCool || *item.CopyStatus != blob.CopyStatusTypePending {
			t.Fatalf("listed while rehydrating: %v %v", *item.ArchiveStatus, *item.CopyStatus)
		}
		_, err = dst.DownloadStream(ctx, nil)
		wantStatus(t, err, 409, "BlobArchived")
		_, err = dst.Upload(ctx, streaming.NopCloser(bytes.NewReader([]byte("other"))), nil)
		wantStatus(t, err, 409, "PendingCopyOperation")
		_, err = dst.SetTier(ctx, blob.AccessTierHot, nil)
		wantStatus(t, err, 409, "BlobBeingRehydrated")
		_, err = dst.SetTier(ctx, blob.AccessTierArchive, nil)
		wantStatus(t, err, 409, "BlobBeingRehydrated")

		// RehydrateAfter later it is in Cool, with the bytes, and the copy succeeded then.
		advance(e.svc.RehydrateAfter)
		props, err = dst.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *props.AccessTier != "Cool" || props.ArchiveStatus != nil || props.RehydratePriority != nil || *props.CopyStatus != blob.CopyStatusTypeSuccess ||
			*props.CopyProgress != fmt.Sprintf("%d/%d", len(data), len(data)) || !props.CopyCompletionTime.Equal(now().Truncate(time.Second)) {
			t.Fatalf("after the rehydration: tier %v, archive status %v, copy %v %v %v", *props.AccessTier, props.ArchiveStatus, *props.CopyStatus, *props.CopyProgress, props.CopyCompletionTime)
		}
		if got := readBlob(t, dst.BlobClient(), nil); !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes, want %d", len(got), len(data))
		}
		if _, err := dst.SetMetadata(ctx, map[string]*string{"a": to.Ptr("1")}, nil); err != nil {
			t.Fatal(err)
		}
		srcProps, err := src.GetProperties(ctx, nil)
		if err != nil || *srcProps.AccessTier != "Archive" || srcProps.ArchiveStatus != nil {
			t.Fatalf("the source after the copy: %v %v %v", srcProps.AccessTier, srcProps.ArchiveStatus, err)
		}
	})
}

// Abort Copy Blob ends a rehydrating copy: the blob is left without bytes, in the tier the
// copy was going to, its metadata kept.
func TestAbortingARehydratingCopy(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.container("archive")
		src := archivedBlob(t, c, "src", bytes.Repeat([]byte("x"), 5000), nil)
		dst := c.NewBlockBlobClient("dst")
		started, err := dst.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{Tier: to.Ptr(blob.AccessTierHot), Metadata: map[string]*string{"m": to.Ptr("v")}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dst.AbortCopyFromURL(ctx, *started.CopyID, nil); err != nil {
			t.Fatal(err)
		}
		props, err := dst.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *props.CopyStatus != blob.CopyStatusTypeAborted || *props.ContentLength != 0 || *props.AccessTier != "Hot" || props.ArchiveStatus != nil || *props.Metadata["M"] != "v" {
			t.Fatalf("after the abort: copy %v, %d bytes, tier %v, archive status %v, metadata %v", *props.CopyStatus, *props.ContentLength, *props.AccessTier, props.ArchiveStatus, props.Metadata)
		}
		if got := readBlob(t, dst.BlobClient(), nil); len(got) != 0 {
			t.Fatalf("read %d bytes after the abort", len(got))
		}
		_, err = dst.AbortCopyFromURL(ctx, *started.CopyID, nil)
		wantStatus(t, err, 409, "NoPendingCopyOperation")
	})
}

// While a rehydration is pending, asking again for its tier with High raises its priority
// (Azure's "Rehydrate an archived blob to an online tier"); Standard does not lower it.
func TestARehydrationsPriorityCanBeRaised(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.container("archive")
		b := archivedBlob(t, c, "b", []byte("cold"), nil)
		r := newRaw(e)
		for _, step := range []struct{ asked, want string }{{"Standard", "Standard"}, {"High", "High"}, {"Standard", "High"}} {
			resp := r.do(http.MethodPut, "/archive/b?comp=tier", map[string]string{"x-ms-access-tier": "Hot", "x-ms-rehydrate-priority": step.asked}, nil)
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("Set Blob Tier Hot, %s: %d, want 202", step.asked, resp.StatusCode)
			}
			props, err := b.GetProperties(ctx, nil)
			if err != nil || *props.RehydratePriority != step.want || *props.ArchiveStatus != "rehydrate-pending-to-hot" {
				t.Fatalf("after asking %s: priority %v, status %v, %v", step.asked, props.RehydratePriority, props.ArchiveStatus, err)
			}
		}
	})
}

// An archived blob is neither replaced (rclone's users see Azure refuse a Put Blob over it)
// nor takes blocks (AzCopy's, Put Block) or snapshots ("Taking a snapshot of an archived blob
// will fail", the REST reference), also while it is rehydrated; its tags, leases and
// deletion work.
func TestAnArchivedBlobTakesNoBlocksNorSnapshots(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.container("archive")
		b := archivedBlob(t, c, "b", []byte("cold"), nil)
		for _, rehydrating := range []bool{false, true} {
			if rehydrating {
				if _, err := b.SetTier(ctx, blob.AccessTierHot, nil); err != nil {
					t.Fatal(err)
				}
			}
			_, err := b.StageBlock(ctx, blockIDs(1)[0], streaming.NopCloser(bytes.NewReader([]byte("x"))), nil)
			wantStatus(t, err, 409, "BlobArchived")
			_, err = b.CreateSnapshot(ctx, nil)
			wantStatus(t, err, 409, "BlobArchived")
			_, err = b.Upload(ctx, streaming.NopCloser(bytes.NewReader([]byte("new"))), nil)
			wantStatus(t, err, 409, "BlobArchived")
			_, err = b.CommitBlockList(ctx, nil, nil)
			wantStatus(t, err, 409, "BlobArchived")
			other := c.NewBlockBlobClient("other")
			if _, err := other.UploadBuffer(ctx, []byte("x"), nil); err != nil {
				t.Fatal(err)
			}
			_, err = b.StartCopyFromURL(ctx, other.URL(), nil)
			wantStatus(t, err, 409, "BlobArchived")
		}
		lc, err := lease.NewBlobClient(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lc.AcquireLease(ctx, 15, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := lc.ReleaseLease(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.SetTags(ctx, map[string]string{"t": "1"}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
	})
}
