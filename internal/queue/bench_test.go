package queue

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/store"
)

// fill puts n messages of text into q, visible at once and expiring in a day, many per
// commit: what n Put Message calls would store, only faster.
func fill(tb testing.TB, s *Service, q Queue, n int, text string) {
	tb.Helper()
	ctx := context.Background()
	const perCommit = 500
	for done := 0; done < n; {
		now := s.now().UTC()
		visible := now.Truncate(time.Microsecond)
		expiration := now.Truncate(time.Second).Add(24 * time.Hour)
		version := makeVersion(expiration, 1)
		var ms []store.Mutation
		for ; done < n && len(ms) < 2*perCommit; done++ {
			id := newMessageID(s.insertionTime(now))
			ms = append(ms,
				store.Mutation{Key: visibleKey(q.Space, visible, id), Value: messageValue{text: text}.encode(), Version: version},
				store.Mutation{Key: expiryKey(q.Space, expiration, id), Value: expiryValue(visible), Version: version},
			)
		}
		if err := s.store.Commit(ctx, ms); err != nil {
			tb.Fatal(err)
		}
	}
}

// drain gets and deletes every message of q with the given number of consumers.
func drain(tb testing.TB, s *Service, q Queue, consumers int) {
	tb.Helper()
	var wg sync.WaitGroup
	for range consumers {
		wg.Go(func() {
			ctx := context.Background()
			for {
				ms, err := s.GetMessages(ctx, q, 32, time.Hour)
				if err != nil {
					tb.Error(err)
					return
				}
				if len(ms) == 0 {
					return
				}
				for _, m := range ms {
					if err := s.DeleteMessage(ctx, q, m.ID, m.PopReceipt); err != nil {
						tb.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkGetMessages times one Get Messages (one message, then deleted and replaced
// untimed, so that the depth stays) on queues of different depths, and on a queue a million
// messages went through before (whose partition start is a field of tombstones on Pebble),
// with the Service's in-memory head and without.
// The million-message cases take minutes to set up and run only with TABULA_BENCH_DEEP=1:
//
//	TABULA_BENCH_DEEP=1 go test -run '^$' -bench GetMessages -benchtime 20000x ./internal/queue
func BenchmarkGetMessages(b *testing.B) {
	text := strings.Repeat("m", 1024)
	deep := os.Getenv("TABULA_BENCH_DEEP") == "1"
	cases := []struct {
		name          string
		open          func(testing.TB) store.Store
		depth, before int
		noHead        bool // timed through a Service that treats the store as shared: no head
	}{
		{"pebble/depth=1k", openPebble, 1000, 0, false},
		{"pebble/depth=1M", openPebble, 1_000_000, 0, false},
		{"pebble/depth=1k/after-1M-through", openPebble, 1000, 1_000_000, false},
		{"pebble/depth=1k/after-1M-through/no-head", openPebble, 1000, 1_000_000, true},
		{"postgres/depth=32", openPostgres, 32, 0, false},
		{"postgres/depth=1k", openPostgres, 1000, 0, false},
		{"postgres/depth=1M", openPostgres, 1_000_000, 0, false},
		{"postgres/depth=1k/after-1M-through", openPostgres, 1000, 1_000_000, false},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			if (tc.depth > 1000 || tc.before > 0) && !deep {
				b.Skip("set TABULA_BENCH_DEEP=1 to run the million-message cases")
			}
			st := tc.open(b)
			s := New(st, Options{})
			q := newQueue(b, s, "bench")
			if tc.before > 0 {
				fill(b, s, q, tc.before, text)
				drain(b, s, q, 16)
			}
			if tc.noHead {
				s = New(sharedOnly{st}, Options{})
			}
			fill(b, s, q, tc.depth, text)
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				ms, err := s.GetMessages(ctx, q, 1, time.Hour)
				if err != nil || len(ms) != 1 {
					b.Fatalf("GetMessages: %d messages, %v", len(ms), err)
				}
				b.StopTimer()
				if err := s.DeleteMessage(ctx, q, ms[0].ID, ms[0].PopReceipt); err != nil {
					b.Fatal(err)
				}
				put(b, s, q, text)
				b.StartTimer()
			}
		})
	}
}
