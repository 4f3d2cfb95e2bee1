package blobhttp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

// containerListing describes List Containers with include=deleted: "name" for a live
// container, "name deleted(days)" for a soft-deleted one.
func containerListing(t *testing.T, svc *service.Client, maxResults int32) ([]string, map[string]string) {
	t.Helper()
	var out []string
	versions := map[string]string{}
	pager := svc.NewListContainersPager(&service.ListContainersOptions{Include: service.ListContainersInclude{Deleted: true}, MaxResults: to.Ptr(maxResults)})
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page.ContainerItems {
			entry := *c.Name
			if c.Deleted != nil && *c.Deleted {
				entry += fmt.Sprintf(" deleted(%d)", *c.Properties.RemainingRetentionDays)
				if c.Version == nil || c.Properties.DeletedTime == nil {
					t.Fatalf("%s: version %v, deleted time %v", entry, c.Version, c.Properties.DeletedTime)
				}
				versions[*c.Name] = *c.Version
			}
			out = append(out, entry)
		}
	}
	return out, versions
}

// With container soft delete on, a deleted container is listed with include=deleted and
// restored, blobs and all, under its name while no container has taken it; past its
// retention it is gone (azblob's recorded TestContainerUndelete and TestContainerRestore).
func TestSDKContainerSoftDelete(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		now := time.Now()
		e.svc.Now = func() time.Time { return now }
		e.svc.ContainerRetention = func(string) int { return 3 }
		svc := e.client.ServiceClient()
		c := e.container("keep")
		e.container("other")
		if _, err := c.NewBlockBlobClient("b").Upload(ctx, streaming.NopCloser(strings.NewReader("kept")), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err := c.GetProperties(ctx, nil)
		wantStatus(t, err, 404, "ContainerNotFound")
		got, versions := containerListing(t, svc, 1) // one a page: the markers cross both kinds
		if fmt.Sprint(got) != "[keep deleted(3) other]" {
			t.Fatalf("listing: %v", got)
		}
		var plain []string
		for pager := svc.NewListContainersPager(nil); pager.More(); {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, item := range page.ContainerItems {
				plain = append(plain, *item.Name)
			}
		}
		if fmt.Sprint(plain) != "[other]" {
			t.Fatalf("listing without include=deleted: %v", plain)
		}

		// A container of the same name blocks the restore; once it goes, the restore brings
		// the deleted one back with its blob.
		e.container("keep")
		_, err = c.Restore(ctx, versions["keep"], nil)
		wantStatus(t, err, 409, "ContainerAlreadyExists")
		e.svc.ContainerRetention = nil // this one goes for good
		if _, err := c.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		e.svc.ContainerRetention = func(string) int { return 3 }
		if _, err := c.Restore(ctx, versions["keep"], nil); err != nil {
			t.Fatal(err)
		}
		if got := download(t, c.NewBlockBlobClient("b")); got != "kept" {
			t.Fatalf("restored blob reads %q", got)
		}
		_, err = c.Restore(ctx, versions["keep"], nil)
		wantStatus(t, err, 404, "ContainerNotFound")

		// Past the retention, a deleted container is neither listed nor restored, and the
		// collector reclaims it.
		if _, err := c.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, versions = containerListing(t, svc, 10)
		now = now.Add(3*24*time.Hour + time.Minute)
		if got, _ := containerListing(t, svc, 10); fmt.Sprint(got) != "[other]" {
			t.Fatalf("after the retention: %v", got)
		}
		_, err = c.Restore(ctx, versions["keep"], nil)
		wantStatus(t, err, 404, "ContainerNotFound")
		now = now.Add(e.svc.Grace + time.Minute)
		stats, err := e.svc.Collect(ctx)
		if err != nil || stats.Containers != 2 { // the soft-deleted one, and the one deleted for good above
			t.Fatalf("Collect: %+v, %v", stats, err)
		}
	})
}
