package blobhttp_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/tabula-dev/tabula/internal/auth"
)

// The root container: $root by name, and /name as /$root/name.
func TestSDKRootContainer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		root := e.container("$root")
		if _, err := root.NewBlockBlobClient("hello.txt").Upload(t.Context(), streaming.NopCloser(strings.NewReader("hi")), nil); err != nil {
			t.Fatal(err)
		}
		r := newRaw(e)
		resp := r.do(http.MethodGet, "/hello.txt", nil, nil)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != "hi" {
			t.Fatalf("GET /hello.txt: %d %q", resp.StatusCode, body)
		}
		resp = r.do(http.MethodPut, "/implicit.txt", map[string]string{"x-ms-blob-type": "BlockBlob"}, strings.NewReader("implicit"))
		if resp.StatusCode != 201 {
			t.Fatalf("PUT /implicit.txt: %d %s", resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
		got, err := root.NewBlobClient("implicit.txt").DownloadStream(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(got.Body)
		got.Body.Close()
		if string(body) != "implicit" {
			t.Fatalf("$root/implicit.txt reads %q", body)
		}
		if resp := r.do(http.MethodGet, "/nothing", nil, nil); resp.StatusCode != 404 || resp.Header.Get("x-ms-error-code") != "BlobNotFound" {
			t.Fatalf("GET /nothing: %d %s", resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
	})
}

// Names holding characters XML cannot carry (U+FFFE, U+FFFF) are stored and listed, as blobs
// and as prefixes, in <Name Encoded="true">, which the SDK decodes.
func TestSDKNamesXMLCannotCarry(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		c := e.container("odd")
		names := []string{"dir\uffff1/a b.txt", "file\ufffe.blob", "plain+name"}
		for _, n := range names {
			if _, err := c.NewBlockBlobClient(n).Upload(t.Context(), streaming.NopCloser(strings.NewReader(n)), nil); err != nil {
				t.Fatal(err)
			}
		}
		var flat []string
		for pager := c.NewListBlobsFlatPager(nil); pager.More(); {
			page, err := pager.NextPage(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range page.Segment.BlobItems {
				flat = append(flat, *b.Name)
			}
		}
		if fmt.Sprintf("%q", flat) != fmt.Sprintf("%q", names) {
			t.Fatalf("flat listing %q, want %q", flat, names)
		}
		var tree []string
		for pager := c.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{}); pager.More(); {
			page, err := pager.NextPage(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range page.Segment.BlobPrefixes {
				tree = append(tree, *p.Name)
			}
		}
		if fmt.Sprintf("%q", tree) != fmt.Sprintf("%q", []string{"dir\uffff1/"}) {
			t.Fatalf("prefixes %q", tree)
		}
		resp := newRaw(e).do(http.MethodGet, "/odd?restype=container&comp=list", nil, nil)
		doc, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(doc), `<Name Encoded="true">file%EF%BF%BE.blob</Name>`) || !strings.Contains(string(doc), `<Name>plain+name</Name>`) {
			t.Fatalf("listing document: %s", doc)
		}
	})
}

// No blob has versions (versioning is an account setting of the management plane): a
// version id names nothing.
func TestSDKVersionIDsNameNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		bb := e.container("versions").NewBlockBlobClient("b")
		if _, err := bb.Upload(t.Context(), streaming.NopCloser(strings.NewReader("x")), nil); err != nil {
			t.Fatal(err)
		}
		vc, err := bb.WithVersionID("2024-01-02T03:04:05.0000000Z")
		if err != nil {
			t.Fatal(err)
		}
		_, err = vc.GetProperties(t.Context(), nil)
		wantStatus(t, err, 404, "BlobNotFound")
		resp := newRaw(e).do(http.MethodGet, "/versions/b?versionid=yesterday", nil, nil)
		if resp.StatusCode != 400 || resp.Header.Get("x-ms-error-code") != "InvalidQueryParameterValue" {
			t.Fatalf("a malformed version id: %d %s", resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
	})
}

// A backslash in a blob's name, escaped or not, is a slash: the blob is listed and read by
// the name with slashes, and a SAS signed over that name serves the URL with the backslash
// (the JS SDK's special naming and SAS tests, live against Azure).
func TestSDKBackslashIsASlash(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		c := e.container("slashes")
		if _, err := c.NewBlockBlobClient(`dir\file.txt`).Upload(t.Context(), streaming.NopCloser(strings.NewReader("content")), nil); err != nil {
			t.Fatal(err)
		}
		page, err := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr("dir/")}).NextPage(t.Context())
		if err != nil || len(page.Segment.BlobItems) != 1 || *page.Segment.BlobItems[0].Name != "dir/file.txt" {
			t.Fatalf("listing dir/: %v, %v", page.Segment.BlobItems, err)
		}
		dev := auth.DevelopmentAccount()
		cred, err := azblob.NewSharedKeyCredential(dev.Name, base64.StdEncoding.EncodeToString(dev.Keys[0]))
		if err != nil {
			t.Fatal(err)
		}
		q, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
			Permissions: (&sas.BlobPermissions{Read: true}).String(), ContainerName: "slashes", BlobName: "dir/file.txt"}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{`/slashes/dir%5Cfile.txt`, `/slashes/dir/file.txt`} {
			resp, err := http.Get(e.url + path + "?" + q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "content" {
				t.Errorf("GET %s with the SAS: %d %s %q", path, resp.StatusCode, resp.Header.Get("x-ms-error-code"), body)
			}
		}
	})
}

// The dots that end a segment of a blob's name are dropped, as Azure drops them: "report." is
// written, listed and read as "report", "dir./x" as "dir/x", and a SAS is verified over the
// trimmed name (azure-storage-ruby#191: Azure's string to sign for "…/test." ends in "test").
// Shared Key signs the path as sent, so the SDKs' own requests for "report." keep working.
func TestSDKTrailingDotsAreDropped(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		c := e.container("dots")
		for _, name := range []string{"report.", "dir../x.txt", "a/.../b"} {
			if _, err := c.NewBlockBlobClient(name).Upload(t.Context(), streaming.NopCloser(strings.NewReader(name)), nil); err != nil {
				t.Fatalf("uploading %q: %v", name, err)
			}
		}
		page, err := c.NewListBlobsFlatPager(nil).NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, b := range page.Segment.BlobItems {
			names = append(names, *b.Name)
		}
		if strings.Join(names, ",") != "a/.../b,dir/x.txt,report" {
			t.Fatalf("listed %q, want a/.../b, dir/x.txt and report", names)
		}
		for name, want := range map[string]string{"report": "report.", "report..": "report.", "dir/x.txt": "dir../x.txt"} {
			got, err := c.NewBlobClient(name).DownloadStream(t.Context(), nil)
			if err != nil {
				t.Fatalf("reading %q: %v", name, err)
			}
			body, _ := io.ReadAll(got.Body)
			got.Body.Close()
			if string(body) != want {
				t.Errorf("reading %q: %q, want the blob written as %q", name, body, want)
			}
		}
		dev := auth.DevelopmentAccount()
		cred, err := azblob.NewSharedKeyCredential(dev.Name, base64.StdEncoding.EncodeToString(dev.Keys[0]))
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			signed string
			status int
		}{{"report", 200}, {"report.", 403}} {
			q, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
				Permissions: (&sas.BlobPermissions{Read: true}).String(), ContainerName: "dots", BlobName: tc.signed}.SignWithSharedKey(cred)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.Get(e.url + "/dots/report.?" + q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("GET report. with a SAS signed over %q: %d %s, want %d", tc.signed, resp.StatusCode, resp.Header.Get("x-ms-error-code"), tc.status)
			}
		}
	})
}
