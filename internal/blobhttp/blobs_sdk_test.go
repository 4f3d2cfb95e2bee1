package blobhttp_test

import (
	"bytes"
	"crypto/md5"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
)

func randomBytes(n int, seed byte) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

// Upload and download through the SDK's transfer managers: a single Put Blob for small
// buffers, parallel Put Block + Put Block List for large ones, ranged parallel downloads.
func TestSDKUploadAndDownload(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		e.container("data")
		for _, size := range []int{0, 11, 300 << 10, 9<<20 + 7} {
			body := randomBytes(size, byte(size))
			name := "dir/blob-" + string(rune('a'+size%26))
			_, err := e.client.UploadBuffer(ctx, "data", name, body, &azblob.UploadBufferOptions{
				BlockSize: 2 << 20, Concurrency: 4,
				Metadata:    map[string]*string{"origin": to.Ptr("test")},
				HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("application/x-test")},
			})
			if err != nil {
				t.Fatalf("%d bytes: upload: %v", size, err)
			}
			got := make([]byte, size)
			n, err := e.client.DownloadBuffer(ctx, "data", name, got, &azblob.DownloadBufferOptions{BlockSize: 1 << 20, Concurrency: 4})
			if err != nil || n != int64(size) || !bytes.Equal(got, body) {
				t.Fatalf("%d bytes: download %d bytes, %v", size, n, err)
			}
			resp, err := e.client.DownloadStream(ctx, "data", name, nil)
			if err != nil {
				t.Fatal(err)
			}
			streamed, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !bytes.Equal(streamed, body) || *resp.ContentType != "application/x-test" || *resp.Metadata["Origin"] != "test" ||
				*resp.BlobType != blob.BlobTypeBlockBlob || *resp.ContentLength != int64(size) {
				t.Fatalf("%d bytes: stream %d bytes, %v, headers %+v", size, len(streamed), err, resp)
			}
		}
		// A range, and the MD5 of a range.
		body := randomBytes(100000, 9)
		if _, err := e.client.UploadBuffer(ctx, "data", "ranged", body, nil); err != nil {
			t.Fatal(err)
		}
		bc := e.client.ServiceClient().NewContainerClient("data").NewBlobClient("ranged")
		resp, err := bc.DownloadStream(ctx, &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: 1000, Count: 500}, RangeGetContentMD5: to.Ptr(true)})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		sum := md5.Sum(body[1000:1500])
		if !bytes.Equal(got, body[1000:1500]) || *resp.ContentRange != "bytes 1000-1499/100000" || !bytes.Equal(resp.ContentMD5, sum[:]) {
			t.Fatalf("range: %d bytes, Content-Range %v, MD5 %x", len(got), resp.ContentRange, resp.ContentMD5)
		}
		_, err = bc.DownloadStream(ctx, &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: 100000, Count: 10}})
		wantStatus(t, err, 416, "InvalidRange")
		_, err = e.client.DownloadStream(ctx, "data", "missing", nil)
		wantStatus(t, err, 404, "BlobNotFound")
		_, err = e.client.DownloadStream(ctx, "nodata", "missing", nil)
		wantStatus(t, err, 404, "ContainerNotFound")
		// HEAD carries the code in the header only: Exists-style checks depend on it.
		_, err = e.client.ServiceClient().NewContainerClient("data").NewBlobClient("missing").GetProperties(ctx, nil)
		if !bloberror.HasCode(err, bloberror.BlobNotFound) {
			t.Fatalf("HEAD of a missing blob: %v", err)
		}
	})
}

// Transactional checksums: a wrong Content-MD5 or CRC-64 is refused.
func TestSDKUploadChecksums(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		bb := e.container("data").NewBlockBlobClient("b")
		body := []byte("hello world")
		resp, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(body)), &blockblob.UploadOptions{TransactionalValidation: blob.TransferValidationTypeComputeCRC64()})
		if err != nil || resp.ContentCRC64 == nil {
			t.Fatalf("upload with CRC-64: %+v, %v", resp, err)
		}
		wrong := md5.Sum([]byte("other"))
		_, err = bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(body)), &blockblob.UploadOptions{TransactionalValidation: blob.TransferValidationTypeMD5(wrong[:])})
		wantStatus(t, err, 400, "Md5Mismatch")
		_, err = bb.StageBlock(ctx, blockIDs(1)[0], streaming.NopCloser(bytes.NewReader(body)), &blockblob.StageBlockOptions{TransactionalValidation: blob.TransferValidationTypeMD5(wrong[:])})
		wantStatus(t, err, 400, "Md5Mismatch")
	})
}

func TestSDKBlockLists(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		bb := e.container("data").NewBlockBlobClient("blocks")
		ids := blockIDs(3)
		for i, id := range ids {
			if _, err := bb.StageBlock(ctx, id, streaming.NopCloser(strings.NewReader(strings.Repeat(string(rune('a'+i)), 10+i))), nil); err != nil {
				t.Fatal(err)
			}
		}
		list, err := bb.GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
		if err != nil || len(list.UncommittedBlocks) != 3 || len(list.CommittedBlocks) != 0 || *list.UncommittedBlocks[1].Size != 11 {
			t.Fatalf("uncommitted: %+v, %v", list, err)
		}
		// Before its first commit the blob has no length, ETag or date to report.
		if list.BlobContentLength != nil || list.ETag != nil || list.LastModified != nil {
			t.Fatalf("uncommitted blocks alone: length %v, ETag %v, Last-Modified %v; want none", list.BlobContentLength, list.ETag, list.LastModified)
		}
		if _, err := bb.CommitBlockList(ctx, []string{ids[2], ids[0]}, &blockblob.CommitBlockListOptions{Metadata: map[string]*string{"k": to.Ptr("v")}}); err != nil {
			t.Fatal(err)
		}
		list, err = bb.GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
		if err != nil || len(list.CommittedBlocks) != 2 || len(list.UncommittedBlocks) != 0 || *list.CommittedBlocks[0].Name != ids[2] || *list.BlobContentLength != 22 {
			t.Fatalf("committed: %+v, %v", list, err)
		}
		resp, err := bb.DownloadStream(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != strings.Repeat("c", 12)+strings.Repeat("a", 10) {
			t.Fatalf("content %q", got)
		}
		_, err = bb.CommitBlockList(ctx, []string{blockIDs(9)[8]}, nil)
		wantStatus(t, err, 400, "InvalidBlockList")
	})
}

// Uploading without overwriting, as Python, .NET and the Functions host do it, and the other
// conditional headers.
func TestSDKConditions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		bb := e.container("data").NewBlockBlobClient("b")
		noOverwrite := &blockblob.UploadOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}}
		up, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("v1")), noOverwrite)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bb.Upload(ctx, streaming.NopCloser(strings.NewReader("v2")), noOverwrite)
		wantStatus(t, err, 409, "BlobAlreadyExists")
		ifMatch := func(etag azcore.ETag) *blob.AccessConditions {
			return &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}}
		}
		_, err = bb.Upload(ctx, streaming.NopCloser(strings.NewReader("v2")), &blockblob.UploadOptions{AccessConditions: ifMatch("\"0x1\"")})
		wantStatus(t, err, 412, "ConditionNotMet")
		if _, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("v2")), &blockblob.UploadOptions{AccessConditions: ifMatch(*up.ETag)}); err != nil {
			t.Fatalf("If-Match the current ETag: %v", err)
		}
		props, err := bb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bb.GetProperties(ctx, &blob.GetPropertiesOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: props.ETag}}})
		var re *azcore.ResponseError
		if !errorsAs(err, &re) || re.StatusCode != 304 {
			t.Fatalf("If-None-Match the ETag on a read: %v, want 304", err)
		}
		_, err = bb.GetProperties(ctx, &blob.GetPropertiesOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfModifiedSince: props.LastModified}}})
		if !errorsAs(err, &re) || re.StatusCode != 304 {
			t.Fatalf("If-Modified-Since on a read: %v, want 304", err)
		}
		_, err = bb.SetMetadata(ctx, nil, &blob.SetMetadataOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfUnmodifiedSince: to.Ptr(props.LastModified.Add(-3600e9))}}})
		wantStatus(t, err, 412, "ConditionNotMet")
	})
}
