package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// queuesSpace holds one record per queue: partition = account, row = queue name (names are
// lower case, so the row order is Azure's listing order), value = the encoded Queue.
const queuesSpace = "\x00queues"

// deletedSpace holds one record per deleted queue whose messages may not all be gone yet:
// row = the queue's space, version = when the queue was deleted (Unix nanoseconds). A
// deletion writes it in the same commit that deletes the queue's record, so a space is never
// forgotten even if the process stops before its messages are removed;
// SweepDeletedQueues removes it.
const deletedSpace = "\x00queues-deleted"

// Queue is a queue's metadata.
type Queue struct {
	Account string `json:"-"`
	Name    string `json:"-"`
	// Space is the store space holding the queue's messages. Each creation gets a fresh
	// space, so a queue deleted and created again never sees the old messages, even if
	// removing them was interrupted.
	Space    string              `json:"space"`
	Metadata Metadata            `json:"metadata,omitempty"`
	Policies []auth.AccessPolicy `json:"policies,omitempty"`
	version  int64
}

// ValidateQueueName applies Azure's queue-name rules: 3-63 characters of a-z, 0-9 and '-',
// starting and ending with a letter or digit, without "--". Length is checked first (400
// OutOfRangeInput), then characters (400 InvalidResourceName, with the real service's typo).
func ValidateQueueName(name string) error {
	if len(name) < 3 || len(name) > 63 {
		return azerr.Newf(azerr.OutOfRangeInput, "The specified resource name length is not within the permissible limits. Queue names must be 3 to 63 characters long; %q has %d.", name, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		dashInside := c == '-' && i > 0 && i < len(name)-1 && name[i-1] != '-'
		if !alnum && !dashInside {
			return azerr.Newf(azerr.InvalidResourceName, "The specifed resource name contains invalid characters. Queue names hold lower-case letters, digits and single dashes, and start and end with a letter or digit; %q does not.", name)
		}
	}
	return nil
}

func queueKey(account, name string) store.Key {
	return store.Key{Space: queuesSpace, Partition: account, Row: name}
}

func newSpace(account, name string) string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand documentation)
	return "q/" + account + "/" + name + "/" + hex.EncodeToString(b[:])
}

// CreateQueue creates a queue with the given metadata. created is false when the queue
// already existed with the same metadata (Azure answers 204 then, and SDKs rely on it); if
// its metadata differs the answer is 409 QueueAlreadyExists.
func (s *Service) CreateQueue(ctx context.Context, account, name string, md Metadata) (created bool, err error) {
	if err := ValidateQueueName(name); err != nil {
		return false, err
	}
	if err := md.Validate(); err != nil {
		return false, err
	}
	q := Queue{Account: account, Name: name, Space: newSpace(account, name), Metadata: md, version: s.now().UnixNano()}
	value, err := json.Marshal(&q)
	if err != nil {
		return false, err
	}
	err = s.store.Commit(ctx, []store.Mutation{{
		Key: queueKey(account, name), Expect: store.Expect{Kind: store.ExpectAbsent},
		Value: value, Version: q.version,
	}})
	var cf *store.ConditionFailedError
	if errors.As(err, &cf) && cf.Found != nil {
		existing, err := decodeQueue(account, *cf.Found)
		if err != nil {
			return false, err
		}
		if existing.Metadata.Equal(md) {
			return false, nil
		}
		return false, azerr.Newf(azerr.QueueAlreadyExists, "The specified queue already exists, with other metadata.")
	}
	if err != nil {
		return false, err
	}
	s.forgetQueue(account, name)
	return true, nil
}

// Queue returns the queue called name, or 404 QueueNotFound. The returned Queue may be shared
// with other callers: its Metadata and Policies must not be modified in place.
func (s *Service) Queue(ctx context.Context, account, name string) (Queue, error) {
	if err := ValidateQueueName(name); err != nil {
		return Queue{}, err
	}
	if s.queues == nil {
		return s.loadQueue(ctx, account, name)
	}
	n := queueName{account, name}
	q, generation, ok := s.queues.Lookup(n)
	if ok {
		return q, nil
	}
	q, err := s.loadQueue(ctx, account, name)
	if err == nil {
		s.queues.Fill(n, q, generation)
	}
	return q, err
}

func (s *Service) forgetQueue(account, name string) {
	if s.queues != nil {
		s.queues.Forget(queueName{account, name})
	}
}

func (s *Service) loadQueue(ctx context.Context, account, name string) (Queue, error) {
	rec, err := s.store.Get(ctx, queueKey(account, name))
	if errors.Is(err, store.ErrNotFound) {
		return Queue{}, azerr.New(azerr.QueueNotFound)
	}
	if err != nil {
		return Queue{}, err
	}
	return decodeQueue(account, rec)
}

func decodeQueue(account string, rec store.Record) (Queue, error) {
	var q Queue
	if err := json.Unmarshal(rec.Value, &q); err != nil {
		return Queue{}, fmt.Errorf("queue record %s is corrupt: %w", rec.Key, err)
	}
	q.Account, q.Name, q.version = account, rec.Key.Row, rec.Version
	return q, nil
}

// DeleteQueue removes a queue and all its messages; a missing queue is 404 QueueNotFound.
func (s *Service) DeleteQueue(ctx context.Context, account, name string) error {
	space, err := s.deleteQueueRecord(ctx, account, name)
	if err != nil {
		return err
	}
	s.messages.forget(space)
	// The queue is gone for every reader once its record is; its space is unreachable and
	// only needs its storage reclaimed.
	return s.store.DeleteSpace(ctx, space)
}

func (s *Service) deleteQueueRecord(ctx context.Context, account, name string) (space string, err error) {
	if s.queues != nil {
		lock := s.queues.deletionLock(queueName{account, name})
		lock.Lock()
		defer lock.Unlock()
	}
	q, err := s.Queue(ctx, account, name)
	if err != nil {
		return "", err
	}
	err = s.store.Commit(ctx, []store.Mutation{{
		Key: queueKey(account, name), Delete: true,
		Expect: store.Expect{Kind: store.ExpectVersion, Version: q.version},
	}, {
		Key: store.Key{Space: deletedSpace, Row: q.Space}, Value: []byte{}, Version: s.now().UnixNano(),
	}})
	s.forgetQueue(account, name)
	var cf *store.ConditionFailedError
	if errors.As(err, &cf) {
		// Deleted, or deleted and created again, concurrently: this request lost the race.
		return "", azerr.New(azerr.QueueNotFound)
	}
	if err != nil {
		return "", err
	}
	return q.Space, nil
}

// SetQueueMetadata replaces a queue's metadata (none clears it).
func (s *Service) SetQueueMetadata(ctx context.Context, account, name string, md Metadata) error {
	if err := md.Validate(); err != nil {
		return err
	}
	return s.updateQueue(ctx, account, name, func(q *Queue) { q.Metadata = md })
}

// SetQueuePolicies replaces a queue's stored access policies (Set Queue ACL), at most
// auth.MaxStoredPolicies of them.
func (s *Service) SetQueuePolicies(ctx context.Context, account, name string, policies []auth.AccessPolicy) error {
	if len(policies) > auth.MaxStoredPolicies {
		return azerr.Newf(azerr.InvalidXMLDocument, "XML specified is not syntactically valid: a queue has at most %d stored access policies, not %d.", auth.MaxStoredPolicies, len(policies))
	}
	return s.updateQueue(ctx, account, name, func(q *Queue) { q.Policies = policies })
}

// updateQueue applies change to the queue's record, again if another change got in between.
func (s *Service) updateQueue(ctx context.Context, account, name string, change func(*Queue)) error {
	for {
		q, err := s.Queue(ctx, account, name)
		if err != nil {
			return err
		}
		change(&q)
		value, err := json.Marshal(&q)
		if err != nil {
			return err
		}
		err = s.store.Commit(ctx, []store.Mutation{{
			Key: queueKey(account, name), Value: value, Version: q.version + 1,
			Expect: store.Expect{Kind: store.ExpectVersion, Version: q.version},
		}})
		s.forgetQueue(account, name)
		var cf *store.ConditionFailedError
		if !errors.As(err, &cf) {
			return err
		}
	}
}

// MaxListResults is Azure's largest (and default) page of List Queues.
const MaxListResults = 5000

// QueueListing selects queues: those whose names start with Prefix, from Marker (a name
// returned as a page's NextMarker) on, at most MaxResults of them (0 or more than
// MaxListResults: MaxListResults).
type QueueListing struct {
	Prefix     string
	Marker     string
	MaxResults int
}

// QueuePage is one page of List Queues. NextMarker names the first queue of the next page,
// and is empty on the last.
type QueuePage struct {
	Queues     []Queue
	NextMarker string
}

// ListQueues lists an account's queues in name order.
func (s *Service) ListQueues(ctx context.Context, account string, l QueueListing) (QueuePage, error) {
	limit := l.MaxResults
	if limit <= 0 || limit > MaxListResults {
		limit = MaxListResults
	}
	r := store.PartitionRange(queuesSpace, account)
	r.Start.Row = max(l.Prefix, l.Marker)
	var page QueuePage
	err := s.store.Scan(ctx, r, func(rec store.Record) (bool, error) {
		if !strings.HasPrefix(rec.Key.Row, l.Prefix) {
			return false, nil
		}
		if len(page.Queues) == limit {
			page.NextMarker = rec.Key.Row
			return false, nil
		}
		q, err := decodeQueue(account, rec)
		if err != nil {
			return false, err
		}
		page.Queues = append(page.Queues, q)
		return true, nil
	})
	return page, err
}

// SweepDeletedQueues removes, once more, the messages of every queue deleted more than grace
// ago, and then forgets the deletion. Deleting a queue removes its messages at once, but two
// kinds can outlive that: all of them, when the process stopped between deleting the queue and
// removing its messages, and the message of a write that read the queue before another
// front-end deleted it and committed after (possible over a store shared by front-ends; over
// an exclusive store writes and deletions exclude each other). grace should exceed the time
// any request can take. It returns how many deletions were swept.
func (s *Service) SweepDeletedQueues(ctx context.Context, grace time.Duration) (int, error) {
	return store.SweepTombstones(ctx, s.store, deletedSpace, s.now().Add(-grace).UnixNano())
}
