package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
)

// The printed connection string reaches the Blob service too, and every blob it acknowledged
// — small ones kept in records, large ones staged as blocks and kept as files — is there
// after a SIGKILL.
func TestAcknowledgedBlobsSurviveSIGKILL(t *testing.T) {
	dir := t.TempDir()
	cmd, out := startTabulaOutput(t, "--data", dir)
	ctx := context.Background()
	svc, err := azblob.NewClientFromConnectionString(out.connectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
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
	svc, err = azblob.NewClientFromConnectionString(out.connectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
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
