package pebble

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tabula-dev/tabula/internal/store"
)

// space keeps the store from filling its disk. An LSM frees space only by writing: deleted
// records go away when a compaction rewrites their files, and a deleted table's files when a
// (write-free) delete-only compaction drops them after its range deletion is flushed. So a
// store that let its disk fill could not even delete its way out. space therefore keeps two
// margins, both sized from the disk:
//
//   - a floor of free space below which commits that add data are refused with store.ErrFull
//     (503 ServerBusy), while deletions go on: room for the flushes and compactions that
//     turn deletions into free space, and for the memtable still to be flushed;
//   - a reserve file in the data directory, released (by disk) when a write of the WAL or
//     MANIFEST meets "no space" all the same (another program filled the disk), so that the
//     write can be retried instead of failing the store, and recreated once there is room.
//
// The floor is at least room for four memtables to be flushed (Pebble queues up to four)
// and then some, at least a 64th of the disk, and at most 256 MiB: what compactions need
// beyond that is counted out of the free space as Pebble's debt (below).
//
// Free space counts out what Pebble owes: the memtables still to be flushed and the
// compactions its LSM calls for (its estimated compaction debt). An LSM needs room to compact:
// were writes let in until the last floor of free space, compactions that no longer fit would
// fail, L0 would grow until Pebble stalls every write, deletions included, and nothing could
// free space any more.
//
// Free space is measured through the filesystem's GetDiskUsage (statfs), every
// measureEvery and whenever floor/8 bytes were admitted since the last measurement, so a
// write burst cannot overshoot the floor by much. Refusal clears by itself: once free space is
// back above the floor by half again (plus the reserve, if it must be recreated), writes are
// accepted. On a filesystem that cannot say its usage (the in-memory one without a budget)
// nothing is refused. An in-memory store with a budget (memDisk) is a disk of that size with
// no reserve: nothing else spends its budget.
type space struct {
	fs          vfs.FS // the filesystem itself, not disk: the reserve is Tabula's file
	dir         string
	reservePath string
	measurable  bool
	inMemory    bool // the "disk" is a memory budget (memDisk), which log lines say

	memTableBytes int64 // the memtable size for this disk
	floor         int64
	reserveBytes  int64

	// owed, once the store is open, returns the bytes Pebble has yet to write to put its
	// data in shape: the memtables to flush and its estimate of the compaction debt.
	owed func() int64

	full    atomic.Bool
	pending atomic.Int64  // bytes admitted since the last measurement
	wake    chan struct{} // asks the measuring goroutine to measure now
	stop    chan struct{} // closed by close

	// roomBudget is what compactions may still write before compactionRoom measures again,
	// and roomMeasuredAt when it was set (Unix nanoseconds).
	roomBudget, roomMeasuredAt atomic.Int64

	mu          sync.Mutex // serialises measuring and changes to the reserve
	haveReserve bool
	making      bool // a goroutine is writing the reserve
	closed      bool
	maker       sync.WaitGroup
}

// reserveName is the reserve file, in the data directory; Pebble ignores names it does not
// know.
const reserveName = "tabula-reserve"

const measureEvery = time.Second

// sizesFor returns the memtable size, the floor and the reserve for a disk of total bytes.
// A large disk gets Pebble's usual 32 MiB memtable, a 256 MiB floor and a 64 MiB reserve; a
// small one scaled down, so that the WAL files (preallocated at 110% of the memtable, and
// several kept for reuse) take a small share of it and a 64 MiB disk still holds data.
func sizesFor(total int64) (memTable, floor, reserve int64) {
	clamp := func(v, lo, hi int64) int64 { return max(lo, min(v, hi)) }
	if total <= 0 {
		return memTableBytes, 0, 0
	}
	memTable = clamp(total/64, 1<<20, memTableBytes)
	floor = clamp(total/64, 4*memTable+4<<20, 256<<20)
	reserve = clamp(total/64, 1<<20, 64<<20)
	return memTable, floor, reserve
}

// newSpace measures the disk holding dir, which must exist.
func newSpace(fs vfs.FS, dir string) *space {
	s := &space{fs: fs, dir: dir, reservePath: fs.PathJoin(dir, reserveName),
		wake: make(chan struct{}, 1), stop: make(chan struct{})}
	u, err := fs.GetDiskUsage(dir)
	s.measurable = err == nil && u.TotalBytes > 0
	if !s.measurable {
		s.memTableBytes, _, _ = sizesFor(0)
		return s
	}
	s.memTableBytes, s.floor, s.reserveBytes = sizesFor(int64(u.TotalBytes))
	if m, ok := fs.(*memDisk); ok && !m.strict {
		s.inMemory, s.reserveBytes = true, 0
	}
	return s
}

// prepareOpen checks, before Pebble opens the store, that the disk has room for what opening
// writes: the flush of the WAL it replays, a new WAL and MANIFEST. When it has not, the
// reserve is released for it, if that makes enough room; otherwise the store must not open
// (Pebble would fail part-way, or come up unable to flush and retry forever), and nothing is
// written or deleted.
func (s *space) prepareOpen() error {
	if !s.measurable {
		return nil
	}
	var walBytes int64
	names, err := s.fs.List(s.dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if strings.HasSuffix(name, ".log") {
			if fi, err := s.fs.Stat(s.fs.PathJoin(s.dir, name)); err == nil {
				walBytes += fi.Size()
			}
		}
	}
	need := walBytes + 2*s.memTableBytes
	avail, err := s.avail()
	if err != nil {
		return err
	}
	fi, err := s.fs.Stat(s.reservePath)
	s.haveReserve = err == nil && fi.Size() >= s.reserveBytes
	if avail < need && err == nil && avail+fi.Size() >= need {
		if err := s.fs.Remove(s.reservePath); err != nil {
			return fmt.Errorf("releasing the reserve file %s: %w", s.reservePath, err)
		}
		s.haveReserve = false
		slog.Warn("the embedded store's disk is full: released its reserve file to open", "component", "pebble", "dir", s.dir, "reserve", mib(fi.Size()))
		if avail, err = s.avail(); err != nil {
			return err
		}
	}
	if avail < need {
		return fmt.Errorf("not enough free disk space to open the store: %s free, %s needed (%s of write-ahead log to replay); free some space on this filesystem and start again",
			mib(avail), mib(need), mib(walBytes))
	}
	if avail < s.floor {
		s.setFull(true, avail, 0)
	}
	return nil
}

// start begins serving: the reserve is made if it is missing and there is room, and a
// goroutine measures the free space every measureEvery, or sooner when admit asks.
// Measuring waits on Pebble (for what it owes) and on the filesystem, which a stalled disk
// can hold: no commit waits for it.
func (s *space) start() {
	if !s.measurable {
		return
	}
	s.measure()
	go func() {
		tick := time.NewTicker(measureEvery)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
			case <-s.wake:
			}
			s.measure()
		}
	}()
}

// close stops measuring and making the reserve, waiting at most a few seconds for the
// reserve's writer to notice.
func (s *space) close() {
	s.mu.Lock()
	if !s.closed {
		close(s.stop)
	}
	s.closed = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.maker.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

func (s *space) avail() (int64, error) {
	u, err := s.fs.GetDiskUsage(s.dir)
	if err != nil {
		return 0, fmt.Errorf("measuring free disk space: %w", err)
	}
	return int64(u.AvailBytes), nil
}

// admit decides whether a commit adding about n bytes may go ahead: nil, or an error
// wrapping store.ErrFull.
func (s *space) admit(n int64) error {
	if !s.measurable {
		return nil
	}
	if s.pending.Add(n) >= s.floor/8 {
		select {
		case s.wake <- struct{}{}:
		default: // a measurement is due already
		}
	}
	if s.full.Load() {
		if s.inMemory {
			return fmt.Errorf("pebble store: %w: the in-memory store's budget has less than %s left", store.ErrFull, mib(s.floor))
		}
		return fmt.Errorf("pebble store: %w: free disk space is below %s", store.ErrFull, mib(s.floor))
	}
	return nil
}

// measure reads the free space and updates the full state. It is called by one goroutine
// at a time (start's), and takes s.mu only once it has what it waits on: disk, holding s.mu
// to release the reserve, may be called from Pebble while it holds the lock that reading
// Pebble's metrics takes.
func (s *space) measure() {
	s.pending.Store(0)
	free, err := s.avail()
	if err != nil {
		return // keep the last state: a disk that cannot be measured now is no news
	}
	var owed int64
	if s.owed != nil {
		// What flushes and compactions will need is not free for new data: counting it
		// stops writes while the compactions they call for still fit, instead of when the
		// LSM can no longer be compacted and writes stall in Pebble.
		owed = s.owed()
	}
	avail := free - owed
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.full.Load() {
		if avail < s.floor {
			s.setFull(true, free, owed)
		} else if !s.haveReserve && avail >= s.floor+s.reserveBytes {
			s.makeReserveLocked()
		}
		return
	}
	need := s.floor + s.floor/2
	if !s.haveReserve {
		need += s.reserveBytes
	}
	if avail >= need {
		s.setFull(false, free, owed)
		if !s.haveReserve {
			s.makeReserveLocked()
		}
	}
}

// compactionRoom returns an error wrapping ENOSPC if a compaction writing n more bytes would
// leave less than half the floor free. That half is kept for flushes: they move acknowledged
// data out of the WAL, and deletions into the sstables where they free space. So the disk
// fills in order: writes that add data stop at the floor, compactions at half of it, and
// flushes and the WAL may use the rest. Compactions that shrink the data (those dropping
// deleted records) write little and still run; a large one fails early rather than filling
// the disk, and is retried once there is room. (An LSM needs free space for its largest
// compaction, up to the size of the data in the key range it rewrites.)
//
// Pebble writes a compaction's output a block at a time, so measuring the disk (statfs) on
// every write cost 2% of the server's CPU under sustained batch inserts. A measurement that
// finds room to spare lets compactions write half of that spare room, for up to
// roomRecheck, before the next one: the disk is still measured ten times a second while
// compactions run, and never let below floor/2 by them alone. Once the disk is known to be
// (nearly) full, every write measures again, so that a compaction never takes the room a
// released reserve made for the WAL.
func (s *space) compactionRoom(n int) error {
	if !s.measurable {
		return nil
	}
	now := time.Now().UnixNano()
	if !s.full.Load() && now-s.roomMeasuredAt.Load() < int64(roomRecheck) && s.roomBudget.Add(-int64(n)) >= 0 {
		return nil
	}
	avail, err := s.avail()
	if err != nil {
		return nil
	}
	if spare := avail - int64(n) - s.floor/2; spare >= 0 {
		s.roomBudget.Store(spare / 2)
		s.roomMeasuredAt.Store(now)
		return nil
	}
	return fmt.Errorf("compaction output: %s free, %w", mib(avail), errKeptForFlushes)
}

// roomRecheck bounds how long compactionRoom goes by one measurement of the disk.
const roomRecheck = 100 * time.Millisecond

// errKeptForFlushes refuses a compaction the last of the space. It reads as "no space" to
// Pebble, which abandons the compaction and tries again later, but it is not the disk
// saying so: the space monitor does not take it for a full disk.
var errKeptForFlushes = fmt.Errorf("kept for flushes: %w", syscall.ENOSPC)

// diskSaysNoSpace reports whether err is the filesystem's "no space left on device".
func diskSaysNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) && !errors.Is(err, errKeptForFlushes)
}

// noSpace records that a write met "no space left on device".
func (s *space) noSpace() {
	if s.measurable {
		s.setFull(true, -1, 0)
	}
}

// setFull changes the full state and logs the change: free is the free space measured (-1
// when a write met ENOSPC instead), owed what Pebble still has to write of it.
func (s *space) setFull(full bool, free, owed int64) {
	if s.full.Swap(full) == full {
		return
	}
	if !full {
		msg := "the embedded store has free disk space again: writes are accepted"
		if s.inMemory {
			msg = "the in-memory store has room in its memory budget again: writes are accepted"
		}
		slog.Info(msg, "component", "pebble", "dir", s.where(), "free", mib(free), "owed_to_flushes_and_compactions", mib(owed))
		return
	}
	msg := "the embedded store's disk is nearly full: writes that add data are refused (503 ServerBusy) until space is freed; reads, deleting entities and deleting tables still work"
	if s.inMemory {
		msg = "the in-memory store has nearly spent its memory budget (--in-memory-limit): writes that add data are refused (503 ServerBusy) until deletions free memory (blob bytes about a minute after them); reads and deletions still work"
	}
	if free < 0 {
		slog.Warn(msg, "component", "pebble", "dir", s.where(), "free", "none: a write met ENOSPC")
		return
	}
	slog.Warn(msg, "component", "pebble", "dir", s.where(), "free", mib(free), "owed_to_flushes_and_compactions", mib(owed), "floor", mib(s.floor))
}

// releaseReserve deletes the reserve file, if there is one, and reports whether it did.
func (s *space) releaseReserve() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.haveReserve {
		return false
	}
	s.haveReserve = false
	err := s.fs.Remove(s.reservePath)
	s.full.Store(true)
	slog.Warn("the embedded store's disk is full: released its reserve file so that the write-ahead log can go on; writes that add data are refused until space is freed",
		"component", "pebble", "dir", s.dir, "reserve", mib(s.reserveBytes), "err", err)
	return err == nil
}

// makeReserveLocked starts writing the reserve file in the background. s.mu must be held.
func (s *space) makeReserveLocked() {
	if s.making || s.closed || s.reserveBytes == 0 {
		return
	}
	s.making = true
	s.maker.Add(1)
	go func() {
		defer s.maker.Done()
		err := s.writeReserve()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.making = false
		if err != nil {
			_ = s.fs.Remove(s.reservePath)
			return
		}
		s.haveReserve = true
	}()
}

var errReserveAbandoned = errors.New("abandoned")

// writeReserve writes the reserve file, giving up as soon as the disk is full again or the
// store closes. Zeros are written rather than the file preallocated, which not every
// filesystem supports.
func (s *space) writeReserve() error {
	f, err := s.fs.Create(s.reservePath, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	chunk := make([]byte, 1<<20)
	for left := s.reserveBytes; left > 0; left -= int64(len(chunk)) {
		s.mu.Lock()
		stop := s.closed
		s.mu.Unlock()
		if stop || s.full.Load() {
			f.Close()
			return errReserveAbandoned
		}
		if _, err := f.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// where names the store's directory in log lines; an in-memory store's is only a name.
func (s *space) where() string {
	if s.inMemory {
		return "(in memory)"
	}
	return s.dir
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
