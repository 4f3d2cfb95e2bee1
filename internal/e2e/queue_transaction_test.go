package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/table"
	"github.com/tabula-dev/tabula/internal/tablehttp"
)

// testClock is a clock for the queue service that runs fast: visibility windows end in
// milliseconds of real time.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) run(stop <-chan struct{}, every, step time.Duration) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(every):
			c.mu.Lock()
			c.t = c.t.Add(step)
			c.mu.Unlock()
		}
	}
}

// The design guide's eventually consistent transaction (shared/seeds/design-guide-english.md,
// "Eventually consistent transactions pattern"): archiving an employee moves its entity from
// the Current table to the Archive table, which no entity group transaction can do, so a client
// puts a "move" message on a queue and workers, for each message, insert-or-replace the entity
// in Archive, delete it from Current if it is there, and only then delete the message. Workers
// here die at random between those steps, leaving their message invisible until its window
// ends; it then reappears and another worker repeats the idempotent steps. In the end every
// employee must be in Archive, as it was, and not in Current, and no message may be left.
func TestEventuallyConsistentArchiveSurvivesDyingWorkers(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			authn := auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()})
			tables := startServerOver(t, tablehttp.New(table.New(st), authn, nil)).service
			clock := &testClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
			queues := startQueueServer(t, st, clock.Now)
			ctx := context.Background()

			const employees = 60
			current, archive := tables.NewClient("Current"), tables.NewClient("Archive")
			for _, c := range []*aztables.Client{current, archive} {
				if _, err := c.CreateTable(ctx, nil); err != nil {
					t.Fatal(err)
				}
			}
			jobs := queues.newQueue(t, "archive-jobs")
			for i := range employees {
				e, _ := json.Marshal(map[string]any{"PartitionKey": "emp", "RowKey": fmt.Sprintf("%03d", i), "Name": fmt.Sprint("employee ", i), "Salary": 1000 + i})
				if _, err := current.AddEntity(ctx, e, nil); err != nil {
					t.Fatal(err)
				}
				if _, err := jobs.EnqueueMessage(ctx, fmt.Sprintf("%03d", i), nil); err != nil {
					t.Fatal(err)
				}
			}

			stop := make(chan struct{})
			go clock.run(stop, 5*time.Millisecond, time.Second)
			defer close(stop)

			var deaths, redelivered, done atomic.Int64
			// worker processes messages until the queue stays empty, or dies: a death is a
			// return without deleting the message it holds.
			worker := func(rng *rand.Rand) (died bool) {
				for idle := 0; idle < 50; {
					got, err := jobs.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(2)), VisibilityTimeout: to.Ptr(int32(10))})
					if err != nil {
						t.Errorf("DequeueMessages: %v", err)
						return false
					}
					if len(got.Messages) == 0 {
						idle++
						time.Sleep(2 * time.Millisecond)
						continue
					}
					idle = 0
					for _, m := range got.Messages {
						if *m.DequeueCount > 1 {
							redelivered.Add(1)
						}
						rk := *m.MessageText
						if rng.IntN(8) == 0 {
							return true // died holding the message
						}
						// Step 4: copy into Archive. The entity may already be gone from Current
						// if an earlier worker got past step 5; then Archive already has it.
						e, err := current.GetEntity(ctx, "emp", rk, nil)
						if err == nil {
							if _, err := archive.UpsertEntity(ctx, e.Value, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
								t.Errorf("upsert into Archive: %v", err)
								return false
							}
						} else if !isStatus(err, 404, "ResourceNotFound") {
							t.Errorf("read from Current: %v", err)
							return false
						}
						if rng.IntN(8) == 0 {
							return true // died between the two tables
						}
						// Step 5: delete from Current, if it is still there.
						if _, err := current.DeleteEntity(ctx, "emp", rk, nil); err != nil && !isStatus(err, 404, "ResourceNotFound") {
							t.Errorf("delete from Current: %v", err)
							return false
						}
						if rng.IntN(8) == 0 {
							return true // died before deleting the message
						}
						// Step 6. A 404 means the window ended and another worker holds the message
						// now: it will repeat the steps, harmlessly, and delete it.
						if _, err := jobs.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil); err == nil {
							done.Add(1)
						} else if !isStatus(err, 404, "MessageNotFound") {
							t.Errorf("DeleteMessage: %v", err)
							return false
						}
					}
				}
				return false
			}
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 7))
					for worker(rng) { // a dead worker is replaced
						deaths.Add(1)
					}
				})
			}
			wg.Wait()

			props, err := jobs.GetProperties(ctx, nil)
			if err != nil || *props.ApproximateMessagesCount != 0 {
				t.Fatalf("messages left: %v, %v", props.ApproximateMessagesCount, err)
			}
			if n := done.Load(); n != employees {
				t.Fatalf("%d messages deleted by the worker that completed them, want %d", n, employees)
			}
			for i := range employees {
				rk := fmt.Sprintf("%03d", i)
				if _, err := current.GetEntity(ctx, "emp", rk, nil); !isStatus(err, 404, "ResourceNotFound") {
					t.Fatalf("employee %s is still in Current: %v", rk, err)
				}
				got, err := archive.GetEntity(ctx, "emp", rk, nil)
				if err != nil {
					t.Fatalf("employee %s is not in Archive: %v", rk, err)
				}
				var e struct {
					Name   string
					Salary int
				}
				if err := json.Unmarshal(got.Value, &e); err != nil || e.Name != fmt.Sprint("employee ", i) || e.Salary != 1000+i {
					t.Fatalf("employee %s archived as %s (%v)", rk, got.Value, err)
				}
			}
			if deaths.Load() == 0 || redelivered.Load() == 0 {
				t.Fatalf("%d deaths, %d redeliveries: the test did not exercise recovery", deaths.Load(), redelivered.Load())
			}
			t.Logf("%d workers died; %d messages came back", deaths.Load(), redelivered.Load())
		})
	}
}
