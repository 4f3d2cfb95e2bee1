package blobhttp_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

func foundNames(blobs []*service.FilterBlobItem) []string {
	var out []string
	for _, b := range blobs {
		var tags []string
		if b.Tags != nil {
			for _, t := range b.Tags.BlobTagSet {
				tags = append(tags, *t.Key+"="+*t.Value)
			}
		}
		slices.Sort(tags)
		out = append(out, *b.ContainerName+"/"+*b.Name+fmt.Sprint(tags))
	}
	return out
}

// Find Blobs by Tags of the account and of a container, paged, and x-ms-if-tags on reads and
// writes, through the SDK.
func TestSDKBlobIndexTags(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		photos, docs := e.container("photos"), e.container("docs")
		put := func(c *container.Client, name string, tags map[string]string) *blockblob.Client {
			t.Helper()
			bb := c.NewBlockBlobClient(name)
			if _, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader(name)), &blockblob.UploadOptions{Tags: tags}); err != nil {
				t.Fatal(err)
			}
			return bb
		}
		put(photos, "p1", map[string]string{"status": "done", "year": "2023"})
		p2 := put(photos, "p2", map[string]string{"status": "open", "year": "2024"})
		put(photos, "p3", map[string]string{"status": "done", "year": "2024"})
		put(docs, "d1", map[string]string{"status": "done", "year": "2024", "kind": "pdf"})

		svc := e.client.ServiceClient()
		resp, err := svc.FilterBlobs(ctx, `"status" = 'done' AND "year" >= '2024'`, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(foundNames(resp.Blobs)); got != "[docs/d1[status=done year=2024] photos/p3[status=done year=2024]]" {
			t.Fatalf("account-wide: %s", got)
		}
		if *resp.Where != `"status" = 'done' AND "year" >= '2024'` {
			t.Fatalf("Where %q", *resp.Where)
		}
		var pages []string
		marker := (*string)(nil)
		for {
			resp, err := svc.FilterBlobs(ctx, `status = 'done'`, &service.FilterBlobsOptions{MaxResults: to.Ptr(int32(2)), Marker: marker})
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, fmt.Sprint(foundNames(resp.Blobs)))
			if resp.NextMarker == nil || *resp.NextMarker == "" {
				break
			}
			marker = resp.NextMarker
		}
		if got := fmt.Sprint(pages); got != "[[docs/d1[status=done] photos/p1[status=done]] [photos/p3[status=done]]]" {
			t.Fatalf("paged: %s", got)
		}
		scoped, err := svc.FilterBlobs(ctx, `@container = 'photos' AND "year" = '2024'`, nil)
		if err != nil || fmt.Sprint(foundNames(scoped.Blobs)) != "[photos/p2[year=2024] photos/p3[year=2024]]" {
			t.Fatalf("@container: %v, %v", foundNames(scoped.Blobs), err)
		}
		inContainer, err := docs.FilterBlobs(ctx, `"kind" = 'pdf'`, nil)
		if err != nil || fmt.Sprint(foundNames(inContainer.Blobs)) != "[docs/d1[kind=pdf]]" {
			t.Fatalf("container: %v, %v", foundNames(inContainer.Blobs), err)
		}
		_, err = svc.FilterBlobs(ctx, `"status" = done`, nil)
		wantStatus(t, err, 400, "InvalidQueryParameterValue")

		// x-ms-if-tags.
		ifTags := func(expr string) *blob.AccessConditions {
			return &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfTags: to.Ptr(expr)}}
		}
		if _, err := p2.DownloadStream(ctx, &blob.DownloadStreamOptions{AccessConditions: ifTags(`"status" = 'open'`)}); err != nil {
			t.Fatal(err)
		}
		_, err = p2.GetProperties(ctx, &blob.GetPropertiesOptions{AccessConditions: ifTags(`"status" = 'done'`)})
		wantStatus(t, err, 412, "ConditionNotMet")
		_, err = p2.SetMetadata(ctx, nil, &blob.SetMetadataOptions{AccessConditions: ifTags(`"status" = 'done' OR "year" < '2024'`)})
		wantStatus(t, err, 412, "ConditionNotMet")
		_, err = p2.SetMetadata(ctx, nil, &blob.SetMetadataOptions{AccessConditions: ifTags(`status = open`)})
		wantStatus(t, err, 400, "InvalidHeaderValue")
		_, err = p2.SetTier(ctx, blob.AccessTierCool, &blob.SetTierOptions{AccessConditions: ifTags(`"status" = 'done'`)})
		wantStatus(t, err, 412, "ConditionNotMet")
		if _, err := p2.SetTier(ctx, blob.AccessTierCool, &blob.SetTierOptions{AccessConditions: ifTags(`"status" = 'open'`)}); err != nil {
			t.Fatal(err)
		}
		_, err = p2.GetBlockList(ctx, blockblob.BlockListTypeAll, &blockblob.GetBlockListOptions{AccessConditions: ifTags(`"status" = 'done'`)})
		wantStatus(t, err, 412, "ConditionNotMet")
		if _, err := p2.GetBlockList(ctx, blockblob.BlockListTypeAll, &blockblob.GetBlockListOptions{AccessConditions: ifTags(`"year" = '2024'`)}); err != nil {
			t.Fatal(err)
		}
		if _, err := p2.SetTags(ctx, map[string]string{"status": "done"}, &blob.SetTagsOptions{AccessConditions: ifTags(`"status" = 'open'`)}); err != nil {
			t.Fatal(err)
		}
		_, err = p2.GetTags(ctx, &blob.GetTagsOptions{BlobAccessConditions: ifTags(`"status" = 'open'`)})
		wantStatus(t, err, 412, "ConditionNotMet")
		if _, err := p2.Delete(ctx, &blob.DeleteOptions{AccessConditions: ifTags(`"status" = 'done'`)}); err != nil {
			t.Fatal(err)
		}
		after, err := photos.FilterBlobs(ctx, `"status" = 'done'`, nil)
		if err != nil || fmt.Sprint(foundNames(after.Blobs)) != "[photos/p1[status=done] photos/p3[status=done]]" {
			t.Fatalf("after the changes: %v, %v", foundNames(after.Blobs), err)
		}
	})
}
