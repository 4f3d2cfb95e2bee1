package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/blob"
)

const devContainers = "/api/accounts/devstoreaccount1/containers"

// raw sends body as it is, with a content type, as devstoreaccount1.
func (f *apiFixture) raw(t *testing.T, method, path, contentType, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(auth.DevelopmentAccountName, auth.DevelopmentAccountKey)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

func blobURL(container, name string) string {
	return devContainers + "/" + container + "/blob?" + url.Values{"name": {name}}.Encode()
}

// A listing says which blobs are archived or being rehydrated, and which copies have not
// succeeded: why their bytes cannot be downloaded.
func TestBlobsSayWhyTheyCannotBeRead(t *testing.T) {
	f := newAPI(t)
	ctx := context.Background()
	if _, err := f.blobs.CreateContainer(ctx, "devstoreaccount1", "cold", nil, blob.PrivateAccess); err != nil {
		t.Fatal(err)
	}
	path := func(name string) blob.Path {
		return blob.Path{Account: "devstoreaccount1", Container: "cold", Name: name}
	}
	f.raw(t, "PUT", blobURL("cold", "a"), "text/plain", "archived")
	if _, err := f.blobs.SetBlobTier(ctx, path("a"), blob.SetTierOptions{Tier: "Archive"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.blobs.CopyBlob(ctx, path("b"), path("a"), blob.CopyOptions{SourceURL: "a", Tier: "Cool"}); err != nil {
		t.Fatal(err)
	}
	var list struct{ Blobs []apiBlob }
	f.dev(t, "GET", devContainers+"/cold/blobs", nil).decode(t, &list)
	if len(list.Blobs) != 2 || list.Blobs[0].AccessTier != "Archive" || list.Blobs[0].ArchiveStatus != "" || list.Blobs[0].CopyStatus != "" ||
		list.Blobs[1].ArchiveStatus != "rehydrate-pending-to-cool" || list.Blobs[1].CopyStatus != "pending" {
		t.Fatalf("listing: %+v", list.Blobs)
	}
}

func TestContainersAreCreatedListedInPagesAndDeleted(t *testing.T) {
	f := newAPI(t)
	for _, name := range []string{"photos", "logs", "backups"} {
		if a := f.dev(t, "POST", devContainers, map[string]string{"name": name}); a.status != 201 {
			t.Fatalf("create %s: %d %s", name, a.status, a.body)
		}
	}
	expect(t, f.dev(t, "POST", devContainers, map[string]string{"name": "logs"}), 409, "ContainerAlreadyExists")
	expect(t, f.dev(t, "POST", devContainers, map[string]string{"name": "Not_Valid"}), 400, "InvalidResourceName")
	var page struct {
		Containers []apiContainer
		Next       string
	}
	f.dev(t, "GET", devContainers+"?top=2", nil).decode(t, &page)
	if len(page.Containers) != 2 || page.Containers[0].Name != "backups" || page.Containers[0].Lease != "available" || page.Next == "" {
		t.Fatalf("first page %+v", page)
	}
	next := page.Next
	page.Next = ""
	f.dev(t, "GET", devContainers+"?top=2&next="+url.QueryEscape(next), nil).decode(t, &page)
	if len(page.Containers) != 1 || page.Containers[0].Name != "photos" || page.Next != "" {
		t.Fatalf("second page %+v", page)
	}
	expect(t, f.dev(t, "GET", devContainers+"?top=0", nil), 400, "InvalidQueryParameterValue")
	expect(t, f.as(t, "other", otherKey, "GET", devContainers, nil), 403, "AuthorizationFailure")
	if a := f.dev(t, "DELETE", devContainers+"/logs", nil); a.status != 204 {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	expect(t, f.dev(t, "DELETE", devContainers+"/logs", nil), 404, "ContainerNotFound")
}

func TestABlobIsUploadedListedDownloadedAndDeleted(t *testing.T) {
	f := newAPI(t)
	if _, err := f.blobs.CreateContainer(context.Background(), "devstoreaccount1", "docs", nil, blob.PrivateAccess); err != nil {
		t.Fatal(err)
	}
	a := f.raw(t, "PUT", blobURL("docs", "2024/report q1.txt"), "text/plain", "hello, blob")
	var b apiBlob
	a.decode(t, &b)
	if a.status != 201 || b.Name != "2024/report q1.txt" || b.Size != 11 || b.ContentType != "text/plain" || b.Type != "BlockBlob" || b.ETag == "" {
		t.Fatalf("upload: %d %s", a.status, a.body)
	}
	// An existing blob is replaced only when asked.
	expect(t, f.raw(t, "PUT", blobURL("docs", "2024/report q1.txt"), "text/plain", "again"), 409, "BlobAlreadyExists")
	if a := f.raw(t, "PUT", blobURL("docs", "2024/report q1.txt")+"&overwrite=true", "text/plain", "hello again"); a.status != 201 {
		t.Fatalf("overwrite: %d %s", a.status, a.body)
	}
	f.raw(t, "PUT", blobURL("docs", "readme.md"), "", "# docs")

	var list struct {
		Prefixes []string
		Blobs    []apiBlob
		Next     string
	}
	f.dev(t, "GET", devContainers+"/docs/blobs?delimiter=/", nil).decode(t, &list)
	if fmt.Sprint(list.Prefixes) != "[2024/]" || len(list.Blobs) != 1 || list.Blobs[0].Name != "readme.md" || list.Blobs[0].ContentType != "application/octet-stream" {
		t.Fatalf("listing: %+v", list)
	}
	f.dev(t, "GET", devContainers+"/docs/blobs?prefix=2024/", nil).decode(t, &list)
	if len(list.Blobs) != 1 || list.Blobs[0].Size != 11 {
		t.Fatalf("listing 2024/: %+v", list)
	}

	a = f.dev(t, "GET", blobURL("docs", "2024/report q1.txt"), nil)
	if a.status != 200 || a.body != "hello again" || a.header.Get("Content-Type") != "text/plain" ||
		a.header.Get("Content-Disposition") != `attachment; filename="report q1.txt"` {
		t.Fatalf("download: %d %v %q", a.status, a.header, a.body)
	}
	expect(t, f.dev(t, "GET", blobURL("docs", "missing"), nil), 404, "BlobNotFound")
	expect(t, f.dev(t, "GET", devContainers+"/docs/blob", nil), 400, "InvalidQueryParameterValue")
	expect(t, f.dev(t, "GET", devContainers+"/nope/blobs", nil), 404, "ContainerNotFound")

	// A blob with snapshots goes only with them.
	if _, _, err := f.blobs.SnapshotBlob(context.Background(), blob.Path{Account: "devstoreaccount1", Container: "docs", Name: "readme.md"}, nil, "", blob.Conditions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, f.dev(t, "DELETE", blobURL("docs", "readme.md"), nil), 409, "SnapshotsPresent")
	if a := f.dev(t, "DELETE", blobURL("docs", "readme.md")+"&snapshots=include", nil); a.status != 204 {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	expect(t, f.dev(t, "DELETE", blobURL("docs", "readme.md"), nil), 404, "BlobNotFound")
}
