package blob

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

func TestContainerNames(t *testing.T) {
	cases := []struct {
		name string
		want string
	}{
		{"abc", "ok"},
		{"my-container-1", "ok"},
		{strings.Repeat("a", 63), "ok"},
		{"$root", "ok"},
		{"$logs", "ok"},
		{"ab", "400 OutOfRangeInput"},
		{strings.Repeat("a", 64), "400 OutOfRangeInput"},
		{"Abc", "400 InvalidResourceName"},
		{"-abc", "400 InvalidResourceName"},
		{"abc-", "400 InvalidResourceName"},
		{"a--b", "400 InvalidResourceName"},
		{"a_b", "400 InvalidResourceName"},
		{"$other", "400 InvalidResourceName"},
	}
	for _, c := range cases {
		if got := codeOf(ValidateContainerName(c.name)); got != c.want {
			t.Errorf("%q: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestBlobNames(t *testing.T) {
	cases := []struct {
		name string
		want string
	}{
		{"a", "ok"},
		{"dir/sub/file.txt", "ok"},
		{"ends-with-dot.", "ok"},
		{"ends/with/slash/", "ok"},
		{"日本語/ファイル", "ok"},
		{strings.Repeat("a", 1024), "ok"},
		{strings.Repeat("é", 1024), "ok"},
		{strings.Repeat("😀", 512), "ok"}, // 1,024 UTF-16 units
		{"", "400 OutOfRangeInput"},
		{strings.Repeat("a", 1025), "400 OutOfRangeInput"},
		{strings.Repeat("😀", 513), "400 OutOfRangeInput"},
		{"tab\there", "400 InvalidResourceName"},
		{"del\x7f", "400 InvalidResourceName"},
		{"bad\xffutf8", "400 InvalidResourceName"},
		{"file\uffff.blob", "ok"}, // the real service stores it, and lists it encoded
		{"\ufffe", "ok"},
		{strings.Repeat("a/", 253) + "a", "ok"},
		{strings.Repeat("a/", 254) + "a", "400 InvalidResourceName"},
	}
	for _, c := range cases {
		if got := codeOf(ValidateBlobName(c.name)); got != c.want {
			t.Errorf("%.40q: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestMetadataRules(t *testing.T) {
	cases := []struct {
		md   Metadata
		want string
	}{
		{Metadata{"a": "1", "_b": "", "Camel9": "x"}, "ok"},
		{Metadata{"": "x"}, "400 EmptyMetadataKey"},
		{Metadata{"9lives": "x"}, "400 InvalidMetadata"},
		{Metadata{"has-dash": "x"}, "400 InvalidMetadata"},
		{Metadata{"Name": "1", "name": "2"}, "400 InvalidMetadata"},
		{Metadata{"k": strings.Repeat("v", 8192-1)}, "ok"},
		{Metadata{"k": strings.Repeat("v", 8192)}, "400 MetadataTooLarge"},
	}
	for _, c := range cases {
		if got := codeOf(c.md.Validate()); got != c.want {
			t.Errorf("%.60v: %s, want %s", c.md, got, c.want)
		}
	}
}

func TestContainerLifecycle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		created, err := e.s.CreateContainer(e.ctx, "acct", "photos", Metadata{"Team": "a"}, BlobAccess)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.s.CreateContainer(e.ctx, "acct", "photos", nil, PrivateAccess)
		wantCode(t, err, 409, azerr.ContainerAlreadyExists)
		if _, err := e.s.CreateContainer(e.ctx, "other", "photos", nil, PrivateAccess); err != nil {
			t.Fatalf("the same name in another account: %v", err)
		}
		got, err := e.s.GetContainer(e.ctx, "acct", "photos", "")
		if err != nil || got.ETag != created.ETag || got.Metadata["Team"] != "a" || got.PublicAccess != BlobAccess || got.Lease.State != LeaseAvailable {
			t.Fatalf("GetContainer: %+v, %v", got, err)
		}
		e.clock.Advance(time.Second)
		updated, err := e.s.SetContainerMetadata(e.ctx, "acct", "photos", Metadata{"Team": "b"}, "", Conditions{})
		if err != nil || updated.ETag == created.ETag || !updated.LastModified.After(created.LastModified) {
			t.Fatalf("SetContainerMetadata: %+v, %v", updated, err)
		}
		_, err = e.s.SetContainerMetadata(e.ctx, "acct", "photos", nil, "", Conditions{IfModifiedSince: updated.LastModified})
		wantCode(t, err, 412, azerr.ConditionNotMet)

		policies := []AccessPolicy{{ID: "p1", Permission: "rl", Expiry: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}}
		acl, err := e.s.SetContainerACL(e.ctx, "acct", "photos", PrivateAccess, policies, "", Conditions{})
		if err != nil || acl.PublicAccess != PrivateAccess || len(acl.Policies) != 1 || acl.Metadata["Team"] != "b" {
			t.Fatalf("SetContainerACL: %+v, %v", acl, err)
		}
		six := make([]AccessPolicy, 6)
		for i := range six {
			six[i].ID = fmt.Sprint("p", i)
		}
		_, err = e.s.SetContainerACL(e.ctx, "acct", "photos", PrivateAccess, six, "", Conditions{})
		wantCode(t, err, 400, azerr.InvalidXMLDocument)
		_, err = e.s.SetContainerACL(e.ctx, "acct", "photos", "everyone", nil, "", Conditions{})
		wantCode(t, err, 400, azerr.InvalidHeaderValue)

		if err := e.s.DeleteContainer(e.ctx, "acct", "photos", "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		_, err = e.s.GetContainer(e.ctx, "acct", "photos", "")
		wantCode(t, err, 404, azerr.ContainerNotFound)
		err = e.s.DeleteContainer(e.ctx, "acct", "photos", "", Conditions{})
		wantCode(t, err, 404, azerr.ContainerNotFound)
		_, err = e.s.GetBlobProperties(e.ctx, Path{Account: "acct", Container: "photos", Name: "x"}, "", Conditions{})
		wantCode(t, err, 404, azerr.ContainerNotFound)
	})
}

// A container deleted and created again is empty, even before the old one's blobs are
// reclaimed; reclamation then removes the old blobs' objects.
func TestDeletedContainerIsReclaimed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.putBlob("big", data(inlineLimit+1, 1))
		e.putBlob("small", []byte("x"))
		if _, err := e.s.PutBlock(e.ctx, path("staged"), []byte("b1"), strings.NewReader("abc"), 3, "", Checksums{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.s.SnapshotBlob(e.ctx, path("big"), nil, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		if len(e.objects()) != 2 {
			t.Fatalf("objects before: %v", e.objects())
		}
		if err := e.s.DeleteContainer(e.ctx, "acct", "ctr", "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.CreateContainer(e.ctx, "acct", "ctr", nil, PrivateAccess); err != nil {
			t.Fatal(err)
		}
		page, err := e.s.ListBlobs(e.ctx, "acct", "ctr", ListBlobsOptions{Include: ListBlobsInclude{Snapshots: true, UncommittedBlobs: true}})
		if err != nil || len(page.Entries) != 0 {
			t.Fatalf("re-created container lists %+v, %v", page.Entries, err)
		}
		stats := e.collect()
		if stats.Containers != 1 || stats.Objects != 2 || len(e.objects()) != 0 {
			t.Fatalf("after collecting: %+v, objects %v", stats, e.objects())
		}
	})
}

// List Containers pages through an account's containers in name order, with prefix.
func TestListContainers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		names := []string{"aaa", "abc", "abd", "abe-1", "b00", "zzz"}
		for _, n := range names {
			if _, err := e.s.CreateContainer(e.ctx, "acct", n, Metadata{"N": n}, PrivateAccess); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.s.CreateContainer(e.ctx, "acct2", "abz", nil, PrivateAccess); err != nil {
			t.Fatal(err)
		}
		all := append(append([]string{}, names[:5]...), "ctr", "zzz") // "ctr" is env's
		var got []string
		marker := ""
		pages := 0
		for {
			page, err := e.s.ListContainers(e.ctx, "acct", ListContainersOptions{MaxResults: 2, Marker: marker})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, c := range page.Containers {
				got = append(got, c.Name)
			}
			if marker = page.NextMarker; marker == "" {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(all) || pages != 4 {
			t.Errorf("listed %v in %d pages, want %v in 4", got, pages, all)
		}
		page, err := e.s.ListContainers(e.ctx, "acct", ListContainersOptions{Prefix: "ab", MaxResults: 2})
		if err != nil || len(page.Containers) != 2 || page.Containers[0].Name != "abc" || page.Containers[0].Metadata["N"] != "abc" || page.NextMarker == "" {
			t.Fatalf("prefix ab, first page: %+v, %v", page, err)
		}
		page, err = e.s.ListContainers(e.ctx, "acct", ListContainersOptions{Prefix: "ab", Marker: page.NextMarker})
		if err != nil || len(page.Containers) != 1 || page.Containers[0].Name != "abe-1" || page.NextMarker != "" {
			t.Fatalf("prefix ab, second page: %+v, %v", page, err)
		}
	})
}
