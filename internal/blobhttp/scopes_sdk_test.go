package blobhttp_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/tabula-dev/tabula/internal/auth"
)

// Encryption scopes: a blob remembers the scope it was written in (the request's, its SAS's
// ses, or its container's default) and answers and listings report it, as azblob's recorded
// TestUploadBlobWithMD5WithCPKScope, TestAccountEncryptionScopeSAS and the container default
// scope tests see the real service answer.
func TestSDKEncryptionScopes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		scope := &blob.CPKScopeInfo{EncryptionScope: to.Ptr("scope1")}
		c := e.container("scoped")
		bb := c.NewBlockBlobClient("b")
		up, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("data")), &blockblob.UploadOptions{CPKScopeInfo: scope})
		if err != nil {
			t.Fatal(err)
		}
		if up.EncryptionScope == nil || *up.EncryptionScope != "scope1" || !*up.IsServerEncrypted {
			t.Fatalf("upload answered scope %v", up.EncryptionScope)
		}
		d, err := bb.DownloadStream(ctx, &blob.DownloadStreamOptions{CPKScopeInfo: scope})
		if err != nil {
			t.Fatal(err)
		}
		d.Body.Close()
		if d.EncryptionScope == nil || *d.EncryptionScope != "scope1" {
			t.Fatalf("download reports scope %v", d.EncryptionScope)
		}
		staged, err := bb.StageBlock(ctx, blockIDs(1)[0], streaming.NopCloser(strings.NewReader("x")), &blockblob.StageBlockOptions{CPKScopeInfo: scope})
		if err != nil || staged.EncryptionScope == nil || *staged.EncryptionScope != "scope1" {
			t.Fatalf("stage block: scope %v, %v", staged.EncryptionScope, err)
		}
		committed, err := bb.CommitBlockList(ctx, blockIDs(1), &blockblob.CommitBlockListOptions{CPKScopeInfo: scope})
		if err != nil || committed.EncryptionScope == nil || *committed.EncryptionScope != "scope1" {
			t.Fatalf("commit: scope %v, %v", committed.EncryptionScope, err)
		}

		// Metadata goes into the blob's scope: a write of it naming another (or none) is
		// refused (TestGetSetBlobMetadataWithCPKScope, TestBlobSnapshotWithCPKScope).
		md := map[string]*string{"k": to.Ptr("v")}
		_, err = bb.SetMetadata(ctx, md, nil)
		wantStatus(t, err, 409, "BlobCustomerSpecifiedEncryptionMismatch")
		_, err = bb.CreateSnapshot(ctx, &blob.CreateSnapshotOptions{CPKScopeInfo: &blob.CPKScopeInfo{EncryptionScope: to.Ptr("other")}})
		wantStatus(t, err, 409, "BlobCustomerSpecifiedEncryptionMismatch")
		if resp, err := bb.SetMetadata(ctx, md, &blob.SetMetadataOptions{CPKScopeInfo: scope}); err != nil || *resp.EncryptionScope != "scope1" {
			t.Fatalf("SetMetadata in the blob's scope: %v", err)
		}
		snap, err := bb.CreateSnapshot(ctx, &blob.CreateSnapshotOptions{CPKScopeInfo: scope})
		if err != nil || *snap.IsServerEncrypted {
			t.Fatalf("a snapshot in the blob's scope: request server-encrypted %v, %v", snap.IsServerEncrypted, err)
		}

		// A container's default scope is every blob's written without one; a container that
		// denies overrides refuses another.
		dflt := e.client.ServiceClient().NewContainerClient("defaulted")
		_, err = dflt.Create(ctx, &container.CreateOptions{CPKScopeInfo: &container.CPKScopeInfo{DefaultEncryptionScope: to.Ptr("ces"), PreventEncryptionScopeOverride: to.Ptr(true)}})
		if err != nil {
			t.Fatal(err)
		}
		props, err := dflt.GetProperties(ctx, nil)
		if err != nil || *props.DefaultEncryptionScope != "ces" || !*props.DenyEncryptionScopeOverride {
			t.Fatalf("container properties: %v, %v, %v", props.DefaultEncryptionScope, props.DenyEncryptionScopeOverride, err)
		}
		ab := dflt.NewAppendBlobClient("a")
		created, err := ab.Create(ctx, nil)
		if err != nil || created.EncryptionScope == nil || *created.EncryptionScope != "ces" {
			t.Fatalf("create in a defaulted container: scope %v, %v", created.EncryptionScope, err)
		}
		_, err = dflt.NewAppendBlobClient("other").Create(ctx, &appendblob.CreateOptions{CPKScopeInfo: scope})
		wantStatus(t, err, 403, "RequestForbiddenByContainerEncryptionPolicy")
		pager := dflt.NewListBlobsFlatPager(nil)
		page, err := pager.NextPage(ctx)
		if err != nil || len(page.Segment.BlobItems) != 1 || page.Segment.BlobItems[0].Properties.EncryptionScope == nil || *page.Segment.BlobItems[0].Properties.EncryptionScope != "ces" {
			t.Fatalf("listing: %+v, %v", page.Segment.BlobItems, err)
		}
		var found bool
		for cp := e.client.NewListContainersPager(nil); cp.More(); {
			page, err := cp.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, item := range page.ContainerItems {
				if *item.Name == "defaulted" {
					found = *item.Properties.DefaultEncryptionScope == "ces" && *item.Properties.PreventEncryptionScopeOverride
				}
			}
		}
		if !found {
			t.Fatal("List Containers does not report the default scope")
		}

		// A SAS with a signed encryption scope writes in it.
		dev := auth.DevelopmentAccount()
		cred, err := azblob.NewSharedKeyCredential(dev.Name, base64.StdEncoding.EncodeToString(dev.Keys[0]))
		if err != nil {
			t.Fatal(err)
		}
		qp, err := sas.AccountSignatureValues{
			Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
			Permissions:     to.Ptr(sas.AccountPermissions{Read: true, Create: true, Write: true}).String(),
			ResourceTypes:   to.Ptr(sas.AccountResourceTypes{Object: true}).String(),
			EncryptionScope: "sas-scope",
		}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		viaSAS, err := appendblob.NewClientWithNoCredential(c.NewAppendBlobClient("sas").URL()+"?"+qp.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		made, err := viaSAS.Create(ctx, nil)
		if err != nil || made.EncryptionScope == nil || *made.EncryptionScope != "sas-scope" {
			t.Fatalf("create with a SAS's scope: %v, %v", made.EncryptionScope, err)
		}
	})
}
