package blobhttp_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Incremental Copy Blob copies page blob snapshots into a destination read only through the
// snapshots each copy leaves (x-ms-copy-destination-snapshot), later snapshots of the same
// source only, as azblob's TestIncrementalCopy and TestIncrementalCopyErrorCode see the real
// service answer.
func TestSDKIncrementalCopy(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		c := e.container("disks")
		src := c.NewPageBlobClient("disk.vhd")
		if _, err := src.Create(ctx, 4*512, nil); err != nil {
			t.Fatal(err)
		}
		writePage := func(fill byte) []byte {
			t.Helper()
			page := bytes.Repeat([]byte{fill}, 512)
			if _, err := src.UploadPages(ctx, streaming.NopCloser(bytes.NewReader(page)), blob.HTTPRange{Offset: 512, Count: 512}, nil); err != nil {
				t.Fatal(err)
			}
			want := make([]byte, 4*512)
			copy(want[512:], page)
			return want
		}
		snapshot := func() string {
			t.Helper()
			resp, err := src.CreateSnapshot(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			return *resp.Snapshot
		}
		first := writePage('a')
		s1 := snapshot()
		second := writePage('b')
		s2 := snapshot()
		source := readableURL(t, src) // read as a client would: with a SAS

		dst := c.NewPageBlobClient("backup.vhd")
		resp, err := dst.StartCopyIncremental(ctx, source, s1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *resp.CopyStatus != blob.CopyStatusTypePending || resp.CopyID == nil || resp.ETag == nil {
			t.Fatalf("answer: status %v, id %v, etag %v", *resp.CopyStatus, resp.CopyID, resp.ETag)
		}
		readSnapshot := func(at string) []byte {
			t.Helper()
			snap, err := dst.WithSnapshot(at)
			if err != nil {
				t.Fatal(err)
			}
			d, err := snap.DownloadStream(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Body.Close()
			got, err := io.ReadAll(d.Body)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		props, err := dst.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if props.IsIncrementalCopy == nil || !*props.IsIncrementalCopy || *props.CopyStatus != blob.CopyStatusTypeSuccess || props.DestinationSnapshot == nil {
			t.Fatalf("properties: incremental %v, status %v, destination snapshot %v", props.IsIncrementalCopy, *props.CopyStatus, props.DestinationSnapshot)
		}
		firstCopy := *props.DestinationSnapshot
		if got := readSnapshot(firstCopy); !bytes.Equal(got, first) {
			t.Fatal("the destination snapshot does not hold the first source snapshot")
		}

		// The destination itself is neither read nor changed.
		_, err = dst.DownloadStream(ctx, nil)
		wantStatus(t, err, 409, "OperationNotAllowedOnIncrementalCopyBlob")
		_, err = dst.UploadPages(ctx, streaming.NopCloser(bytes.NewReader(make([]byte, 512))), blob.HTTPRange{Count: 512}, nil)
		wantStatus(t, err, 409, "OperationNotAllowedOnIncrementalCopyBlob")
		_, err = dst.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, nil)
		wantStatus(t, err, 409, "OperationNotAllowedOnIncrementalCopyBlob")

		if _, err := dst.StartCopyIncremental(ctx, source, s2, nil); err != nil {
			t.Fatal(err)
		}
		props, err = dst.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *props.DestinationSnapshot == firstCopy || !bytes.Equal(readSnapshot(*props.DestinationSnapshot), second) {
			t.Fatal("the second copy made no snapshot of the second source snapshot")
		}
		if !bytes.Equal(readSnapshot(firstCopy), first) {
			t.Fatal("the second copy changed the first one's snapshot")
		}

		_, err = dst.StartCopyIncremental(ctx, source, s1, nil)
		wantStatus(t, err, 409, "IncrementalCopyOfEarlierSnapshotNotAllowed")
		_, err = dst.StartCopyIncremental(ctx, source, "", nil)
		wantStatus(t, err, 409, "IncrementalCopySourceMustBeSnapshot")
		other := c.NewPageBlobClient("other.vhd")
		if _, err := other.Create(ctx, 512, nil); err != nil {
			t.Fatal(err)
		}
		otherSnap, err := other.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = dst.StartCopyIncremental(ctx, readableURL(t, other), *otherSnap.Snapshot, nil)
		wantStatus(t, err, 409, "IncrementalCopyBlobMismatch")
		bb := c.NewBlockBlobClient("text")
		if _, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("x")), nil); err != nil {
			t.Fatal(err)
		}
		textSnap, err := bb.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.NewPageBlobClient("fresh.vhd").StartCopyIncremental(ctx, readableURL(t, bb), *textSnap.Snapshot, nil)
		wantStatus(t, err, 409, "InvalidSourceBlobType")

		var listed []string
		pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr("backup"), Include: container.ListBlobsInclude{Copy: true, Snapshots: true}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, item := range page.Segment.BlobItems {
				if item.Properties.IncrementalCopy == nil || !*item.Properties.IncrementalCopy || item.Properties.DestinationSnapshot == nil {
					t.Fatalf("listed %s without its incremental copy properties", *item.Name)
				}
				listed = append(listed, *item.Name)
			}
		}
		if len(listed) != 3 { // two destination snapshots and the destination
			t.Fatalf("listed %v", listed)
		}
		if _, err := dst.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
	})
}
