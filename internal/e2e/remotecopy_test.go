package e2e

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	azblobblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/blobhttp"
	"github.com/tabula-dev/tabula/internal/server"
	"github.com/tabula-dev/tabula/internal/store/pebble"
)

// blobServer serves the Blob service as the tabula command does (with the listener that keeps
// metadata names' case), logging every request to log.
func blobServer(t *testing.T, log *slog.Logger) (*azblob.Client, string) {
	t.Helper()
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	accounts := auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()})
	g, err := server.Listen(server.Limits{}, log,
		server.Endpoint{Name: "blob", Addr: "127.0.0.1:0", Handler: blobhttp.New(blob.New(st, st), accounts, log), ErrorBody: blobhttp.ErrorBody})
	if err != nil {
		t.Fatal(err)
	}
	g.Log = &server.RequestLog{Logger: log}
	serveUntilCleanup(t, g)
	url := "http://" + g.Addr("blob").String() + "/devstoreaccount1"
	cred, err := azblob.NewSharedKeyCredential("devstoreaccount1", devKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azblob.NewClientWithSharedKeyCredential(url, cred, &azblob.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	return c, url
}

// A copy between two Tabula servers, as AzCopy makes one between two local emulators: the
// destination fetches the source with its SAS, the copy keeps the metadata names' case from
// the client through both servers, and the destination's log line says what it fetched.
func TestCopyBetweenTwoServers(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	logged := &lockedBuffer{}
	src, _ := blobServer(t, quiet)
	dst, dstURL := blobServer(t, slog.New(slog.NewTextHandler(logged, nil)))
	ctx := context.Background()
	for _, c := range []*azblob.Client{src, dst} {
		if _, err := c.CreateContainer(ctx, "files", nil); err != nil {
			t.Fatal(err)
		}
	}
	body := bytes.Repeat([]byte("remote "), 100000)
	source := src.ServiceClient().NewContainerClient("files").NewBlockBlobClient("doc.txt")
	if _, err := source.UploadBuffer(ctx, body, &blockblob.UploadBufferOptions{Metadata: map[string]*string{"Author": to.Ptr("someone"), "lower": to.Ptr("x")}}); err != nil {
		t.Fatal(err)
	}
	sasURL, err := source.GetSASURL(sas.BlobPermissions{Read: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	copied := dst.ServiceClient().NewContainerClient("files").NewBlobClient("copy.txt")
	res, err := copied.StartCopyFromURL(ctx, sasURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *res.CopyStatus != azblobblob.CopyStatusTypeSuccess {
		t.Fatalf("copy status %s", *res.CopyStatus)
	}
	got, err := copied.DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	read, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if !bytes.Equal(read, body) {
		t.Fatalf("the copy reads %d bytes", len(read))
	}

	// Metadata names as the client set them, which a listing's XML shows (azblob lowercases
	// them there; net/http canonicalizes headers).
	req, _ := http.NewRequest("GET", dstURL+"/files?restype=container&comp=list&include=metadata&"+strings.SplitN(containerSAS(t, dst), "?", 2)[1], nil)
	req.Header.Set("x-ms-version", "2025-01-05")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	listing, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(listing, []byte("<Metadata><Author>someone</Author><lower>x</lower></Metadata>")) {
		t.Fatalf("the copy's metadata: %s", listing)
	}

	line := ""
	for _, l := range strings.Split(logged.String(), "\n") {
		if strings.Contains(l, `op="Copy Blob"`) {
			line = l
		}
	}
	if !strings.Contains(line, "copy_source=http://127.0.0.1:") || !strings.Contains(line, "/devstoreaccount1/files/doc.txt ") ||
		!strings.Contains(line, "fetched_bytes=700000") || strings.Contains(line, "sig=") {
		t.Fatalf("the Copy Blob log line does not say what was fetched (or shows the SAS):\n%s", logged.String())
	}
}

// containerSAS is a SAS URL listing the container files of c's account.
func containerSAS(t *testing.T, c *azblob.Client) string {
	t.Helper()
	u, err := c.ServiceClient().NewContainerClient("files").GetSASURL(sas.ContainerPermissions{List: true, Read: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
