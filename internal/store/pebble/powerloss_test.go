package pebble

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tabula-dev/tabula/internal/store"
)

var (
	crashPoints = flag.Int("crashpoints", 25, "power losses TestPowerLossKeepsEveryAcknowledgedWrite simulates (the long run: -crashpoints=1000)")
	crashSeed   = flag.Uint64("crashseed", 0, "seed of TestPowerLossKeepsEveryAcknowledgedWrite (0: from the clock)")
)

// TestPowerLossKeepsEveryAcknowledgedWrite cuts the power again and again under concurrent
// single writes, conditional writes, batches, dependent writes and space deletions, while
// memtables are flushed and compacted underneath: each crash keeps only what was fsynced
// (and, at random, some of what was not), as Pebble's crashable in-memory filesystem models
// it. After each crash the store is reopened on what the disk kept and checked against what
// the writers were told:
//
//   - every acknowledged write is there at its last acknowledged version, and every
//     acknowledged deletion stays deleted (nothing older resurrects);
//   - a write that was in flight at the crash is there whole or not at all, batches
//     included (no torn batch);
//   - a write that is there has everything its writer was acknowledged before it, and what
//     it read from another writer (no commit outlives one it depended on).
//
// The next round writes on from the recovered state, so later crashes also hit stores that
// were themselves recovered from a crash.
func TestPowerLossKeepsEveryAcknowledgedWrite(t *testing.T) {
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -crashseed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	fs := vfs.NewCrashableMem()
	w := newCrashWorld(4)
	stats := &w.stats
	start := time.Now()
	for point := 0; point < *crashPoints && !t.Failed(); point++ {
		s, err := open("db", fs)
		if err != nil {
			t.Fatalf("crash point %d: open after the crash: %v", point, err)
		}
		if err := w.verify(s); err != nil {
			s.Close()
			t.Fatalf("crash point %d (seed %d): %v", point, seed, err)
		}
		fs = w.runUntilCrash(t, s, fs, rng)
		if err := s.Close(); err != nil {
			t.Fatalf("crash point %d: Close: %v", point, err)
		}
	}
	if !t.Failed() {
		s, err := open("db", fs)
		if err != nil {
			t.Fatalf("open after the last crash: %v", err)
		}
		defer s.Close()
		if err := w.verify(s); err != nil {
			t.Fatalf("after the last crash (seed %d): %v", seed, err)
		}
	}
	t.Logf("%d crash points in %v: %d operations acknowledged before a crash; %d not acknowledged (in flight or after the cut), of which %d survived whole",
		*crashPoints, time.Since(start).Round(time.Millisecond), stats.acked, stats.unacked, stats.unackedKept)
}

type crashStats struct{ acked, unacked, unackedKept int }

// crashWorld is what the writers know: the keys each owns, the state they were in after the
// last recovery, and the operations since.
type crashWorld struct {
	writers []*crashWriter
	base    map[store.Key]int64 // recovered state: version, or absent from the map
	nextID  atomic.Int64        // operation ids, also the versions they write
	stats   crashStats
}

// crashWriter owns its keys: only it writes them, one operation at a time, so it knows
// their state, and the order of its operations is the order they were acknowledged in.
type crashWriter struct {
	index   int
	keys    []store.Key // data keys and its counter
	scratch []store.Key // keys of its scratch space, deleted together by DeleteSpace
	counter store.Key

	mu  sync.Mutex
	ops []*crashOp
}

// crashOp is one commit (or DeleteSpace) and what it does to each key it touches.
type crashOp struct {
	id      int64
	effects map[store.Key]bool // key → deleted
	acked   atomic.Bool
	// ackedAtCrash is acked as read just before the crash: true means it was durable.
	ackedAtCrash bool
}

const (
	crashDataKeys    = 12
	crashScratchKeys = 4
)

func newCrashWorld(writers int) *crashWorld {
	w := &crashWorld{base: map[store.Key]int64{}}
	for i := range writers {
		cw := &crashWriter{index: i, counter: store.Key{Space: "counters", Row: fmt.Sprintf("w%d", i)}}
		for k := range crashDataKeys {
			cw.keys = append(cw.keys, store.Key{Space: "data", Partition: fmt.Sprintf("w%d", i), Row: fmt.Sprintf("k%02d", k)})
		}
		cw.keys = append(cw.keys, cw.counter)
		for k := range crashScratchKeys {
			cw.scratch = append(cw.scratch, store.Key{Space: scratchSpace(i), Partition: "p", Row: fmt.Sprintf("s%d", k)})
		}
		w.writers = append(w.writers, cw)
	}
	return w
}

func scratchSpace(writer int) string { return fmt.Sprintf("scratch%d", writer) }

// state returns the version at k the writer's own view gives, and whether k is present.
func (cw *crashWriter) state(base map[store.Key]int64, k store.Key) (int64, bool) {
	for i := len(cw.ops) - 1; i >= 0; i-- {
		if deleted, ok := cw.ops[i].effects[k]; ok {
			return cw.ops[i].id, !deleted
		}
	}
	v, ok := base[k]
	return v, ok
}

// runUntilCrash runs the writers and a flusher on s for a random while, then crashes:
// it returns what the disk keeps.
func (w *crashWorld) runUntilCrash(t *testing.T, s *Store, fs *vfs.MemFS, rng *rand.Rand) *vfs.MemFS {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, cw := range w.writers {
		seed := rng.Uint64()
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(cw.index)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := w.step(s, cw, r); err != nil {
					t.Errorf("writer %d: %v", cw.index, err)
					return
				}
			}
		})
	}
	flushSeed := rng.Uint64()
	wg.Go(func() {
		r := rand.New(rand.NewPCG(flushSeed, 99))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(r.IntN(3000)) * time.Microsecond):
			}
			var err error
			if r.IntN(10) == 0 {
				err = s.db.Compact(context.Background(), []byte{0}, []byte{0xff}, false)
			} else {
				_, err = s.db.AsyncFlush()
			}
			if err != nil {
				t.Errorf("flush or compaction: %v", err)
				return
			}
		}
	})

	time.Sleep(time.Duration(1+rng.IntN(25)) * time.Millisecond)
	// Read what was acknowledged, then cut the power: everything read as acknowledged was
	// durable before the crash.
	for _, cw := range w.writers {
		cw.mu.Lock()
		for _, op := range cw.ops {
			op.ackedAtCrash = op.acked.Load()
		}
		cw.mu.Unlock()
	}
	cfg := vfs.CrashCloneCfg{}
	if p := []int{0, 0, 10, 50, 90}[rng.IntN(5)]; p > 0 {
		cfg = vfs.CrashCloneCfg{UnsyncedDataPercent: p, RNG: rand.New(rand.NewPCG(rng.Uint64(), 2))}
	}
	crashed := fs.CrashClone(cfg)
	close(stop)
	wg.Wait()
	for _, cw := range w.writers {
		for _, op := range cw.ops {
			if op.ackedAtCrash {
				w.stats.acked++
			}
		}
	}
	return crashed
}

// step makes writer cw do one random operation.
func (w *crashWorld) step(s *Store, cw *crashWriter, r *rand.Rand) error {
	ctx := context.Background()
	op := &crashOp{id: w.nextID.Add(1), effects: map[store.Key]bool{}}
	value := func(extra string) []byte {
		return []byte(fmt.Sprintf("op%d%s %s", op.id, extra, strings.Repeat("x", r.IntN(2000))))
	}
	var ms []store.Mutation
	deleteSpace := false
	switch n := r.IntN(100); {
	case n < 30: // a single write
		k := cw.keys[r.IntN(len(cw.keys)-1)]
		ms = append(ms, store.Mutation{Key: k, Version: op.id, Value: value("")})
	case n < 40: // a single write conditioned on what the writer knows is there
		k := cw.keys[r.IntN(len(cw.keys)-1)]
		ms = append(ms, store.Mutation{Key: k, Expect: cw.expect(w.base, k), Version: op.id, Value: value("")})
	case n < 55: // a single deletion
		k := cw.keys[r.IntN(len(cw.keys)-1)]
		ms = append(ms, store.Mutation{Key: k, Expect: cw.expect(w.base, k), Delete: true})
	case n < 80: // a batch of writes and deletions of one partition
		for _, i := range r.Perm(crashDataKeys)[:2+r.IntN(5)] {
			k := cw.keys[i]
			m := store.Mutation{Key: k, Version: op.id, Value: value("")}
			if r.IntN(3) == 0 {
				m = store.Mutation{Key: k, Delete: true}
			}
			if r.IntN(2) == 0 {
				m.Expect = cw.expect(w.base, k)
			}
			ms = append(ms, m)
		}
	case n < 90: // a write depending on what another writer wrote, perhaps not yet durably
		other := w.writers[r.IntN(len(w.writers))]
		if other == cw {
			return nil
		}
		rec, err := s.Get(ctx, other.counter)
		if errors.Is(err, store.ErrNotFound) {
			rec.Version = 0
		} else if err != nil {
			return err
		}
		ms = append(ms, store.Mutation{Key: cw.counter, Version: op.id, Value: value(fmt.Sprintf(" dep %d %d", other.index, rec.Version))})
	case n < 97:
		k := cw.scratch[r.IntN(len(cw.scratch))]
		ms = append(ms, store.Mutation{Key: k, Version: op.id, Value: value("")})
	default:
		deleteSpace = true
		for _, k := range cw.scratch {
			op.effects[k] = true
		}
	}
	for _, m := range ms {
		op.effects[m.Key] = m.Delete
	}
	cw.mu.Lock()
	cw.ops = append(cw.ops, op)
	cw.mu.Unlock()
	var err error
	if deleteSpace {
		err = s.DeleteSpace(ctx, scratchSpace(cw.index))
	} else {
		err = s.Commit(ctx, ms)
	}
	if err != nil {
		// The writer knows the state of its keys, so its conditions hold: a failure means
		// a write was lost or resurrected while the store was running.
		return fmt.Errorf("op %d: %w", op.id, err)
	}
	op.acked.Store(true)
	return nil
}

// expect returns the condition that the writer's view of k holds.
func (cw *crashWriter) expect(base map[store.Key]int64, k store.Key) store.Expect {
	if v, ok := cw.state(base, k); ok {
		return store.Expect{Kind: store.ExpectVersion, Version: v}
	}
	return store.Expect{Kind: store.ExpectAbsent}
}

// verify checks what s holds against what the writers were told (see the test's comment),
// then makes it the base of the next round.
func (w *crashWorld) verify(s *Store) error {
	got := map[store.Key]int64{}
	values := map[store.Key]string{}
	spaces := []string{"data", "counters"}
	for i := range w.writers {
		spaces = append(spaces, scratchSpace(i))
	}
	known := map[store.Key]bool{}
	for _, cw := range w.writers {
		for _, k := range append(append([]store.Key{}, cw.keys...), cw.scratch...) {
			known[k] = true
		}
	}
	for _, space := range spaces {
		err := s.Scan(context.Background(), store.SpaceRange(space), func(rec store.Record) (bool, error) {
			if !known[rec.Key] {
				return false, fmt.Errorf("unknown key %v", rec.Key)
			}
			if want := fmt.Sprintf("op%d", rec.Version); !strings.HasPrefix(string(rec.Value), want+" ") {
				return false, fmt.Errorf("%v: version %d holds the value of another write: %.40q", rec.Key, rec.Version, rec.Value)
			}
			got[rec.Key] = rec.Version
			values[rec.Key] = string(rec.Value)
			return true, nil
		})
		if err != nil {
			return err
		}
	}

	for _, cw := range w.writers {
		if err := cw.verify(w.base, got, &w.stats); err != nil {
			return fmt.Errorf("writer %d: %w", cw.index, err)
		}
		// A write that depended on another writer's counter outlives it only with it.
		if v, ok := values[cw.counter]; ok {
			var id int64
			var other int
			var seen int64
			if n, _ := fmt.Sscanf(v, "op%d dep %d %d", &id, &other, &seen); n == 3 {
				if cur := got[w.writers[other].counter]; cur < seen {
					return fmt.Errorf("writer %d's op %d read version %d of writer %d's counter, which the crash lost (recovered: %d)", cw.index, id, seen, other, cur)
				}
			}
		}
	}
	w.base = got
	for _, cw := range w.writers {
		cw.ops = nil
	}
	return nil
}

// verify checks the recovered state got of cw's keys against its operations since base.
func (cw *crashWriter) verify(base, got map[store.Key]int64, stats *crashStats) error {
	// The last operation the writer must see whole: the last acknowledged before the
	// crash, or a later one that the recovered state shows (it was acknowledged after all,
	// or was in flight and survived, and then so did everything before it).
	last := -1
	for i, op := range cw.ops {
		if op.ackedAtCrash {
			last = i
		}
		for k, deleted := range op.effects {
			if v, ok := got[k]; ok && !deleted && v == op.id {
				last = max(last, i)
			}
		}
	}
	for i, op := range cw.ops {
		if !op.ackedAtCrash {
			stats.unacked++
			if i <= last {
				stats.unackedKept++
			}
		}
	}
	for _, k := range append(append([]store.Key{}, cw.keys...), cw.scratch...) {
		// Allowed: the state after the last operation up to index last that touched k (or
		// the base), or after any later one.
		type state struct {
			version int64
			present bool
		}
		baseV, basePresent := base[k]
		allowed := []state{{baseV, basePresent}}
		var why []string
		for i, op := range cw.ops {
			deleted, ok := op.effects[k]
			if !ok {
				continue
			}
			st := state{op.id, !deleted}
			if i <= last {
				allowed = []state{st}
				why = []string{fmt.Sprintf("op %d (#%d, acked %v)", op.id, i, op.ackedAtCrash)}
			} else {
				allowed = append(allowed, st)
				why = append(why, fmt.Sprintf("or op %d in flight", op.id))
			}
		}
		v, present := got[k]
		ok := false
		for _, a := range allowed {
			if a.present == present && (!present || a.version == v) {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("%v recovered as %s; want the state after %s (base %s)", k, describe(v, present), strings.Join(why, ", "), describe(baseV, basePresent))
		}
	}
	return nil
}

func describe(version int64, present bool) string {
	if !present {
		return "absent"
	}
	return "version " + strconv.FormatInt(version, 10)
}
