package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
)

// blobClient is an azblob client of the connection string a tabula prints.
func blobClient(t *testing.T, connectionString string) *azblob.Client {
	t.Helper()
	c, err := azblob.NewClientFromConnectionString(connectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The printed connection string reaches the Blob service too, and every blob it acknowledged
// — small ones kept in records, large ones staged as blocks and kept as files — is there
// after a SIGKILL.
func TestAcknowledgedBlobsSurviveSIGKILL(t *testing.T) {
	dir := t.TempDir()
	cmd, out := startTabulaOutput(t, "--data", dir)
	ctx := context.Background()
	svc := blobClient(t, out.connectionString)
	if _, err := svc.CreateContainer(ctx, "durable", nil); err != nil {
		t.Fatal(err)
	}
	content := func(i, size int) []byte {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(i*31 + j*7)
		}
		return b
	}
	var mu sync.Mutex
	acked := map[string][32]byte{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				name := fmt.Sprintf("w%d/blob%02d", w, i)
				size := 4 << 10
				if i%3 == 0 {
					size = 3<<20 + 17 // staged as blocks by the SDK's uploader
				}
				data := content(w*100+i, size)
				if _, err := svc.UploadBuffer(ctx, "durable", name, data, &blockblob.UploadBufferOptions{BlockSize: 1 << 20}); err != nil {
					t.Errorf("upload %s: %v", name, err)
					return
				}
				mu.Lock()
				acked[name] = sha256.Sum256(data)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	_, out = startTabulaOutput(t, "--data", dir)
	svc = blobClient(t, out.connectionString)
	for name, sum := range acked {
		resp, err := svc.DownloadStream(ctx, "durable", name, nil)
		if err != nil {
			t.Fatalf("%s lost: %v", name, err)
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, resp.Body); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if sha256.Sum256(buf.Bytes()) != sum {
			t.Fatalf("%s came back different (%d bytes)", name, buf.Len())
		}
	}
}

// A copy from another server still arriving when the server stops is recorded as failed, with
// the reason, before the store closes: after a restart the blob says so and takes writes. One
// cut by a crash (SIGKILL) is failed as soon as the restarted server reads it: no other
// process can have the embedded store open, so no other process is doing the copy.
func TestAPendingCopyFailsWhenTheServerStops(t *testing.T) {
	for _, c := range []struct {
		signal syscall.Signal
		exit   int
		why    string
	}{{syscall.SIGTERM, 0, "shut down"}, {syscall.SIGKILL, -1, "stopped or lost its store"}} {
		t.Run(c.signal.String(), func(t *testing.T) {
			dir := t.TempDir()
			cmd, out := startTabulaOutput(t, "--data", dir)
			ctx := context.Background()
			svc := blobClient(t, out.connectionString)
			if _, err := svc.CreateContainer(ctx, "copies", nil); err != nil {
				t.Fatal(err)
			}
			// A source that sends a little and then nothing, until the test ends.
			stalled := make(chan struct{})
			web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "1000000")
				w.Write(make([]byte, 1000))
				w.(http.Flusher).Flush()
				select {
				case <-stalled:
				case <-r.Context().Done():
				}
			}))
			t.Cleanup(func() { close(stalled); web.Close() })
			dst := svc.ServiceClient().NewContainerClient("copies").NewBlobClient("far")
			started, err := dst.StartCopyFromURL(ctx, web.URL+"/object", nil)
			if err != nil {
				t.Fatal(err)
			}
			if *started.CopyStatus != blob.CopyStatusTypePending {
				t.Fatalf("a stalled source's copy says %s", *started.CopyStatus)
			}
			if err := cmd.Process.Signal(c.signal); err != nil {
				t.Fatal(err)
			}
			if code, _ := waitExit(t, cmd, 30*time.Second); code != c.exit {
				t.Fatalf("tabula exited with %d, want %d", code, c.exit)
			}

			_, out = startTabulaOutput(t, "--data", dir)
			svc = blobClient(t, out.connectionString)
			dst = svc.ServiceClient().NewContainerClient("copies").NewBlobClient("far")
			p, err := dst.GetProperties(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if *p.CopyStatus != blob.CopyStatusTypeFailed || p.CopyStatusDescription == nil || !strings.Contains(*p.CopyStatusDescription, c.why) {
				t.Fatalf("a copy cut by %s: %s %v", c.signal, *p.CopyStatus, p.CopyStatusDescription)
			}
			if _, err := svc.UploadBuffer(ctx, "copies", "far", []byte("mine now"), nil); err != nil {
				t.Fatalf("writing over the failed copy: %v", err)
			}
		})
	}
}
