package pebble

import "github.com/cockroachdb/pebble/v2/vfs"

// A durable commit ends with an fdatasync of the write-ahead log. When the commit's bytes
// went past the end of the file, or into blocks only reserved for it (Pebble reserves the
// WAL's space with fallocate, which leaves the blocks unwritten), that sync must also commit
// the file's new size and extents through the filesystem's journal: on ext4 an appending
// write-and-fdatasync loop measured ~375 µs per sync, and ~137-154 µs of CPU, against
// ~185 µs and ~90-100 µs when the same writes land on blocks already written (12 KiB
// writes, the zeros included, on the project's VM). Pebble recycles old WAL files, whose
// blocks are written, but a new store, and every store's first few hundred megabytes of
// writes, use new files.
//
// So the WAL is written over zeros: before a write would reach past what the file already
// holds, the store writes zeros a few megabytes further first, and a sync then finds
// written blocks. The next sync writes those zeros out once, and the file's new size is
// journaled once per few megabytes instead of once per commit. Pebble reads a WAL up to the
// first zeroed chunk and takes it as the log's end (its own preallocation leaves zeros there
// too), so the zeros are never mistaken for records. A store in memory (Options.InMemory)
// has no journal to spare, and no zeros.

// walZeroAheadFor is how far beyond the WAL's writes the zeros reach, for a store whose
// memtables are memTable bytes: 4 MiB (a few thousand commits of typical entities, so that
// the one slower sync that writes them out is rare) with the usual 32 MiB memtables, less on
// the small disks that get smaller memtables (sizesFor), where every WAL byte counts.
func walZeroAheadFor(memTable int64) int64 { return memTable / 8 }

// overZeros makes f, if it is a WAL file opened to be written and the store writes its WAL
// over zeros, do so. A recycled log is rewritten from its start, and its old records are
// written blocks; a new one is empty.
func (d *disk) overZeros(f vfs.File, recycled bool) {
	df, ok := f.(*diskFile)
	if !ok || df.wal == nil || d.walZeroAhead == 0 {
		return
	}
	var zeroed int64
	if recycled {
		info, err := df.File.Stat()
		if err != nil {
			return // not worth failing the log for: its writes append, as they would have
		}
		zeroed = info.Size()
	}
	df.tail = &walTail{zeroed: zeroed}
}

// walTail is where a WAL file's writes and zeros end. Pebble writes a WAL from one
// goroutine, in order, with Write: written is the file's position.
type walTail struct {
	written int64 // bytes Write has put in the file
	zeroed  int64 // the file holds written blocks (data, zeros or a recycled log) below this
}

// zeroAhead makes sure the next n bytes of the WAL land on written blocks. Failing to write
// the zeros (a full disk, say) is not an error: the write then appends, as it would have.
func (f *diskFile) zeroAhead(n int) {
	t := f.tail
	end := t.written + int64(n)
	if end <= t.zeroed {
		return
	}
	from := max(t.zeroed, t.written) // never over what the log has written
	target := end + f.disk.walZeroAhead
	zeros := make([]byte, min(256<<10, target-from)) // once per few megabytes of log
	for from < target {
		k, err := f.File.WriteAt(zeros[:min(int64(len(zeros)), target-from)], from)
		from += int64(k)
		if err != nil {
			break
		}
	}
	t.zeroed = from
}
