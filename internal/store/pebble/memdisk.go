package pebble

import (
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// memDisk is Pebble's in-memory filesystem made to look like a disk of a given capacity: it
// counts the bytes its files hold, and GetDiskUsage reports that capacity, the bytes held
// and the rest as free, as statfs would. The store's space monitor (space.go) then keeps an
// in-memory store within a memory budget exactly as it keeps a store on disk off a full
// disk: writes that add data are refused with store.ErrFull (503 ServerBusy) near the
// budget, deletions go on, and writes resume once reclamation has freed memory.
//
// A budget (strict false) never refuses a write itself: the space monitor refuses commits
// before the budget is spent, and a write of the WAL or MANIFEST refused with ENOSPC would
// fail the store for good (disk.go), which nothing else fills in memory. strict makes it
// the small partition the tests need: a write that does not fit fails with ENOSPC having
// written nothing.
//
// The objects directory's files are kept as chunks rather than in MemFS (memobjects.go).
//
// Bytes are counted as files grow and as they are removed or replaced. A removed file still
// open by a reader keeps its bytes until the reader closes it; they are counted as freed at
// once.
type memDisk struct {
	*vfs.MemFS
	capacity int64 // 0: no budget; GetDiskUsage then says it cannot tell, as MemFS does
	strict   bool
	used     atomic.Int64

	// objectsDir, when set, is the objects directory, whose files are kept as chunks
	// (memobjects.go) in objects, by full name.
	objectsDir string
	objectsMu  sync.Mutex
	objects    map[string]*chunkFile
}

// newMemBudget returns an in-memory filesystem counted against a budget of capacity bytes
// (none when 0), for a store in directory dir: the files of its objects directory are kept
// as chunks.
func newMemBudget(capacity int64, dir string) *memDisk {
	fs := vfs.NewMem()
	return &memDisk{MemFS: fs, capacity: capacity, objectsDir: fs.PathJoin(dir, objectsDirName), objects: map[string]*chunkFile{}}
}

// held returns the bytes the files hold.
func (d *memDisk) held() int64 { return max(0, d.used.Load()) }

func (d *memDisk) free() int64 { return max(0, d.capacity-d.used.Load()) }

func (d *memDisk) size(name string) int64 {
	if fi, err := d.MemFS.Stat(name); err == nil && !fi.IsDir() {
		return fi.Size()
	}
	return 0
}

// memFSSizeUnder returns the bytes of MemFS's files under name, name included.
func (d *memDisk) memFSSizeUnder(name string) int64 {
	fi, err := d.MemFS.Stat(name)
	if err != nil {
		return 0
	}
	if !fi.IsDir() {
		return fi.Size()
	}
	names, err := d.MemFS.List(name)
	if err != nil {
		return 0
	}
	var total int64
	for _, n := range names {
		total += d.memFSSizeUnder(d.MemFS.PathJoin(name, n))
	}
	return total
}

func (d *memDisk) GetDiskUsage(string) (vfs.DiskUsage, error) {
	if d.capacity <= 0 {
		return vfs.DiskUsage{}, vfs.ErrUnsupported
	}
	used := d.held()
	return vfs.DiskUsage{TotalBytes: uint64(d.capacity), UsedBytes: uint64(used), AvailBytes: uint64(d.free())}, nil
}

func (d *memDisk) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if d.isObject(name) {
		return d.createObject(name)
	}
	if d.strict && d.free() <= 0 {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
	}
	old := d.size(name)
	f, err := d.MemFS.Create(name, category)
	if err == nil {
		d.used.Add(-old)
	}
	return d.wrap(f, name), err
}

func (d *memDisk) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if d.isObject(name) {
		return d.openObject(name)
	}
	return d.MemFS.Open(name, opts...)
}

func (d *memDisk) Stat(name string) (vfs.FileInfo, error) {
	if d.isObject(name) {
		c, ok := d.object(name)
		if !ok {
			return nil, notExist("stat", name)
		}
		return c.info(d.MemFS.PathBase(name)), nil
	}
	return d.MemFS.Stat(name)
}

func (d *memDisk) List(dir string) ([]string, error) {
	names, err := d.MemFS.List(dir)
	if err == nil && d.objectsDir != "" && dir == d.objectsDir {
		names = append(names, d.listObjects()...)
	}
	return names, err
}

// errObjectFileOp refuses what objectFiles never does with an object file.
var errObjectFileOp = errors.New("pebble store: object files are only created, read, renamed and removed")

func (d *memDisk) Link(oldname, newname string) error {
	if d.isObject(oldname) || d.isObject(newname) {
		return errObjectFileOp
	}
	return d.MemFS.Link(oldname, newname)
}

func (d *memDisk) Remove(name string) error {
	if d.isObject(name) {
		return d.removeObject(name)
	}
	size := d.size(name)
	err := d.MemFS.Remove(name)
	if err == nil {
		d.used.Add(-size)
	}
	return err
}

func (d *memDisk) RemoveAll(name string) error {
	size := d.memFSSizeUnder(name)
	err := d.MemFS.RemoveAll(name)
	if err == nil {
		d.used.Add(-size)
	}
	if d.objectsDir != "" && (d.objectsDir == name || strings.HasPrefix(d.objectsDir, name+"/")) {
		for _, base := range d.listObjects() {
			_ = d.removeObject(d.MemFS.PathJoin(d.objectsDir, base))
		}
	}
	return err
}

func (d *memDisk) Rename(oldname, newname string) error {
	if d.isObject(oldname) != d.isObject(newname) {
		return errObjectFileOp
	}
	if d.isObject(oldname) {
		return d.renameObject(oldname, newname)
	}
	replaced := d.size(newname)
	err := d.MemFS.Rename(oldname, newname)
	if err == nil {
		d.used.Add(-replaced)
	}
	return err
}

func (d *memDisk) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if d.isObject(oldname) || d.isObject(newname) {
		return nil, errObjectFileOp
	}
	replaced := d.size(newname)
	f, err := d.MemFS.ReuseForWrite(oldname, newname, category)
	if err == nil {
		d.used.Add(-replaced)
	}
	return d.wrap(f, newname), err
}

func (d *memDisk) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	if d.isObject(name) {
		return nil, errObjectFileOp
	}
	f, err := d.MemFS.OpenReadWrite(name, category, opts...)
	return d.wrap(f, name), err
}

func (d *memDisk) wrap(f vfs.File, name string) vfs.File {
	if f == nil {
		return nil
	}
	return &memDiskFile{File: f, disk: d, name: name}
}

// take counts n more bytes for the file name is writing; a strict disk refuses them with
// ENOSPC, writing nothing, when they do not fit.
func (d *memDisk) take(n int64, name string) error {
	for {
		used := d.used.Load()
		if d.strict && n > d.capacity-used {
			return &os.PathError{Op: "write", Path: name, Err: syscall.ENOSPC}
		}
		if d.used.CompareAndSwap(used, used+n) {
			return nil
		}
	}
}

type memDiskFile struct {
	vfs.File
	disk *memDisk
	name string
}

func (f *memDiskFile) Write(p []byte) (int, error) {
	return f.grow(p, func() (int, error) { return f.File.Write(p) })
}

func (f *memDiskFile) WriteAt(p []byte, off int64) (int, error) {
	return f.grow(p, func() (int, error) { return f.File.WriteAt(p, off) })
}

// grow writes p with write and counts the bytes the file grew by. The space is taken before
// the write and the excess given back after it, so that no one sees the file grown before
// the count says so; a strict disk refuses a write that does not fit.
func (f *memDiskFile) grow(p []byte, write func() (int, error)) (int, error) {
	want := int64(len(p))
	if err := f.disk.take(want, f.name); err != nil {
		return 0, err
	}
	before, err := f.File.Stat()
	if err != nil {
		f.disk.used.Add(-want)
		return 0, err
	}
	n, err := write()
	grew := int64(0)
	if after, serr := f.File.Stat(); serr == nil {
		grew = after.Size() - before.Size()
	}
	f.disk.used.Add(grew - want)
	return n, err
}
