package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

// The Blob and Queue services answer an error with its message as the status line's reason
// phrase ("HTTP/1.1 404 The specified blob does not exist."), HEAD requests included, which is
// what the .NET SDK's exceptions ("Status: 404 (…)") and the Python SDK's ("Operation returned
// an invalid status '…'") show; the Table service keeps the standard phrases, as Azure's does.
// The next response on the connection has its own.
func TestErrorStatusLinesCarryTheMessage(t *testing.T) {
	g := listenServices(t)
	serveUntilCleanup(t, g)
	blobURL := "http://" + g.Addr("blob").String() + "/devstoreaccount1"

	// Anonymous requests on one keep-alive connection.
	const anonymous = "401 Server failed to authenticate the request. Please refer to the information in the www-authenticate header."
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	for _, tc := range []struct{ method, url, status string }{
		{"GET", blobURL + "/nowhere?restype=container&comp=list", anonymous},
		{"HEAD", blobURL + "/nowhere/blob", anonymous},
		{"OPTIONS", blobURL + "/c", "403 CORS not enabled or no matching rule found for this request."},
		{"GET", "http://" + g.Addr("queue").String() + "/devstoreaccount1/nowhere/messages", anonymous},
		{"GET", "http://" + g.Addr("table").String() + "/devstoreaccount1/Tables", "401 Unauthorized"},
		{"GET", blobURL + "/nowhere?restype=container&comp=list", anonymous},
	} {
		req, _ := http.NewRequest(tc.method, tc.url, nil)
		req.Header.Set("x-ms-version", "2025-01-05")
		if tc.method == "OPTIONS" {
			req.Header.Set("Origin", "http://example.com")
			req.Header.Set("Access-Control-Request-Method", "GET")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Status != tc.status {
			t.Errorf("%s %s: %q, want %q", tc.method, tc.url, resp.Status, tc.status)
		}
	}

	// The Go SDK, signed: a missing blob, then a success on the same connection.
	cred, err := azblob.NewSharedKeyCredential("devstoreaccount1", devKey)
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := azblob.NewClientWithSharedKeyCredential(blobURL, cred, &azblob.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := sdk.CreateContainer(ctx, "here", nil); err != nil {
		t.Fatal(err)
	}
	_, err = sdk.ServiceClient().NewContainerClient("here").NewBlobClient("missing").GetProperties(ctx, nil)
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.RawResponse.Status != "404 The specified blob does not exist." {
		t.Fatalf("Get Blob Properties of a missing blob: %v", err)
	}
	resp, err := sdk.ServiceClient().NewContainerClient("here").GetProperties(ctx, nil)
	if err != nil || resp.ETag == nil {
		t.Fatalf("the next request: %v", err)
	}

	// The Python SDK's message.
	python := pythonWithAzure(t)
	script := `import sys
from azure.storage.blob import BlobServiceClient
from azure.core.exceptions import ResourceNotFoundError
svc = BlobServiceClient.from_connection_string(sys.argv[1])
try:
    svc.get_blob_client("here", "missing").get_blob_properties()
except ResourceNotFoundError as e:
    print(e.reason)
`
	conn := "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + devKey + ";BlobEndpoint=" + blobURL + ";"
	out, err := exec.Command(python, "-c", script, conn).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "The specified blob does not exist." {
		t.Fatalf("the Python SDK's reason (%v): %s", err, out)
	}
}
