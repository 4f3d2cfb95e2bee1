package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/queue"
	"github.com/tabula-dev/tabula/internal/queuehttp"
	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/postgres/pgtest"
)

// The Queue service driven through the official Go SDK (azqueue v1.0.1), on every backend.

type queueServer struct {
	url     string // service root, http://127.0.0.1:port/devstoreaccount1
	service *azqueue.ServiceClient
	svc     *queue.Service
}

// startQueueServer serves the queue endpoint over st, with the Service's clock now (time.Now
// when nil), and returns an SDK client for it, path style.
func startQueueServer(t *testing.T, st store.Store, now func() time.Time) *queueServer {
	t.Helper()
	svc := queue.New(st, queue.Options{Now: now})
	srv := httptest.NewServer(queuehttp.New(svc, auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()}), nil))
	t.Cleanup(srv.Close)
	url := srv.URL + "/devstoreaccount1"
	return &queueServer{url: url, service: queueServiceClient(t, url), svc: svc}
}

func queueServiceClient(t *testing.T, url string) *azqueue.ServiceClient {
	t.Helper()
	cred, err := azqueue.NewSharedKeyCredential("devstoreaccount1", devKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azqueue.NewServiceClientWithSharedKeyCredential(url, cred, &azqueue.ClientOptions{
		ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// forEachQueueBackend runs test once per backend, each with its own queue endpoint.
func forEachQueueBackend(t *testing.T, test func(t *testing.T, s *queueServer)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, startQueueServer(t, b.open(t), nil)) })
	}
}

func (s *queueServer) newQueue(t *testing.T, name string) *azqueue.QueueClient {
	t.Helper()
	if _, err := s.service.CreateQueue(context.Background(), name, nil); err != nil {
		t.Fatalf("CreateQueue(%s): %v", name, err)
	}
	return s.service.NewQueueClient(name)
}

func TestQueueLifecycleThroughGoSDK(t *testing.T) {
	forEachQueueBackend(t, func(t *testing.T, s *queueServer) {
		ctx := context.Background()
		md := map[string]*string{"owner": to.Ptr("ops"), "tier": to.Ptr("1")}
		if _, err := s.service.CreateQueue(ctx, "orders", &azqueue.CreateOptions{Metadata: md}); err != nil {
			t.Fatal(err)
		}
		// Again with the same metadata: fine (204); with other metadata: 409.
		if _, err := s.service.CreateQueue(ctx, "orders", &azqueue.CreateOptions{Metadata: md}); err != nil {
			t.Fatalf("creating again with the same metadata: %v", err)
		}
		_, err := s.service.CreateQueue(ctx, "orders", nil)
		wantAzureError(t, err, 409, "QueueAlreadyExists")
		_, err = s.service.CreateQueue(ctx, "Bad_Name", nil)
		wantAzureError(t, err, 400, "InvalidResourceName")
		_, err = s.service.CreateQueue(ctx, "ab", nil)
		wantAzureError(t, err, 400, "OutOfRangeInput")

		q := s.service.NewQueueClient("orders")
		props, err := q.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *props.ApproximateMessagesCount != 0 || len(props.Metadata) != 2 || *metaValue(props.Metadata, "owner") != "ops" {
			t.Fatalf("properties: count %d, metadata %v", *props.ApproximateMessagesCount, props.Metadata)
		}
		if _, err := q.SetMetadata(ctx, &azqueue.SetMetadataOptions{Metadata: map[string]*string{"stage": to.Ptr("two")}}); err != nil {
			t.Fatal(err)
		}
		props, err = q.GetProperties(ctx, nil)
		if err != nil || len(props.Metadata) != 1 || *metaValue(props.Metadata, "stage") != "two" {
			t.Fatalf("after SetMetadata: %v, %v", props.Metadata, err)
		}

		for _, name := range []string{"orders-eu", "orders-us", "billing"} {
			s.newQueue(t, name)
		}
		var listed []string
		pager := s.service.NewListQueuesPager(&azqueue.ListQueuesOptions{Prefix: to.Ptr("orders"), MaxResults: to.Ptr(int32(2)), Include: azqueue.ListQueuesInclude{Metadata: true}})
		pages := 0
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, qi := range page.Queues {
				listed = append(listed, *qi.Name)
				if *qi.Name == "orders" && *metaValue(qi.Metadata, "stage") != "two" {
					t.Fatalf("listed metadata %v", qi.Metadata)
				}
			}
		}
		if !slices.Equal(listed, []string{"orders", "orders-eu", "orders-us"}) || pages != 2 {
			t.Fatalf("listed %v in %d pages", listed, pages)
		}

		if _, err := s.service.DeleteQueue(ctx, "orders", nil); err != nil {
			t.Fatal(err)
		}
		_, err = q.GetProperties(ctx, nil)
		wantAzureError(t, err, 404, "QueueNotFound")
		_, err = s.service.DeleteQueue(ctx, "orders", nil)
		wantAzureError(t, err, 404, "QueueNotFound")
		_, err = q.EnqueueMessage(ctx, "x", nil)
		wantAzureError(t, err, 404, "QueueNotFound")
	})
}

// metaValue finds a metadata value whatever case the client gave the name (Go's HTTP client
// canonicalises response header names).
func metaValue(md map[string]*string, name string) *string {
	for k, v := range md {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	empty := "<missing>"
	return &empty
}

func TestMessagesThroughGoSDK(t *testing.T) {
	forEachQueueBackend(t, func(t *testing.T, s *queueServer) {
		ctx := context.Background()
		q := s.newQueue(t, "work")
		text := "hello <world> & \"friends\"\r\n漢字 ✓"
		put, err := q.EnqueueMessage(ctx, text, &azqueue.EnqueueMessageOptions{TimeToLive: to.Ptr(int32(3600))})
		if err != nil {
			t.Fatal(err)
		}
		enq := put.Messages[0]
		if enq.MessageID == nil || enq.PopReceipt == nil || enq.ExpirationTime.Sub(*enq.InsertionTime) != time.Hour {
			t.Fatalf("enqueued %+v", enq)
		}
		for i := range 4 {
			if _, err := q.EnqueueMessage(ctx, fmt.Sprint("m", i), nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := q.EnqueueMessage(ctx, "forever", &azqueue.EnqueueMessageOptions{TimeToLive: to.Ptr(int32(-1)), VisibilityTimeout: to.Ptr(int32(3600))}); err != nil {
			t.Fatal(err)
		}

		peeked, err := q.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: to.Ptr(int32(32))})
		if err != nil {
			t.Fatal(err)
		}
		if len(peeked.Messages) != 5 || *peeked.Messages[0].MessageText != text || *peeked.Messages[0].DequeueCount != 0 ||
			!peeked.Messages[0].InsertionTime.Equal(*enq.InsertionTime) || !peeked.Messages[0].ExpirationTime.Equal(*enq.ExpirationTime) {
			t.Fatalf("peeked %d, first %+v", len(peeked.Messages), peeked.Messages[0])
		}
		props, err := q.GetProperties(ctx, nil)
		if err != nil || *props.ApproximateMessagesCount != 6 {
			t.Fatalf("count %v, %v; want 6 (the invisible one counts)", props.ApproximateMessagesCount, err)
		}

		got, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(2)), VisibilityTimeout: to.Ptr(int32(60))})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) != 2 || *got.Messages[0].MessageText != text || *got.Messages[0].DequeueCount != 1 || *got.Messages[1].MessageText != "m0" {
			t.Fatalf("dequeued %+v", got.Messages)
		}
		first := got.Messages[0]
		// Update: new text and visible again at once, with a new receipt; the old one is stale.
		upd, err := q.UpdateMessage(ctx, *first.MessageID, *first.PopReceipt, "updated", &azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr(int32(0))})
		if err != nil {
			t.Fatal(err)
		}
		if *upd.PopReceipt == *first.PopReceipt || upd.TimeNextVisible == nil {
			t.Fatalf("update: %+v", upd)
		}
		_, err = q.DeleteMessage(ctx, *first.MessageID, *first.PopReceipt, nil)
		wantAzureError(t, err, 404, "MessageNotFound")
		// Visible again now, it leaves after the messages visible since earlier.
		rest, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(32))})
		if err != nil || len(rest.Messages) != 4 {
			t.Fatalf("after update: %d messages, %v", len(rest.Messages), err)
		}
		if last := rest.Messages[3]; *last.MessageID != *first.MessageID || *last.MessageText != "updated" || *last.DequeueCount != 2 {
			t.Fatalf("updated message dequeued as %+v", last)
		}
		if _, err := q.DeleteMessage(ctx, *rest.Messages[3].MessageID, *rest.Messages[3].PopReceipt, nil); err != nil {
			t.Fatal(err)
		}
		// A receipt Put Message returned works until the message is dequeued.
		if _, err := q.DeleteMessage(ctx, *got.Messages[1].MessageID, *got.Messages[1].PopReceipt, nil); err != nil {
			t.Fatal(err)
		}
		_, err = q.DeleteMessage(ctx, *got.Messages[1].MessageID, "not-a-receipt", nil)
		wantAzureError(t, err, 400, "InvalidQueryParameterValue")

		_, err = q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(33))})
		wantAzureError(t, err, 400, "OutOfRangeQueryParameterValue")
		_, err = q.EnqueueMessage(ctx, strings.Repeat("x", queue.MaxMessageSize+1), nil)
		wantAzureError(t, err, 413, "RequestBodyTooLarge")
		if _, err := q.EnqueueMessage(ctx, strings.Repeat("<", queue.MaxMessageSize), nil); err != nil {
			t.Fatalf("a 64 KiB text whose escaped body is four times longer: %v", err)
		}

		if _, err := q.ClearMessages(ctx, nil); err != nil {
			t.Fatal(err)
		}
		props, err = q.GetProperties(ctx, nil)
		if err != nil || *props.ApproximateMessagesCount != 0 {
			t.Fatalf("count after Clear: %v, %v", props.ApproximateMessagesCount, err)
		}
		empty, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(32))})
		if err != nil || len(empty.Messages) != 0 {
			t.Fatalf("after Clear: %v, %v", empty.Messages, err)
		}
	})
}

// A message not deleted within its window comes back, with its dequeue count one higher.
func TestAbandonedMessageReappearsThroughGoSDK(t *testing.T) {
	forEachQueueBackend(t, func(t *testing.T, s *queueServer) {
		ctx := context.Background()
		q := s.newQueue(t, "retry")
		if _, err := q.EnqueueMessage(ctx, "job", nil); err != nil {
			t.Fatal(err)
		}
		got, err := q.DequeueMessage(ctx, &azqueue.DequeueMessageOptions{VisibilityTimeout: to.Ptr(int32(1))})
		if err != nil || len(got.Messages) != 1 {
			t.Fatalf("%v, %v", got.Messages, err)
		}
		none, err := q.DequeueMessage(ctx, nil)
		if err != nil || len(none.Messages) != 0 {
			t.Fatalf("visible within its window: %v, %v", none.Messages, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			again, err := q.DequeueMessage(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Messages) == 1 {
				if *again.Messages[0].DequeueCount != 2 || *again.Messages[0].MessageID != *got.Messages[0].MessageID {
					t.Fatalf("came back as %+v", again.Messages[0])
				}
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatal("the message did not come back after its window")
	})
}

func TestQueueACLAndServicePropertiesThroughGoSDK(t *testing.T) {
	forEachQueueBackend(t, func(t *testing.T, s *queueServer) {
		ctx := context.Background()
		q := s.newQueue(t, "acl")
		start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		acl := []*azqueue.SignedIdentifier{{ID: to.Ptr("readers"), AccessPolicy: &azqueue.AccessPolicy{Start: &start, Expiry: to.Ptr(start.Add(time.Hour)), Permission: to.Ptr("rp")}}}
		if _, err := q.SetAccessPolicy(ctx, &azqueue.SetAccessPolicyOptions{QueueACL: acl}); err != nil {
			t.Fatal(err)
		}
		got, err := q.GetAccessPolicy(ctx, nil)
		if err != nil || len(got.SignedIdentifiers) != 1 || *got.SignedIdentifiers[0].ID != "readers" ||
			*got.SignedIdentifiers[0].AccessPolicy.Permission != "rp" || !got.SignedIdentifiers[0].AccessPolicy.Start.Equal(start) {
			t.Fatalf("ACL %+v, %v", got.SignedIdentifiers, err)
		}

		if _, err := s.service.SetProperties(ctx, &azqueue.SetPropertiesOptions{CORS: []*azqueue.CORSRule{{
			AllowedOrigins: to.Ptr("https://example.com"), AllowedMethods: to.Ptr("GET,PUT"), AllowedHeaders: to.Ptr("x-ms-*"),
			ExposedHeaders: to.Ptr("x-ms-*"), MaxAgeInSeconds: to.Ptr(int32(60)),
		}}}); err != nil {
			t.Fatal(err)
		}
		props, err := s.service.GetServiceProperties(ctx, nil)
		if err != nil || len(props.CORS) != 1 || *props.CORS[0].AllowedOrigins != "https://example.com" {
			t.Fatalf("properties %+v, %v", props, err)
		}
		// Stats come from the secondary endpoint only, as on Azure.
		_, err = s.service.GetStatistics(ctx, nil)
		wantAzureError(t, err, 400, "InvalidQueryParameterValue")
		stats, err := queueServiceClient(t, s.url+"-secondary").GetStatistics(ctx, nil)
		if err != nil || stats.GeoReplication == nil || *stats.GeoReplication.Status != azqueue.GeoReplicationStatusLive {
			t.Fatalf("stats %+v, %v", stats, err)
		}
	})
}

// Consumers spread over three front-ends sharing one PostgreSQL database, through the SDK:
// every message is received once within its window, and all are deleted.
func TestQueueConsumersOnSeveralFrontEnds(t *testing.T) {
	dsn := pgtest.Start(t)
	var fronts []*queueServer
	for range 3 {
		fronts = append(fronts, startQueueServer(t, openPostgresAt(t, dsn), nil))
	}
	ctx := context.Background()
	fronts[0].newQueue(t, "shared")
	const messages = 300
	for i := range messages {
		q := fronts[i%3].service.NewQueueClient("shared")
		if _, err := q.EnqueueMessage(ctx, fmt.Sprint(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for c := range 12 {
		q := fronts[c%3].service.NewQueueClient("shared")
		wg.Go(func() {
			for {
				got, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(4)), VisibilityTimeout: to.Ptr(int32(600))})
				if err != nil {
					t.Errorf("DequeueMessages: %v", err)
					return
				}
				if len(got.Messages) == 0 {
					return
				}
				for _, m := range got.Messages {
					mu.Lock()
					seen[*m.MessageText]++
					mu.Unlock()
					if _, err := q.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil); err != nil {
						t.Errorf("DeleteMessage: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != messages {
		t.Fatalf("%d distinct messages received, want %d", len(seen), messages)
	}
	for text, n := range seen {
		if n != 1 {
			t.Fatalf("message %s received %d times within one window", text, n)
		}
	}
}
