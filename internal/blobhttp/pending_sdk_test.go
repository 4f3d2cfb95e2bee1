package blobhttp_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// trickle is a web server whose /object sends its first half at once and the rest when the
// test says (release), or breaks off there (cut).
type trickle struct {
	body    []byte
	release chan bool // true: send the rest; false: break off
}

func (tr *trickle) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", strconv.Itoa(len(tr.body)))
	w.Header().Set("Content-Type", "application/x-slow")
	w.WriteHeader(http.StatusOK)
	half := len(tr.body) / 2
	w.Write(tr.body[:half])
	w.(http.Flusher).Flush()
	select {
	case whole := <-tr.release:
		if whole {
			w.Write(tr.body[half:])
			return
		}
	case <-r.Context().Done():
	}
	panic(http.ErrAbortHandler) // the connection breaks before the body's end
}

// Copy Blob of a source on another server that outlasts its answer, through the Go SDK: the
// answer says pending, the blob reports the copy pending with no bytes and refuses writes,
// Abort Copy Blob aborts it, and a copy left alone ends success with the source's bytes, or
// failed with a description when the source breaks off.
func TestAPendingCopyThroughTheSDK(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.svc.CopyWait = 0
		body := bytes.Repeat([]byte("slow bytes "), 20000)
		tr := &trickle{body: body, release: make(chan bool, 1)}
		web := httptest.NewServer(tr)
		t.Cleanup(web.Close)
		dc := e.container("dest")

		aborted := dc.NewBlockBlobClient("aborted")
		started, err := aborted.StartCopyFromURL(ctx, web.URL+"/object", &blob.StartCopyFromURLOptions{Metadata: map[string]*string{"kept": to.Ptr("yes")}})
		if err != nil {
			t.Fatal(err)
		}
		if *started.CopyStatus != blob.CopyStatusTypePending || started.CopyID == nil {
			t.Fatalf("Copy Blob of a slow source says %v", *started.CopyStatus)
		}
		p, err := aborted.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *p.CopyStatus != blob.CopyStatusTypePending || *p.CopyID != *started.CopyID || p.CopyCompletionTime != nil || *p.ContentLength != 0 ||
			!strings.HasSuffix(*p.CopyProgress, "/"+strconv.Itoa(len(body))) || *p.CopySource != web.URL+"/object" {
			t.Fatalf("a pending copy's properties: %v %v %v %v", *p.CopyStatus, p.CopyCompletionTime, *p.ContentLength, *p.CopyProgress)
		}
		_, err = aborted.Upload(ctx, streaming.NopCloser(strings.NewReader("x")), nil)
		wantStatus(t, err, 409, string(bloberror.PendingCopyOperation))
		_, err = aborted.AbortCopyFromURL(ctx, "aaaaaaaa-0000-0000-0000-000000000001", nil)
		wantStatus(t, err, 409, "CopyIdMismatch")
		if _, err := aborted.AbortCopyFromURL(ctx, *started.CopyID, nil); err != nil {
			t.Fatal(err)
		}
		p, err = aborted.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *p.CopyStatus != blob.CopyStatusTypeAborted || *p.ContentLength != 0 || *p.Metadata["Kept"] != "yes" || p.CopyCompletionTime == nil {
			t.Fatalf("an aborted copy's properties: %v %v %v", *p.CopyStatus, *p.ContentLength, p.Metadata)
		}
		_, err = aborted.AbortCopyFromURL(ctx, *started.CopyID, nil)
		wantStatus(t, err, 409, string(bloberror.NoPendingCopyOperation))

		done := dc.NewBlockBlobClient("done")
		if _, err := done.StartCopyFromURL(ctx, web.URL+"/object", nil); err != nil {
			t.Fatal(err)
		}
		tr.release <- true
		p = settle(t, done.BlobClient())
		if *p.CopyStatus != blob.CopyStatusTypeSuccess || *p.ContentLength != int64(len(body)) || *p.ContentType != "application/x-slow" ||
			*p.CopyProgress != strconv.Itoa(len(body))+"/"+strconv.Itoa(len(body)) || p.CopyCompletionTime == nil {
			t.Fatalf("a pending copy done: %v %v %v", *p.CopyStatus, *p.ContentLength, *p.CopyProgress)
		}
		if !bytes.Equal(read(t, done), body) {
			t.Fatal("a pending copy done reads other bytes")
		}

		failed := dc.NewBlockBlobClient("failed")
		if _, err := failed.StartCopyFromURL(ctx, web.URL+"/object", nil); err != nil {
			t.Fatal(err)
		}
		tr.release <- false
		p = settle(t, failed.BlobClient())
		if *p.CopyStatus != blob.CopyStatusTypeFailed || *p.ContentLength != 0 || p.CopyStatusDescription == nil || !strings.HasPrefix(*p.CopyStatusDescription, "500 ") {
			t.Fatalf("a pending copy whose source broke off: %v %v", *p.CopyStatus, p.CopyStatusDescription)
		}
		pager := dc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr("failed"), Include: container.ListBlobsInclude{Copy: true}})
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		listed := page.Segment.BlobItems[0].Properties
		if *listed.CopyStatus != blob.CopyStatusTypeFailed || *listed.CopyStatusDescription != *p.CopyStatusDescription {
			t.Fatalf("a failed copy listed: %v %v", *listed.CopyStatus, listed.CopyStatusDescription)
		}
		if _, err := failed.Upload(ctx, streaming.NopCloser(strings.NewReader("again")), nil); err != nil {
			t.Fatalf("writing a failed copy: %v", err)
		}
	})
}

// settle waits until the copy into b is no longer pending.
func settle(t *testing.T, b *blob.Client) blob.GetPropertiesResponse {
	t.Helper()
	for range 2000 {
		p, err := b.GetProperties(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if *p.CopyStatus != blob.CopyStatusTypePending {
			return p
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the copy stayed pending")
	return blob.GetPropertiesResponse{}
}
