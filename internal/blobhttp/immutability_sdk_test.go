package blobhttp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Version-level immutability through the Go SDK, in a container that has it ("worm") and one
// that does not ("plain"): policies and legal holds keep a version from being deleted or
// changed in place, an overwrite keeps the protected version as a previous version, and a
// locked policy can only be extended.
func TestSDKImmutability(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		e.svc.Versioning = func(string) bool { return true }
		e.svc.Immutable = func(_, c string) bool { return c == "worm" }
		worm, plain := e.container("worm"), e.container("plain")
		put := func(c *container.Client, name, body string, o *blockblob.UploadOptions) *blockblob.Client {
			t.Helper()
			bb := c.NewBlockBlobClient(name)
			if _, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader(body)), o); err != nil {
				t.Fatal(err)
			}
			return bb
		}
		until := time.Now().Add(time.Hour).Truncate(time.Second)

		props, err := worm.GetProperties(ctx, nil)
		if err != nil || props.IsImmutableStorageWithVersioningEnabled == nil || !*props.IsImmutableStorageWithVersioningEnabled {
			t.Fatalf("worm's properties: %v, %v", props.IsImmutableStorageWithVersioningEnabled, err)
		}
		_, err = plain.NewBlobClient("x").SetImmutabilityPolicy(ctx, until, nil)
		wantStatus(t, err, 404, "BlobNotFound")
		p := put(plain, "p", "plain", nil)
		_, err = p.SetImmutabilityPolicy(ctx, until, nil)
		wantStatus(t, err, 409, "ImmutableStorageWithVersioningNotEnabled")
		_, err = plain.NewBlockBlobClient("q").Upload(ctx, streaming.NopCloser(strings.NewReader("q")), &blockblob.UploadOptions{LegalHold: to.Ptr(true)})
		wantStatus(t, err, 409, "ImmutableStorageWithVersioningNotEnabled")

		a := put(worm, "a", "first", nil)
		set, err := a.SetImmutabilityPolicy(ctx, until, nil)
		if err != nil || !set.ImmutabilityPolicyExpiry.Equal(until) || *set.ImmutabilityPolicyMode != blob.ImmutabilityPolicyModeUnlocked {
			t.Fatalf("SetImmutabilityPolicy: %+v, %v", set, err)
		}
		got, err := a.GetProperties(ctx, nil)
		if err != nil || !got.ImmutabilityPolicyExpiresOn.Equal(until) || *got.ImmutabilityPolicyMode != blob.ImmutabilityPolicyModeUnlocked || got.LegalHold != nil {
			t.Fatalf("properties of a protected blob: %v %v %v, %v", got.ImmutabilityPolicyExpiresOn, got.ImmutabilityPolicyMode, got.LegalHold, err)
		}
		firstVersion := *got.VersionID
		_, err = a.Delete(ctx, nil)
		wantStatus(t, err, 409, "BlobImmutableDueToPolicy")
		_, err = a.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, nil)
		wantStatus(t, err, 409, "BlobImmutableDueToPolicy")
		_, err = a.SetImmutabilityPolicy(ctx, time.Now().Add(-time.Hour), nil)
		wantStatus(t, err, 400, "InvalidExpiryTime")

		// An overwrite makes a new, unprotected current version; the old one keeps its policy.
		put(worm, "a", "second", nil)
		if _, err := a.Delete(ctx, nil); err != nil {
			t.Fatalf("deleting the unprotected current version: %v", err)
		}
		old, err := a.WithVersionID(firstVersion)
		if err != nil {
			t.Fatal(err)
		}
		_, err = old.Delete(ctx, nil)
		wantStatus(t, err, 409, "BlobImmutableDueToPolicy")
		if _, err := old.SetLegalHold(ctx, true, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := old.DeleteImmutabilityPolicy(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = old.Delete(ctx, nil)
		wantStatus(t, err, 409, "BlobImmutableDueToLegalHold")
		hold, err := old.SetLegalHold(ctx, false, nil)
		if err != nil || hold.LegalHold == nil || *hold.LegalHold {
			t.Fatalf("clearing the hold: %v, %v", hold.LegalHold, err)
		}
		if got, err := old.GetProperties(ctx, nil); err != nil || got.LegalHold == nil || *got.LegalHold || got.ImmutabilityPolicyMode != nil {
			t.Fatalf("after clearing: hold %v, mode %v, %v", got.LegalHold, got.ImmutabilityPolicyMode, err)
		}
		if _, err := old.Delete(ctx, nil); err != nil {
			t.Fatalf("deleting the version once free: %v", err)
		}

		// A locked policy, given at upload: extended only, never removed before its date.
		locked := put(worm, "locked", "kept", &blockblob.UploadOptions{ImmutabilityPolicyExpiryTime: to.Ptr(until),
			ImmutabilityPolicyMode: to.Ptr(blob.ImmutabilityPolicySettingLocked), LegalHold: to.Ptr(true)})
		_, err = locked.SetImmutabilityPolicy(ctx, until.Add(-time.Minute), &blob.SetImmutabilityPolicyOptions{Mode: to.Ptr(blob.ImmutabilityPolicySettingLocked)})
		wantStatus(t, err, 409, "BlobImmutableDueToPolicy")
		_, err = locked.SetImmutabilityPolicy(ctx, until.Add(time.Hour), &blob.SetImmutabilityPolicyOptions{Mode: to.Ptr(blob.ImmutabilityPolicySettingUnlocked)})
		wantStatus(t, err, 409, "BlobImmutableDueToPolicy")
		if _, err := locked.SetImmutabilityPolicy(ctx, until.Add(time.Hour), &blob.SetImmutabilityPolicyOptions{Mode: to.Ptr(blob.ImmutabilityPolicySettingLocked)}); err != nil {
			t.Fatalf("extending a locked policy: %v", err)
		}
		_, err = locked.DeleteImmutabilityPolicy(ctx, nil)
		wantStatus(t, err, 409, "ImmutabilityPolicyDeleteOnLockedPolicy")

		// Listings report them when asked to.
		page, err := worm.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr("locked"),
			Include: container.ListBlobsInclude{ImmutabilityPolicy: true, LegalHold: true}}).NextPage(ctx)
		if err != nil || len(page.Segment.BlobItems) != 1 {
			t.Fatalf("listing: %v, %v", page.Segment.BlobItems, err)
		}
		lp := page.Segment.BlobItems[0].Properties
		if !lp.ImmutabilityPolicyExpiresOn.Equal(until.Add(time.Hour)) || *lp.ImmutabilityPolicyMode != blob.ImmutabilityPolicyModeLocked || !*lp.LegalHold {
			t.Fatalf("listed protection: %v %v %v", lp.ImmutabilityPolicyExpiresOn, *lp.ImmutabilityPolicyMode, lp.LegalHold)
		}
		page, err = worm.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr("locked")}).NextPage(ctx)
		if err != nil || page.Segment.BlobItems[0].Properties.ImmutabilityPolicyMode != nil || page.Segment.BlobItems[0].Properties.LegalHold != nil {
			t.Fatalf("a listing that does not ask reports protection: %+v, %v", page.Segment.BlobItems[0].Properties, err)
		}

		// Only the management plane deletes such a container.
		_, err = worm.Delete(ctx, nil)
		wantStatus(t, err, 409, "ContainerImmutableStorageWithVersioningEnabled")
	})
}
