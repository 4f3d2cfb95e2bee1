package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// defaultInMemoryLimit is --in-memory-limit's default: half the memory the process may use,
// so that an in-memory Tabula under a large upload answers 503 ServerBusy rather than being
// killed by the kernel with everything it held (the Go SDK's own blob suite, whose tests
// stage blocks of gigabytes, took one to 14 GB).
const defaultInMemoryLimit = "50%"

// memoryLimitOf reads --in-memory-limit: a size in bytes, with an optional unit (KiB, MiB,
// GiB, TiB, or K, M, G, T as their powers of two), a percentage of the memory available to
// the process (the machine's, or its control group's limit when lower), or 0 for no limit.
func memoryLimitOf(spec string, available func() (int64, error)) (int64, error) {
	s := strings.TrimSpace(spec)
	bad := func(why string) error {
		return fmt.Errorf("--in-memory-limit %q: %s; want a size such as 4GiB or 512MiB, a share of memory such as 50%%, or 0 for no limit", spec, why)
	}
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		p, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || p <= 0 || p > 100 {
			return 0, bad("a percentage is more than 0 and at most 100")
		}
		total, err := available()
		if err != nil {
			return 0, fmt.Errorf("--in-memory-limit %q: cannot tell this machine's memory (%v); give a size instead", spec, err)
		}
		return int64(float64(total) * p / 100), nil
	}
	units := []struct {
		suffix string
		shift  uint
	}{{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}, {"K", 10}, {"M", 20}, {"G", 30}, {"T", 40}, {"B", 0}}
	number, shift := s, uint(0)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			number, shift = strings.TrimSpace(n), u.shift
			break
		}
	}
	v, err := strconv.ParseFloat(number, 64)
	if err != nil || v < 0 {
		return 0, bad("not a size")
	}
	n := v * float64(uint64(1)<<shift)
	if n >= 1<<62 {
		return 0, bad("too large")
	}
	return int64(n), nil
}

// availableMemory returns the memory this process may use: the machine's (MemTotal of
// /proc/meminfo), or less when its control group (cgroup v2 or v1, as in a container) is
// limited to less.
func availableMemory() (int64, error) {
	total, err := memTotal("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if limit, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && limit > 0 && limit < total {
			total = limit // "max" (v2) and v1's huge "unlimited" leave the machine's
		}
	}
	return total, nil
}

// memTotal reads MemTotal from a meminfo file.
func memTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: MemTotal %q: %w", path, rest, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New(path + " has no MemTotal")
}

// heapHeadroom is the Go heap Tabula needs beside what its store holds: request buffers,
// caches, and the garbage between two collections (see tuneGC).
const heapHeadroom = 512 << 20

// followStoreMemory keeps the process's soft memory limit at heapHeadroom above what an
// in-memory store holds (held), four times a second until ctx is done. The store's files live on
// the Go heap: under a fixed limit below them the collector would run without end, for
// memory it cannot free (point gets fell from 10,100/s to 1,960/s with 2 GiB of blobs held,
// 4,000 collections in 16 s). GOMEMLIMIT, when set, wins.
func followStoreMemory(ctx context.Context, held func() int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	last := int64(-1)
	for {
		// Moved in steps of a 64th of the headroom, not on every byte.
		if h := held() &^ (heapHeadroom/64 - 1); h != last {
			debug.SetMemoryLimit(heapHeadroom + h)
			last = h
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
