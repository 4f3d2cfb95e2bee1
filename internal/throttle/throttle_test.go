package throttle

import (
	"errors"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

func clocked(partitionRate, accountRate float64) (*Limiter, *time.Time) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(Rates{Partition: partitionRate, Queue: partitionRate, Blob: partitionRate, Account: accountRate})
	l.now = func() time.Time { return now }
	return l, &now
}

func wantBusy(t *testing.T, err error, message string) {
	t.Helper()
	var e *azerr.Error
	if !errors.As(err, &e) || e.Status != 503 || e.Code != azerr.ServerBusy || e.Message != message {
		t.Fatalf("got %v, want 503 ServerBusy %q", err, message)
	}
}

func wantRefusal(t *testing.T, err error, scope, message string) {
	t.Helper()
	wantBusy(t, err, message)
	if got := ScopeOf(err); got != scope {
		t.Fatalf("refused for %q, want %q", got, scope)
	}
}

func TestAPartitionGetsItsRateAndNoMore(t *testing.T) {
	l, now := clocked(100, 10000)
	for i := 0; i < 100; i++ {
		if err := l.Take("a", "t", "hot", 1); err != nil {
			t.Fatalf("request %d of the first second: %v", i, err)
		}
	}
	wantRefusal(t, l.Take("a", "t", "hot", 1), ScopePartition, "The server is busy.")
	// Other partitions are not held back by a hot one.
	if err := l.Take("a", "t", "cold", 1); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(100 * time.Millisecond) // refills 10
	for i := 0; i < 10; i++ {
		if err := l.Take("a", "t", "hot", 1); err != nil {
			t.Fatalf("after 100 ms, request %d: %v", i, err)
		}
	}
	wantBusy(t, l.Take("a", "t", "hot", 1), "The server is busy.")
}

func TestTheAccountRateCapsAllPartitions(t *testing.T) {
	l, _ := clocked(100, 150)
	for i := 0; i < 150; i++ {
		if err := l.Take("a", "t", string(rune('a'+i%10)), 1); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	wantBusy(t, l.Take("a", "t", "z", 1), "Operations per second is over the account limit.")
	if err := l.Take("b", "t", "z", 1); err != nil {
		t.Fatalf("another account is held back: %v", err)
	}
}

// A batch larger than a second's worth passes when the bucket is full, then the partition
// waits for its debt.
func TestBigRequestsPassWhenTheBucketIsFull(t *testing.T) {
	l, now := clocked(50, 10000)
	if err := l.Take("a", "t", "p", 100); err != nil {
		t.Fatal(err)
	}
	wantBusy(t, l.Take("a", "t", "p", 1), "The server is busy.")
	*now = now.Add(time.Second) // -50 + 50
	wantBusy(t, l.Take("a", "t", "p", 1), "The server is busy.")
	*now = now.Add(time.Second)
	if err := l.Take("a", "t", "p", 1); err != nil {
		t.Fatal(err)
	}
}

func TestChargedResultsHoldBackLaterRequests(t *testing.T) {
	l, _ := clocked(100, 10000)
	if err := l.Take("a", "t", "p", 1); err != nil {
		t.Fatal(err)
	}
	l.Charge("a", "t", "p", 99) // the query returned 100 entities
	wantBusy(t, l.Take("a", "t", "p", 1), "The server is busy.")
}

func TestANilLimiterThrottlesNothing(t *testing.T) {
	var l *Limiter
	for i := 0; i < 10000; i++ {
		if err := l.Take("a", "t", "p", 100); err != nil {
			t.Fatal(err)
		}
	}
}

// A queue gets its rate in messages: a Get of 32 takes 32 of the queue's and one request of
// the account's.
func TestAQueueGetsItsRateInMessages(t *testing.T) {
	l, now := clocked(64, 100)
	if err := l.TakeQueue("a", "q", 32); err != nil {
		t.Fatal(err)
	}
	if err := l.TakeQueue("a", "q", 32); err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, l.TakeQueue("a", "q", 1), ScopeQueue, "The server is busy.")
	// Another queue, and the account's own requests, are not held back by a busy queue.
	if err := l.TakeQueue("a", "other", 1); err != nil {
		t.Fatal(err)
	}
	if err := l.TakeQueue("a", "", 1); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(time.Second)
	if err := l.TakeQueue("a", "q", 1); err != nil {
		t.Fatalf("a second later: %v", err)
	}
}

func TestABlobGetsItsRateInRequests(t *testing.T) {
	l, _ := clocked(10, 1000)
	for i := range 10 {
		if err := l.TakeBlob("a", "c", "hot"); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	wantRefusal(t, l.TakeBlob("a", "c", "hot"), ScopeBlob, "The server is busy.")
	// The same name in another container is another blob; container requests meter the
	// account only.
	if err := l.TakeBlob("a", "d", "hot"); err != nil {
		t.Fatal(err)
	}
	if err := l.TakeBlob("a", "c", ""); err != nil {
		t.Fatal(err)
	}
}

// The account's rate is shared by every service.
func TestTheAccountRateCoversEveryService(t *testing.T) {
	l, _ := clocked(1000, 30)
	for i := range 10 {
		if err := l.Take("a", "t", "p", 1); err != nil {
			t.Fatal(i, err)
		}
		if err := l.TakeQueue("a", "q", 1); err != nil {
			t.Fatal(i, err)
		}
		if err := l.TakeBlob("a", "c", "b"); err != nil {
			t.Fatal(i, err)
		}
	}
	wantRefusal(t, l.TakeBlob("a", "c", "other"), ScopeAccount, "Operations per second is over the account limit.")
	wantRefusal(t, l.TakeQueue("a", "q2", 1), ScopeAccount, "Operations per second is over the account limit.")
	wantRefusal(t, l.Take("a", "t", "p2", 1), ScopeAccount, "Operations per second is over the account limit.")
}
