package pebble

import (
	"errors"
	"io"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Objects in memory. An object (a blob's bytes, up to gigabytes) is a file written once, front
// to back, then read in ranges. Pebble's MemFS keeps a file as one slice grown by append, so
// writing a 4 GiB block copied it some forty times and, at each copy, held the old slice and
// the new one: 2.25 times its size, which took an in-memory Tabula past 14 GB (and the
// kernel's OOM killer) under the Go SDK's blob suite, far beyond the data it held. memDisk
// therefore keeps the files of the objects directory as lists of chunks, each written once:
// memory grows by what is written and nothing is copied. Only what objectFiles uses is
// served there: Create, Open, Stat, Remove, Rename and List of the directory.

// objectChunkBytes is the largest chunk; writes of PutObject's buffer (1 MiB) fill one each.
const objectChunkBytes = putBufferBytes

// minObjectChunkBytes is the least room a chunk is made with, so that small writes do not
// make a chunk each.
const minObjectChunkBytes = 64 << 10

// chunkFile is one object's bytes: chunks[i] holds the bytes from starts[i].
type chunkFile struct {
	mu      sync.RWMutex
	chunks  [][]byte
	starts  []int64
	size    int64
	modTime time.Time
}

// write appends a copy of p.
func (c *chunkFile) write(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.modTime = time.Now()
	for len(p) > 0 {
		if n := len(c.chunks); n > 0 {
			last := c.chunks[n-1]
			if room := cap(last) - len(last); room > 0 {
				k := min(room, len(p))
				c.chunks[n-1] = append(last, p[:k]...)
				c.size += int64(k)
				p = p[k:]
				continue
			}
		}
		size := min(max(len(p), minObjectChunkBytes), objectChunkBytes)
		c.chunks = append(c.chunks, make([]byte, 0, size))
		c.starts = append(c.starts, c.size)
	}
}

// readAt copies the bytes from off into p, as io.ReaderAt.
func (c *chunkFile) readAt(p []byte, off int64) (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if off < 0 {
		return 0, errors.New("pebble store: negative offset")
	}
	if off >= c.size {
		return 0, io.EOF
	}
	i := sort.Search(len(c.starts), func(i int) bool { return c.starts[i] > off }) - 1
	n := 0
	for ; n < len(p) && i < len(c.chunks); i++ {
		n += copy(p[n:], c.chunks[i][off+int64(n)-c.starts[i]:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (c *chunkFile) info(name string) chunkInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return chunkInfo{name: name, size: c.size, modTime: c.modTime}
}

func (c *chunkFile) length() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.size
}

// isObject reports whether name is a file of the objects directory, kept as chunks.
func (d *memDisk) isObject(name string) bool {
	return d.objectsDir != "" && d.MemFS.PathDir(name) == d.objectsDir
}

func (d *memDisk) object(name string) (*chunkFile, bool) {
	d.objectsMu.Lock()
	defer d.objectsMu.Unlock()
	c, ok := d.objects[name]
	return c, ok
}

func notExist(op, name string) error {
	return &os.PathError{Op: op, Path: name, Err: os.ErrNotExist}
}

func (d *memDisk) createObject(name string) (vfs.File, error) {
	if d.strict && d.free() <= 0 {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
	}
	c := &chunkFile{modTime: time.Now()}
	d.objectsMu.Lock()
	if old, ok := d.objects[name]; ok {
		d.used.Add(-old.length())
	}
	d.objects[name] = c
	d.objectsMu.Unlock()
	return &chunkHandle{c: c, disk: d, name: d.MemFS.PathBase(name), writable: true}, nil
}

func (d *memDisk) openObject(name string) (vfs.File, error) {
	c, ok := d.object(name)
	if !ok {
		return nil, notExist("open", name)
	}
	return &chunkHandle{c: c, disk: d, name: d.MemFS.PathBase(name)}, nil
}

func (d *memDisk) removeObject(name string) error {
	d.objectsMu.Lock()
	defer d.objectsMu.Unlock()
	c, ok := d.objects[name]
	if !ok {
		return notExist("remove", name)
	}
	delete(d.objects, name)
	d.used.Add(-c.length()) // a reader still holding it keeps the chunks until it closes
	return nil
}

func (d *memDisk) renameObject(oldname, newname string) error {
	d.objectsMu.Lock()
	defer d.objectsMu.Unlock()
	c, ok := d.objects[oldname]
	if !ok {
		return notExist("rename", oldname)
	}
	if replaced, ok := d.objects[newname]; ok {
		d.used.Add(-replaced.length())
	}
	delete(d.objects, oldname)
	d.objects[newname] = c
	return nil
}

func (d *memDisk) listObjects() []string {
	d.objectsMu.Lock()
	defer d.objectsMu.Unlock()
	names := make([]string, 0, len(d.objects))
	for name := range d.objects {
		names = append(names, d.MemFS.PathBase(name))
	}
	sort.Strings(names)
	return names
}

// objectBytes returns the bytes of all objects.
func (d *memDisk) objectBytes() int64 {
	d.objectsMu.Lock()
	defer d.objectsMu.Unlock()
	var total int64
	for _, c := range d.objects {
		total += c.length()
	}
	return total
}

// chunkHandle is an open chunkFile: writable (created) or read-only (opened).
type chunkHandle struct {
	c        *chunkFile
	disk     *memDisk
	name     string
	writable bool
	pos      int64 // of Read
}

func (h *chunkHandle) Close() error { return nil }

func (h *chunkHandle) Read(p []byte) (int, error) {
	n, err := h.c.readAt(p, h.pos)
	h.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (h *chunkHandle) ReadAt(p []byte, off int64) (int, error) { return h.c.readAt(p, off) }

// Write appends p, counting it against the disk's capacity (a strict disk refuses what does
// not fit, as memDiskFile does).
func (h *chunkHandle) Write(p []byte) (int, error) {
	if !h.writable {
		return 0, errors.New("pebble store: object file not open for writing")
	}
	if err := h.disk.take(int64(len(p)), h.name); err != nil {
		return 0, err
	}
	h.c.write(p)
	return len(p), nil
}

func (h *chunkHandle) WriteAt([]byte, int64) (int, error) {
	return 0, errors.New("pebble store: object files are written front to back")
}

func (h *chunkHandle) Preallocate(int64, int64) error { return nil }
func (h *chunkHandle) Sync() error                    { return nil }
func (h *chunkHandle) SyncData() error                { return nil }
func (h *chunkHandle) SyncTo(int64) (bool, error)     { return false, nil }
func (h *chunkHandle) Prefetch(int64, int64) error    { return nil }
func (h *chunkHandle) Fd() uintptr                    { return vfs.InvalidFd }

func (h *chunkHandle) Stat() (vfs.FileInfo, error) { return h.c.info(h.name), nil }

// chunkInfo is a chunkFile's vfs.FileInfo.
type chunkInfo struct {
	name    string
	size    int64
	modTime time.Time
}

func (i chunkInfo) Name() string           { return i.name }
func (i chunkInfo) Size() int64            { return i.size }
func (i chunkInfo) Mode() os.FileMode      { return 0o644 }
func (i chunkInfo) ModTime() time.Time     { return i.modTime }
func (i chunkInfo) IsDir() bool            { return false }
func (i chunkInfo) Sys() any               { return nil }
func (i chunkInfo) DeviceID() vfs.DeviceID { return vfs.DeviceID{} }
