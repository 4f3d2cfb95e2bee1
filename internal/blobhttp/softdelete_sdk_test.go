package blobhttp_test

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

// listing describes a container's listing with include=deleted,snapshots: one entry per
// blob or snapshot, "name[@snap]" with " deleted" for soft-deleted ones, in order.
func listing(t *testing.T, c *container.Client) []string {
	t.Helper()
	var out []string
	pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Deleted: true, Snapshots: true}})
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			entry := *b.Name
			if b.Snapshot != nil {
				entry += "@snap"
			}
			if b.Deleted != nil && *b.Deleted {
				entry += " deleted"
				if b.Properties.DeletedTime == nil || b.Properties.RemainingRetentionDays == nil || *b.Properties.RemainingRetentionDays != 6 {
					t.Errorf("%s: DeletedTime %v, RemainingRetentionDays %v, want a time and 6", entry, b.Properties.DeletedTime, b.Properties.RemainingRetentionDays)
				}
			}
			out = append(out, entry)
		}
	}
	return out
}

func download(t *testing.T, b *blockblob.Client) string {
	t.Helper()
	resp, err := b.DownloadStream(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}

// With DeleteRetentionPolicy on, deletes and overwrites keep what they remove for Days:
// invisible but to include=deleted listings, until Undelete Blob restores the blob and its
// snapshots; soft-deleted snapshots do not count as snapshots for Delete Blob.
func TestSDKSoftDelete(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		svc := e.client.ServiceClient()
		_, err := svc.SetProperties(ctx, &service.SetPropertiesOptions{DeleteRetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(true), Days: to.Ptr(int32(7))}})
		if err != nil {
			t.Fatal(err)
		}
		props, err := svc.GetProperties(ctx, nil)
		if err != nil || !*props.DeleteRetentionPolicy.Enabled || *props.DeleteRetentionPolicy.Days != 7 {
			t.Fatalf("GetProperties: %+v, %v", props.DeleteRetentionPolicy, err)
		}
		c := e.container("soft")
		bb := c.NewBlockBlobClient("b")
		upload := func(body string) {
			t.Helper()
			if _, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader(body)), nil); err != nil {
				t.Fatal(err)
			}
		}
		upload("v1")
		upload("v2") // keeps v1 as a soft-deleted snapshot
		if got := fmt.Sprint(listing(t, c)); got != "[b@snap deleted b]" {
			t.Fatalf("after an overwrite: %s", got)
		}
		if _, err := bb.CreateSnapshot(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = bb.Delete(ctx, nil)
		wantStatus(t, err, 409, "SnapshotsPresent")
		if _, err := bb.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
		_, err = bb.GetProperties(ctx, nil)
		wantStatus(t, err, 404, "BlobNotFound")
		_, err = bb.SetMetadata(ctx, nil, nil)
		wantStatus(t, err, 404, "BlobNotFound")
		if got := fmt.Sprint(listing(t, c)); got != "[b@snap deleted b@snap deleted b deleted]" {
			t.Fatalf("after deleting with snapshots: %s", got)
		}
		var plain []string
		for pager := c.NewListBlobsFlatPager(nil); pager.More(); {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range page.Segment.BlobItems {
				plain = append(plain, *b.Name)
			}
		}
		if len(plain) != 0 {
			t.Fatalf("a listing without include=deleted shows %v", plain)
		}

		if _, err := bb.Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(listing(t, c)); got != "[b@snap b@snap b]" {
			t.Fatalf("after Undelete: %s", got)
		}
		if got := download(t, bb); got != "v2" {
			t.Fatalf("restored blob reads %q", got)
		}

		// A deleted snapshot alone, and a blob whose only snapshots are soft-deleted.
		if _, err := bb.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeOnly)}); err != nil {
			t.Fatal(err)
		}
		if _, err := bb.Delete(ctx, nil); err != nil {
			t.Fatalf("deleting a blob whose snapshots are soft-deleted: %v", err)
		}
		if got := fmt.Sprint(listing(t, c)); got != "[b@snap deleted b@snap deleted b deleted]" {
			t.Fatalf("after deleting the snapshots, then the blob: %s", got)
		}

		// Writing over a soft-deleted blob keeps it as a soft-deleted snapshot, even once
		// the policy is off: it is retained already.
		if _, err := svc.SetProperties(ctx, &service.SetPropertiesOptions{DeleteRetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(false)}}); err != nil {
			t.Fatal(err)
		}
		upload("v3")
		if got := fmt.Sprint(listing(t, c)); got != "[b@snap deleted b@snap deleted b@snap deleted b]" {
			t.Fatalf("after writing over the soft-deleted blob: %s", got)
		}
		// With the policy off, soft-deleted snapshots are snapshots again for Delete Blob.
		_, err = bb.Delete(ctx, nil)
		wantStatus(t, err, 409, "SnapshotsPresent")
		if _, err := bb.Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if got := download(t, bb); got != "v3" {
			t.Fatalf("blob reads %q", got)
		}
		if _, err := bb.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
		if got := listing(t, c); len(got) != 0 {
			t.Fatalf("with the policy off, a delete removes for good: %v", got)
		}
		_, err = bb.Undelete(ctx, nil)
		wantStatus(t, err, 404, "BlobNotFound")

		// Restore Container finds nothing: container soft delete is a management-plane
		// setting, off.
		_, err = svc.RestoreContainer(ctx, "gone", "01D60F8BB59A4652", nil)
		wantStatus(t, err, 404, "ContainerNotFound")
	})
}
