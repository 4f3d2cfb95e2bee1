package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabula-dev/tabula/internal/store/postgres/pgtest"
)

// These tests run several Tabula front-ends — each its own postgres.Store, table.Service and
// HTTP server, as separate processes would be — over one PostgreSQL database, with clients
// spread across them. ETags and entity group transactions must hold across front-ends: the
// database, not any one process, decides.

// startFrontEnds starts n front-ends over one fresh database, and creates table name
// through the first. It returns a client of the table per front-end.
func startFrontEnds(t *testing.T, n int, name string) []*aztables.Client {
	t.Helper()
	dsn := pgtest.Start(t)
	var clients []*aztables.Client
	for i := range n {
		s := startServer(t, openPostgresAt(t, dsn))
		if i == 0 {
			s.newTable(t, name)
		}
		clients = append(clients, s.service.NewClient(name))
	}
	return clients
}

// isStatus reports whether err is an Azure error with the given status and code.
func isStatus(err error, status int, code string) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == status && re.ErrorCode == code
}

func TestIfMatchIncrementsAcrossFrontEndsAreExact(t *testing.T) {
	const frontEnds, clients, increments = 3, 24, 5
	tables := startFrontEnds(t, frontEnds, "counter")
	ctx := context.Background()
	addEntity(t, tables[0], map[string]any{"PartitionKey": "c", "RowKey": "n", "Count": 0})

	// Each successful update records the count it wrote: every value from 1 to the total
	// must be written exactly once, or an update was lost or made twice.
	var mu sync.Mutex
	var written []int
	var wg sync.WaitGroup
	for i := range clients {
		c := tables[i%frontEnds]
		wg.Go(func() {
			for done := 0; done < increments; {
				resp, err := c.GetEntity(ctx, "c", "n", nil)
				if err != nil {
					t.Errorf("GetEntity: %v", err)
					return
				}
				var e struct{ Count int }
				if err := json.Unmarshal(resp.Value, &e); err != nil {
					t.Error(err)
					return
				}
				next := e.Count + 1
				_, err = c.UpdateEntity(ctx, marshal(t, map[string]any{"PartitionKey": "c", "RowKey": "n", "Count": next}),
					&aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeReplace, IfMatch: &resp.ETag})
				switch {
				case err == nil:
					done++
					mu.Lock()
					written = append(written, next)
					mu.Unlock()
				case isStatus(err, http.StatusPreconditionFailed, "UpdateConditionNotSatisfied"):
					// Another client got there first: read again.
				default:
					t.Errorf("UpdateEntity: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	const total = clients * increments
	slices.Sort(written)
	for i, v := range written {
		if v != i+1 {
			t.Fatalf("successful updates wrote counts %v, want each of 1..%d once", written, total)
		}
	}
	for _, c := range tables {
		m, _ := getProps(t, c, "c", "n")
		if m["Count"] != float64(total) {
			t.Fatalf("final count %v through one front-end, want %d", m["Count"], total)
		}
	}
}

// TestTransactionsAcrossFrontEndsAreAtomic runs conditional read-modify-write transactions
// over all the entities of one partition, through every front-end at once, while readers
// query the partition: no reader may see part of a transaction, and the number of
// transactions that succeeded must be the number of generations the entities went through.
func TestTransactionsAcrossFrontEndsAreAtomic(t *testing.T) {
	const frontEnds, writers, readers, rounds, entities = 3, 9, 3, 20, 10
	tables := startFrontEnds(t, frontEnds, "atomic")
	ctx := context.Background()
	var load []aztables.TransactionAction
	for i := range entities {
		load = append(load, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd,
			Entity: marshal(t, map[string]any{"PartitionKey": "p", "RowKey": fmt.Sprintf("r%02d", i), "Gen": 0, "Writer": -1})})
	}
	if _, err := tables[0].SubmitTransaction(ctx, load, nil); err != nil {
		t.Fatal(err)
	}

	type entity struct {
		RowKey      string
		Gen, Writer int
		ETag        azcore.ETag `json:"odata.etag"`
	}
	// readPartition reads the partition in one query (one page, so one snapshot) and checks
	// that every entity carries the same generation and writer.
	readPartition := func(c *aztables.Client) ([]entity, bool) {
		page, err := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p'")}).NextPage(ctx)
		if err != nil {
			t.Errorf("query: %v", err)
			return nil, false
		}
		var es []entity
		for _, raw := range page.Entities {
			var e entity
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Error(err)
				return nil, false
			}
			es = append(es, e)
		}
		if len(es) != entities {
			t.Errorf("query returned %d entities, want %d", len(es), entities)
			return nil, false
		}
		for _, e := range es {
			if e.Gen != es[0].Gen || e.Writer != es[0].Writer {
				t.Errorf("a query saw part of a transaction: %+v", es)
				return nil, false
			}
		}
		return es, true
	}

	var mu sync.Mutex
	succeeded, reads := 0, 0
	done := make(chan struct{})
	var writersDone, readersDone sync.WaitGroup
	for r := range readers {
		c := tables[r%frontEnds]
		readersDone.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, ok := readPartition(c); !ok {
					return
				}
				mu.Lock()
				reads++
				mu.Unlock()
			}
		})
	}
	for w := range writers {
		c := tables[w%frontEnds]
		writersDone.Go(func() {
			for range rounds {
				es, ok := readPartition(c)
				if !ok {
					return
				}
				var actions []aztables.TransactionAction
				for _, e := range es {
					actions = append(actions, aztables.TransactionAction{
						ActionType: aztables.TransactionTypeUpdateReplace,
						Entity:     marshal(t, map[string]any{"PartitionKey": "p", "RowKey": e.RowKey, "Gen": e.Gen + 1, "Writer": w}),
						IfMatch:    to.Ptr(e.ETag),
					})
				}
				_, err := c.SubmitTransaction(ctx, actions, nil)
				switch {
				case err == nil:
					mu.Lock()
					succeeded++
					mu.Unlock()
				case isStatus(err, http.StatusAccepted, "UpdateConditionNotSatisfied"):
					// Another transaction changed the partition since it was read.
				default:
					t.Errorf("transaction: %v", err)
					return
				}
			}
		})
	}
	writersDone.Wait()
	close(done)
	readersDone.Wait()

	t.Logf("%d of %d transactions succeeded; %d concurrent queries", succeeded, writers*rounds, reads)
	es, ok := readPartition(tables[0])
	if !ok {
		return
	}
	if es[0].Gen != succeeded || succeeded == 0 {
		t.Fatalf("entities at generation %d after %d successful transactions", es[0].Gen, succeeded)
	}
}

// TestConflictingInsertTransactionsAcrossFrontEndsHaveOneWinner has transactions inserting
// the same entities race through different front-ends: exactly one applies, whole, and the
// others apply nothing.
func TestConflictingInsertTransactionsAcrossFrontEndsHaveOneWinner(t *testing.T) {
	const frontEnds, contenders, rounds, entities = 3, 6, 5, 20
	tables := startFrontEnds(t, frontEnds, "inserts")
	ctx := context.Background()
	for round := range rounds {
		pk := fmt.Sprintf("round%d", round)
		var wg sync.WaitGroup
		var mu sync.Mutex
		winners := []int{}
		for w := range contenders {
			c := tables[w%frontEnds]
			wg.Go(func() {
				var actions []aztables.TransactionAction
				// The contenders insert the rows in different orders, so that their row locks
				// are requested in different orders too.
				for i := range entities {
					rk := fmt.Sprintf("r%02d", (i+w*7)%entities)
					actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd,
						Entity: marshal(t, map[string]any{"PartitionKey": pk, "RowKey": rk, "Writer": w})})
				}
				_, err := c.SubmitTransaction(ctx, actions, nil)
				switch {
				case err == nil:
					mu.Lock()
					winners = append(winners, w)
					mu.Unlock()
				case isStatus(err, http.StatusAccepted, "EntityAlreadyExists"):
				default:
					t.Errorf("transaction: %v", err)
				}
			})
		}
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("round %d: transactions of %v succeeded, want exactly one", round, winners)
		}
		pager := tables[round%frontEnds].NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq '" + pk + "'")})
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Entities) != entities {
			t.Fatalf("round %d: %d entities, want the winner's %d", round, len(page.Entities), entities)
		}
		for _, raw := range page.Entities {
			var e struct{ Writer int }
			if err := json.Unmarshal(raw, &e); err != nil || e.Writer != winners[0] {
				t.Fatalf("round %d: entity %s not from the winner %d", round, raw, winners[0])
			}
		}
	}
}
