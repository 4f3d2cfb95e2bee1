package blobhttp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

// TestBatchDeleteThroughSDK drives the account's Blob Batch with azblob's service batch
// builder: deletes that succeed, one that takes a blob's snapshots with it, and ones that fail
// on their own (a missing blob, a missing container) without failing the others.
func TestBatchDeleteThroughSDK(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := e.Context()
		c := e.container("batch")
		for _, name := range []string{"a", "dir/a b.txt", "keep", "snapped"} {
			if _, err := c.NewBlockBlobClient(name).UploadBuffer(ctx, []byte(name), nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.NewBlobClient("snapped").CreateSnapshot(ctx, nil); err != nil {
			t.Fatal(err)
		}

		svc := e.client.ServiceClient()
		bb, err := svc.NewBatchBuilder()
		if err != nil {
			t.Fatal(err)
		}
		mustDo(t, bb.Delete("batch", "a", nil))
		mustDo(t, bb.Delete("batch", "dir/a b.txt", nil))
		mustDo(t, bb.Delete("batch", "snapped", &service.BatchDeleteOptions{DeleteOptions: blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}}))
		mustDo(t, bb.Delete("batch", "missing", nil))
		mustDo(t, bb.Delete("nosuchcontainer", "b", nil))
		resp, err := svc.SubmitBatch(ctx, bb, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Responses) != 5 {
			t.Fatalf("%d responses, want 5", len(resp.Responses))
		}
		wantCodes := []string{"", "", "", "BlobNotFound", "ContainerNotFound"}
		for i, r := range resp.Responses {
			if r.ContentID == nil || *r.ContentID != i {
				t.Errorf("response %d has Content-ID %v", i, r.ContentID)
			}
			if r.RequestID == nil || *r.RequestID == "" || r.Version == nil || *r.Version == "" {
				t.Errorf("response %d lacks x-ms-request-id or x-ms-version: %+v", i, r)
			}
			if wantCodes[i] == "" {
				if r.Error != nil {
					t.Errorf("response %d: %v", i, r.Error)
				}
				continue
			}
			var re *azcore.ResponseError
			if !errorsAs(r.Error, &re) || re.ErrorCode != wantCodes[i] || re.StatusCode != 404 {
				t.Errorf("response %d: got %v, want 404 %s", i, r.Error, wantCodes[i])
			}
		}
		var left []string
		pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Snapshots: true}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range page.Segment.BlobItems {
				left = append(left, *b.Name)
			}
		}
		if strings.Join(left, ",") != "keep" {
			t.Errorf("blobs left: %v, want only keep", left)
		}
	})
}

// TestBatchSetTierThroughSDK drives a container's Blob Batch of Set Blob Tier with azblob's
// container batch builder.
func TestBatchSetTierThroughSDK(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := e.Context()
		c := e.container("tiers")
		for _, name := range []string{"one", "two"} {
			if _, err := c.NewBlockBlobClient(name).UploadBuffer(ctx, []byte(name), nil); err != nil {
				t.Fatal(err)
			}
		}
		bb, err := c.NewBatchBuilder()
		if err != nil {
			t.Fatal(err)
		}
		mustDo(t, bb.SetTier("one", blob.AccessTierCool, nil))
		mustDo(t, bb.SetTier("two", blob.AccessTierCold, nil))
		mustDo(t, bb.SetTier("three", blob.AccessTierCool, nil))
		resp, err := c.SubmitBatch(ctx, bb, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Responses) != 3 || resp.Responses[0].Error != nil || resp.Responses[1].Error != nil {
			t.Fatalf("responses: %+v", resp.Responses)
		}
		wantStatus(t, resp.Responses[2].Error, 404, "BlobNotFound")
		for name, want := range map[string]string{"one": "Cool", "two": "Cold"} {
			props, err := c.NewBlobClient(name).GetProperties(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if props.AccessTier == nil || *props.AccessTier != want {
				t.Errorf("%s: tier %v, want %s", name, props.AccessTier, want)
			}
		}
	})
}

// TestBatchWithSAS: a container's batch runs with a SAS of that container, which each
// sub-request carries too; the account's batch refuses it (AuthenticationFailed, as recorded
// from the real service), and a sub-request whose own SAS lacks a permission fails alone.
func TestBatchWithSAS(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := e.Context()
		c := e.container("sascase")
		for _, name := range []string{"x", "y"} {
			if _, err := c.NewBlockBlobClient(name).UploadBuffer(ctx, []byte(name), nil); err != nil {
				t.Fatal(err)
			}
		}
		containerSAS := func(perms sas.ContainerPermissions) string {
			t.Helper()
			u, err := c.GetSASURL(perms, time.Now().Add(time.Hour), nil)
			if err != nil {
				t.Fatal(err)
			}
			return u
		}

		readOnly, err := container.NewClientWithNoCredential(containerSAS(sas.ContainerPermissions{Read: true}), &container.ClientOptions{ClientOptions: clientOptions().ClientOptions})
		if err != nil {
			t.Fatal(err)
		}
		bb, err := readOnly.NewBatchBuilder()
		if err != nil {
			t.Fatal(err)
		}
		mustDo(t, bb.Delete("x", nil))
		resp, err := readOnly.SubmitBatch(ctx, bb, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, resp.Responses[0].Error, 403, "AuthorizationPermissionMismatch")

		deleter, err := container.NewClientWithNoCredential(containerSAS(sas.ContainerPermissions{Read: true, Delete: true}), &container.ClientOptions{ClientOptions: clientOptions().ClientOptions})
		if err != nil {
			t.Fatal(err)
		}
		bb, err = deleter.NewBatchBuilder()
		if err != nil {
			t.Fatal(err)
		}
		mustDo(t, bb.Delete("x", nil))
		mustDo(t, bb.Delete("y", nil))
		resp, err = deleter.SubmitBatch(ctx, bb, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range resp.Responses {
			if r.Error != nil {
				t.Errorf("sub-request %d: %v", i, r.Error)
			}
		}

		// The same container SAS on the account's batch.
		u := containerSAS(sas.ContainerPermissions{Read: true, Delete: true})
		_, query, _ := strings.Cut(u, "?")
		accountLevel, err := service.NewClientWithNoCredential(e.url+"?"+query, &service.ClientOptions{ClientOptions: clientOptions().ClientOptions})
		if err != nil {
			t.Fatal(err)
		}
		bb2, err := accountLevel.NewBatchBuilder()
		if err != nil {
			t.Fatal(err)
		}
		mustDo(t, bb2.Delete("sascase", "x", nil))
		_, err = accountLevel.SubmitBatch(ctx, bb2, nil)
		wantStatus(t, err, 403, "AuthenticationFailed")
	})
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
