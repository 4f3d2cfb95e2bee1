package e2e

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
)

// TestMetadataNamesKeepTheirCase: Azure returns a metadata name in the case the client set it
// in, and Python's, Java's and Go's clients hand names back as they come, so "Author" must
// come back "Author", not "author". net/http canonicalises request header names; the server
// recovers them from the connection (server/rawnames.go), which only the real listener does,
// so this test serves the Blob and Queue services as the tabula command does. It also signs
// names the SDKs sort differently ('_' against digits) with the Go and Python SDKs.
func TestMetadataNamesKeepTheirCase(t *testing.T) {
	g := listenServices(t)
	serveUntilCleanup(t, g)
	blobAddr, queueAddr := g.Addr("blob").String(), g.Addr("queue").String()

	wire := &wireRecorder{}
	clientOptions := policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}, Transport: wire.client()}
	cred, err := azblob.NewSharedKeyCredential("devstoreaccount1", devKey)
	if err != nil {
		t.Fatal(err)
	}
	client, err := azblob.NewClientWithSharedKeyCredential("http://"+blobAddr+"/devstoreaccount1", cred,
		&azblob.ClientOptions{ClientOptions: clientOptions})
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	if _, err := client.CreateContainer(bg, "cased", &azblob.CreateContainerOptions{
		Metadata: map[string]*string{"ContainerOwner": to.Ptr("o")},
	}); err != nil {
		t.Fatal(err)
	}
	// One keep-alive connection carries these, the first with a body that looks like headers.
	evil := "\r\nx-ms-meta-Evil: 1\r\n\r\nPUT /devstoreaccount1/cased/x HTTP/1.1\r\nx-ms-meta-Worse: 2\r\n\r\n"
	if _, err := client.UploadBuffer(bg, "cased", "b", []byte(evil), &azblob.UploadBufferOptions{
		Metadata: map[string]*string{"Author": to.Ptr("a"), "lowercase": to.Ptr("b"), "MiXeD_9": to.Ptr("c")},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.UploadBuffer(bg, "cased", "renamed", nil, nil); err != nil {
		t.Fatal(err)
	}
	blobClient := client.ServiceClient().NewContainerClient("cased").NewBlobClient("renamed")
	if _, err := blobClient.SetMetadata(bg, map[string]*string{"NewName": to.Ptr("n")}, nil); err != nil {
		t.Fatal(err)
	}

	// What the server wrote, as it wrote it: Go's SDK lower-cases the names of listings and
	// net/http canonicalises response headers, so the SDK's own answers cannot tell.
	wire.reset()
	if _, err := client.ServiceClient().NewContainerClient("cased").NewBlobClient("b").GetProperties(bg, nil); err != nil {
		t.Fatal(err)
	}
	wire.wantAll(t, "Get Blob Properties", "\r\nx-ms-meta-Author: a\r\n", "\r\nx-ms-meta-lowercase: b\r\n", "\r\nx-ms-meta-MiXeD_9: c\r\n")
	wire.wantNone(t, "Get Blob Properties", "Evil", "Worse")
	wire.reset()
	pager := client.NewListBlobsFlatPager("cased", &azblob.ListBlobsFlatOptions{Include: azblob.ListBlobsInclude{Metadata: true}})
	if _, err := pager.NextPage(bg); err != nil {
		t.Fatal(err)
	}
	wire.wantAll(t, "List Blobs", "<Metadata><Author>a</Author><lowercase>b</lowercase><MiXeD_9>c</MiXeD_9></Metadata>", "<Metadata><NewName>n</NewName></Metadata>")
	wire.reset()
	if _, err := client.NewListContainersPager(&azblob.ListContainersOptions{Include: azblob.ListContainersInclude{Metadata: true}}).NextPage(bg); err != nil {
		t.Fatal(err)
	}
	wire.wantAll(t, "List Containers", "<ContainerOwner>o</ContainerOwner>")

	qcred, err := azqueue.NewSharedKeyCredential("devstoreaccount1", devKey)
	if err != nil {
		t.Fatal(err)
	}
	qclient, err := azqueue.NewServiceClientWithSharedKeyCredential("http://"+queueAddr+"/devstoreaccount1", qcred,
		&azqueue.ClientOptions{ClientOptions: clientOptions})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qclient.CreateQueue(bg, "cased", &azqueue.CreateOptions{Metadata: map[string]*string{"QueueOwner": to.Ptr("q"), "plain": to.Ptr("p")}}); err != nil {
		t.Fatal(err)
	}
	wire.reset()
	if _, err := qclient.NewQueueClient("cased").GetProperties(bg, nil); err != nil {
		t.Fatal(err)
	}
	wire.wantAll(t, "Get Queue Metadata", "\r\nx-ms-meta-QueueOwner: q\r\n", "\r\nx-ms-meta-plain: p\r\n")
	wire.reset()
	if _, err := qclient.NewListQueuesPager(&azqueue.ListQueuesOptions{Include: azqueue.ListQueuesInclude{Metadata: true}}).NextPage(bg); err != nil {
		t.Fatal(err)
	}
	wire.wantAll(t, "List Queues", "<QueueOwner>q</QueueOwner>")

	// Names the Go SDK signs in the service's order, which puts '_' before digits.
	if _, err := client.UploadBuffer(bg, "cased", "signed", nil, &azblob.UploadBufferOptions{
		Metadata: map[string]*string{"a0": to.Ptr("1"), "a_": to.Ptr("2"), "a_b": to.Ptr("3"), "a1b": to.Ptr("4")},
	}); err != nil {
		t.Fatalf("metadata names with '_' and digits: %v", err)
	}

	// Python: names as set, and signed in Python's own order.
	python := pythonWithAzure(t)
	script, _ := filepath.Abs(filepath.Join("testdata", "python", "metadata_names.py"))
	conn := func(service, addr string) string {
		return "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + devKey + ";" + service + "Endpoint=http://" + addr + "/devstoreaccount1;"
	}
	out, err := exec.Command(python, script, conn("Blob", blobAddr), conn("Queue", queueAddr)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "python metadata names: ok") {
		t.Fatalf("Python SDK run failed (%v):\n%s", err, out)
	}
}

// wireRecorder is an HTTP client that keeps every byte its connections read.
type wireRecorder struct {
	mu  sync.Mutex
	got bytes.Buffer
}

func (w *wireRecorder) client() *http.Client {
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &recordedConn{Conn: c, w: w}, nil
	}}}
}

func (w *wireRecorder) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got.Reset()
}

func (w *wireRecorder) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.String()
}

func (w *wireRecorder) wantAll(t *testing.T, op string, parts ...string) {
	t.Helper()
	got := w.text()
	for _, p := range parts {
		if !strings.Contains(got, p) {
			t.Fatalf("%s: the answer lacks %q:\n%s", op, p, got)
		}
	}
}

func (w *wireRecorder) wantNone(t *testing.T, op string, parts ...string) {
	t.Helper()
	got := w.text()
	for _, p := range parts {
		if strings.Contains(got, p) {
			t.Fatalf("%s: the answer holds %q:\n%s", op, p, got)
		}
	}
}

type recordedConn struct {
	net.Conn
	w *wireRecorder
}

func (c *recordedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.w.mu.Lock()
	c.w.got.Write(p[:n])
	c.w.mu.Unlock()
	return n, err
}
