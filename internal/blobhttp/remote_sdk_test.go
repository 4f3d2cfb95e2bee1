package blobhttp_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/tabula-dev/tabula/internal/store/pebble"
)

// Copies between two servers: the destination is e's server, the source another Tabula on
// another port (both devstoreaccount1, as AzCopy and Storage Explorer see two local
// emulators), which the destination fetches over HTTP.

// sourceServer is a second blob endpoint, on its own in-memory store.
func sourceServer(t *testing.T) *env {
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newEnv(t, st)
}

// wantSourceRefused fails unless err is CannotVerifyCopySource with status, reporting the
// source's status and error code (none: "") in x-ms-copy-source-status-code and
// x-ms-copy-source-error-code.
func wantSourceRefused(t *testing.T, err error, status int, sourceCode string) {
	t.Helper()
	wantStatus(t, err, status, "CannotVerifyCopySource")
	var re *azcore.ResponseError
	errors.As(err, &re)
	h := re.RawResponse.Header
	if got := h.Get("x-ms-copy-source-status-code"); got != strconv.Itoa(status) {
		t.Fatalf("x-ms-copy-source-status-code %q, want %d", got, status)
	}
	if got := h.Get("x-ms-copy-source-error-code"); got != sourceCode {
		t.Fatalf("x-ms-copy-source-error-code %q, want %q", got, sourceCode)
	}
}

func read(t *testing.T, b interface {
	DownloadStream(context.Context, *blob.DownloadStreamOptions) (blob.DownloadStreamResponse, error)
}) []byte {
	t.Helper()
	got, err := b.DownloadStream(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Body.Close()
	body, err := io.ReadAll(got.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// Every copy operation reads a source on another server, with a SAS on the source: the whole
// blob with its content properties and metadata (Copy Blob, sync or not), the whole blob with
// its properties (Put Blob From URL), a range (Put Block, Append Block, Put Page From URL).
func TestCopiesFromAnotherTabula(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		srcEnv := sourceServer(t)
		body := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640,000 bytes: stored as an object
		sc := srcEnv.container("source")
		src := sc.NewBlockBlobClient("doc")
		headers := blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain"), BlobContentEncoding: to.Ptr("identity"), BlobContentLanguage: to.Ptr("fr"),
			BlobContentDisposition: to.Ptr("inline"), BlobCacheControl: to.Ptr("no-cache")}
		if _, err := src.UploadBuffer(ctx, body, &blockblob.UploadBufferOptions{HTTPHeaders: &headers, Metadata: map[string]*string{"Origin": to.Ptr("other server"), "lower": to.Ptr("x")}}); err != nil {
			t.Fatal(err)
		}
		srcURL := readableURL(t, src)
		sum := md5.Sum(body)
		dc := e.container("dest")

		wantCopied := func(name string, b *blob.Client, withMetadata bool) {
			t.Helper()
			p, err := b.GetProperties(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if *p.ContentType != "text/plain" || *p.ContentEncoding != "identity" || *p.ContentLanguage != "fr" || *p.ContentDisposition != "inline" ||
				*p.CacheControl != "no-cache" || !bytes.Equal(p.ContentMD5, sum[:]) || *p.ContentLength != int64(len(body)) {
				t.Fatalf("%s: properties %+v", name, p)
			}
			if withMetadata && (p.Metadata["Origin"] == nil || *p.Metadata["Origin"] != "other server" || p.Metadata["Lower"] == nil) {
				t.Fatalf("%s: metadata %v", name, p.Metadata)
			}
			if !withMetadata && len(p.Metadata) != 0 {
				t.Fatalf("%s: metadata %v", name, p.Metadata)
			}
			if got := read(t, b); !bytes.Equal(got, body) {
				t.Fatalf("%s: %d bytes read back", name, len(got))
			}
		}

		async := dc.NewBlobClient("async")
		started, err := async.StartCopyFromURL(ctx, srcURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *started.CopyStatus != blob.CopyStatusTypeSuccess {
			t.Fatalf("copy status %s", *started.CopyStatus)
		}
		wantCopied("StartCopyFromURL", async, true)
		p, _ := async.GetProperties(ctx, nil)
		if *p.CopyStatus != blob.CopyStatusTypeSuccess || *p.CopySource != srcURL || *p.CopyProgress != "640000/640000" || p.CopyCompletionTime == nil || *p.BlobType != blob.BlobTypeBlockBlob {
			t.Fatalf("copy properties %v %v %v %v", *p.CopyStatus, *p.CopySource, *p.CopyProgress, p.CopyCompletionTime)
		}

		sync := dc.NewBlobClient("sync")
		if _, err := sync.CopyFromURL(ctx, srcURL, &blob.CopyFromURLOptions{SourceContentMD5: sum[:]}); err != nil {
			t.Fatal(err)
		}
		wantCopied("CopyFromURL", sync, true)
		if _, err := sync.CopyFromURL(ctx, srcURL, &blob.CopyFromURLOptions{Metadata: map[string]*string{"own": to.Ptr("1")}}); err != nil {
			t.Fatal(err)
		}
		if p, _ := sync.GetProperties(ctx, nil); len(p.Metadata) != 1 || p.Metadata["Own"] == nil {
			t.Fatalf("metadata given with the copy: %v", p.Metadata)
		}

		put := dc.NewBlockBlobClient("put")
		if _, err := put.UploadBlobFromURL(ctx, srcURL, nil); err != nil {
			t.Fatal(err)
		}
		wantCopied("UploadBlobFromURL", put.BlobClient(), false)

		blocks := dc.NewBlockBlobClient("blocks")
		ids := blockIDs(2)
		if _, err := blocks.StageBlockFromURL(ctx, ids[0], srcURL, &blockblob.StageBlockFromURLOptions{Range: blob.HTTPRange{Offset: 0, Count: 300000}}); err != nil {
			t.Fatal(err)
		}
		if _, err := blocks.StageBlockFromURL(ctx, ids[1], srcURL, &blockblob.StageBlockFromURLOptions{Range: blob.HTTPRange{Offset: 300000}}); err != nil {
			t.Fatal(err)
		}
		if _, err := blocks.CommitBlockList(ctx, ids, nil); err != nil {
			t.Fatal(err)
		}
		if got := read(t, blocks); !bytes.Equal(got, body) {
			t.Fatalf("staged blocks read back %d bytes", len(got))
		}

		log := dc.NewAppendBlobClient("log")
		if _, err := log.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		for _, r := range []blob.HTTPRange{{Offset: 0, Count: 10}, {Offset: 16, Count: 6}} {
			if _, err := log.AppendBlockFromURL(ctx, srcURL, &appendblob.AppendBlockFromURLOptions{Range: r}); err != nil {
				t.Fatal(err)
			}
		}
		if got := string(read(t, log)); got != "0123456789012345" {
			t.Fatalf("appended blocks read %q", got)
		}

		pages := dc.NewPageBlobClient("pages")
		if _, err := pages.Create(ctx, 2048, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := pages.UploadPagesFromURL(ctx, srcURL, 512, 1024, 1024, nil); err != nil {
			t.Fatal(err)
		}
		if got := read(t, pages); !bytes.Equal(got[1024:], body[512:1536]) || !bytes.Equal(got[:1024], make([]byte, 1024)) {
			t.Fatal("pages from URL hold other bytes")
		}

		// A page blob and an append blob keep their type through Copy Blob.
		srcPages := sc.NewPageBlobClient("pages")
		if _, err := srcPages.Create(ctx, 1024, nil); err != nil {
			t.Fatal(err)
		}
		copied := dc.NewBlobClient("pagecopy")
		if _, err := copied.StartCopyFromURL(ctx, readableURL(t, srcPages), nil); err != nil {
			t.Fatal(err)
		}
		if p, err := copied.GetProperties(ctx, nil); err != nil || *p.BlobType != blob.BlobTypePageBlob || *p.ContentLength != 1024 {
			t.Fatalf("page blob copy: %v", err)
		}
	})
}

// A public container's blob needs no SAS; a non-Azure server's object is copied too.
func TestCopiesFromPublicSources(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		srcEnv := sourceServer(t)
		pub := srcEnv.client.ServiceClient().NewContainerClient("public")
		if _, err := pub.Create(ctx, &container.CreateOptions{Access: to.Ptr(container.PublicAccessTypeBlob)}); err != nil {
			t.Fatal(err)
		}
		src := pub.NewBlockBlobClient("open")
		if _, err := src.UploadBuffer(ctx, []byte("anyone may read this"), nil); err != nil {
			t.Fatal(err)
		}
		dc := e.container("dest")
		for name, copyFn := range map[string]func(b *blockblob.Client) error{
			"StartCopyFromURL": func(b *blockblob.Client) error { _, err := b.StartCopyFromURL(ctx, src.URL(), nil); return err },
			"CopyFromURL":      func(b *blockblob.Client) error { _, err := b.CopyFromURL(ctx, src.URL(), nil); return err },
			"UploadBlobFromURL": func(b *blockblob.Client) error {
				_, err := b.UploadBlobFromURL(ctx, src.URL(), nil)
				return err
			},
		} {
			b := dc.NewBlockBlobClient(name)
			if err := copyFn(b); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := string(read(t, b)); got != "anyone may read this" {
				t.Fatalf("%s: read %q", name, got)
			}
		}

		// The same source in a private container, without SAS: the source's refusal (an
		// anonymous read of a private blob, at versions since 2019-12-12).
		priv := srcEnv.container("private")
		hidden := priv.NewBlockBlobClient("hidden")
		if _, err := hidden.UploadBuffer(ctx, []byte("secret"), nil); err != nil {
			t.Fatal(err)
		}
		_, err := dc.NewBlockBlobClient("refused").UploadBlobFromURL(ctx, hidden.URL(), nil)
		wantSourceRefused(t, err, 401, "NoAuthenticationInformation")
	})
}

// A source that refuses is the copy's CannotVerifyCopySource with the source's status and
// error code; sums that do not match the fetched bytes are the checksum's error; the
// destination is left as it was.
func TestCopiesFromAnotherTabulaRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		srcEnv := sourceServer(t)
		sc := srcEnv.container("source")
		src := sc.NewBlockBlobClient("doc")
		up, err := src.UploadBuffer(ctx, []byte("source bytes"), nil)
		if err != nil {
			t.Fatal(err)
		}
		srcURL := readableURL(t, src)
		dc := e.container("dest")
		dst := dc.NewBlockBlobClient("dst")
		before, err := dst.UploadBuffer(ctx, []byte("before"), nil)
		if err != nil {
			t.Fatal(err)
		}

		missing := readableURL(t, sc.NewBlockBlobClient("missing"))
		_, err = dst.UploadBlobFromURL(ctx, missing, nil)
		wantSourceRefused(t, err, 404, "BlobNotFound")
		_, err = dst.CopyFromURL(ctx, missing, nil)
		wantSourceRefused(t, err, 404, "BlobNotFound")
		_, err = dst.StartCopyFromURL(ctx, missing, nil)
		wantSourceRefused(t, err, 404, "BlobNotFound")

		forged, _ := url.Parse(srcURL)
		q := forged.Query()
		q.Set("sig", "AAAA"+q.Get("sig")[4:])
		forged.RawQuery = q.Encode()
		_, err = dst.UploadBlobFromURL(ctx, forged.String(), nil)
		wantSourceRefused(t, err, 403, "AuthenticationFailed")

		stale := &blob.SourceModifiedAccessConditions{SourceIfMatch: to.Ptr(azcore.ETag(`"0x8D000000000000"`))}
		_, err = dst.UploadBlobFromURL(ctx, srcURL, &blockblob.UploadBlobFromURLOptions{SourceModifiedAccessConditions: stale})
		wantSourceRefused(t, err, 412, "ConditionNotMet")
		_, err = dst.StageBlockFromURL(ctx, blockIDs(1)[0], srcURL, &blockblob.StageBlockFromURLOptions{SourceModifiedAccessConditions: &blob.SourceModifiedAccessConditions{SourceIfNoneMatch: up.ETag}})
		wantSourceRefused(t, err, 304, "ConditionNotMet") // the source's 304 says its code too
		// Copy Blob's own source conditions: 412 SourceConditionNotMet.
		_, err = dst.StartCopyFromURL(ctx, srcURL, &blob.StartCopyFromURLOptions{SourceModifiedAccessConditions: stale})
		wantStatus(t, err, 412, "SourceConditionNotMet")

		_, err = dst.CopyFromURL(ctx, srcURL, &blob.CopyFromURLOptions{SourceContentMD5: make([]byte, 16)})
		wantStatus(t, err, 400, "Md5Mismatch")
		_, err = dst.StageBlockFromURL(ctx, blockIDs(1)[0], srcURL, &blockblob.StageBlockFromURLOptions{SourceContentValidation: blob.SourceContentValidationTypeCRC64(make([]byte, 8))})
		wantStatus(t, err, 400, "Crc64Mismatch")

		got, err := dst.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *got.ETag != *before.ETag || string(read(t, dst)) != "before" {
			t.Fatal("the refused copies changed the destination")
		}
		if bl, err := dst.GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil); err != nil || len(bl.UncommittedBlocks) != 0 {
			t.Fatalf("refused Put Block From URL staged %v (%v)", bl.UncommittedBlocks, err)
		}
	})
}

// The destination's lease and conditions are judged before a source that cannot be reached:
// its refusals, not the source's.
func TestCopiesFromUnreachableSourcesJudgeTheDestinationFirst(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		unreachable := "http://127.0.0.1:1/devstoreaccount1/source/doc"
		dc := e.container("dest")
		dst := dc.NewBlockBlobClient("leased")
		if _, err := dst.UploadBuffer(ctx, []byte("held"), nil); err != nil {
			t.Fatal(err)
		}
		lc, err := lease.NewBlobClient(dst, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		_, err = dst.UploadBlobFromURL(ctx, unreachable, nil)
		wantStatus(t, err, 412, "LeaseIdMissing")
		_, err = dst.StartCopyFromURL(ctx, unreachable, nil)
		wantStatus(t, err, 412, "LeaseIdMissing")
		_, err = dst.StageBlockFromURL(ctx, blockIDs(1)[0], unreachable, nil)
		wantStatus(t, err, 412, "LeaseIdMissing")

		log := dc.NewAppendBlobClient("log")
		if _, err := log.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = log.AppendBlockFromURL(ctx, unreachable, &appendblob.AppendBlockFromURLOptions{AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: to.Ptr(int64(5))}})
		wantStatus(t, err, 412, "AppendPositionConditionNotMet")
		pages := dc.NewPageBlobClient("pages")
		if _, err := pages.Create(ctx, 512, nil); err != nil {
			t.Fatal(err)
		}
		_, err = pages.UploadPagesFromURL(ctx, unreachable, 0, 512, 512, nil)
		wantStatus(t, err, 416, "InvalidPageRange")

		// With the destination's conditions met: the source's.
		_, err = log.AppendBlockFromURL(ctx, unreachable, nil)
		wantStatus(t, err, 500, "CannotVerifyCopySource")
		var re *azcore.ResponseError
		if errors.As(err, &re) && !strings.Contains(re.Error(), "127.0.0.1:1") {
			t.Fatalf("the error does not say what failed: %v", err)
		}
	})
}

// A source on another server written with a customer-provided key is read with the key the
// copy names (x-ms-source-encryption-*, sent on as the GET's x-ms-encryption-*), and refused
// without it.
func TestASourceOnAnotherServerIsReadWithItsCustomerKey(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		srcEnv := sourceServer(t)
		key := bytes.Repeat([]byte{7}, 32)
		sum := sha256.Sum256(key)
		keyed := &blob.CPKInfo{EncryptionKey: to.Ptr(base64.StdEncoding.EncodeToString(key)),
			EncryptionKeySHA256: to.Ptr(base64.StdEncoding.EncodeToString(sum[:])), EncryptionAlgorithm: to.Ptr(blob.EncryptionAlgorithmTypeAES256)}
		src := srcEnv.container("keyed").NewBlockBlobClient("secret")
		if _, err := src.Upload(ctx, streaming.NopCloser(strings.NewReader("only with the key")), &blockblob.UploadOptions{CPKInfo: keyed}); err != nil {
			t.Fatal(err)
		}
		dst := e.container("copies").NewBlockBlobClient("secret")
		_, err := dst.UploadBlobFromURL(ctx, readableURL(t, src), nil)
		wantSourceRefused(t, err, 409, "BlobUsesCustomerSpecifiedEncryption")
		source := &blob.SourceCPKInfo{SourceEncryptionKey: keyed.EncryptionKey, SourceEncryptionKeySHA256: keyed.EncryptionKeySHA256, SourceEncryptionAlgorithm: keyed.EncryptionAlgorithm}
		if _, err := dst.UploadBlobFromURL(ctx, readableURL(t, src), &blockblob.UploadBlobFromURLOptions{SourceCustomerProvidedKey: source}); err != nil {
			t.Fatalf("Put Blob From URL with the source's key: %v", err)
		}
		if got := read(t, dst); string(got) != "only with the key" {
			t.Fatalf("the copy holds %q", got)
		}
	})
}

// Put Blob From URL with x-ms-copy-source-tag-option COPY from another server reads the
// source's tags (Get Blob Tags with the source URL's SAS, which must allow 't'); a SAS that
// does not is the source's refusal.
func TestASourceOnAnotherServerGivesItsTags(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		srcEnv := sourceServer(t)
		src := srcEnv.container("tagged").NewBlockBlobClient("doc")
		if _, err := src.Upload(ctx, streaming.NopCloser(strings.NewReader("tagged bytes")), &blockblob.UploadOptions{Tags: map[string]string{"project": "x", "stage": "final"}}); err != nil {
			t.Fatal(err)
		}
		withTags, err := src.GetSASURL(sas.BlobPermissions{Read: true, Tag: true}, time.Now().Add(time.Hour), nil)
		if err != nil {
			t.Fatal(err)
		}
		dst := e.container("copies").NewBlockBlobClient("doc")
		copyTags := &blockblob.UploadBlobFromURLOptions{CopySourceTags: to.Ptr(blockblob.BlobCopySourceTagsCopy)}
		_, err = dst.UploadBlobFromURL(ctx, readableURL(t, src), copyTags)
		wantSourceRefused(t, err, 403, "AuthorizationPermissionMismatch")
		if _, err := dst.UploadBlobFromURL(ctx, withTags, copyTags); err != nil {
			t.Fatal(err)
		}
		got, err := dst.GetTags(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		tags := map[string]string{}
		for _, tag := range got.BlobTagSet {
			tags[*tag.Key] = *tag.Value
		}
		if len(tags) != 2 || tags["project"] != "x" || tags["stage"] != "final" || string(read(t, dst)) != "tagged bytes" {
			t.Fatalf("the copy's tags: %v", tags)
		}
	})
}
