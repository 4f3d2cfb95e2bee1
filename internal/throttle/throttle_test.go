package throttle

import (
	"errors"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

func clocked(partitionRate, accountRate float64) (*Limiter, *time.Time) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(partitionRate, accountRate)
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

func TestAPartitionGetsItsRateAndNoMore(t *testing.T) {
	l, now := clocked(100, 10000)
	for i := 0; i < 100; i++ {
		if err := l.Take("a", "t", "hot", 1); err != nil {
			t.Fatalf("request %d of the first second: %v", i, err)
		}
	}
	wantBusy(t, l.Take("a", "t", "hot", 1), "The server is busy.")
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
