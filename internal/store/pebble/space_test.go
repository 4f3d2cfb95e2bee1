package pebble

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// countingDisk counts the measurements of a smallDisk.
type countingDisk struct {
	*smallDisk
	measured atomic.Int64
}

func (d *countingDisk) GetDiskUsage(dir string) (vfs.DiskUsage, error) {
	d.measured.Add(1)
	return d.smallDisk.GetDiskUsage(dir)
}

func TestCompactionWritesMeasureTheDiskOnlyOnceTheirShareOfTheSpareRoomIsUsed(t *testing.T) {
	disk := &countingDisk{smallDisk: newSmallDisk(1 << 30)}
	s := newSpace(disk, "")
	before := disk.measured.Load()
	// Plenty of room: a thousand 32 KiB block writes take one measurement.
	for range 1000 {
		if err := s.compactionRoom(32 << 10); err != nil {
			t.Fatal(err)
		}
	}
	if n := disk.measured.Load() - before; n != 1 {
		t.Errorf("1000 writes with room to spare measured the disk %d times, want 1", n)
	}
	// The disk fills behind the compactions' back (another program): once their budget,
	// half the room that was spare, is spent they measure again and are refused.
	disk.used.Store(disk.capacity - s.floor/2)
	spare := int64(1<<30) - s.floor/2
	var refused error
	for written := int64(0); written <= spare && refused == nil; written += 32 << 10 {
		refused = s.compactionRoom(32 << 10)
	}
	if !errors.Is(refused, errKeptForFlushes) {
		t.Errorf("compactions went on writing on a disk down to its kept room: %v", refused)
	}
}
