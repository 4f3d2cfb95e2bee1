package queue

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
)

func TestQueueNamesFollowAzureRules(t *testing.T) {
	for _, name := range []string{"abc", "a-b-c", "queue1", "0-9", strings.Repeat("q", 63)} {
		if err := ValidateQueueName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for name, code := range map[string]azerr.Code{
		"ab":                    azerr.OutOfRangeInput,
		strings.Repeat("q", 64): azerr.OutOfRangeInput,
		"Queue":                 azerr.InvalidResourceName,
		"-abc":                  azerr.InvalidResourceName,
		"abc-":                  azerr.InvalidResourceName,
		"a--b":                  azerr.InvalidResourceName,
		"a_b":                   azerr.InvalidResourceName,
		"a.b":                   azerr.InvalidResourceName,
	} {
		wantCode(t, ValidateQueueName(name), 400, code)
	}
}

func TestCreateQueueIsIdempotentOnlyForTheSameMetadata(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, _ *clock) {
		ctx := context.Background()
		md := Metadata{{"Owner", "ops"}, {"tier", "1"}}
		created, err := s.CreateQueue(ctx, "acct", "jobs", md)
		if err != nil || !created {
			t.Fatalf("first creation: created=%v, %v", created, err)
		}
		// The same metadata in another order and case: 204, not created again.
		created, err = s.CreateQueue(ctx, "acct", "jobs", Metadata{{"TIER", "1"}, {"owner", "ops"}})
		if err != nil || created {
			t.Fatalf("same metadata: created=%v, %v; want 204", created, err)
		}
		_, err = s.CreateQueue(ctx, "acct", "jobs", Metadata{{"owner", "OPS"}, {"tier", "1"}})
		wantCode(t, err, 409, azerr.QueueAlreadyExists)
		_, err = s.CreateQueue(ctx, "acct", "jobs", nil)
		wantCode(t, err, 409, azerr.QueueAlreadyExists)
		// Another account's queue of the same name is another queue.
		if created, err := s.CreateQueue(ctx, "other", "jobs", nil); err != nil || !created {
			t.Fatalf("other account: created=%v, %v", created, err)
		}
		q, err := s.Queue(ctx, "acct", "jobs")
		must(t, err)
		if !q.Metadata.Equal(md) || q.Metadata[0].Name != "Owner" {
			t.Fatalf("metadata %+v, want %+v with names as given", q.Metadata, md)
		}
		created, err = s.CreateQueue(ctx, "acct", "empty", nil)
		must(t, err)
		created, err = s.CreateQueue(ctx, "acct", "empty", Metadata{})
		if err != nil || created {
			t.Fatalf("both without metadata: created=%v, %v; want 204", created, err)
		}
	})
}

func TestMetadataFollowsAzureRules(t *testing.T) {
	s := New(openPebble(t), Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		md   Metadata
		code azerr.Code
	}{
		{Metadata{{"", "v"}}, azerr.EmptyMetadataKey},
		{Metadata{{"1abc", "v"}}, azerr.InvalidMetadata},
		{Metadata{{"a-b", "v"}}, azerr.InvalidMetadata},
		{Metadata{{"name", "1"}, {"NAME", "2"}}, azerr.InvalidMetadata},
		{Metadata{{"big", strings.Repeat("x", MaxMetadataSize-2)}}, azerr.MetadataTooLarge},
	} {
		_, err := s.CreateQueue(ctx, "acct", "qq1", tc.md)
		wantCode(t, err, 400, tc.code)
	}
	_, err := s.CreateQueue(ctx, "acct", "qq1", Metadata{{"_x9", ""}, {"big", strings.Repeat("x", MaxMetadataSize-6)}})
	must(t, err)
	wantCode(t, s.SetQueueMetadata(ctx, "acct", "qq1", Metadata{{"a b", "v"}}), 400, azerr.InvalidMetadata)
}

func TestQueueOperationsOnMissingQueuesAreQueueNotFound(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, _ *clock) {
		ctx := context.Background()
		_, err := s.Queue(ctx, "acct", "nope")
		wantCode(t, err, 404, azerr.QueueNotFound)
		wantCode(t, s.DeleteQueue(ctx, "acct", "nope"), 404, azerr.QueueNotFound)
		wantCode(t, s.SetQueueMetadata(ctx, "acct", "nope", nil), 404, azerr.QueueNotFound)
		wantCode(t, s.SetQueuePolicies(ctx, "acct", "nope", nil), 404, azerr.QueueNotFound)

		// Message operations on a queue deleted after it was looked up.
		q := newQueue(t, s, "gone")
		m := put(t, s, q, "x")
		must(t, s.DeleteQueue(ctx, "acct", "gone"))
		if _, err := s.PutMessage(ctx, q, "x", 0, DefaultTimeToLive); s.exclusive {
			wantCode(t, err, 404, azerr.QueueNotFound)
		} else if err != nil {
			// Over a shared store the write lands in the deleted queue's space, unreachable,
			// until SweepDeletedQueues removes it (as for tables).
			t.Fatalf("put racing deletion over a shared store: %v", err)
		}
		if s.exclusive {
			_, err = s.GetMessages(ctx, q, 1, time.Minute)
			wantCode(t, err, 404, azerr.QueueNotFound)
			wantCode(t, s.DeleteMessage(ctx, q, m.ID, m.PopReceipt), 404, azerr.QueueNotFound)
		}
	})
}

func TestDeletedQueueComesBackEmpty(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, _ *clock) {
		ctx := context.Background()
		q := newQueue(t, s, "jobs")
		put(t, s, q, "old")
		must(t, s.DeleteQueue(ctx, "acct", "jobs"))
		_, err := s.Queue(ctx, "acct", "jobs")
		wantCode(t, err, 404, azerr.QueueNotFound)
		if got := records(t, s, q); len(got) != 0 {
			t.Fatalf("deleted queue's space still holds %v", got)
		}
		q2 := newQueue(t, s, "jobs")
		if q2.Space == q.Space {
			t.Fatal("a queue created again reuses the deleted queue's space")
		}
		if got := peek(t, s, q2, 32); len(got) != 0 || count(t, s, q2) != 0 {
			t.Fatalf("queue created again holds %q", texts(got))
		}
	})
}

func TestSweepFinishesQueueDeletions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, c *clock) {
		ctx := context.Background()
		q := newQueue(t, s, "jobs")
		space, err := s.deleteQueueRecord(ctx, "acct", "jobs") // as if the process stopped here
		must(t, err)
		// A put that read the queue before the deletion, landing after it.
		_, err = s.store.Get(ctx, queueKey("acct", "jobs"))
		if err == nil {
			t.Fatal("queue record survived")
		}
		must(t, s.store.Commit(ctx, putMutations(q.Space, c.Now())))
		if n, err := s.SweepDeletedQueues(ctx, time.Minute); err != nil || n != 0 {
			t.Fatalf("sweep within grace: %d, %v", n, err)
		}
		c.Advance(2 * time.Minute)
		if n, err := s.SweepDeletedQueues(ctx, time.Minute); err != nil || n != 1 {
			t.Fatalf("sweep after grace: %d, %v; want 1", n, err)
		}
		if got := records(t, s, Queue{Space: space}); len(got) != 0 {
			t.Fatalf("swept space still holds %v", got)
		}
		if n, err := s.SweepDeletedQueues(ctx, time.Minute); err != nil || n != 0 {
			t.Fatalf("second sweep: %d, %v; want nothing left", n, err)
		}
	})
}

func TestListQueuesPagesInNameOrder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, _ *clock) {
		ctx := context.Background()
		var want []string
		for i := range 7 {
			name := fmt.Sprintf("list%d", 6-i)
			_, err := s.CreateQueue(ctx, "acct", name, Metadata{{"n", fmt.Sprint(i)}})
			must(t, err)
			want = append(want, name)
		}
		newQueue(t, s, "other")
		_, err := s.CreateQueue(ctx, "acct2", "list9", nil)
		must(t, err)
		slices.Sort(want)

		var got []string
		l := QueueListing{Prefix: "list", MaxResults: 3}
		for pages := 1; ; pages++ {
			page, err := s.ListQueues(ctx, "acct", l)
			must(t, err)
			for _, q := range page.Queues {
				got = append(got, q.Name)
				if len(q.Metadata) != 1 {
					t.Fatalf("%s listed without its metadata", q.Name)
				}
			}
			if page.NextMarker == "" {
				if pages != 3 {
					t.Fatalf("%d pages, want 3", pages)
				}
				break
			}
			l.Marker = page.NextMarker
		}
		if !slices.Equal(got, want) {
			t.Fatalf("listed %v, want %v", got, want)
		}
		all, err := s.ListQueues(ctx, "acct", QueueListing{})
		must(t, err)
		if len(all.Queues) != 8 || all.NextMarker != "" {
			t.Fatalf("unfiltered: %d queues, marker %q", len(all.Queues), all.NextMarker)
		}
	})
}

func TestQueueMetadataAndPoliciesAreReplacedWhole(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, _ *clock) {
		ctx := context.Background()
		_, err := s.CreateQueue(ctx, "acct", "jobs", Metadata{{"a", "1"}, {"b", "2"}})
		must(t, err)
		must(t, s.SetQueueMetadata(ctx, "acct", "jobs", Metadata{{"c", "3"}}))
		q, err := s.Queue(ctx, "acct", "jobs")
		must(t, err)
		if !q.Metadata.Equal(Metadata{{"c", "3"}}) {
			t.Fatalf("metadata %+v", q.Metadata)
		}
		start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		policies := []auth.AccessPolicy{{ID: "readers", Start: start, Expiry: start.Add(time.Hour), Permission: "rp"}, {ID: "bare"}}
		must(t, s.SetQueuePolicies(ctx, "acct", "jobs", policies))
		q, err = s.Queue(ctx, "acct", "jobs")
		must(t, err)
		if len(q.Policies) != 2 || !q.Policies[0].Start.Equal(start) || q.Policies[0].Permission != "rp" {
			t.Fatalf("policies %+v", q.Policies)
		}
		if !q.Metadata.Equal(Metadata{{"c", "3"}}) {
			t.Fatal("setting policies changed the metadata")
		}
		six := make([]auth.AccessPolicy, 6)
		for i := range six {
			six[i].ID = fmt.Sprint(i)
		}
		wantCode(t, s.SetQueuePolicies(ctx, "acct", "jobs", six), 400, azerr.InvalidXMLDocument)
		must(t, s.SetQueueMetadata(ctx, "acct", "jobs", nil))
		q, err = s.Queue(ctx, "acct", "jobs")
		must(t, err)
		if len(q.Metadata) != 0 || len(q.Policies) != 2 {
			t.Fatalf("after clearing metadata: %+v", q)
		}
	})
}
