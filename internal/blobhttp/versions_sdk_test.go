package blobhttp_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

// versionListing describes a listing with include=versions (and what more is asked): one
// entry per blob, snapshot or version, "name=content-length" with "@v" for a previous
// version, "@current" for the current one, "@snap" for a snapshot, " deleted" for a
// soft-deleted one and " versions-only" for a HasVersionsOnly entry.
func versionListing(t *testing.T, c *container.Client, inc container.ListBlobsInclude) []string {
	t.Helper()
	var out []string
	pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: inc})
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			entry := fmt.Sprintf("%s=%d", *b.Name, *b.Properties.ContentLength)
			switch {
			case b.Snapshot != nil:
				entry += "@snap"
			case b.IsCurrentVersion != nil && *b.IsCurrentVersion:
				entry += "@current"
			case b.VersionID != nil:
				entry += "@v"
			}
			if b.Deleted != nil && *b.Deleted {
				entry += " deleted"
			}
			if b.HasVersionsOnly != nil && *b.HasVersionsOnly {
				entry += " versions-only"
			}
			out = append(out, entry)
		}
	}
	return out
}

// On an account with versioning, each write that replaces a blob (Put Blob, Put Block List,
// a copy, Set Blob Metadata, Snapshot Blob) keeps what it replaces as a previous version,
// read, tiered, copied from and deleted by its version id; deleting the blob keeps it as a
// previous version too. As azblob's recorded TestDeleteSpecificBlobVersion,
// TestBlockBlobGetPropertiesUsingVID, TestSetBlobMetadataReturnsVID, TestCreateBlockBlobReturnsVID,
// TestBlockBlobSetTierOnVersions and TestContainerListBlobsIncludeTypeDeletedWithVersion see
// the real service answer.
func TestSDKVersioning(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		e.svc.Versioning = func(string) bool { return true }
		c := e.container("versions")
		bb := c.NewBlockBlobClient("b")

		var ids []string
		for i, body := range []string{"one", "two!", "three"} {
			resp, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader(body)), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.VersionID == nil || *resp.VersionID == "" {
				t.Fatalf("upload %d answered no x-ms-version-id", i)
			}
			ids = append(ids, *resp.VersionID)
		}
		if !(ids[0] < ids[1] && ids[1] < ids[2]) {
			t.Fatalf("version ids do not rise: %v", ids)
		}
		props, err := bb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if props.VersionID == nil || *props.VersionID != ids[2] || props.IsCurrentVersion == nil || !*props.IsCurrentVersion {
			t.Fatalf("current blob: version %v, current %v; want %s, true", props.VersionID, props.IsCurrentVersion, ids[2])
		}
		versionClient := func(id string) *blockblob.Client {
			t.Helper()
			v, err := bb.WithVersionID(id)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		for i, want := range []string{"one", "two!", "three"} {
			if got := download(t, versionClient(ids[i])); got != want {
				t.Fatalf("version %d reads %q, want %q", i, got, want)
			}
		}
		old, err := versionClient(ids[0]).GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if old.VersionID == nil || *old.VersionID != ids[0] || old.IsCurrentVersion != nil {
			t.Fatalf("previous version: version %v, current %v", old.VersionID, old.IsCurrentVersion)
		}
		if got := fmt.Sprint(versionListing(t, c, container.ListBlobsInclude{Versions: true})); got != "[b=3@v b=4@v b=5@current]" {
			t.Fatalf("listing with versions: %s", got)
		}
		if got := fmt.Sprint(versionListing(t, c, container.ListBlobsInclude{})); got != "[b=5@current]" {
			t.Fatalf("listing without versions: %s", got)
		}

		// Previous versions are read-only but for their tier, tags and deletion.
		_, err = versionClient(ids[0]).SetMetadata(ctx, map[string]*string{"a": to.Ptr("b")}, nil)
		wantStatus(t, err, 400, "InvalidOperation")
		if _, err := versionClient(ids[0]).SetTier(ctx, blob.AccessTierArchive, nil); err != nil {
			t.Fatal(err)
		}
		_, err = versionClient(ids[0]).SetTier(ctx, blob.AccessTierCool, nil)
		wantStatus(t, err, 409, "BlobArchived")
		if _, err := versionClient(ids[1]).SetTags(ctx, map[string]string{"k": "v"}, nil); err != nil {
			t.Fatal(err)
		}
		if tags, err := versionClient(ids[1]).GetTags(ctx, nil); err != nil || len(tags.BlobTagSet) != 1 {
			t.Fatalf("tags of a version: %+v, %v", tags.BlobTagSet, err)
		}
		if tags, err := bb.GetTags(ctx, nil); err != nil || len(tags.BlobTagSet) != 0 {
			t.Fatalf("the current version took a previous version's tags: %+v, %v", tags.BlobTagSet, err)
		}

		// Set Blob Metadata and Snapshot Blob make versions; Set Blob Properties does not.
		md, err := bb.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, nil)
		if err != nil || md.VersionID == nil || *md.VersionID <= ids[2] {
			t.Fatalf("SetMetadata: version %v, %v", md.VersionID, err)
		}
		snap, err := bb.CreateSnapshot(ctx, nil)
		if err != nil || snap.VersionID == nil || *snap.VersionID <= *md.VersionID {
			t.Fatalf("CreateSnapshot: version %v, %v", snap.VersionID, err)
		}
		if _, err := bb.SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain")}, nil); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(versionListing(t, c, container.ListBlobsInclude{Versions: true, Snapshots: true})); got != "[b=5@snap b=3@v b=4@v b=5@v b=5@v b=5@current]" {
			t.Fatalf("after metadata and a snapshot: %s", got)
		}
		withMD, err := versionClient(*md.VersionID).GetProperties(ctx, nil)
		if err != nil || len(withMD.Metadata) != 1 {
			t.Fatalf("the metadata's version: %v, %v", withMD.Metadata, err)
		}

		// The current version is deleted by deleting the blob, never by its id.
		_, err = versionClient(*snap.VersionID).Delete(ctx, nil)
		wantStatus(t, err, 403, "OperationNotAllowedOnRootBlob")
		if _, err := versionClient(ids[1]).Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = versionClient(ids[1]).GetProperties(ctx, nil)
		wantStatus(t, err, 404, "BlobNotFound")

		// A copy of a previous version over the blob restores it, keeping the blob it
		// replaces as a version.
		if _, err := bb.StartCopyFromURL(ctx, bb.URL()+"?versionid="+ids[2], nil); err != nil {
			t.Fatal(err)
		}
		if got := download(t, bb); got != "three" {
			t.Fatalf("after restoring a version: %q", got)
		}

		// Deleting the blob leaves its versions and no current one.
		if _, err := bb.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
		_, err = bb.GetProperties(ctx, nil)
		wantStatus(t, err, 404, "BlobNotFound")
		if got := fmt.Sprint(versionListing(t, c, container.ListBlobsInclude{Versions: true, Snapshots: true})); got != "[b=3@v b=5@v b=5@v b=5@v b=5@v]" {
			t.Fatalf("after deleting the blob: %s", got)
		}
		if got := fmt.Sprint(versionListing(t, c, container.ListBlobsInclude{DeletedWithVersions: true})); got != "[b=5 versions-only]" {
			t.Fatalf("include=deletedwithversions: %s", got)
		}
		if got := fmt.Sprint(versionListing(t, c, container.ListBlobsInclude{})); got != "[]" {
			t.Fatalf("a plain listing: %s", got)
		}
		if got := download(t, versionClient(ids[2])); got != "three" {
			t.Fatalf("a version of a deleted blob reads %q", got)
		}
	})
}

// A blob version SAS (sr=bv) reads that version only; stripped of the versionid it signs, it
// reads nothing (azblob's TestGetSASURLVersionedVsBaseBlobAgainstService). Deleting a
// version takes the x permission.
func TestSDKVersionSAS(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		e.svc.Versioning = func(string) bool { return true }
		c := e.container("versionsas")
		bb := c.NewBlockBlobClient("b")
		first, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("old")), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("new")), nil); err != nil {
			t.Fatal(err)
		}
		v, err := bb.WithVersionID(*first.VersionID)
		if err != nil {
			t.Fatal(err)
		}
		signed, err := v.GetSASURL(sas.BlobPermissions{Read: true, Delete: true}, time.Now().Add(time.Hour), nil)
		if err != nil {
			t.Fatal(err)
		}
		anon, err := blockblob.NewClientWithNoCredential(signed, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := download(t, anon); got != "old" {
			t.Fatalf("the version SAS reads %q", got)
		}
		u, err := url.Parse(signed)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if q.Get("versionid") != *first.VersionID || q.Get("sr") != "bv" {
			t.Fatalf("not a version SAS: %s", signed)
		}
		q.Del("versionid")
		u.RawQuery = q.Encode()
		base, err := blockblob.NewClientWithNoCredential(u.String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := base.DownloadStream(ctx, nil); err == nil {
			t.Fatal("a version SAS without its versionid read the blob")
		}
		_, err = anon.Delete(ctx, nil)
		wantStatus(t, err, 403, "AuthorizationPermissionMismatch")
		withX, err := v.GetSASURL(sas.BlobPermissions{DeletePreviousVersion: true}, time.Now().Add(time.Hour), nil)
		if err != nil {
			t.Fatal(err)
		}
		del, err := blockblob.NewClientWithNoCredential(withX, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := del.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
	})
}

// With soft delete on as well, a deleted previous version is soft-deleted, and Undelete Blob
// brings it back (azblob's recorded TestUndeleteBlockBlobVersion); versions made by snapshots
// count (TestUndeleteAppendBlobVersion).
func TestSDKVersioningWithSoftDelete(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		e.svc.Versioning = func(string) bool { return true }
		_, err := e.client.ServiceClient().SetProperties(ctx, &service.SetPropertiesOptions{DeleteRetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(true), Days: to.Ptr(int32(7))}})
		if err != nil {
			t.Fatal(err)
		}
		c := e.container("softversions")
		ab := c.NewAppendBlobClient("a")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := ab.AppendBlock(ctx, streaming.NopCloser(strings.NewReader("appended")), nil); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for range 5 {
			resp, err := ab.CreateSnapshot(ctx, nil)
			if err != nil || resp.VersionID == nil {
				t.Fatalf("CreateSnapshot: %v, %v", resp.VersionID, err)
			}
			ids = append(ids, *resp.VersionID)
		}
		count := func() int {
			t.Helper()
			return len(versionListing(t, c, container.ListBlobsInclude{Versions: true}))
		}
		if n := count(); n != 6 {
			t.Fatalf("%d entries with versions, want 6", n)
		}
		for _, id := range ids[:3] {
			v, err := ab.WithVersionID(id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.Delete(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		if n := count(); n != 3 {
			t.Fatalf("%d entries after deleting versions, want 3", n)
		}
		if got := fmt.Sprint(versionListing(t, c, container.ListBlobsInclude{Versions: true, Deleted: true})); strings.Count(got, " deleted") != 3 {
			t.Fatalf("soft-deleted versions: %s", got)
		}
		if _, err := ab.Undelete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 6 {
			t.Fatalf("%d entries after Undelete, want 6", n)
		}
		// Deleting the blob itself makes a version, not a soft-deleted blob.
		if _, err := ab.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(versionListing(t, c, container.ListBlobsInclude{Versions: true})); strings.Contains(got, "current") || strings.Count(got, "@v") != 6 {
			t.Fatalf("after deleting the blob: %s", got)
		}
		// Undelete Blob then has nothing to restore, and is not refused (the JS SDK's live
		// undelete test); a name that never was is.
		if _, err := ab.Undelete(ctx, nil); err != nil {
			t.Fatalf("Undelete of a blob kept as its versions: %v", err)
		}
		if got := fmt.Sprint(versionListing(t, c, container.ListBlobsInclude{Versions: true})); strings.Contains(got, "current") || strings.Count(got, "@v") != 6 {
			t.Fatalf("after Undelete: %s", got)
		}
		_, err = c.NewBlobClient("never").Undelete(ctx, nil)
		wantStatus(t, err, 404, "BlobNotFound")
	})
}

// With AllowPermanentDelete in the account's DeleteRetentionPolicy, a soft-deleted snapshot or
// previous version is removed for good by Delete Blob with deletetype=permanent, which a SAS
// needs the y permission for (azblob's recorded TestPermanentDelete and
// TestPermanentDeleteWithoutPermission); anything else is a 409.
func TestSDKPermanentDelete(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		e.svc.Versioning = func(string) bool { return true }
		svc := e.client.ServiceClient()
		c := e.container("permanent")
		bb := c.NewBlockBlobClient("b")
		first, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("one")), nil)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := bb.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		snapClient, err := bb.WithSnapshot(*snap.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		permanent := &blob.DeleteOptions{BlobDeleteType: to.Ptr(blob.DeleteTypePermanent)}
		_, err = snapClient.Delete(ctx, permanent)
		wantStatus(t, err, 409, "PermanentDeleteNotAllowed")

		_, err = svc.SetProperties(ctx, &service.SetPropertiesOptions{DeleteRetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(true), Days: to.Ptr(int32(3)), AllowPermanentDelete: to.Ptr(true)}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = snapClient.Delete(ctx, permanent)
		wantStatus(t, err, 409, "BlobSnapshotNotSoftDeleted")
		_, err = bb.Delete(ctx, permanent)
		wantStatus(t, err, 409, "BlobSnapshotNotSoftDeleted")

		if _, err := snapClient.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		version, err := bb.WithVersionID(*first.VersionID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := version.Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		all := container.ListBlobsInclude{Versions: true, Snapshots: true, Deleted: true}
		if got := fmt.Sprint(versionListing(t, c, all)); got != "[b=3@snap deleted b=3@v deleted b=3@current]" {
			t.Fatalf("before permanent deletes: %s", got)
		}

		// A SAS needs y; with it, both go for good.
		for _, target := range []*blockblob.Client{snapClient, version} {
			without, err := target.GetSASURL(sas.BlobPermissions{Delete: true, DeletePreviousVersion: true}, time.Now().Add(time.Hour), nil)
			if err != nil {
				t.Fatal(err)
			}
			anon, err := blockblob.NewClientWithNoCredential(without, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = anon.Delete(ctx, permanent)
			wantStatus(t, err, 403, "AuthorizationPermissionMismatch")
			with, err := target.GetSASURL(sas.BlobPermissions{PermanentDelete: true}, time.Now().Add(time.Hour), nil)
			if err != nil {
				t.Fatal(err)
			}
			if anon, err = blockblob.NewClientWithNoCredential(with, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := anon.Delete(ctx, permanent); err != nil {
				t.Fatal(err)
			}
		}
		if got := fmt.Sprint(versionListing(t, c, all)); got != "[b=3@current]" {
			t.Fatalf("after permanent deletes: %s", got)
		}
		_, err = bb.Undelete(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(versionListing(t, c, all)); got != "[b=3@current]" {
			t.Fatalf("Undelete brought back what was deleted for good: %s", got)
		}
	})
}
