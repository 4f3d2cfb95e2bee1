package table

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tabula-dev/tabula/internal/metrics"

	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/odata"
	"github.com/tabula-dev/tabula/internal/store"
)

// MaxPageSize is the most entities (or tables) one query response holds.
const MaxPageSize = 1000

// ResumeKey is where a query continues: the first key of the next page, inclusive.
type ResumeKey struct {
	PartitionKey string
	RowKey       string
}

// Query selects entities of one table. Filter may be nil (everything). Top bounds the page
// size (0 means MaxPageSize). Resume continues a previous page.
type Query struct {
	Filter *odata.Filter
	Top    int
	Resume *ResumeKey
	// Limit, when set, confines the query to a key range (a SAS with spk/srk/epk/erk).
	Limit *KeyLimit
}

// KeyLimit is a SAS key range: an entity is inside when (PartitionKey, RowKey) is at or after
// (StartPK, StartRK) and at or before (EndPK, EndRK), an empty field meaning "no bound".
type KeyLimit struct {
	StartPK, StartRK, EndPK, EndRK string
}

// Contains reports whether the entity key lies inside the limit.
func (l *KeyLimit) Contains(pk, rk string) bool {
	if l.StartPK != "" && (pk < l.StartPK || pk == l.StartPK && l.StartRK != "" && rk < l.StartRK) {
		return false
	}
	if l.EndPK != "" && (pk > l.EndPK || pk == l.EndPK && l.EndRK != "" && rk > l.EndRK) {
		return false
	}
	return true
}

// clamp narrows r to the limit.
func (l *KeyLimit) clamp(r store.Range) store.Range {
	if l.StartPK != "" {
		if start := (store.Key{Space: r.Space, Partition: l.StartPK, Row: l.StartRK}); start.Compare(r.Start) > 0 {
			r.Start = start
		}
	}
	if l.EndPK != "" {
		end := store.Key{Space: r.Space, Partition: l.EndPK + "\x00"}
		if l.EndRK != "" {
			end = store.Key{Space: r.Space, Partition: l.EndPK, Row: l.EndRK + "\x00"}
		}
		if r.EndUnbounded || end.Compare(r.End) < 0 {
			r.End, r.EndUnbounded = end, false
		}
	}
	return r
}

// Page is one page of query results, in (PartitionKey, RowKey) order. Next is set whenever
// more matching entities may remain; a page may be short, or empty, and still have a Next
// (when the time budget ran out).
type Page struct {
	Entities []edm.Entity
	Next     *ResumeKey
	// Scanned counts the entities read from the store to produce the page; with the number
	// returned it shows what the query cost (the design guide's point/range/partition/table
	// scan ladder).
	Scanned int
	// Plan names the kind of query the filter made possible, cheapest first.
	Plan Plan
}

// Plan classifies a query the way the Table Design Guide ranks them by cost.
type Plan string

const (
	PlanPoint     Plan = "point"           // PartitionKey and RowKey equality: one read
	PlanPartition Plan = "partition-range" // within one partition (a RowKey range or the whole partition)
	PlanRange     Plan = "range"           // several partitions, bounded by PartitionKey
	PlanTableScan Plan = "table-scan"      // no usable key condition: every entity is read
)

// planOf classifies the key ranges a filter allows. Several points stay "point" (each is one
// read); several single-partition ranges stay "partition-range".
func planOf(ranges []odata.KeyRange) Plan {
	// A range from the first partition to the last reads the whole table, whatever RowKey
	// bound it starts at (RowKey eq 'x' alone names no partition).
	if len(ranges) == 1 && ranges[0].StartPK == "" && ranges[0].EndUnbounded {
		return PlanTableScan
	}
	plan := PlanPoint
	for _, r := range ranges {
		if _, _, ok := r.Point(); ok {
			continue
		}
		if !r.SinglePartition() {
			return PlanRange
		}
		plan = PlanPartition
	}
	return plan
}

// budgetCheckEvery is how many scanned entities pass between checks of the page time budget.
const budgetCheckEvery = 256

// errPageDone stops a scan once the page is complete.
var errPageDone = errors.New("page done")

// QueryEntities returns one page of the entities of t matching q. Only the key ranges the
// filter allows are read from the store; a point query (PartitionKey and RowKey equality) is
// one point read.
func (s *Service) QueryEntities(ctx context.Context, t Table, q Query) (Page, error) {
	page, err := s.queryEntities(ctx, t, q)
	if err == nil {
		metrics.EntitiesRead.Add(float64(len(page.Entities)))
		metrics.EntitiesScanned.WithLabelValues(string(page.Plan)).Add(float64(page.Scanned))
	}
	return page, err
}

func (s *Service) queryEntities(ctx context.Context, t Table, q Query) (Page, error) {
	top := q.Top
	if top <= 0 || top > MaxPageSize {
		top = MaxPageSize
	}
	ranges := []odata.KeyRange{{EndUnbounded: true}}
	if q.Filter != nil {
		ranges = q.Filter.KeyRanges()
	}
	deadline := time.Now().Add(s.PageBudget)
	page := Page{Plan: planOf(ranges)}
	for _, kr := range ranges {
		r := store.Range{
			Space:        t.Space,
			Start:        store.Key{Space: t.Space, Partition: kr.StartPK, Row: kr.StartRK},
			End:          store.Key{Space: t.Space, Partition: kr.EndPK, Row: kr.EndRK},
			EndUnbounded: kr.EndUnbounded,
		}
		if q.Limit != nil {
			r = q.Limit.clamp(r)
			if !r.EndUnbounded && r.Start.Compare(r.End) >= 0 {
				continue
			}
		}
		if q.Resume != nil {
			resume := store.Key{Space: t.Space, Partition: q.Resume.PartitionKey, Row: q.Resume.RowKey}
			if !r.EndUnbounded && resume.Compare(r.End) >= 0 {
				continue // this range was finished on an earlier page
			}
			if resume.Compare(r.Start) > 0 {
				r.Start = resume
			}
		}
		if len(page.Entities) == top {
			// The page filled up exactly at the end of the previous range.
			page.Next = &ResumeKey{PartitionKey: r.Start.Partition, RowKey: r.Start.Row}
			return page, nil
		}
		if pk, rk, ok := kr.Point(); ok {
			if !r.Contains(store.Key{Space: t.Space, Partition: pk, Row: rk}) {
				continue
			}
			rec, err := s.store.Get(ctx, store.Key{Space: t.Space, Partition: pk, Row: rk})
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return Page{}, err
			}
			page.Scanned++
			var e edm.Entity
			if err := decodeRecord(rec, &e); err != nil {
				return Page{}, err
			}
			if q.Filter.MatchEntity(&e) && (q.Limit == nil || q.Limit.Contains(pk, rk)) {
				page.Entities = append(page.Entities, e)
			}
			continue
		}
		// The filter reads each scanned record's properties straight from the value the store
		// lends, one lookup per property it names; only matches are decoded into entities of
		// their own. A selective filter over a large range then decodes and copies nothing
		// for the entities it rejects.
		var cur store.Record
		var corrupt error
		lookup := func(name string) (edm.Value, bool) {
			switch name {
			case "PartitionKey":
				return edm.Value{Type: edm.String, Str: cur.Key.Partition}, true
			case "RowKey":
				return edm.Value{Type: edm.String, Str: cur.Key.Row}, true
			case "Timestamp":
				return edm.Value{Type: edm.DateTime, Int: cur.Version}, true
			}
			v, found, err := edm.LookupBinary(cur.Value, name)
			if err != nil {
				corrupt = err
			}
			return v, found
		}
		err := s.store.Scan(ctx, r, func(rec store.Record) (bool, error) {
			if len(page.Entities) == top || (page.Scanned%budgetCheckEvery == budgetCheckEvery-1 && time.Now().After(deadline)) {
				page.Next = &ResumeKey{PartitionKey: rec.Key.Partition, RowKey: rec.Key.Row}
				return false, errPageDone
			}
			page.Scanned++
			cur = rec
			if q.Filter != nil && !q.Filter.Match(lookup) {
				if corrupt != nil {
					return false, fmt.Errorf("entity %s is corrupt: %w", rec.Key, corrupt)
				}
				return true, nil
			}
			var e edm.Entity
			if err := decodeRecord(rec, &e); err != nil {
				return false, err
			}
			page.Entities = append(page.Entities, e)
			return true, nil
		})
		if errors.Is(err, errPageDone) {
			return page, nil
		}
		if err != nil {
			return Page{}, err
		}
	}
	return page, nil
}
