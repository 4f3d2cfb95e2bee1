package pebble

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tabula-dev/tabula/internal/store"
)

// Objects live in two places, by size, as measured by objects_bench_test.go:
//
//   - An object of at most inlineObjectBytes is one Pebble record under inlinePrefix, written
//     with a synced commit: concurrent small puts share the WAL's group commit, where files
//     would cost each two fsyncs of their own.
//   - A larger one is a file in the directory "objects" inside the store's directory (Pebble
//     ignores names it did not make), written through the store's vfs.FS: "<id>.part" is
//     written, its data synced, renamed to "<id>" and the directory synced, so the file is
//     readable exactly when it is complete and durable, and a crash leaves at most a ".part"
//     file, which ScanObjects reports. Its bytes are written once, where records would be
//     written to the WAL and again by every flush and compaction; and reads open the file,
//     which on the real disk is an *os.File underneath, sent by net/http with sendfile(2)
//     (see fileSection.WriteTo).
type objectFiles struct {
	fs  vfs.FS
	dir string
	// inlineMax is the size up to which objects are records: inlineObjectBytes, which tests
	// change to exercise either layout alone.
	inlineMax int
}

// inlinePrefix starts the key of every object record. No encoded store.Key starts with it
// (keys.go: an encoded component starts with 0x00 only as 0x00 0x01 or 0x00 0xFF), so no
// Scan or DeleteSpace range reaches it.
const inlinePrefix = "\x00\x02"

// inlineObjectBytes is the largest object kept as a record. Measured with 16 writers
// (BenchmarkSmallObjectLayouts, two runs): records put 4 KiB objects 3.6–6.6 times as fast
// as files, 32 KiB ones 1.3–2.2 times, 128 KiB ones 0.8 times; and records also cost the
// LSM's write amplification, which grows with their share of the store.
const inlineObjectBytes = 32 << 10

func inlineKey(id string) []byte { return []byte(inlinePrefix + id) }

const (
	objectsDirName = "objects"
	partSuffix     = ".part"
	// putBufferBytes is what PutObject holds of an object in memory, and the size of its
	// writes.
	putBufferBytes = 1 << 20
)

var putBuffers = sync.Pool{New: func() any { return new([putBufferBytes]byte) }}

// openObjectFiles creates the objects directory inside dbDir if needed, durably.
func openObjectFiles(fs vfs.FS, dbDir string) (objectFiles, error) {
	o := objectFiles{fs: fs, dir: fs.PathJoin(dbDir, objectsDirName), inlineMax: inlineObjectBytes}
	if _, err := fs.Stat(o.dir); err == nil {
		return o, nil
	}
	if err := fs.MkdirAll(o.dir, 0o755); err != nil {
		return o, fmt.Errorf("pebble store: create objects directory: %w", err)
	}
	if err := syncDir(fs, dbDir); err != nil {
		return o, fmt.Errorf("pebble store: create objects directory: %w", err)
	}
	return o, nil
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (o objectFiles) path(id string) string     { return o.fs.PathJoin(o.dir, id) }
func (o objectFiles) partPath(id string) string { return o.fs.PathJoin(o.dir, id+partSuffix) }

// PutObject implements store.Objects. It reads up to putBufferBytes before it writes: if
// the object ends within inlineMax, it becomes a record; otherwise a file. A failed attempt
// removes its ".part" file unless the removal fails too.
func (s *Store) PutObject(ctx context.Context, r io.Reader) (id string, size int64, err error) {
	if err := s.guard.Enter(ctx); err != nil {
		return "", 0, err
	}
	defer s.guard.Exit()
	id = store.NewObjectID(time.Now())
	buf := putBuffers.Get().(*[putBufferBytes]byte)
	defer putBuffers.Put(buf)
	n, rerr := io.ReadFull(r, buf[:])
	last := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
	switch {
	case rerr != nil && !last:
		return "", 0, rerr
	case ctx.Err() != nil:
		return "", 0, ctx.Err()
	case last && n <= s.objects.inlineMax:
		if err := s.admitGrowth(int64(n)); err != nil {
			return "", 0, err
		}
		// write may return (timed out) while Pebble still holds key and value, and while the
		// function still runs: it must not read id, which the return below overwrites.
		key, value := inlineKey(id), bytes.Clone(buf[:n])
		err := s.write(func() error { return s.db.Set(key, value, pebble.Sync) })
		if err != nil {
			return "", 0, fmt.Errorf("pebble store: put object: %w", err)
		}
		return id, int64(n), nil
	}
	size, err = s.objects.putFile(ctx, id, buf, n, last, r, s.admitGrowth)
	if err != nil {
		return "", 0, err
	}
	return id, size, nil
}

// putFile writes the object whose first n bytes are in buf, and whose rest r yields unless
// last, as the file of id. admit is asked before each write whether the disk may take it
// (see Store.admitGrowth); a write that meets a full disk fails with store.ErrFull.
func (o objectFiles) putFile(ctx context.Context, id string, buf *[putBufferBytes]byte, n int, last bool, r io.Reader, admit func(int64) error) (size int64, err error) {
	part := o.partPath(id)
	if err := admit(int64(n)); err != nil {
		return 0, err
	}
	f, err := o.fs.Create(part, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, fmt.Errorf("pebble store: put object: %w", fullIfNoSpace(err))
	}
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			o.fs.Remove(part)
		}
	}()
	for first := true; ; first = false {
		if n > 0 {
			if !first {
				if err := admit(int64(n)); err != nil {
					return 0, err
				}
			}
			if _, err := f.Write(buf[:n]); err != nil {
				return 0, fmt.Errorf("pebble store: put object: %w", fullIfNoSpace(err))
			}
			size += int64(n)
		}
		if last {
			break
		}
		var rerr error
		n, rerr = io.ReadFull(r, buf[:])
		last = rerr == io.EOF || rerr == io.ErrUnexpectedEOF
		if rerr != nil && !last {
			return 0, rerr
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
	if err := f.SyncData(); err != nil {
		return 0, fmt.Errorf("pebble store: put object: sync: %w", fullIfNoSpace(err))
	}
	err = f.Close()
	f = nil
	if err != nil {
		return 0, fmt.Errorf("pebble store: put object: %w", err)
	}
	if err := o.fs.Rename(part, o.path(id)); err != nil {
		// A sweeper deleted the attempt as a leftover.
		return 0, fmt.Errorf("pebble store: put object: %w", err)
	}
	if err := syncDir(o.fs, o.dir); err != nil {
		return 0, fmt.Errorf("pebble store: put object: sync directory: %w", err)
	}
	return size, nil
}

// ReadObject implements store.Objects. The reader holds a copy of a record's bytes, or the
// file open, so an object deleted meanwhile reads to its end.
func (s *Store) ReadObject(ctx context.Context, id string, off, n int64) (io.ReadCloser, error) {
	if err := s.guard.Enter(ctx); err != nil {
		return nil, err
	}
	defer s.guard.Exit()
	if !store.ValidObjectID(id) {
		return nil, store.ErrNotFound
	}
	if off < 0 || n < 0 {
		return nil, fmt.Errorf("pebble store: read object %s: invalid range [%d, +%d)", id, off, n)
	}
	switch value, closer, err := s.db.Get(inlineKey(id)); {
	case err == nil:
		defer closer.Close()
		if off > int64(len(value)) || n > int64(len(value))-off {
			return nil, fmt.Errorf("pebble store: read object %s: range [%d, +%d) outside its %d bytes", id, off, n, len(value))
		}
		return io.NopCloser(bytes.NewReader(bytes.Clone(value[off : off+n]))), nil
	case !errors.Is(err, pebble.ErrNotFound):
		return nil, fmt.Errorf("pebble store: read object %s: %w", id, err)
	}
	f, err := s.objects.fs.Open(s.objects.path(id))
	if oserror.IsNotExist(err) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("pebble store: read object %s: %w", id, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("pebble store: read object %s: %w", id, err)
	}
	if size := info.Size(); off > size || n > size-off {
		f.Close()
		return nil, fmt.Errorf("pebble store: read object %s: range [%d, +%d) outside its %d bytes", id, off, n, size)
	}
	return &fileSection{f: f, off: off, remaining: n}, nil
}

// fileSection reads remaining bytes of f from off.
type fileSection struct {
	f         vfs.File
	off       int64
	remaining int64
}

func (r *fileSection) Read(p []byte) (int, error) {
	if r.remaining <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.remaining)]
	n, err := r.f.ReadAt(p, r.off)
	r.off += int64(n)
	r.remaining -= int64(n)
	if err == io.EOF && r.remaining > 0 {
		err = io.ErrUnexpectedEOF
	} else if err == io.EOF || n == len(p) {
		err = nil
	}
	return n, err
}

// WriteTo lets io.Copy hand the file itself to a writer that can take it: a file of the
// real disk (vfs.Default's files embed *os.File) is a syscall.Conn, and an
// io.LimitedReader of one is what net/http's response and net.TCPConn turn into
// sendfile(2), so a download is copied by the kernel rather than through user space.
func (r *fileSection) WriteTo(w io.Writer) (int64, error) {
	rf, toReaderFrom := w.(io.ReaderFrom)
	_, isConn := r.f.(syscall.Conn)
	seeker, canSeek := r.f.(io.Seeker)
	if !toReaderFrom || !isConn || !canSeek {
		return io.Copy(w, struct{ io.Reader }{r})
	}
	if _, err := seeker.Seek(r.off, io.SeekStart); err != nil {
		return 0, err
	}
	want := r.remaining
	lr := &io.LimitedReader{R: r.f, N: want}
	n, err := rf.ReadFrom(lr)
	r.off += n
	r.remaining -= n
	if err == nil && n < want {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (r *fileSection) Close() error { return r.f.Close() }

// DeleteObjects implements store.Objects: it removes each object's file (or the ".part" file
// of an attempt) or record, then syncs the directory, and commits the records' deletion,
// once each.
func (s *Store) DeleteObjects(ctx context.Context, ids []string) error {
	if err := s.guard.Enter(ctx); err != nil {
		return err
	}
	defer s.guard.Exit()
	if err := s.admit(nil, nil); err != nil {
		return err
	}
	o := s.objects
	removed := false
	batch := s.db.NewBatch()
	closeBatch := true // until write has it
	defer func() {
		if closeBatch {
			batch.Close()
		}
	}()
	for _, id := range ids {
		if !store.ValidObjectID(id) {
			continue
		}
		for _, name := range []string{o.path(id), o.partPath(id)} {
			switch err := o.fs.Remove(name); {
			case err == nil:
				removed = true
			case !oserror.IsNotExist(err):
				return fmt.Errorf("pebble store: delete object %s: %w", id, err)
			}
		}
		switch _, closer, err := s.db.Get(inlineKey(id)); {
		case err == nil:
			closer.Close()
			if err := batch.Delete(inlineKey(id), nil); err != nil {
				return fmt.Errorf("pebble store: delete object %s: %w", id, err)
			}
		case !errors.Is(err, pebble.ErrNotFound):
			return fmt.Errorf("pebble store: delete object %s: %w", id, err)
		}
	}
	if removed {
		if err := syncDir(o.fs, o.dir); err != nil {
			return fmt.Errorf("pebble store: delete objects: sync directory: %w", err)
		}
	}
	if !batch.Empty() {
		closeBatch = false
		err := s.write(func() error {
			defer batch.Close()
			return batch.Commit(pebble.Sync)
		})
		if err != nil {
			return fmt.Errorf("pebble store: delete objects: %w", err)
		}
	}
	return nil
}

// fullIfNoSpace returns err wrapping store.ErrFull too if it is the disk saying it is full.
func fullIfNoSpace(err error) error {
	if diskSaysNoSpace(err) {
		return fmt.Errorf("%w: %w", store.ErrFull, err)
	}
	return err
}

// ScanObjects implements store.Objects: the records first, then a listing of the directory,
// where the ".part" file of a PutObject in progress is reported with the bytes written so
// far.
func (s *Store) ScanObjects(ctx context.Context, before time.Time, fn func(id string, size int64) (bool, error)) error {
	if err := s.guard.Enter(ctx); err != nil {
		return err
	}
	defer s.guard.Exit()
	limit := store.ObjectIDBefore(before)
	more, err := s.scanInlineObjects(ctx, limit, fn)
	if err != nil || !more {
		return err
	}
	o := s.objects
	names, err := o.fs.List(o.dir)
	if err != nil {
		return fmt.Errorf("pebble store: scan objects: %w", err)
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		id := strings.TrimSuffix(name, partSuffix)
		if !store.ValidObjectID(id) || id >= limit {
			continue
		}
		info, err := o.fs.Stat(o.fs.PathJoin(o.dir, name))
		if oserror.IsNotExist(err) {
			continue // deleted, or renamed to "<id>" and listed under that name too
		}
		if err != nil {
			return fmt.Errorf("pebble store: scan objects: %w", err)
		}
		if more, err := fn(id, info.Size()); err != nil || !more {
			return err
		}
	}
	return nil
}

// scanInlineObjects calls fn for the object records whose ids sort below limit, and reports
// whether fn wants more.
func (s *Store) scanInlineObjects(ctx context.Context, limit string, fn func(id string, size int64) (bool, error)) (bool, error) {
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: inlineKey(""), UpperBound: inlineKey(limit)})
	if err != nil {
		return false, fmt.Errorf("pebble store: scan objects: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		value, err := it.ValueAndErr()
		if err != nil {
			return false, fmt.Errorf("pebble store: scan objects: %w", err)
		}
		if more, err := fn(string(it.Key()[len(inlinePrefix):]), int64(len(value))); err != nil || !more {
			return false, err
		}
	}
	if err := it.Error(); err != nil {
		return false, fmt.Errorf("pebble store: scan objects: %w", err)
	}
	return true, nil
}
