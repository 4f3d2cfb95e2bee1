package queue

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/metrics"
	"github.com/tabula-dev/tabula/internal/store"
)

// Message is a message as Put Message, Get Messages and Peek Messages return it. Put Message
// leaves DequeueCount and Text unset; Peek Messages leaves PopReceipt and TimeNextVisible
// unset.
type Message struct {
	ID              string
	InsertionTime   time.Time
	ExpirationTime  time.Time
	TimeNextVisible time.Time
	DequeueCount    int64
	PopReceipt      string
	Text            string
}

// Azure's limits on messages (shared/spec/queue.md §5, §8).
const (
	// MaxMessageSize bounds a message's text, counted as Azure counts it: the UTF-8 bytes of
	// the text after XML decoding. The real service accepts exactly 65,536 and refuses
	// 65,537 with 413 RequestBodyTooLarge, even when XML escapes make the request body
	// longer (the JS SDK's recorded tests "enqueue ... with 64KB characters including special
	// char" and "enqueue negative with 65537B").
	MaxMessageSize = 64 << 10
	// MaxVisibilityTimeout bounds every visibility timeout: seven days.
	MaxVisibilityTimeout = 7 * 24 * time.Hour
	// DefaultTimeToLive is a message's time to live when Put Message names none.
	DefaultTimeToLive = 7 * 24 * time.Hour
	// NeverExpires is the time to live of a message that never expires (messagettl=-1).
	NeverExpires time.Duration = -1
	// DefaultGetVisibilityTimeout is Get Messages' visibility timeout when it names none.
	DefaultGetVisibilityTimeout = 30 * time.Second
	// MaxMessagesPerGet bounds numofmessages of Get and Peek Messages.
	MaxMessagesPerGet = 32
)

// maxAttempts bounds the attempts of a call whose commit lost a race with a concurrent
// change of the same messages; each attempt reads again, so only sustained contention on one
// queue's head exhausts it.
const maxAttempts = 64

// maxPurgedPerGet bounds the expired messages one Get Messages removes on its way, keeping
// its commit small; the expiry sweep removes the rest.
const maxPurgedPerGet = 128

// outOfRange is the 400 for a query parameter outside its range, with the details the real
// service's body carries (shared/spec/queue.md §5.3).
func outOfRange(param string, value, lowest, highest int64) error {
	e := azerr.Newf(azerr.OutOfRangeQueryParameterValue, "One of the query parameters specified in the request URI is outside the permissible range: %s=%d is not within %d to %d.",
		param, value, lowest, highest)
	e.Details = []azerr.Detail{
		{Name: "QueryParameterName", Value: param},
		{Name: "QueryParameterValue", Value: strconv.FormatInt(value, 10)},
		{Name: "MinimumAllowed", Value: strconv.FormatInt(lowest, 10)},
		{Name: "MaximumAllowed", Value: strconv.FormatInt(highest, 10)},
	}
	return e
}

// invalidParam is the 400 for a query parameter whose value is not acceptable, with the
// details Azure's body carries.
func invalidParam(param, value, reason string) error {
	e := azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid: %s=%s: %s.", param, value, reason)
	e.Details = []azerr.Detail{
		{Name: "QueryParameterName", Value: param},
		{Name: "QueryParameterValue", Value: value},
		{Name: "Reason", Value: reason},
	}
	return e
}

// checkTimeout checks a visibility timeout against [lowest, MaxVisibilityTimeout].
func checkTimeout(timeout, lowest time.Duration) error {
	if timeout < lowest || timeout > MaxVisibilityTimeout {
		return outOfRange("visibilitytimeout", int64(timeout/time.Second), int64(lowest/time.Second), int64(MaxVisibilityTimeout/time.Second))
	}
	return nil
}

func checkMessageSize(text string) error {
	if len(text) > MaxMessageSize {
		e := azerr.Newf(azerr.RequestBodyTooLarge, "The request body is too large and exceeds the maximum permissible limit. The message text is %d bytes of UTF-8, at most %d.", len(text), MaxMessageSize)
		e.Details = []azerr.Detail{{Name: "MaxLimit", Value: strconv.Itoa(MaxMessageSize)}}
		return e
	}
	return nil
}

func checkCount(n int) error {
	if n < 1 || n > MaxMessagesPerGet {
		return outOfRange("numofmessages", int64(n), 1, MaxMessagesPerGet)
	}
	return nil
}

// withQueue runs fn on q's messages. Over an exclusive store it holds off q's deletion
// meanwhile, and gives fn the queue as it stands now (404 QueueNotFound if it was deleted).
func (s *Service) withQueue(ctx context.Context, q Queue, fn func(q Queue, st *messageState) error) error {
	if s.queues != nil {
		lock := s.queues.deletionLock(queueName{q.Account, q.Name})
		lock.RLock()
		defer lock.RUnlock()
		current, err := s.Queue(ctx, q.Account, q.Name)
		if err != nil {
			return err
		}
		q = current
	}
	st := s.messages.acquire(q.Space, s.exclusive)
	defer s.messages.release(st)
	return fn(q, st)
}

// PutMessage adds a message to q, visible after visibilityTimeout (0 to 7 days) and expiring
// after timeToLive (at least a second and longer than visibilityTimeout, or NeverExpires).
// The returned Message carries a pop receipt valid until the message is first dequeued.
func (s *Service) PutMessage(ctx context.Context, q Queue, text string, visibilityTimeout, timeToLive time.Duration) (Message, error) {
	if err := checkTimeout(visibilityTimeout, 0); err != nil {
		return Message{}, err
	}
	ttl := strconv.FormatInt(int64(timeToLive/time.Second), 10)
	if timeToLive != NeverExpires && timeToLive < time.Second {
		return Message{}, invalidParam("messagettl", ttl, "messagettl must be -1 (never expires) or at least 1")
	}
	if timeToLive != NeverExpires && visibilityTimeout >= timeToLive {
		return Message{}, invalidParam("messagettl", ttl, "messagettl must be greater than visibilitytimeout")
	}
	if err := checkMessageSize(text); err != nil {
		return Message{}, err
	}
	now := s.now().UTC()
	inserted := s.insertionTime(now)
	// Azure shows times in whole seconds; the expiration is kept at that precision, so that
	// what a client reads is exactly when the message expires.
	expiration := maxExpiration
	if timeToLive != NeverExpires && timeToLive < maxExpiration.Sub(now) {
		expiration = now.Truncate(time.Second).Add(timeToLive)
	}
	// Visible from now, not from the insertion time, which may be a little ahead of the
	// clock.
	visible := now.Truncate(time.Microsecond).Add(visibilityTimeout)
	id := newMessageID(inserted)
	version := makeVersion(expiration, 1)
	msg := Message{
		ID: id.String(), InsertionTime: inserted, ExpirationTime: expiration, TimeNextVisible: visible,
		PopReceipt: popReceipt{visible: visible, version: version, id: id}.String(),
	}
	err := s.withQueue(ctx, q, func(q Queue, st *messageState) error {
		vkey := visibleKey(q.Space, visible, id)
		done := st.beginInsert(vkey.Row)
		defer done()
		defer st.changingCount()()
		// Counted before the commit, so that the count is never lower than the truth.
		st.adjustCount(1)
		// Unconditional: both rows hold the new id, whose insertion time no other put of this
		// Service shares and whose 64 random bits tell front-ends apart, so no record can be
		// there to overwrite; proving them absent cost two point reads per put (8% of the
		// server's CPU under a put-only load).
		err := s.store.Commit(ctx, []store.Mutation{{
			Key: vkey, Value: messageValue{text: text}.encode(), Version: version,
		}, {
			Key: expiryKey(q.Space, expiration, id), Value: expiryValue(visible), Version: version,
		}})
		if err != nil {
			st.adjustCount(-1)
		}
		return err
	})
	if err != nil {
		return Message{}, err
	}
	metrics.MessagesPut.Inc()
	return msg, nil
}

// expired reports whether a message of the given version has expired at now.
func expired(version int64, now time.Time) bool {
	return now.Unix() >= version>>generationBits
}

// scanHead reads the visible, unexpired message records of q's visible partition at now, in
// dequeue order, and passes each to take until take returns false. Expired records met on
// the way go to onExpired, if not nil. want is how many records the caller expects to read,
// so that a store reading in pages over a network reads no more at first.
func (s *Service) scanHead(ctx context.Context, space string, st *messageState, now time.Time, want int,
	take func(store.Record) bool, onExpired func(store.Record)) error {
	start, sc := st.beginHeadScan()
	bound := visibleBound(now)
	first := bound
	seen := false
	r := store.Range{
		Space: space,
		Start: store.Key{Space: space, Partition: visiblePartition, Row: start},
		End:   store.Key{Space: space, Partition: visiblePartition, Row: bound},
		Limit: want,
	}
	err := s.store.Scan(ctx, r, func(rec store.Record) (bool, error) {
		if !seen {
			first, seen = rec.Key.Row, true
		}
		if expired(rec.Version, now) {
			if onExpired != nil {
				onExpired(rec)
			}
			return true, nil
		}
		return take(rec), nil
	})
	st.endHeadScan(sc, first)
	return err
}

// ownRecord copies a record lent by Scan.
func ownRecord(rec store.Record) store.Record {
	rec.Value = bytes.Clone(rec.Value)
	return rec
}

// GetMessages dequeues up to n (1 to 32) visible messages of q, making each invisible for
// visibilityTimeout (1 second to 7 days) and giving it a new pop receipt. Fewer, or none,
// are returned when fewer are visible. Expired messages met on the way are removed.
func (s *Service) GetMessages(ctx context.Context, q Queue, n int, visibilityTimeout time.Duration) ([]Message, error) {
	if err := checkCount(n); err != nil {
		return nil, err
	}
	if err := checkTimeout(visibilityTimeout, time.Second); err != nil {
		return nil, err
	}
	var out []Message
	err := s.withQueue(ctx, q, func(q Queue, st *messageState) error {
		for range maxAttempts {
			var err error
			out, err = s.dequeue(ctx, q.Space, st, n, visibilityTimeout)
			var cf *store.ConditionFailedError
			if !errors.As(err, &cf) {
				return err
			}
		}
		return azerr.Newf(azerr.ServerBusy, "The queue is being read by too many clients at once. Please retry your request.")
	})
	return out, err
}

// dequeue makes one attempt at GetMessages. It fails with *store.ConditionFailedError when
// another call changed one of the messages it read.
func (s *Service) dequeue(ctx context.Context, space string, st *messageState, n int, visibilityTimeout time.Duration) ([]Message, error) {
	now := s.now().UTC()
	var taken, purged []store.Record
	var claims []string
	defer func() { st.unclaim(claims) }()
	// The records other calls of this Service are taking lie at the head too, and are
	// skipped.
	err := s.scanHead(ctx, space, st, now, n+st.claims(), func(rec store.Record) bool {
		if st.claim(rec.Key.Row) {
			claims = append(claims, rec.Key.Row)
			taken = append(taken, ownRecord(rec))
		}
		return len(taken) < n
	}, func(rec store.Record) {
		if len(purged) < maxPurgedPerGet && st.claim(rec.Key.Row) {
			claims = append(claims, rec.Key.Row)
			purged = append(purged, store.Record{Key: rec.Key, Version: rec.Version})
		}
	})
	if err != nil || len(taken)+len(purged) == 0 {
		return nil, err
	}

	visible := now.Truncate(time.Microsecond).Add(visibilityTimeout)
	mutations := make([]store.Mutation, 0, 3*len(taken)+2*len(purged))
	out := make([]Message, 0, len(taken))
	lowest := ""
	for _, rec := range taken {
		_, id, err := splitRow(rec.Key.Row)
		if err != nil {
			return nil, err
		}
		v, err := decodeMessageValue(rec)
		if err != nil {
			return nil, err
		}
		v.dequeueCount++
		version := nextVersion(rec.Version)
		expiration := expirationOf(rec.Version)
		vkey := visibleKey(space, visible, id)
		if lowest == "" || vkey.Row < lowest {
			lowest = vkey.Row
		}
		mutations = append(mutations,
			store.Mutation{Key: rec.Key, Delete: true, Expect: store.Expect{Kind: store.ExpectVersion, Version: rec.Version}},
			store.Mutation{Key: vkey, Value: v.encode(), Version: version},
			store.Mutation{Key: expiryKey(space, expiration, id), Value: expiryValue(visible), Version: version},
		)
		out = append(out, Message{
			ID: id.String(), InsertionTime: id.inserted(), ExpirationTime: expiration, TimeNextVisible: visible,
			DequeueCount: v.dequeueCount, PopReceipt: popReceipt{visible: visible, version: version, id: id}.String(), Text: v.text,
		})
	}
	for _, rec := range purged {
		_, id, err := splitRow(rec.Key.Row)
		if err != nil {
			return nil, err
		}
		mutations = append(mutations,
			store.Mutation{Key: rec.Key, Delete: true, Expect: store.Expect{Kind: store.ExpectVersion, Version: rec.Version}},
			store.Mutation{Key: expiryKey(space, expirationOf(rec.Version), id), Delete: true},
		)
	}
	if lowest != "" {
		done := st.beginInsert(lowest)
		defer done()
	}
	defer st.changingCount()()
	if err := s.store.Commit(ctx, mutations); err != nil {
		return nil, err
	}
	st.adjustCount(-int64(len(purged)))
	metrics.MessagesGot.Add(float64(len(out)))
	return out, nil
}

// PeekMessages returns up to n (1 to 32) visible messages of q without changing them: no pop
// receipt, no new visibility, DequeueCount as it stands.
func (s *Service) PeekMessages(ctx context.Context, q Queue, n int) ([]Message, error) {
	if err := checkCount(n); err != nil {
		return nil, err
	}
	var out []Message
	err := s.withQueue(ctx, q, func(q Queue, st *messageState) error {
		var decodeErr error
		err := s.scanHead(ctx, q.Space, st, s.now().UTC(), n, func(rec store.Record) bool {
			_, id, err := splitRow(rec.Key.Row)
			if err != nil {
				decodeErr = err
				return false
			}
			v, err := decodeMessageValue(rec)
			if err != nil {
				decodeErr = err
				return false
			}
			out = append(out, Message{
				ID: id.String(), InsertionTime: id.inserted(), ExpirationTime: expirationOf(rec.Version),
				DequeueCount: v.dequeueCount, Text: v.text,
			})
			return len(out) < n
		}, nil)
		if err == nil {
			err = decodeErr
		}
		return err
	})
	return out, err
}

// messageNotFound is the answer to a Delete or Update Message whose message is gone, expired,
// or no longer in the state its pop receipt names. The real service answers 404
// MessageNotFound to stale and made-up receipts alike (shared/spec/queue.md §5.5); Azurite's
// 400 PopReceiptMismatch is not what clients of the real service see.
func messageNotFound(id string) error {
	return azerr.Newf(azerr.MessageNotFound, "The specified message does not exist: no message %s with that pop receipt (deleted, expired, or dequeued or updated since the receipt was issued).", id)
}

// receiptFor reads the pop receipt a client gives for message id: a receipt that cannot
// name that message (not issued here, or another message's) is messageNotFound.
func receiptFor(id, receipt string) (popReceipt, messageID, error) {
	r, err := parsePopReceipt(receipt)
	if errors.Is(err, errForeignReceipt) {
		return popReceipt{}, messageID{}, messageNotFound(id)
	}
	if err != nil {
		return popReceipt{}, messageID{}, err
	}
	mid, ok := parseMessageID(id)
	if !ok || !r.names(mid) {
		return popReceipt{}, messageID{}, messageNotFound(id)
	}
	return r, mid, nil
}

// DeleteMessage deletes message id of q, given its latest pop receipt.
func (s *Service) DeleteMessage(ctx context.Context, q Queue, id, receipt string) error {
	r, mid, err := receiptFor(id, receipt)
	if err != nil {
		return err
	}
	expiration := expirationOf(r.version)
	now := s.now()
	return s.withQueue(ctx, q, func(q Queue, st *messageState) error {
		defer st.changingCount()()
		// The version condition checks the receipt, and with it the expiration time that
		// names the expiry record.
		err := s.store.Commit(ctx, []store.Mutation{{
			Key: visibleKey(q.Space, r.visible, mid), Delete: true,
			Expect: store.Expect{Kind: store.ExpectVersion, Version: r.version},
		}, {
			Key: expiryKey(q.Space, expiration, mid), Delete: true,
		}})
		var cf *store.ConditionFailedError
		if errors.As(err, &cf) {
			return messageNotFound(id)
		}
		if err != nil {
			return err
		}
		st.adjustCount(-1)
		metrics.MessagesDeleted.Inc()
		if expired(r.version, now) {
			return messageNotFound(id) // already gone for clients; now gone from storage too
		}
		return nil
	})
}

// UpdateMessage makes message id of q, given its latest pop receipt, visible again after
// visibilityTimeout (0 to 7 days, not past its expiration) and, if text is not nil, replaces
// its text. It returns the message's new pop receipt and TimeNextVisible (the other fields
// unset); the old receipt no longer works. DequeueCount does not change.
func (s *Service) UpdateMessage(ctx context.Context, q Queue, id, receipt string, text *string, visibilityTimeout time.Duration) (Message, error) {
	if err := checkTimeout(visibilityTimeout, 0); err != nil {
		return Message{}, err
	}
	if text != nil {
		if err := checkMessageSize(*text); err != nil {
			return Message{}, err
		}
	}
	r, mid, err := receiptFor(id, receipt)
	if err != nil {
		return Message{}, err
	}
	var out Message
	err = s.withQueue(ctx, q, func(q Queue, st *messageState) error {
		now := s.now().UTC()
		old := visibleKey(q.Space, r.visible, mid)
		rec, err := s.store.Get(ctx, old)
		if errors.Is(err, store.ErrNotFound) {
			return messageNotFound(id)
		}
		if err != nil {
			return err
		}
		if rec.Version != r.version || expired(rec.Version, now) {
			return messageNotFound(id)
		}
		expiration := expirationOf(rec.Version)
		visible := now.Truncate(time.Microsecond).Add(visibilityTimeout)
		if visible.After(expiration) {
			// Azure documents the rule but not its code; 400 InvalidQueryParameterValue is
			// what Put Message's like rule (timeout not below the time to live) answers.
			return invalidParam("visibilitytimeout", strconv.FormatInt(int64(visibilityTimeout/time.Second), 10),
				"the message would become visible after it expires, at "+expiration.Format(time.RFC1123))
		}
		v, err := decodeMessageValue(rec)
		if err != nil {
			return err
		}
		if text != nil {
			v.text = *text
		}
		version := nextVersion(rec.Version)
		vkey := visibleKey(q.Space, visible, mid)
		mutations := []store.Mutation{
			{Key: vkey, Value: v.encode(), Version: version},
			{Key: expiryKey(q.Space, expiration, mid), Value: expiryValue(visible), Version: version},
		}
		if vkey == old {
			mutations[0].Expect = store.Expect{Kind: store.ExpectVersion, Version: rec.Version}
		} else {
			mutations = append(mutations, store.Mutation{
				Key: old, Delete: true, Expect: store.Expect{Kind: store.ExpectVersion, Version: rec.Version},
			})
		}
		done := st.beginInsert(vkey.Row)
		defer done()
		err = s.store.Commit(ctx, mutations)
		var cf *store.ConditionFailedError
		if errors.As(err, &cf) {
			return messageNotFound(id)
		}
		if err != nil {
			return err
		}
		out = Message{ID: id, TimeNextVisible: visible, PopReceipt: popReceipt{visible: visible, version: version, id: mid}.String()}
		return nil
	})
	return out, err
}

// clearBatch bounds the messages one commit of Clear Messages or of the expiry sweep removes.
const clearBatch = 256

// ClearMessages deletes every message of q that was in it when the call began; messages put
// meanwhile may remain. Receipts of the deleted messages stop working.
func (s *Service) ClearMessages(ctx context.Context, q Queue) error {
	// Every message this Service put before has an earlier insertion time than this one.
	cutoff := s.insertionTime(s.now())
	return s.withQueue(ctx, q, func(q Queue, st *messageState) error {
		n, err := s.removeByExpiry(ctx, q.Space, st, "", func(id messageID) bool { return id.inserted().Before(cutoff) })
		metrics.MessagesDeleted.Add(float64(n))
		return err
	})
}

// removeByExpiry removes the messages of space whose expiry records lie below end (all of
// them when end is empty) and whose ids pass keep, in batches, walking the expiry
// partition once. It returns how many it removed.
func (s *Service) removeByExpiry(ctx context.Context, space string, st *messageState, end string, keep func(messageID) bool) (int, error) {
	r := store.PartitionRange(space, expiryPartition)
	if end != "" {
		r.End.Partition, r.End.Row = expiryPartition, end
	}
	removed := 0
	for attempts := 0; ; {
		var batch []store.Mutation
		var last string
		var decodeErr error
		err := s.store.Scan(ctx, r, func(rec store.Record) (bool, error) {
			_, id, err := splitRow(rec.Key.Row)
			if err != nil {
				return false, err
			}
			last = rec.Key.Row
			if !keep(id) {
				return true, nil
			}
			visible, err := readExpiryValue(rec)
			if err != nil {
				decodeErr = err
				return false, nil
			}
			// The expiry record's version is the message record's: if it still holds, the
			// message record is where the expiry record says.
			batch = append(batch,
				store.Mutation{Key: rec.Key, Delete: true, Expect: store.Expect{Kind: store.ExpectVersion, Version: rec.Version}},
				store.Mutation{Key: visibleKey(space, visible, id), Delete: true},
			)
			return len(batch) < 2*clearBatch, nil
		})
		if err == nil {
			err = decodeErr
		}
		if err != nil {
			return removed, err
		}
		if len(batch) == 0 {
			return removed, nil
		}
		endChange := st.changingCount()
		err = s.store.Commit(ctx, batch)
		if err == nil {
			st.adjustCount(-int64(len(batch) / 2))
		}
		endChange()
		var cf *store.ConditionFailedError
		switch {
		case errors.As(err, &cf):
			// A message of the batch was dequeued, updated or deleted meanwhile: read the
			// batch's records again.
			if attempts++; attempts == maxAttempts {
				return removed, azerr.Newf(azerr.ServerBusy, "The queue is being changed by too many clients at once. Please retry your request.")
			}
			continue
		case err != nil:
			return removed, err
		}
		removed += len(batch) / 2
		r.Start.Row = last + "\x00"
	}
}

// ApproximateMessageCount returns the number of messages in q, counting invisible ones and
// expired ones not yet removed: never fewer than there are. Over an exclusive store it is
// counted from the store once and then kept; over a shared store every call counts the
// queue's expiry records, a scan as long as the queue.
func (s *Service) ApproximateMessageCount(ctx context.Context, q Queue) (int64, error) {
	var n int64
	err := s.withQueue(ctx, q, func(q Queue, st *messageState) error {
		var err error
		n, err = st.messageCount(func() (int64, error) {
			var n int64
			err := s.store.Scan(ctx, store.PartitionRange(q.Space, expiryPartition), func(store.Record) (bool, error) {
				n++
				return true, nil
			})
			return n, err
		})
		return err
	})
	return n, err
}

// SweepExpiredMessages removes the records of every expired message of every queue, and
// returns how many messages it removed. Expired messages are never returned whether swept or
// not; sweeping reclaims their space, including in queues nobody reads.
func (s *Service) SweepExpiredMessages(ctx context.Context) (int, error) {
	var queues []Queue
	err := s.store.Scan(ctx, store.SpaceRange(queuesSpace), func(rec store.Record) (bool, error) {
		q, err := decodeQueue(rec.Key.Partition, rec)
		if err != nil {
			return false, err
		}
		queues = append(queues, q)
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	total := 0
	for _, q := range queues {
		now := s.now().UTC()
		err := s.withQueue(ctx, q, func(q Queue, st *messageState) error {
			n, err := s.removeByExpiry(ctx, q.Space, st, expiryBound(now), func(messageID) bool { return true })
			total += n
			return err
		})
		if e, ok := err.(*azerr.Error); ok && e.Code == azerr.QueueNotFound {
			continue // deleted meanwhile, and its messages with it
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
