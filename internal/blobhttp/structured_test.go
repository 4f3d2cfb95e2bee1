package blobhttp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"

	"github.com/tabula-dev/tabula/internal/structmsg"
)

func readBlob(t *testing.T, c *blob.Client, o *blob.DownloadStreamOptions) []byte {
	t.Helper()
	resp, err := c.DownloadStream(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStructuredMessageUploadsStoreTheirContent drives azblob's structured message CRC-64
// validation through every upload: what is stored and read back is the content, never the
// framing around it.
func TestStructuredMessageUploadsStoreTheirContent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.container("structured")
		// Segments of 1 KiB: each upload below is a message of several segments.
		smCRC := blob.TransferValidationTypeComputeStructuredMessageCRC64(1024)

		small := randomBytes(4096, 1)
		bb := c.NewBlockBlobClient("put-blob")
		up, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(small)), &blockblob.UploadOptions{TransactionalValidation: smCRC})
		if err != nil {
			t.Fatal(err)
		}
		if up.StructuredBodyType == nil || *up.StructuredBodyType != structmsg.HeaderValue {
			t.Errorf("Put Blob answered x-ms-structured-body %v", up.StructuredBodyType)
		}
		if got := readBlob(t, bb.BlobClient(), nil); !bytes.Equal(got, small) {
			t.Fatalf("Put Blob stored %d bytes, want the %d sent", len(got), len(small))
		}

		// Blocks above the store's inline limit go to object files.
		big := randomBytes(3<<20+77, 2)
		bb = c.NewBlockBlobClient("upload-buffer")
		if _, err := bb.UploadBuffer(ctx, big, &blockblob.UploadBufferOptions{BlockSize: 1 << 20, TransactionalValidation: smCRC}); err != nil {
			t.Fatal(err)
		}
		if got := readBlob(t, bb.BlobClient(), nil); !bytes.Equal(got, big) {
			t.Fatalf("Put Block stored %d bytes, want the %d sent", len(got), len(big))
		}

		ab := c.NewAppendBlobClient("append")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		var appended []byte
		for i := range 3 {
			part := randomBytes(1500+i, byte(10+i))
			resp, err := ab.AppendBlock(ctx, streaming.NopCloser(bytes.NewReader(part)), &appendblob.AppendBlockOptions{TransactionalValidation: smCRC})
			if err != nil {
				t.Fatal(err)
			}
			if resp.BlobAppendOffset == nil || *resp.BlobAppendOffset != strconv.Itoa(len(appended)) {
				t.Fatalf("append %d at offset %v, want %d", i, resp.BlobAppendOffset, len(appended))
			}
			appended = append(appended, part...)
		}
		if got := readBlob(t, ab.BlobClient(), nil); !bytes.Equal(got, appended) {
			t.Fatalf("Append Block stored %d bytes, want the %d sent", len(got), len(appended))
		}

		pb := c.NewPageBlobClient("pages")
		if _, err := pb.Create(ctx, 4096, nil); err != nil {
			t.Fatal(err)
		}
		page := randomBytes(2048, 3)
		if _, err := pb.UploadPages(ctx, streaming.NopCloser(bytes.NewReader(page)), blob.HTTPRange{Offset: 1024, Count: 2048}, &pageblob.UploadPagesOptions{TransactionalValidation: smCRC}); err != nil {
			t.Fatal(err)
		}
		want := append(append(make([]byte, 1024), page...), make([]byte, 1024)...)
		if got := readBlob(t, pb.BlobClient(), nil); !bytes.Equal(got, want) {
			t.Fatal("Put Page stored other bytes than those sent")
		}
	})
}

// TestStructuredMessageDownloads: asked for it, a download comes framed, whole or ranged,
// and azblob takes the content out and checks every CRC-64.
func TestStructuredMessageDownloads(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		data := randomBytes(9<<20+5, 4) // three segments of the service's 4 MiB
		bb := e.container("framed").NewBlockBlobClient("b")
		if _, err := bb.UploadBuffer(ctx, data, &blockblob.UploadBufferOptions{BlockSize: 4 << 20}); err != nil {
			t.Fatal(err)
		}
		smCRC := blob.TransferValidationTypeComputeStructuredMessageCRC64(0)
		if got := readBlob(t, bb.BlobClient(), &blob.DownloadStreamOptions{TransactionalValidation: smCRC}); !bytes.Equal(got, data) {
			t.Fatalf("whole: got %d bytes, want %d", len(got), len(data))
		}
		r := blob.HTTPRange{Offset: 1000, Count: 5 << 20}
		if got := readBlob(t, bb.BlobClient(), &blob.DownloadStreamOptions{TransactionalValidation: smCRC, Range: r}); !bytes.Equal(got, data[r.Offset:r.Offset+r.Count]) {
			t.Fatalf("range: got %d bytes", len(got))
		}
		out := make([]byte, len(data))
		if _, err := bb.DownloadBuffer(ctx, out, &blob.DownloadBufferOptions{BlockSize: 2 << 20}); err != nil || !bytes.Equal(out, data) {
			t.Fatalf("download buffer: %v", err)
		}
	})
}

// TestBrokenStructuredMessagesChangeNothing sends messages the SDKs never would: each is
// refused with a 400, and nothing of it is stored, however late in the body it breaks.
func TestBrokenStructuredMessagesChangeNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		c := e.container("broken")
		r := newRaw(e)
		encode := func(data []byte) []byte {
			var b bytes.Buffer
			if err := structmsg.Encode(&b, bytes.NewReader(data), int64(len(data))); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}
		put := func(path string, msg []byte, header map[string]string) *http.Response {
			h := map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-structured-body": structmsg.HeaderValue}
			for k, v := range header {
				h[k] = v
			}
			return r.do(http.MethodPut, path, h, bytes.NewReader(msg))
		}
		for _, size := range []int{100, 200 << 10} { // stored inline, and in an object file
			data := randomBytes(size, byte(size>>10))
			msg := encode(data)
			msg[len(msg)-9] ^= 1 // the last data byte of the last segment
			n := strconv.Itoa(size)
			resp := put("/broken/blob-"+n, msg, map[string]string{"x-ms-structured-content-length": n})
			wantRawError(t, resp, 400, "Crc64Mismatch")
			if _, err := c.NewBlobClient("blob-"+n).GetProperties(context.Background(), nil); err == nil {
				t.Fatalf("%d bytes: the blob exists after a refused Put Blob", size)
			}
			id := base64.StdEncoding.EncodeToString([]byte("block-1"))
			resp = put("/broken/blocks-"+n+"?comp=block&blockid="+id, msg, map[string]string{"x-ms-structured-content-length": n})
			wantRawError(t, resp, 400, "Crc64Mismatch")
			list, err := c.NewBlockBlobClient("blocks-"+n).GetBlockList(context.Background(), blockblob.BlockListTypeAll, nil)
			if err == nil && len(list.UncommittedBlocks) > 0 {
				t.Fatalf("%d bytes: a refused Put Block left a block", size)
			}
		}
		good := encode([]byte("hello"))
		misnumbered := bytes.Clone(good)
		misnumbered[13] = 2
		for _, c := range []struct {
			name   string
			msg    []byte
			header map[string]string
			code   string
		}{
			{"misnumbered segment", misnumbered, map[string]string{"x-ms-structured-content-length": "5"}, "InvalidInput"},
			{"content length not the segments'", good, map[string]string{"x-ms-structured-content-length": "6"}, "InvalidInput"},
			{"no content length", good, nil, "MissingRequiredHeader"},
			{"content length not a number", good, map[string]string{"x-ms-structured-content-length": "five"}, "InvalidHeaderValue"},
			{"unknown format", good, map[string]string{"x-ms-structured-body": "XSM/2.0; properties=crc64", "x-ms-structured-content-length": "5"}, "InvalidHeaderValue"},
		} {
			t.Run(c.name, func(t *testing.T) {
				wantRawError(t, put("/broken/other", c.msg, c.header), 400, c.code)
			})
		}
		if _, err := c.NewBlobClient("other").GetProperties(context.Background(), nil); err == nil {
			t.Fatal("a refused message created a blob")
		}
	})
}

func wantRawError(t *testing.T, resp *http.Response, status int, code string) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status || resp.Header.Get("x-ms-error-code") != code {
		t.Fatalf("got %d %s (%s), want %d %s", resp.StatusCode, resp.Header.Get("x-ms-error-code"), body, status, code)
	}
	if !bytes.Contains(body, []byte(code)) {
		t.Fatalf("error body %s does not name %s", body, code)
	}
}
