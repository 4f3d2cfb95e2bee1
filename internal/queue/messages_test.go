package queue

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

func TestPutMessageReturnsTimesAndAReceipt(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, c *clock) {
		q := newQueue(t, s, "jobs")
		now := c.Now()
		m, err := s.PutMessage(context.Background(), q, "hello", 10*time.Second, time.Hour)
		must(t, err)
		if _, ok := parseMessageID(m.ID); !ok {
			t.Fatalf("MessageId %q is not a GUID", m.ID)
		}
		if !m.InsertionTime.Equal(now.Truncate(time.Microsecond)) ||
			!m.ExpirationTime.Equal(now.Truncate(time.Second).Add(time.Hour)) ||
			!m.TimeNextVisible.Equal(now.Truncate(time.Microsecond).Add(10*time.Second)) {
			t.Fatalf("times %v %v %v, put at %v", m.InsertionTime, m.ExpirationTime, m.TimeNextVisible, now)
		}
		if m.PopReceipt == "" {
			t.Fatal("no pop receipt")
		}
		if got := peek(t, s, q, 1); len(got) != 0 {
			t.Fatalf("a message put with a visibility timeout is visible at once: %q", texts(got))
		}
		c.Advance(10 * time.Second)
		got := peek(t, s, q, 1)
		if len(got) != 1 || got[0].Text != "hello" || got[0].ID != m.ID || got[0].DequeueCount != 0 ||
			!got[0].InsertionTime.Equal(m.InsertionTime) || !got[0].ExpirationTime.Equal(m.ExpirationTime) {
			t.Fatalf("peeked %+v, put %+v", got, m)
		}
		if got[0].PopReceipt != "" || !got[0].TimeNextVisible.IsZero() {
			t.Fatalf("peek returned a receipt or visibility: %+v", got[0])
		}
		// The receipt Put returns works until the message is dequeued.
		must(t, s.DeleteMessage(context.Background(), q, m.ID, m.PopReceipt))
		if n := count(t, s, q); n != 0 {
			t.Fatalf("count %d after delete", n)
		}
	})
}

func TestPutMessageValidatesTimesAndSize(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, _ *clock) {
		ctx := context.Background()
		q := newQueue(t, s, "jobs")
		_, err := s.PutMessage(ctx, q, "x", -time.Second, DefaultTimeToLive)
		wantCode(t, err, 400, azerr.OutOfRangeQueryParameterValue)
		_, err = s.PutMessage(ctx, q, "x", MaxVisibilityTimeout+time.Second, NeverExpires)
		wantCode(t, err, 400, azerr.OutOfRangeQueryParameterValue)
		_, err = s.PutMessage(ctx, q, "x", 0, 0)
		wantCode(t, err, 400, azerr.InvalidQueryParameterValue)
		_, err = s.PutMessage(ctx, q, "x", 0, -2*time.Second)
		wantCode(t, err, 400, azerr.InvalidQueryParameterValue)
		_, err = s.PutMessage(ctx, q, "x", time.Minute, time.Minute)
		wantCode(t, err, 400, azerr.InvalidQueryParameterValue)
		// The limit counts UTF-8 bytes of the text: 65,536 is fine, one more is not.
		big := strings.Repeat("é", MaxMessageSize/2)
		_, err = s.PutMessage(ctx, q, big, 0, DefaultTimeToLive)
		must(t, err)
		_, err = s.PutMessage(ctx, q, big+"x", 0, DefaultTimeToLive)
		wantCode(t, err, 413, azerr.RequestBodyTooLarge)
		// A time to live beyond seven days, and a visibility timeout up to the maximum with a
		// message that never expires, are fine (versions since 2017-07-29).
		_, err = s.PutMessage(ctx, q, "x", MaxVisibilityTimeout, NeverExpires)
		must(t, err)
		_, err = s.PutMessage(ctx, q, "x", 0, 30*24*time.Hour)
		must(t, err)
		if got := get(t, s, q, 32, time.Minute); len(got) != 2 || got[0].Text != big {
			t.Fatalf("got %d messages", len(got))
		}
	})
}

func TestMessagesLeaveInOrderOfPutting(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, c *clock) {
		q := newQueue(t, s, "jobs")
		var want []string
		for i := range 40 {
			text := string(rune('A' + i))
			put(t, s, q, text)
			want = append(want, text)
			if i%3 == 0 {
				c.Advance(time.Millisecond)
			}
		}
		if got := texts(peek(t, s, q, 32)); !slices.Equal(got, want[:32]) {
			t.Fatalf("peeked %q, want %q", got, want[:32])
		}
		got := texts(get(t, s, q, 5, time.Minute))
		got = append(got, texts(get(t, s, q, 32, time.Minute))...)
		got = append(got, texts(get(t, s, q, 32, time.Minute))...)
		if !slices.Equal(got, want) {
			t.Fatalf("dequeued %q, want %q", got, want)
		}
	})
}

func TestDequeuedMessageIsInvisibleUntilItsTimeoutThenReturns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, c *clock) {
		ctx := context.Background()
		q := newQueue(t, s, "jobs")
		put(t, s, q, "work")
		first := get(t, s, q, 32, 30*time.Second)
		if len(first) != 1 || first[0].DequeueCount != 1 || !first[0].TimeNextVisible.Equal(c.Now().Truncate(time.Microsecond).Add(30*time.Second)) {
			t.Fatalf("first dequeue: %+v", first)
		}
		c.Advance(29 * time.Second)
		if got := get(t, s, q, 32, 30*time.Second); len(got) != 0 {
			t.Fatalf("dequeued again within its visibility window: %+v", got)
		}
		if got := peek(t, s, q, 32); len(got) != 0 {
			t.Fatalf("peeked within its visibility window: %+v", got)
		}
		if n := count(t, s, q); n != 1 {
			t.Fatalf("count %d, want 1 (invisible messages count)", n)
		}
		c.Advance(time.Second)
		second := get(t, s, q, 32, 30*time.Second)
		if len(second) != 1 || second[0].ID != first[0].ID || second[0].DequeueCount != 2 || second[0].PopReceipt == first[0].PopReceipt {
			t.Fatalf("after the window: %+v", second)
		}
		// Only the latest receipt works.
		wantCode(t, s.DeleteMessage(ctx, q, first[0].ID, first[0].PopReceipt), 404, azerr.MessageNotFound)
		_, err := s.UpdateMessage(ctx, q, first[0].ID, first[0].PopReceipt, nil, 0)
		wantCode(t, err, 404, azerr.MessageNotFound)
		must(t, s.DeleteMessage(ctx, q, second[0].ID, second[0].PopReceipt))
		wantCode(t, s.DeleteMessage(ctx, q, second[0].ID, second[0].PopReceipt), 404, azerr.MessageNotFound)
		c.Advance(time.Hour)
		if got := get(t, s, q, 32, 30*time.Second); len(got) != 0 {
			t.Fatalf("a deleted message came back: %+v", got)
		}
	})
}

func TestReceiptOutlivesTheWindowUntilTheNextDequeue(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, c *clock) {
		q := newQueue(t, s, "jobs")
		put(t, s, q, "slow")
		m := get(t, s, q, 1, time.Second)[0]
		c.Advance(time.Minute) // visible again, but nobody took it
		must(t, s.DeleteMessage(context.Background(), q, m.ID, m.PopReceipt))
		if got := peek(t, s, q, 1); len(got) != 0 {
			t.Fatalf("still there: %+v", got)
		}
	})
}

func TestBadReceiptsAndIDs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, _ *clock) {
		ctx := context.Background()
		q := newQueue(t, s, "jobs")
		m := put(t, s, q, "x")
		for _, r := range []string{"", "not base64!", "AAAA", m.PopReceipt + "AA", "AAAAAAAAAAAAAAAAAAAAAA"} {
			wantCode(t, s.DeleteMessage(ctx, q, m.ID, r), 400, azerr.InvalidQueryParameterValue)
			_, err := s.UpdateMessage(ctx, q, m.ID, r, nil, 0)
			wantCode(t, err, 400, azerr.InvalidQueryParameterValue)
		}
		for _, id := range []string{"nope", "00000000-0000-0000-0000-000000000000", strings.ToUpper(m.ID[:35]) + "z"} {
			wantCode(t, s.DeleteMessage(ctx, q, id, m.PopReceipt), 404, azerr.MessageNotFound)
		}
		// Another message's receipt names another message.
		other := put(t, s, q, "y")
		wantCode(t, s.DeleteMessage(ctx, q, m.ID, other.PopReceipt), 404, azerr.MessageNotFound)
		// Ids are GUIDs: either case names the message.
		must(t, s.DeleteMessage(ctx, q, strings.ToUpper(m.ID), m.PopReceipt))
		if n := count(t, s, q); n != 1 {
			t.Fatalf("count %d, want 1", n)
		}
	})
}

func TestUpdateMessageChangesVisibilityTextAndReceipt(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, c *clock) {
		ctx := context.Background()
		q := newQueue(t, s, "jobs")
		put(t, s, q, "draft")
		m := get(t, s, q, 1, time.Minute)[0]

		// Extend the lease without changing the text.
		u1, err := s.UpdateMessage(ctx, q, m.ID, m.PopReceipt, nil, 5*time.Minute)
		must(t, err)
		if u1.PopReceipt == m.PopReceipt || !u1.TimeNextVisible.Equal(c.Now().Truncate(time.Microsecond).Add(5*time.Minute)) {
			t.Fatalf("update: %+v", u1)
		}
		c.Advance(2 * time.Minute)
		if got := peek(t, s, q, 1); len(got) != 0 {
			t.Fatal("visible before the extended lease ended")
		}
		_, err = s.UpdateMessage(ctx, q, m.ID, m.PopReceipt, nil, 0)
		wantCode(t, err, 404, azerr.MessageNotFound)

		// Release it now, with new text: visible at once, same dequeue count.
		text := "final <&>"
		u2, err := s.UpdateMessage(ctx, q, m.ID, u1.PopReceipt, &text, 0)
		must(t, err)
		got := peek(t, s, q, 1)
		if len(got) != 1 || got[0].Text != text || got[0].DequeueCount != 1 {
			t.Fatalf("after release: %+v", got)
		}
		// An update's receipt works for Delete, and for a further update (same row, since
		// visibility 0 at the same instant keeps the record where it is).
		u3, err := s.UpdateMessage(ctx, q, m.ID, u2.PopReceipt, nil, 0)
		must(t, err)
		wantCode(t, s.DeleteMessage(ctx, q, m.ID, u2.PopReceipt), 404, azerr.MessageNotFound)
		again := get(t, s, q, 1, time.Minute)
		if len(again) != 1 || again[0].DequeueCount != 2 || again[0].Text != text {
			t.Fatalf("dequeued after release: %+v", again)
		}
		_, err = s.UpdateMessage(ctx, q, m.ID, u3.PopReceipt, nil, 0)
		wantCode(t, err, 404, azerr.MessageNotFound)
		must(t, s.DeleteMessage(ctx, q, m.ID, again[0].PopReceipt))
	})
}

func TestUpdateMessageValidates(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, _ *clock) {
		ctx := context.Background()
		q := newQueue(t, s, "jobs")
		m, err := s.PutMessage(ctx, q, "x", 0, time.Hour)
		must(t, err)
		_, err = s.UpdateMessage(ctx, q, m.ID, m.PopReceipt, nil, -time.Second)
		wantCode(t, err, 400, azerr.OutOfRangeQueryParameterValue)
		_, err = s.UpdateMessage(ctx, q, m.ID, m.PopReceipt, nil, MaxVisibilityTimeout+time.Second)
		wantCode(t, err, 400, azerr.OutOfRangeQueryParameterValue)
		big := strings.Repeat("x", MaxMessageSize+1)
		_, err = s.UpdateMessage(ctx, q, m.ID, m.PopReceipt, &big, 0)
		wantCode(t, err, 413, azerr.RequestBodyTooLarge)
		// Not past the message's expiration.
		_, err = s.UpdateMessage(ctx, q, m.ID, m.PopReceipt, nil, 2*time.Hour)
		wantCode(t, err, 400, azerr.InvalidQueryParameterValue)
		// None of that changed the message: its receipt still works.
		must(t, s.DeleteMessage(ctx, q, m.ID, m.PopReceipt))
	})
}

func TestGetAndPeekValidate(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, _ *clock) {
		ctx := context.Background()
		q := newQueue(t, s, "jobs")
		for _, n := range []int{0, 33, -1} {
			_, err := s.GetMessages(ctx, q, n, time.Minute)
			wantCode(t, err, 400, azerr.OutOfRangeQueryParameterValue)
			_, err = s.PeekMessages(ctx, q, n)
			wantCode(t, err, 400, azerr.OutOfRangeQueryParameterValue)
		}
		for _, v := range []time.Duration{0, MaxVisibilityTimeout + time.Second} {
			_, err := s.GetMessages(ctx, q, 1, v)
			wantCode(t, err, 400, azerr.OutOfRangeQueryParameterValue)
		}
		if got := get(t, s, q, 32, MaxVisibilityTimeout); len(got) != 0 {
			t.Fatalf("empty queue gave %+v", got)
		}
	})
}

func TestExpiredMessagesAreNeverReturnedAndTheirSpaceIsReclaimed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, c *clock) {
		ctx := context.Background()
		q := newQueue(t, s, "jobs")
		short, err := s.PutMessage(ctx, q, "short", 0, 10*time.Second)
		must(t, err)
		forever, err := s.PutMessage(ctx, q, "forever", 0, NeverExpires)
		must(t, err)
		if !forever.ExpirationTime.Equal(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)) {
			t.Fatalf("never-expiring message expires %v", forever.ExpirationTime)
		}
		leased, err := s.PutMessage(ctx, q, "leased", 0, 20*time.Second)
		must(t, err)
		_, err = s.PutMessage(ctx, q, "unread", 5*time.Second, 20*time.Second)
		must(t, err)
		// Dequeued with a window reaching past their expiration, which Get allows.
		got := get(t, s, q, 3, time.Hour)
		if !slices.Equal(texts(got), []string{"short", "forever", "leased"}) {
			t.Fatalf("dequeued %q", texts(got))
		}
		c.Advance(10 * time.Second) // "short" expires
		wantCode(t, s.DeleteMessage(ctx, q, short.ID, got[0].PopReceipt), 404, azerr.MessageNotFound)
		_, err = s.UpdateMessage(ctx, q, short.ID, got[0].PopReceipt, nil, 0)
		wantCode(t, err, 404, azerr.MessageNotFound)
		c.Advance(10 * time.Second) // "leased" and "unread" expire
		if got := texts(peek(t, s, q, 32)); len(got) != 0 {
			t.Fatalf("peeked %q after expiry", got)
		}
		// The Get meets "unread" and removes it; "leased" stays invisible for an hour, where
		// no Get reaches: only the sweep finds it.
		if got := texts(get(t, s, q, 32, time.Minute)); len(got) != 0 {
			t.Fatalf("dequeued %q after expiry", got)
		}
		_, err = s.UpdateMessage(ctx, q, leased.ID, got[2].PopReceipt, nil, 0)
		wantCode(t, err, 404, azerr.MessageNotFound)
		if n := count(t, s, q); n < 2 {
			t.Fatalf("count %d is below the %d messages stored", n, 2)
		}
		n, err := s.SweepExpiredMessages(ctx)
		must(t, err)
		if n != 1 {
			t.Fatalf("swept %d, want 1 (leased; the others went with the Get and the Delete)", n)
		}
		if got := records(t, s, q); got[visiblePartition] != 1 || got[expiryPartition] != 1 {
			t.Fatalf("records left: %v, want forever's two", got)
		}
		if n := count(t, s, q); n != 1 {
			t.Fatalf("count %d, want 1", n)
		}
		c.Advance(time.Hour)
		if got := get(t, s, q, 32, time.Minute); len(got) != 1 || got[0].ID != forever.ID || got[0].DequeueCount != 2 {
			t.Fatalf("forever: %+v", got)
		}
	})
}

func TestClearMessagesRemovesEverythingAndInvalidatesReceipts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, c *clock) {
		ctx := context.Background()
		q := newQueue(t, s, "jobs")
		for range clearBatch + 10 {
			put(t, s, q, "x")
		}
		leased := get(t, s, q, 32, time.Hour)
		_, err := s.PutMessage(ctx, q, "later", time.Hour, NeverExpires)
		must(t, err)
		must(t, s.ClearMessages(ctx, q))
		if got := records(t, s, q); len(got) != 0 {
			t.Fatalf("records left after Clear: %v", got)
		}
		if n := count(t, s, q); n != 0 {
			t.Fatalf("count %d after Clear", n)
		}
		wantCode(t, s.DeleteMessage(ctx, q, leased[0].ID, leased[0].PopReceipt), 404, azerr.MessageNotFound)
		c.Advance(2 * time.Hour)
		if got := get(t, s, q, 32, time.Minute); len(got) != 0 {
			t.Fatalf("dequeued %d after Clear", len(got))
		}
		put(t, s, q, "after")
		if got := texts(get(t, s, q, 32, time.Minute)); !slices.Equal(got, []string{"after"}) {
			t.Fatalf("after Clear: %q", got)
		}
	})
}

func TestApproximateCountIsNeverBelowTheTruth(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, c *clock) {
		ctx := context.Background()
		q := newQueue(t, s, "jobs")
		if n := count(t, s, q); n != 0 {
			t.Fatalf("empty queue counts %d", n)
		}
		for range 10 {
			put(t, s, q, "x")
		}
		if n := count(t, s, q); n != 10 {
			t.Fatalf("count %d, want 10", n)
		}
		got := get(t, s, q, 4, time.Minute)
		for _, m := range got[:3] {
			must(t, s.DeleteMessage(ctx, q, m.ID, m.PopReceipt))
		}
		if n := count(t, s, q); n != 7 {
			t.Fatalf("count %d, want 7", n)
		}
		// A fresh Service over the same store counts from the store.
		fresh := New(s.store, Options{Now: c.Now})
		if n := count(t, fresh, q); n != 7 {
			t.Fatalf("fresh Service counts %d, want 7", n)
		}
	})
}
