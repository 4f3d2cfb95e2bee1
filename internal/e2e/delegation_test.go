package e2e

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

// A bearer token's holder gets a user delegation key through the Go SDK, signs a SAS with it,
// and that SAS reads the blob it names and nothing it does not allow.
func TestUserDelegationSASThroughTheGoSDK(t *testing.T) {
	s := startHTTPSServer(t)
	ctx := context.Background()
	opts := &azblob.ClientOptions{ClientOptions: policy.ClientOptions{Transport: s.client, Retry: policy.RetryOptions{MaxRetries: -1}}}
	claims := entraClaims()
	claims["tid"] = "00000000-0000-0000-0000-000000000001"
	client, err := azblob.NewClient("https://"+s.blobAddr+"/devstoreaccount1", tokenCredential{t, s.key, claims}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateContainer(ctx, "shared", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := client.UploadBuffer(ctx, "shared", "report.txt", []byte("quarterly figures"), nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	udc, err := client.ServiceClient().GetUserDelegationCredential(ctx, service.KeyInfo{
		Start: ptr(now.Add(-time.Minute).Format(sas.TimeFormat)), Expiry: ptr(now.Add(time.Hour).Format(sas.TimeFormat)),
	}, nil)
	if err != nil {
		t.Fatalf("GetUserDelegationCredential: %v", err)
	}
	qp, err := sas.BlobSignatureValues{
		Protocol: sas.ProtocolHTTPS, ExpiryTime: now.Add(time.Hour),
		Permissions: (&sas.BlobPermissions{Read: true}).String(), ContainerName: "shared", BlobName: "report.txt",
	}.SignWithUserDelegation(udc)
	if err != nil {
		t.Fatal(err)
	}
	sasURL := "https://" + s.blobAddr + "/devstoreaccount1/shared/report.txt?" + qp.Encode()
	reader, err := blob.NewClientWithNoCredential(sasURL, &blob.ClientOptions{ClientOptions: opts.ClientOptions})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := reader.DownloadStream(ctx, nil)
	if err != nil {
		t.Fatalf("reading with the user delegation SAS: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "quarterly figures" {
		t.Fatalf("read %q", body)
	}
	// Read only: deleting through the SAS is refused.
	if _, err := reader.Delete(ctx, nil); !bloberror.HasCode(err, bloberror.AuthorizationPermissionMismatch) {
		t.Fatalf("delete with a read-only SAS: %v", err)
	}
	// An account key gets no user delegation key.
	keyClient, err := azblob.NewClientFromConnectionString("DefaultEndpointsProtocol=https;AccountName=devstoreaccount1;AccountKey="+devKey+";BlobEndpoint=https://"+s.blobAddr+"/devstoreaccount1;", opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = keyClient.ServiceClient().GetUserDelegationCredential(ctx, service.KeyInfo{Expiry: ptr(now.Add(time.Hour).Format(sas.TimeFormat))}, nil)
	if !bloberror.HasCode(err, bloberror.AuthenticationFailed) || !strings.Contains(err.Error(), "403") {
		t.Fatalf("a user delegation key for an account key: %v", err)
	}
}
