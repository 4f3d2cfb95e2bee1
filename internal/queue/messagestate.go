package queue

import (
	"sync"
	"sync/atomic"
)

// messageState is what a Service keeps in memory about one queue's messages (one queue
// space). None of it decides correctness, which rests on the store's conditional commits; it
// saves work:
//
//   - claims, over any store: the message records this Service's Get Messages calls are
//     taking right now, which the others skip rather than race for (a race costs the loser a
//     failed commit and a new scan);
//   - over an exclusive store (where this Service makes every change), the head: a row of the
//     visible partition below which no message record lives. A dequeue reads from there, so
//     it does not wade through what taken and deleted messages left behind (an LSM keeps a
//     tombstone for each until compaction reaches it: after a million messages went through
//     a queue, a scan from the partition's start would step over two million of them);
//   - over an exclusive store, the number of messages, counted once from the store and then
//     kept by every change.
type messageState struct {
	exclusive bool

	mu      sync.Mutex
	refs    int                 // calls using this state; guarded by messageStates.mu
	claimed map[string]struct{} // rows of the visible partition being taken

	// low is a row below which no message record lives (exclusive stores). It only ever
	// rises to a row a scan found first, and falls to the row of every insertion about to
	// commit. A scan's snapshot misses insertions that commit after it was taken, so a scan
	// may not raise low past them: inserting holds the rows of insertions in flight, and
	// scans the rows of insertions begun since each scan began.
	low       string
	inserting map[*insertion]struct{}
	scans     map[*headScan]struct{}

	// countMu is held shared by every change of the number of messages, from before its
	// commit until it has adjusted count, and exclusively while the count is first taken
	// from the store, so that the count taken and the changes adjusting it neither miss nor
	// repeat one. count is meaningful once countKnown.
	countMu    sync.RWMutex
	countKnown bool
	count      atomic.Int64
}

type insertion struct{ row string }

// headScan is what a scan of the visible partition must not pass: the lowest row of the
// insertions in flight when it began or begun since (any says whether there was one).
type headScan struct {
	lowest string
	any    bool
}

func (sc *headScan) include(row string) {
	if !sc.any || row < sc.lowest {
		sc.lowest, sc.any = row, true
	}
}

// beginInsert announces that a commit is about to write a message record at row (or at
// several rows, of which row is the lowest). done must be called once the commit returned,
// whatever its outcome.
func (st *messageState) beginInsert(row string) (done func()) {
	if !st.exclusive {
		return func() {}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if row < st.low {
		st.low = row
	}
	for sc := range st.scans {
		sc.include(row)
	}
	in := &insertion{row: row}
	st.inserting[in] = struct{}{}
	return func() {
		st.mu.Lock()
		delete(st.inserting, in)
		st.mu.Unlock()
	}
}

// beginHeadScan returns the row a scan of the visible partition may start from. The scan's
// snapshot must be taken after it returns; endHeadScan reports what the scan found.
func (st *messageState) beginHeadScan() (start string, sc *headScan) {
	if !st.exclusive {
		return "", nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	sc = &headScan{}
	for in := range st.inserting {
		sc.include(in.row)
	}
	st.scans[sc] = struct{}{}
	return st.low, sc
}

// endHeadScan ends a scan begun with beginHeadScan that found first as the first row from
// its start (or, finding none, read up to first).
func (st *messageState) endHeadScan(sc *headScan, first string) {
	if sc == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.scans, sc)
	// Nothing lived below the start, nothing in the snapshot lay between the start and first,
	// and what the snapshot missed was in flight or begun since.
	if sc.any {
		first = min(first, sc.lowest)
	}
	st.low = max(st.low, first)
}

// claim marks row as being taken by the caller; false if another call is taking it.
func (st *messageState) claim(row string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, taken := st.claimed[row]; taken {
		return false
	}
	st.claimed[row] = struct{}{}
	return true
}

// claims returns how many rows are being taken.
func (st *messageState) claims() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.claimed)
}

func (st *messageState) unclaim(rows []string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, row := range rows {
		delete(st.claimed, row)
	}
}

// changingCount brackets a commit that changes the number of messages; the returned function
// ends the bracket.
func (st *messageState) changingCount() (end func()) {
	if !st.exclusive {
		return func() {}
	}
	st.countMu.RLock()
	return st.countMu.RUnlock
}

// adjustCount adds delta to the count, inside changingCount's bracket.
func (st *messageState) adjustCount(delta int64) {
	if st.exclusive && st.countKnown {
		st.count.Add(delta)
	}
}

// messageCount returns the number of messages: over a shared store load's, each time; over
// an exclusive store load's the first time, then the count kept since.
func (st *messageState) messageCount(load func() (int64, error)) (int64, error) {
	if !st.exclusive {
		return load()
	}
	st.countMu.RLock()
	known, n := st.countKnown, st.count.Load()
	st.countMu.RUnlock()
	if known {
		return n, nil
	}
	st.countMu.Lock()
	defer st.countMu.Unlock()
	if st.countKnown {
		return st.count.Load(), nil
	}
	n, err := load()
	if err != nil {
		return 0, err
	}
	st.count.Store(n)
	st.countKnown = true
	return n, nil
}

// messageStates holds the messageState of recently used queues, by space.
type messageStates struct {
	mu      sync.Mutex
	bySpace map[string]*messageState
}

// maxMessageStates bounds the states kept; beyond it, unused ones are dropped (losing only
// what they would have saved).
const maxMessageStates = 4096

func newMessageStates() *messageStates {
	return &messageStates{bySpace: make(map[string]*messageState)}
}

// acquire returns the state of space, to be released when the call is done with it.
func (m *messageStates) acquire(space string, exclusive bool) *messageState {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.bySpace[space]
	if !ok {
		if len(m.bySpace) >= maxMessageStates {
			for sp, old := range m.bySpace {
				if old.refs == 0 {
					delete(m.bySpace, sp)
					break
				}
			}
		}
		st = &messageState{
			exclusive: exclusive,
			claimed:   make(map[string]struct{}),
			inserting: make(map[*insertion]struct{}),
			scans:     make(map[*headScan]struct{}),
		}
		m.bySpace[space] = st
	}
	st.refs++
	return st
}

func (m *messageStates) release(st *messageState) {
	m.mu.Lock()
	st.refs--
	m.mu.Unlock()
}

// forget drops the state of a space that will not be used again (its queue was deleted).
func (m *messageStates) forget(space string) {
	m.mu.Lock()
	delete(m.bySpace, space)
	m.mu.Unlock()
}
