package blobhttp_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
)

// The Azure Functions host's primary-host lock (blob.md §19) through the SDK: two hosts race
// for a 15 s lease with proposed bare-hex ids on locks/<host>/host; the loser gets 409
// LeaseAlreadyPresent; the winner writes its owner metadata with the lease id, renews, and a
// break ends it.
func TestSDKFunctionsHostLock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		c := e.client.ServiceClient().NewContainerClient("azure-webjobs-hosts")
		bb := c.NewBlockBlobClient("locks/myhostid/host")
		ids := []string{"000000000000000000000000A1B2C3D4", "000000000000000000000000B5C6D7E8"}
		leases := make([]*lease.BlobClient, 2)
		for i := range leases {
			var err error
			if leases[i], err = lease.NewBlobClient(bb, &lease.BlobClientOptions{LeaseID: &ids[i]}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := leases[0].AcquireLease(ctx, 15, nil)
		wantStatus(t, err, 404, "ContainerNotFound")
		if _, err := c.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = leases[0].AcquireLease(ctx, 15, nil)
		wantStatus(t, err, 404, "BlobNotFound")
		noOverwrite := &blockblob.UploadOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}}
		if _, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("")), noOverwrite); err != nil {
			t.Fatal(err)
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range leases {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var resp lease.BlobAcquireResponse
				resp, errs[i] = leases[i].AcquireLease(ctx, 15, nil)
				if errs[i] == nil && *resp.LeaseID != ids[i] {
					t.Errorf("lease id %s, want the proposed %s", *resp.LeaseID, ids[i])
				}
			}()
		}
		wg.Wait()
		winner := 0
		if errs[0] != nil {
			winner = 1
		}
		if errs[winner] != nil {
			t.Fatalf("nobody won: %v %v", errs[0], errs[1])
		}
		wantStatus(t, errs[1-winner], 409, "LeaseAlreadyPresent")
		_, err = bb.SetMetadata(ctx, map[string]*string{"FunctionInstance": to.Ptr("me")}, &blob.SetMetadataOptions{AccessConditions: &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: &ids[winner]}}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = bb.SetMetadata(ctx, nil, nil)
		wantStatus(t, err, 412, "LeaseIdMissing")
		if _, err := leases[winner].RenewLease(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = leases[1-winner].RenewLease(ctx, nil)
		wantStatus(t, err, 409, "LeaseIdMismatchWithLeaseOperation")
		props, err := bb.GetProperties(ctx, nil)
		if err != nil || *props.LeaseState != lease.StateTypeLeased || *props.LeaseStatus != lease.StatusTypeLocked ||
			*props.LeaseDuration != lease.DurationTypeFixed || *props.Metadata["Functioninstance"] != "me" {
			t.Fatalf("HEAD of the lock: %+v, %v", props, err)
		}
		br, err := leases[1-winner].BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: to.Ptr(int32(0))})
		if err != nil || *br.LeaseTime != 0 {
			t.Fatalf("break: %+v, %v", br, err)
		}
		_, err = leases[winner].RenewLease(ctx, nil)
		wantStatus(t, err, 409, "LeaseIsBrokenAndCannotBeRenewed")
		if _, err := leases[1-winner].AcquireLease(ctx, 15, nil); err != nil {
			t.Fatalf("acquire after the break: %v", err)
		}
		if _, err := leases[1-winner].ChangeLease(ctx, "0f8b7c2a-1111-4222-8333-444455556666", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := leases[1-winner].ReleaseLease(ctx, nil); err != nil {
			t.Fatalf("release with the changed id: %v", err)
		}
	})
}

func TestSDKAppendBlobs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		ab := e.container("logs").NewAppendBlobClient("app.log")
		if _, err := ab.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		for i, line := range []string{"one\n", "two\n"} {
			resp, err := ab.AppendBlock(ctx, streaming.NopCloser(strings.NewReader(line)), &appendblob.AppendBlockOptions{
				AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: to.Ptr(int64(4 * i))},
			})
			if err != nil || *resp.BlobCommittedBlockCount != int32(i+1) || *resp.BlobAppendOffset != fmt.Sprint(4*i) {
				t.Fatalf("append %d: %+v, %v", i, resp, err)
			}
		}
		_, err := ab.AppendBlock(ctx, streaming.NopCloser(strings.NewReader("x")), &appendblob.AppendBlockOptions{
			AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: to.Ptr(int64(0))},
		})
		wantStatus(t, err, 412, "AppendPositionConditionNotMet")
		_, err = ab.AppendBlock(ctx, streaming.NopCloser(strings.NewReader("three\n")), &appendblob.AppendBlockOptions{
			AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{MaxSize: to.Ptr(int64(10))},
		})
		wantStatus(t, err, 412, "MaxBlobSizeConditionNotMet")
		if _, err := ab.Seal(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = ab.AppendBlock(ctx, streaming.NopCloser(strings.NewReader("late\n")), nil)
		wantStatus(t, err, 409, "BlobIsSealed")
		props, err := ab.GetProperties(ctx, nil)
		if err != nil || *props.BlobCommittedBlockCount != 2 || !*props.IsSealed || *props.BlobType != blob.BlobTypeAppendBlob {
			t.Fatalf("properties %+v, %v", props, err)
		}
		resp, err := ab.DownloadStream(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != "one\ntwo\n" {
			t.Fatalf("content %q", got)
		}
	})
}

func TestSDKPageBlobs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		pb := e.container("disks").NewPageBlobClient("disk.vhd")
		if _, err := pb.Create(ctx, 8*512, &pageblob.CreateOptions{SequenceNumber: to.Ptr(int64(3))}); err != nil {
			t.Fatal(err)
		}
		page := bytes.Repeat([]byte{7}, 1024)
		if _, err := pb.UploadPages(ctx, streaming.NopCloser(bytes.NewReader(page)), blob.HTTPRange{Offset: 512, Count: 1024}, nil); err != nil {
			t.Fatal(err)
		}
		snap, err := pb.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pb.ClearPages(ctx, blob.HTTPRange{Offset: 1024, Count: 512}, nil); err != nil {
			t.Fatal(err)
		}
		_, err = pb.UploadPages(ctx, streaming.NopCloser(bytes.NewReader(page[:100])), blob.HTTPRange{Offset: 0, Count: 100}, nil)
		wantStatus(t, err, 400, "InvalidHeaderValue")
		pager := pb.NewGetPageRangesPager(nil)
		var ranges []string
		for pager.More() {
			resp, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range resp.PageRange {
				ranges = append(ranges, fmt.Sprintf("%d-%d", *r.Start, *r.End))
			}
		}
		if fmt.Sprint(ranges) != "[512-1023]" {
			t.Fatalf("page ranges %v", ranges)
		}
		diff := pb.NewGetPageRangesDiffPager(&pageblob.GetPageRangesDiffOptions{PrevSnapshot: snap.Snapshot})
		var cleared []string
		for diff.More() {
			resp, err := diff.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range resp.ClearRange {
				cleared = append(cleared, fmt.Sprintf("%d-%d", *r.Start, *r.End))
			}
		}
		if fmt.Sprint(cleared) != "[1024-1535]" {
			t.Fatalf("cleared since the snapshot %v", cleared)
		}
		if _, err := pb.Resize(ctx, 4*512, nil); err != nil {
			t.Fatal(err)
		}
		seq, err := pb.UpdateSequenceNumber(ctx, &pageblob.UpdateSequenceNumberOptions{ActionType: to.Ptr(pageblob.SequenceNumberActionTypeIncrement)})
		if err != nil || *seq.BlobSequenceNumber != 4 {
			t.Fatalf("increment: %+v, %v", seq, err)
		}
		got := make([]byte, 4*512)
		if _, err := pb.DownloadBuffer(ctx, got, nil); err != nil {
			t.Fatal(err)
		}
		want := append(append(make([]byte, 512), page[:512]...), make([]byte, 1024)...)
		if !bytes.Equal(got, want) {
			t.Fatal("page blob content differs")
		}
	})
}

func TestSDKSnapshotsAndDeletes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		c := e.container("data")
		bb := c.NewBlockBlobClient("b")
		if _, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("v1")), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := bb.Undelete(ctx, nil); err != nil {
			t.Fatalf("undeleting a live blob: %v", err)
		}
		snap, err := bb.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("v2")), nil); err != nil {
			t.Fatal(err)
		}
		sc, err := bb.WithSnapshot(*snap.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := sc.DownloadStream(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != "v1" {
			t.Fatalf("snapshot content %q", got)
		}
		pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Snapshots: true}})
		page, err := pager.NextPage(ctx)
		if err != nil || len(page.Segment.BlobItems) != 2 || *page.Segment.BlobItems[0].Snapshot != *snap.Snapshot || page.Segment.BlobItems[1].Snapshot != nil {
			t.Fatalf("listing with snapshots: %+v, %v", page.Segment, err)
		}
		_, err = bb.Delete(ctx, nil)
		wantStatus(t, err, 409, "SnapshotsPresent")
		if _, err := bb.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
			t.Fatal(err)
		}
		_, err = sc.GetProperties(ctx, nil)
		wantStatus(t, err, 404, "BlobNotFound")
	})
}

func TestSDKCopies(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		src := e.container("src")
		e.container("dst")
		body := randomBytes(700<<10, 3)
		if _, err := e.client.UploadBuffer(ctx, "src", "big", body, &azblob.UploadBufferOptions{BlockSize: 256 << 10, Metadata: map[string]*string{"from": to.Ptr("src")}}); err != nil {
			t.Fatal(err)
		}
		srcURL := src.NewBlobClient("big").URL()
		dst := e.client.ServiceClient().NewContainerClient("dst")
		copied, err := dst.NewBlobClient("copy").StartCopyFromURL(ctx, srcURL, nil)
		if err != nil || *copied.CopyStatus != blob.CopyStatusTypeSuccess {
			t.Fatalf("StartCopyFromURL: %+v, %v", copied, err)
		}
		props, err := dst.NewBlobClient("copy").GetProperties(ctx, nil)
		if err != nil || *props.CopyID != *copied.CopyID || *props.CopySource != srcURL || *props.Metadata["From"] != "src" {
			t.Fatalf("copy properties %+v, %v", props, err)
		}
		_, err = dst.NewBlobClient("copy").AbortCopyFromURL(ctx, *copied.CopyID, nil)
		wantStatus(t, err, 409, "NoPendingCopyOperation")
		// Put Blob From URL reads its source as a client would: the request's own key
		// authorizes nothing there (azblob's live TestPutBlobFromURLNegative).
		_, err = dst.NewBlockBlobClient("fromurl").UploadBlobFromURL(ctx, srcURL, nil)
		wantStatus(t, err, 401, "CannotVerifyCopySource")
		sasURL := readableURL(t, src.NewBlobClient("big"))
		if _, err := dst.NewBlockBlobClient("fromurl").UploadBlobFromURL(ctx, sasURL, nil); err != nil {
			t.Fatal(err)
		}
		staged := dst.NewBlockBlobClient("staged")
		if _, err := staged.StageBlockFromURL(ctx, blockIDs(1)[0], sasURL, &blockblob.StageBlockFromURLOptions{Range: blob.HTTPRange{Offset: 100, Count: 1000}}); err != nil {
			t.Fatal(err)
		}
		if _, err := staged.CommitBlockList(ctx, blockIDs(1), nil); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string][]byte{"copy": body, "fromurl": body, "staged": body[100:1100]} {
			got := make([]byte, len(want))
			if _, err := e.client.DownloadBuffer(ctx, "dst", name, got, nil); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: content differs (%v)", name, err)
			}
		}
		_, err = dst.NewBlobClient("x").StartCopyFromURL(ctx, src.NewBlobClient("missing").URL(), nil)
		wantStatus(t, err, 404, "CannotVerifyCopySource")
	})
}

func TestSDKListBlobs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		c := e.container("tree")
		for _, name := range []string{"a.txt", "dir/1", "dir/2", "dir/sub/3", "z"} {
			if _, err := c.NewBlockBlobClient(name).Upload(ctx, streaming.NopCloser(strings.NewReader(name)), &blockblob.UploadOptions{Metadata: map[string]*string{"name": to.Ptr("x")}}); err != nil {
				t.Fatal(err)
			}
		}
		pager := c.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{MaxResults: to.Ptr(int32(2)), Include: container.ListBlobsInclude{Metadata: true}})
		var entries []string
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range page.Segment.BlobPrefixes {
				entries = append(entries, *p.Name)
			}
			for _, b := range page.Segment.BlobItems {
				entries = append(entries, *b.Name)
				if *b.Metadata["name"] != "x" || *b.Properties.ContentLength != int64(len(*b.Name)) {
					t.Errorf("%s: %+v", *b.Name, b)
				}
			}
		}
		// The SDK puts a page's prefixes before its blobs.
		if fmt.Sprint(entries) != "[dir/ a.txt z]" {
			t.Fatalf("hierarchy: %v", entries)
		}
		flat := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr("dir/")})
		page, err := flat.NextPage(ctx)
		if err != nil || len(page.Segment.BlobItems) != 3 || *page.Segment.BlobItems[2].Name != "dir/sub/3" {
			t.Fatalf("flat with prefix: %+v, %v", page.Segment, err)
		}
	})
}

func TestSDKTagsAndTiers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		bb := e.container("data").NewBlockBlobClient("b")
		if _, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("x")), &blockblob.UploadOptions{Tags: map[string]string{"project": "tabula"}}); err != nil {
			t.Fatal(err)
		}
		tags, err := bb.GetTags(ctx, nil)
		if err != nil || len(tags.BlobTagSet) != 1 || *tags.BlobTagSet[0].Key != "project" {
			t.Fatalf("GetTags: %+v, %v", tags, err)
		}
		if _, err := bb.SetTags(ctx, map[string]string{"a": "1", "b": "2"}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := bb.SetTier(ctx, blob.AccessTierCool, nil); err != nil {
			t.Fatal(err)
		}
		props, err := bb.GetProperties(ctx, nil)
		if err != nil || *props.TagCount != 2 || *props.AccessTier != "Cool" {
			t.Fatalf("properties %+v, %v", props, err)
		}
	})
}

// A container SAS reads and lists; a public container serves anonymous reads; a private one
// answers anonymous requests 401 NoAuthenticationInformation.
func TestSDKSASAndAnonymousAccess(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		c := e.container("shared")
		if _, err := c.NewBlockBlobClient("doc").Upload(ctx, streaming.NopCloser(strings.NewReader("content")), nil); err != nil {
			t.Fatal(err)
		}
		sasURL, err := c.GetSASURL(sas.ContainerPermissions{Read: true, List: true}, time.Now().Add(time.Hour), nil)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := container.NewClientWithNoCredential(sasURL, &container.ClientOptions{ClientOptions: clientOptions().ClientOptions})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sc.NewListBlobsFlatPager(nil).NextPage(ctx); err != nil {
			t.Fatalf("list with a container SAS: %v", err)
		}
		resp, err := sc.NewBlobClient("doc").DownloadStream(ctx, nil)
		if err != nil {
			t.Fatalf("read with a container SAS: %v", err)
		}
		resp.Body.Close()
		_, err = sc.NewBlockBlobClient("new").Upload(ctx, streaming.NopCloser(strings.NewReader("x")), nil)
		wantStatus(t, err, 403, "AuthorizationPermissionMismatch")

		anonymous, err := azblob.NewClientWithNoCredential(e.url, clientOptions())
		if err != nil {
			t.Fatal(err)
		}
		_, err = anonymous.DownloadStream(ctx, "shared", "doc", nil)
		wantStatus(t, err, 401, "NoAuthenticationInformation")
		if _, err := c.SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{Access: to.Ptr(container.PublicAccessTypeBlob)}); err != nil {
			t.Fatal(err)
		}
		resp, err = anonymous.DownloadStream(ctx, "shared", "doc", nil)
		if err != nil {
			t.Fatalf("anonymous read of a public blob: %v", err)
		}
		resp.Body.Close()
		_, err = anonymous.NewListBlobsFlatPager("shared", nil).NextPage(ctx)
		wantStatus(t, err, 401, "NoAuthenticationInformation")
		r, err := http.Get(e.url + "/shared/doc")
		if err != nil || r.StatusCode != 200 {
			t.Fatalf("plain GET of a public blob: %v %v", r, err)
		}
		r.Body.Close()
	})
}

// Put Blob From URL with some content headers: those sent replace the source's, the others
// are the source's (the JS SDK's live "set some of the properties on the request"); with
// x-ms-copy-source-blob-properties: false only those sent are kept.
func TestSDKPutBlobFromURLMergesContentHeaders(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		c := e.container("merge")
		src := c.NewBlockBlobClient("src")
		_, err := src.Upload(ctx, streaming.NopCloser(strings.NewReader("hello")), &blockblob.UploadOptions{HTTPHeaders: &blob.HTTPHeaders{
			BlobCacheControl: to.Ptr("no-cache"), BlobContentDisposition: to.Ptr("inline"), BlobContentEncoding: to.Ptr("identity"),
			BlobContentLanguage: to.Ptr("fr"), BlobContentType: to.Ptr("text/plain")}})
		if err != nil {
			t.Fatal(err)
		}
		sent := &blob.HTTPHeaders{BlobContentLanguage: to.Ptr("en"), BlobContentType: to.Ptr("text/x-greeting")}
		for _, tc := range []struct {
			keep bool
			want string
		}{
			{true, "no-cache|inline|identity|en|text/x-greeting"},
			{false, "|||en|text/x-greeting"},
		} {
			dst := c.NewBlockBlobClient(fmt.Sprint("dst-", tc.keep))
			if _, err := dst.UploadBlobFromURL(ctx, readableURL(t, src.BlobClient()), &blockblob.UploadBlobFromURLOptions{HTTPHeaders: sent, CopySourceBlobProperties: to.Ptr(tc.keep)}); err != nil {
				t.Fatal(err)
			}
			p, err := dst.GetProperties(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			str := func(s *string) string {
				if s == nil {
					return ""
				}
				return *s
			}
			if got := strings.Join([]string{str(p.CacheControl), str(p.ContentDisposition), str(p.ContentEncoding), str(p.ContentLanguage), str(p.ContentType)}, "|"); got != tc.want {
				t.Errorf("copy-source-blob-properties %v: %s, want %s", tc.keep, got, tc.want)
			}
		}
	})
}

// The codes of unmet copy conditions: the destination's are ConditionNotMet, but for an
// If-Match no ETag can be on Put Blob From URL (TargetConditionNotMet), the source's ETag
// conditions SourceConditionNotMet (the JS SDK's live conditional tests, azblob v1.8.3's live
// TestBlobStartCopyDest*False and TestPutBlobFromUrlDest*False).
func TestSDKCopyConditionCodes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		c := e.container("conds")
		src := c.NewBlockBlobClient("src")
		if _, err := src.Upload(ctx, streaming.NopCloser(strings.NewReader("hello")), &blockblob.UploadOptions{Tags: map[string]string{"t": "v"}}); err != nil {
			t.Fatal(err)
		}
		dst := c.NewBlockBlobClient("dst")
		if _, err := dst.Upload(ctx, streaming.NopCloser(strings.NewReader("old")), nil); err != nil {
			t.Fatal(err)
		}
		stale := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: to.Ptr(azcore.ETag(`"0x1"`))}}
		_, err := dst.UploadBlobFromURL(ctx, readableURL(t, src.BlobClient()), &blockblob.UploadBlobFromURLOptions{AccessConditions: stale})
		wantStatus(t, err, 412, "ConditionNotMet")
		made := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: to.Ptr(azcore.ETag(`"invalidetag"`))}}
		_, err = dst.UploadBlobFromURL(ctx, readableURL(t, src.BlobClient()), &blockblob.UploadBlobFromURLOptions{AccessConditions: made})
		wantStatus(t, err, 412, "TargetConditionNotMet")
		_, err = dst.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{AccessConditions: stale})
		wantStatus(t, err, 412, "ConditionNotMet")
		later := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfModifiedSince: to.Ptr(time.Now().Add(time.Hour))}}
		_, err = dst.UploadBlobFromURL(ctx, readableURL(t, src.BlobClient()), &blockblob.UploadBlobFromURLOptions{AccessConditions: later})
		wantStatus(t, err, 412, "ConditionNotMet")
		_, err = dst.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfTags: to.Ptr("t = 'v'")}}})
		wantStatus(t, err, 412, "ConditionNotMet")
		_, err = dst.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{SourceModifiedAccessConditions: &blob.SourceModifiedAccessConditions{SourceIfTags: to.Ptr("t = 'other'")}})
		wantStatus(t, err, 412, "ConditionNotMet")
		_, err = dst.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{SourceModifiedAccessConditions: &blob.SourceModifiedAccessConditions{SourceIfMatch: to.Ptr(azcore.ETag(`"0x1"`))}})
		wantStatus(t, err, 412, "SourceConditionNotMet")
		if _, err := dst.StartCopyFromURL(ctx, src.URL(), &blob.StartCopyFromURLOptions{SourceModifiedAccessConditions: &blob.SourceModifiedAccessConditions{SourceIfTags: to.Ptr("t = 'v'")}}); err != nil {
			t.Fatal(err)
		}
	})
}
