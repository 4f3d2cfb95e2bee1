package pebble

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Pebble (v2.1.7) cannot continue after a failed write of its write-ahead log, its MANIFEST
// or the files and directory entries that point at them. What it does instead depends on
// where the error surfaces, and none of it is survivable by a server:
//
//   - a failed WAL write or sync is handed to the commits waiting for that sync, but it also
//     poisons the log writer, and the next commit panics inside the commit pipeline while
//     holding its mutex (DB.commitWrite): every later commit, and DB.Close, waits forever;
//   - a failed close of the old WAL at a memtable rotation panics after DB.mu was released,
//     and the deferred unlock of that mutex is a fatal error that crashes the process
//     (DB.rotateWAL), as does a failure to create the new WAL;
//   - a failed MANIFEST write in a flush or compaction calls Logger.Fatalf on a background
//     goroutine, which crashes the process.
//
// Failed writes of sstables and blob files are different: Pebble abandons that flush or
// compaction, deletes its outputs and tries again later (with no pause: a full disk makes it
// retry, and log, hundreds of times a second).
//
// So the store never lets Pebble see the first kind. disk wraps the filesystem, and when a
// write of a critical file fails it first, for "no space", releases the store's reserve file
// and tries the write once more (space.go); failing that, it marks the store failed and parks
// the writing goroutine for good instead of returning. Pebble then neither panics nor crashes:
// the parked goroutine holds what it holds, and the store, which waits on Pebble only
// through Store.write (with the failure as a way out), answers every write with an error at
// once, keeps serving reads, and closes within a bounded time. Restarting the process
// recovers every acknowledged write from the WAL, as after a crash.
//
// Failed writes of data files pass through, paced (see pace) so that Pebble's retries do not
// spin, and a "no space" among them tells the space monitor the disk is full. Compactions
// are kept from taking the last of the space (see space.compactionRoom): one that does not
// fit would otherwise fill the disk again and again, and starve the flushes that let
// deletions free space.
type disk struct {
	vfs.FS
	failure *failure
	space   *space
	wal     *walStats // counts the WAL's writes and syncs

	walZeroAhead int64 // how far ahead of its writes a WAL is filled with zeros (walzero.go)

	mu sync.Mutex
	// When a flush output or a compaction output last failed to be written, and how many
	// compactions in a row failed: the next ones are not created before a pause (see pace).
	flushFailedAt, compactionFailedAt time.Time
	compactionFailures                int
}

// fileKind sorts Pebble's files by what a failed write of them means.
type fileKind uint8

const (
	critical         fileKind = iota // WAL, MANIFEST, OPTIONS, markers, directories
	flushOutput                      // an sstable or blob file written by a flush (or ingestion)
	compactionOutput                 // an sstable or blob file written by a compaction
)

// compactionCategory is what Pebble (v2.1.7) creates compaction outputs with.
const compactionCategory vfs.DiskWriteCategory = "pebble-compaction"

func kindOf(name string, category vfs.DiskWriteCategory) fileKind {
	switch {
	case !strings.HasSuffix(name, ".sst") && !strings.HasSuffix(name, ".blob"):
		return critical
	case category == compactionCategory:
		return compactionOutput
	}
	return flushOutput
}

// Pauses before Pebble may create a data file again after a failed one: a flush is retried
// after a second; a compaction after a second, doubling with each failure in a row up to
// maxCompactionPause, since a compaction that does not fit on a nearly full disk keeps
// failing until space is freed.
var (
	flushRetryPause    = time.Second
	maxCompactionPause = 8 * time.Second
)

// fault handles err, the failure of op on the file name of kind, and returns what Pebble is
// told. retry, if not nil, repeats the operation (a sync is never repeated: after a failed
// fsync the kernel may have dropped the dirty pages, so a second one proves nothing).
func (d *disk) fault(name string, kind fileKind, op string, err error, retry func() error) error {
	noSpace := diskSaysNoSpace(err)
	if noSpace {
		d.space.noSpace()
	}
	switch kind {
	case flushOutput:
		d.mu.Lock()
		d.flushFailedAt = time.Now()
		d.mu.Unlock()
		return err
	case compactionOutput:
		d.mu.Lock()
		d.compactionFailedAt = time.Now()
		d.compactionFailures++
		d.mu.Unlock()
		return err
	}
	if noSpace && retry != nil && d.space.releaseReserve() {
		if err = retry(); err == nil {
			return nil
		}
	}
	if !strings.Contains(err.Error(), name) {
		err = fmt.Errorf("%s %s: %w", op, name, err)
	}
	d.failure.set(err)
	select {} // parked for good: see the comment on disk
}

// pace waits, before a data file of kind is created, for the pause after the last failure.
func (d *disk) pace(kind fileKind) {
	d.mu.Lock()
	var wait time.Duration
	switch kind {
	case flushOutput:
		wait = time.Until(d.flushFailedAt.Add(flushRetryPause))
	case compactionOutput:
		if d.compactionFailures > 0 {
			pause := min(maxCompactionPause, flushRetryPause<<min(d.compactionFailures-1, 16))
			wait = time.Until(d.compactionFailedAt.Add(pause))
		}
	}
	d.mu.Unlock()
	if wait > 0 {
		time.Sleep(wait)
	}
}

// compactionDone records that a compaction output was written whole.
func (d *disk) compactionDone() {
	d.mu.Lock()
	d.compactionFailures = 0
	d.mu.Unlock()
}

func (d *disk) wrap(f vfs.File, name string, kind fileKind, category vfs.DiskWriteCategory) vfs.File {
	if f == nil {
		return nil
	}
	return &diskFile{File: f, disk: d, name: name, kind: kind, wal: walStatsFor(d.wal, category)}
}

func (d *disk) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	kind := kindOf(name, category)
	d.pace(kind)
	f, err := d.FS.Create(name, category)
	if err != nil {
		err = d.fault(name, kind, "create", err, func() (err error) {
			f, err = d.FS.Create(name, category)
			return err
		})
	}
	wrapped := d.wrap(f, name, kind, category)
	d.overZeros(wrapped, false)
	return wrapped, err
}

// Link is only used by Pebble to ingest or checkpoint files, which the store does not do, and
// its failures (across devices, say) are ones Pebble handles: they pass through, save that
// "no space" releases the reserve and tries once more.
func (d *disk) Link(oldname, newname string) error {
	err := d.FS.Link(oldname, newname)
	if err != nil && diskSaysNoSpace(err) {
		d.space.noSpace()
		if d.space.releaseReserve() {
			err = d.FS.Link(oldname, newname)
		}
	}
	return err
}

func (d *disk) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	kind := kindOf(name, category)
	f, err := d.FS.OpenReadWrite(name, category, opts...)
	if err != nil {
		err = d.fault(name, kind, "open", err, func() (err error) {
			f, err = d.FS.OpenReadWrite(name, category, opts...)
			return err
		})
	}
	return d.wrap(f, name, kind, category), err
}

// OpenDir is wrapped because a directory is synced to make the files created in it durable.
// Opening one only reads, so its failure passes through.
func (d *disk) OpenDir(name string) (vfs.File, error) {
	f, err := d.FS.OpenDir(name)
	return d.wrap(f, name, critical, ""), err
}

func (d *disk) Rename(oldname, newname string) error {
	err := d.FS.Rename(oldname, newname)
	if err != nil {
		err = d.fault(newname, kindOf(newname, ""), "rename", err, func() error { return d.FS.Rename(oldname, newname) })
	}
	return err
}

func (d *disk) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	kind := kindOf(newname, category)
	f, err := d.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		err = d.fault(newname, kind, "reuse", err, func() (err error) {
			f, err = d.FS.ReuseForWrite(oldname, newname, category)
			return err
		})
	}
	wrapped := d.wrap(f, newname, kind, category)
	d.overZeros(wrapped, true)
	return wrapped, err
}

func (d *disk) MkdirAll(dir string, perm os.FileMode) error {
	err := d.FS.MkdirAll(dir, perm)
	if err != nil {
		err = d.fault(dir, critical, "mkdir", err, func() error { return d.FS.MkdirAll(dir, perm) })
	}
	return err
}

func (d *disk) Lock(name string) (io.Closer, error) {
	c, err := d.FS.Lock(name)
	if err != nil && diskSaysNoSpace(err) {
		err = d.fault(name, critical, "lock", err, func() (err error) {
			c, err = d.FS.Lock(name)
			return err
		})
	}
	return c, err // another process holding the lock is an answer, not a fault
}

func (d *disk) Unwrap() vfs.FS { return d.FS }

// diskFile is a file opened for writing (or a directory) through disk.
type diskFile struct {
	vfs.File
	disk   *disk
	name   string
	kind   fileKind
	failed bool      // a write failed
	wal    *walStats // the store's counts, if this is a WAL file
	tail   *walTail  // if this is a WAL file opened to be written (walzero.go)
}

// room refuses, with ENOSPC, a compaction's write of n bytes that would take the disk below
// what is kept for flushes (see space.compactionRoom).
func (f *diskFile) room(n int) error {
	if f.kind != compactionOutput {
		return nil
	}
	return f.disk.space.compactionRoom(n)
}

func (f *diskFile) fault(op string, err error, retry func() error) error {
	if err = f.disk.fault(f.name, f.kind, op, err, retry); err != nil {
		f.failed = true
	}
	return err
}

func (f *diskFile) Write(p []byte) (int, error) {
	if err := f.room(len(p)); err != nil {
		return 0, f.fault("write", err, nil)
	}
	if f.wal != nil {
		f.wal.writes.Add(1)
	}
	if f.tail != nil {
		f.zeroAhead(len(p))
	}
	n, err := f.File.Write(p)
	if err != nil {
		err = f.fault("write", err, func() error {
			m, err := f.File.Write(p[n:])
			n += m
			return err
		})
	}
	if f.tail != nil {
		f.tail.written += int64(n)
	}
	return n, err
}

func (f *diskFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.room(len(p)); err != nil {
		return 0, f.fault("write", err, nil)
	}
	n, err := f.File.WriteAt(p, off)
	if err != nil {
		err = f.fault("write", err, func() error {
			m, err := f.File.WriteAt(p[n:], off+int64(n))
			n += m
			return err
		})
	}
	return n, err
}

func (f *diskFile) Sync() error {
	f.countSync()
	err := f.File.Sync()
	if err != nil {
		err = f.fault("sync", err, nil)
	}
	return err
}

func (f *diskFile) SyncData() error {
	f.countSync()
	err := f.File.SyncData()
	if err != nil {
		err = f.fault("sync", err, nil)
	}
	return err
}

func (f *diskFile) SyncTo(length int64) (bool, error) {
	f.countSync()
	full, err := f.File.SyncTo(length)
	if err != nil {
		err = f.fault("sync", err, nil)
	}
	return full, err
}

func (f *diskFile) countSync() {
	if f.wal != nil {
		f.wal.syncs.Add(1)
	}
}

// Close is wrapped because closing a written file can report a write that failed late (NFS
// does), and Pebble treats a failed close of its WAL as fatal.
func (f *diskFile) Close() error {
	err := f.File.Close()
	if err != nil {
		err = f.fault("close", err, nil)
	}
	if err == nil && !f.failed && f.kind == compactionOutput {
		f.disk.compactionDone()
	}
	return err
}

// failure is a store's failed state: set once, by the first fault Pebble cannot continue
// from, and kept until the process ends.
type failure struct {
	once sync.Once
	err  error
	done chan struct{} // closed by set
	dir  string
	// serving is set once Open has succeeded: a failure before that is Open's error, which
	// its caller reports.
	serving atomic.Bool
}

func newFailure(dir string) *failure { return &failure{done: make(chan struct{}), dir: dir} }

// set records err as the failure, unless one is recorded already, and says so in the log.
func (f *failure) set(err error) {
	f.once.Do(func() {
		f.err = err
		close(f.done)
		if !f.serving.Load() {
			return
		}
		slog.Error("the embedded store's disk failed: writes are refused until Tabula is restarted, reads continue; every acknowledged write is in the write-ahead log",
			"component", "pebble", "dir", f.dir, "err", err.Error())
	})
}

// get returns the failure, or nil while there is none.
func (f *failure) get() error {
	select {
	case <-f.done:
		return f.err
	default:
		return nil
	}
}
