// Command blobbatch times deleting 256 blobs two ways on one or more Blob endpoints: 256
// Delete Blob requests with 16 in flight, and one Blob Batch of 256 Delete Blobs, both
// through azblob as an application would send them. Endpoints take turns round by round, so
// that a machine's drift hits each alike. Each round first uploads the 256 blobs again
// (untimed).
//
//	go run ./scripts/blobbatch -rounds 5 \
//	    http://127.0.0.1:10000/devstoreaccount1 http://127.0.0.1:10100/devstoreaccount1
//
// The account is devstoreaccount1 with the development key unless -account and -key say
// otherwise. Azurite needs --skipApiVersionCheck for the SDK's current x-ms-version.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

const (
	blobs    = 256
	inFlight = 16
)

func main() {
	account := flag.String("account", "devstoreaccount1", "account `NAME`")
	key := flag.String("key", "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==", "account `KEY` (base64)")
	rounds := flag.Int("rounds", 5, "rounds per endpoint")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: blobbatch [-rounds N] BLOB_ENDPOINT_URL...")
		os.Exit(2)
	}
	ctx := context.Background()
	cred, err := azblob.NewSharedKeyCredential(*account, *key)
	if err != nil {
		fail(err)
	}
	clients := make([]*azblob.Client, flag.NArg())
	container := fmt.Sprintf("blobbatch-%d", time.Now().Unix())
	for i, url := range flag.Args() {
		clients[i], err = azblob.NewClientWithSharedKeyCredential(url, cred, &azblob.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
		if err != nil {
			fail(err)
		}
		if _, err := clients[i].CreateContainer(ctx, container, nil); err != nil {
			fail(err)
		}
	}
	singles := make([][]time.Duration, len(clients))
	batches := make([][]time.Duration, len(clients))
	for range *rounds {
		for i, c := range clients {
			upload(ctx, c, container)
			singles[i] = append(singles[i], timed(func() { deleteEach(ctx, c, container) }))
			upload(ctx, c, container)
			batches[i] = append(batches[i], timed(func() { deleteInBatch(ctx, c, container) }))
		}
	}
	for i, url := range flag.Args() {
		fmt.Printf("%s\n  %d Delete Blobs, %d in flight: median %v (%v)\n  one Blob Batch of %d deletes:  median %v (%v)\n",
			url, blobs, inFlight, median(singles[i]), singles[i], blobs, median(batches[i]), batches[i])
		_, _ = clients[i].DeleteContainer(ctx, container, nil)
	}
}

func name(i int) string { return fmt.Sprintf("b%03d", i) }

// parallel runs f for 0..blobs-1, inFlight at a time.
func parallel(f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range inFlight {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range blobs {
		next <- i
	}
	close(next)
	wg.Wait()
}

func upload(ctx context.Context, c *azblob.Client, container string) {
	parallel(func(i int) {
		if _, err := c.UploadBuffer(ctx, container, name(i), []byte("x"), nil); err != nil {
			fail(err)
		}
	})
}

func deleteEach(ctx context.Context, c *azblob.Client, container string) {
	parallel(func(i int) {
		if _, err := c.DeleteBlob(ctx, container, name(i), nil); err != nil {
			fail(err)
		}
	})
}

func deleteInBatch(ctx context.Context, c *azblob.Client, container string) {
	bb, err := c.ServiceClient().NewBatchBuilder()
	if err != nil {
		fail(err)
	}
	for i := range blobs {
		if err := bb.Delete(container, name(i), nil); err != nil {
			fail(err)
		}
	}
	resp, err := c.ServiceClient().SubmitBatch(ctx, bb, nil)
	if err != nil {
		fail(err)
	}
	for _, r := range resp.Responses {
		if r.Error != nil {
			fail(r.Error)
		}
	}
}

func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start).Round(time.Millisecond)
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "blobbatch:", err)
	os.Exit(1)
}
