package blobhttp_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
)

// Get Page Ranges pages its answer with maxresults and marker (≥ 2020-10-02), PageRange and
// ClearRange entries counted together, and the SDK's pagers follow the markers to the end.
func TestSDKPageRangesArePaged(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		pb := e.container("disks").NewPageBlobClient("sparse.vhd")
		if _, err := pb.Create(ctx, 16*512, nil); err != nil {
			t.Fatal(err)
		}
		// Pages 0, 2-3, 6, 9 and 12: five ranges.
		for _, at := range []int64{0, 2, 3, 6, 9, 12} {
			page := bytes.Repeat([]byte{byte(at + 1)}, 512)
			if _, err := pb.UploadPages(ctx, streaming.NopCloser(bytes.NewReader(page)), blob.HTTPRange{Offset: at * 512, Count: 512}, nil); err != nil {
				t.Fatal(err)
			}
		}
		pages := func(pager interface {
			More() bool
		}, next func() ([]string, error)) []string {
			var out []string
			for pager.More() {
				got, err := next()
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, fmt.Sprint(got))
			}
			return out
		}
		list := pb.NewGetPageRangesPager(&pageblob.GetPageRangesOptions{MaxResults: to.Ptr(int32(2))})
		got := pages(list, func() ([]string, error) {
			resp, err := list.NextPage(ctx)
			var out []string
			for _, r := range resp.PageRange {
				out = append(out, fmt.Sprintf("%d-%d", *r.Start, *r.End))
			}
			return out, err
		})
		if want := "[[0-511 1024-2047] [3072-3583 4608-5119] [6144-6655]]"; fmt.Sprint(got) != want {
			t.Fatalf("pages of page ranges %v, want %s", got, want)
		}

		snap, err := pb.CreateSnapshot(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pb.ClearPages(ctx, blob.HTTPRange{Offset: 2 * 512, Count: 2 * 512}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := pb.UploadPages(ctx, streaming.NopCloser(bytes.NewReader(make([]byte, 512))), blob.HTTPRange{Offset: 14 * 512, Count: 512}, nil); err != nil {
			t.Fatal(err)
		}
		diff := pb.NewGetPageRangesDiffPager(&pageblob.GetPageRangesDiffOptions{PrevSnapshot: snap.Snapshot, MaxResults: to.Ptr(int32(1))})
		got = pages(diff, func() ([]string, error) {
			resp, err := diff.NextPage(ctx)
			var out []string
			for _, r := range resp.PageRange {
				out = append(out, fmt.Sprintf("written %d-%d", *r.Start, *r.End))
			}
			for _, r := range resp.ClearRange {
				out = append(out, fmt.Sprintf("cleared %d-%d", *r.Start, *r.End))
			}
			return out, err
		})
		if want := "[[cleared 1024-2047] [written 7168-7679]]"; fmt.Sprint(got) != want {
			t.Fatalf("pages of the diff %v, want %s", got, want)
		}

		_, err = pb.NewGetPageRangesPager(&pageblob.GetPageRangesOptions{Marker: to.Ptr("not-a-marker")}).NextPage(ctx)
		wantStatus(t, err, 400, "InvalidQueryParameterValue")
	})
}

// A premium account's page blobs are in disk tiers: the one their size infers, P10 at the
// least, until Set Blob Tier or a copy names one at least as large (azblob's recorded
// TestBlobTierInferred and TestBlobSetTierAllTiersOnPageBlob, the Python SDK's recorded
// test_blob_tier_set_tier_api and test_blob_tier_copy_blob); standard accounts' page blobs
// take none.
func TestSDKPremiumPageBlobTiers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		pb := e.container("disks").NewPageBlobClient("os.vhd")
		if _, err := pb.Create(ctx, 1024, nil); err != nil {
			t.Fatal(err)
		}
		_, err := pb.SetTier(ctx, blob.AccessTierP10, nil)
		wantStatus(t, err, 400, "InvalidHeaderValue") // a standard account
		e.svc.Premium = func(string) bool { return true }
		props, err := pb.GetProperties(ctx, nil)
		if err != nil || *props.AccessTier != "P10" || props.AccessTierInferred == nil || !*props.AccessTierInferred {
			t.Fatalf("inferred tier: %v, %v, %v", props.AccessTier, props.AccessTierInferred, err)
		}
		for _, tier := range []blob.AccessTier{blob.AccessTierP4, blob.AccessTierP6, blob.AccessTierP10, blob.AccessTierP20, blob.AccessTierP30, blob.AccessTierP40, blob.AccessTierP50} {
			if _, err := pb.SetTier(ctx, tier, nil); err != nil {
				t.Fatalf("SetTier %s: %v", tier, err)
			}
			props, err := pb.GetProperties(ctx, nil)
			if err != nil || *props.AccessTier != string(tier) || props.AccessTierInferred != nil {
				t.Fatalf("after SetTier %s: %v, %v, %v", tier, props.AccessTier, props.AccessTierInferred, err)
			}
		}
		_, err = pb.SetTier(ctx, blob.AccessTierHot, nil)
		wantStatus(t, err, 400, "InvalidBlobTier")
		big := e.container("big").NewPageBlobClient("data.vhd")
		if _, err := big.Create(ctx, 40<<30, nil); err != nil {
			t.Fatal(err)
		}
		_, err = big.SetTier(ctx, blob.AccessTierP4, nil)
		wantStatus(t, err, 409, "BlobTierInadequateForContentLength")
		bigs := e.client.ServiceClient().NewContainerClient("big")
		if _, err := bigs.NewPageBlobClient("huge.vhd").Create(ctx, 200<<30, nil); err != nil {
			t.Fatal(err)
		}
		page, err := e.client.ServiceClient().NewContainerClient("big").NewListBlobsFlatPager(nil).NextPage(ctx)
		if err != nil || *page.Segment.BlobItems[0].Properties.AccessTier != "P10" || *page.Segment.BlobItems[1].Properties.AccessTier != "P15" {
			t.Fatalf("listed tiers: %v", err)
		}
		copied := bigs.NewPageBlobClient("copy.vhd")
		if _, err := copied.StartCopyFromURL(ctx, pb.URL(), &blob.StartCopyFromURLOptions{Tier: to.Ptr(blob.AccessTierP30)}); err != nil {
			t.Fatalf("copy with a disk tier: %v", err)
		}
		if props, err := copied.GetProperties(ctx, nil); err != nil || *props.AccessTier != "P30" || props.AccessTierInferred != nil {
			t.Fatalf("copied tier: %v, %v", props.AccessTier, err)
		}
		info, err := e.client.ServiceClient().GetAccountInfo(ctx, nil)
		if err != nil || *info.SKUName != "Premium_LRS" {
			t.Fatalf("account SKU: %v, %v", info.SKUName, err)
		}
	})
}
