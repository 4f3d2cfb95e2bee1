// Package insight watches a Table workload for what the Table Design Guide and the
// Performance Checklist warn about and Azure never says until production hurts: hot
// partitions, keys that only ever grow (or shrink), queries that read far more than they
// return, entities that belong in blobs, and tables whose partitioning defeats their purpose.
// Each finding carries the guide's advice in a sentence.
//
// Observing is cheap: a few counters under a per-table lock for each request, and the
// judgement made once per bucket of time (Run), not per request.
package insight

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabula-dev/tabula/internal/metrics"
)

// Config tunes what counts as a finding. DefaultConfig is the guide's figures.
type Config struct {
	// Bucket is the granularity of the sliding window, Window its length.
	Bucket, Window time.Duration
	// MinOps is the traffic a table needs in a window before its shape is judged.
	MinOps int
	// HotShare is the share of a table's operations one partition may take before it is hot;
	// PartitionTarget is Azure's per-partition target (entities/s), of which HotRate is the
	// share that also makes a partition hot.
	HotShare        float64
	PartitionTarget float64
	HotRate         float64
	// MonotonicShare is the share of inserts whose key keeps growing (or shrinking) that makes
	// keys append-only (or prepend-only).
	MonotonicShare float64
	// CostlyRatio is the entities scanned per entity returned that makes a query costly, once
	// it has scanned MinScanned.
	CostlyRatio float64
	MinScanned  int
	// LogEvery bounds how often the same finding is logged.
	LogEvery time.Duration
}

// DefaultConfig watches one-minute windows in ten-second buckets.
func DefaultConfig() Config {
	return Config{
		Bucket: 10 * time.Second, Window: time.Minute, MinOps: 200,
		HotShare: 0.5, PartitionTarget: 2000, HotRate: 0.8,
		MonotonicShare: 0.9, CostlyRatio: 10, MinScanned: 1000,
		LogEvery: 10 * time.Minute,
	}
}

// Azure's limits that make an entity one that belongs in a blob.
const (
	maxEntityBytes  = 1 << 20
	maxProperties   = 252
	largeEntityNear = 0.8 // of either limit
)

// LargeEntityBytes is the entity size from which the guide finds an entity large: Write may
// be given any size up to it for a smaller entity (edm.Entity.SizeOver).
const LargeEntityBytes = maxEntityBytes * 4 / 5 // largeEntityNear of maxEntityBytes

// maxTrackedPartitions bounds the partitions counted per table and bucket; the rest are
// counted together, so a table of millions of partitions costs no more memory than one of a
// thousand.
const maxTrackedPartitions = 1024

// Finding is one thing the guide would tell a table's owner.
type Finding struct {
	Kind      string `json:"kind"`
	Account   string `json:"account"`
	Table     string `json:"table"`
	Partition string `json:"partition,omitempty"`
	// Filter is a query's shape, its values replaced by '?'.
	Filter    string             `json:"filter,omitempty"`
	Figures   map[string]float64 `json:"figures"`
	Advice    string             `json:"advice"`
	FirstSeen time.Time          `json:"firstSeen"`
	LastSeen  time.Time          `json:"lastSeen"`

	loggedAt time.Time
}

// The kinds of finding.
const (
	HotPartition    = "hot-partition"
	AppendOnlyKeys  = "append-only-keys"
	PrependOnlyKeys = "prepend-only-keys"
	CostlyQuery     = "costly-query"
	LargeEntity     = "large-entity"
	TinyPartitions  = "tiny-partitions"
	OnePartition    = "one-partition"
)

var advice = map[string]string{
	HotPartition:    "Azure serves a partition from one server at about 2,000 entities a second: spread this traffic over more PartitionKey values (a hash or bucket prefix), or retry ServerBusy with backoff.",
	AppendOnlyKeys:  "Inserts whose PartitionKey always grows (a timestamp, a counter) all go to the last partition, one server: prefix the key with a hash or bucket, or reverse it, so inserts spread.",
	PrependOnlyKeys: "Inserts whose PartitionKey always shrinks (a reversed timestamp) all go to the first partition, one server: prefix the key with a hash or bucket so inserts spread.",
	CostlyQuery:     "This query reads far more entities than it returns: add a PartitionKey eq condition (a partition scan) or PartitionKey and RowKey (a point query), or keep a second copy of the entities keyed by what you filter on.",
	LargeEntity:     "Entities near the 1 MiB or 252-property limit belong in a blob: store the large value in Blob storage and keep its name in the entity.",
	TinyPartitions:  "Every entity is in a partition of its own: no entity group transaction can span two of them and every query but a point query crosses partitions; group entities that change or are read together under one PartitionKey.",
	OnePartition:    "Almost every entity of this table is in one partition, served by one server at about 2,000 entities a second: choose a PartitionKey that spreads the data.",
}

// Observer collects a workload's figures and judges them.
type Observer struct {
	cfg Config
	log *slog.Logger
	now func() time.Time

	mu       sync.RWMutex
	tables   map[tableKey]*tableStats
	findings map[string]*Finding
}

type tableKey struct{ account, table string }

// New returns an Observer; its findings are logged to log (nil: not logged).
func New(cfg Config, log *slog.Logger) *Observer {
	return &Observer{cfg: cfg, log: log, now: time.Now, tables: map[tableKey]*tableStats{}, findings: map[string]*Finding{}}
}

// tableStats are one table's figures over the window, bucket by bucket.
type tableStats struct {
	mu      sync.Mutex
	buckets []bucket // ring; buckets[cur] is the current one
	cur     int
	started time.Time // of the current bucket
	// The last inserted key, for the monotonic test (across buckets).
	lastPK string
	havePK bool
}

type bucket struct {
	ops           int
	perPartition  map[string]int
	others        int // operations on partitions beyond maxTrackedPartitions
	inserts       int
	pkUp, pkDown  int // inserts whose PartitionKey is above / below the previous one
	newPartitions int // inserts into a partition not seen in the bucket before
	largest       float64
	largestPK     string
	queries       map[string]*queryStats // by filter shape
}

type queryStats struct {
	count, scanned, returned int
	plan                     string
}

func (o *Observer) statsOf(account, table string, now time.Time) *tableStats {
	k := tableKey{account, strings.ToLower(table)}
	o.mu.RLock()
	ts := o.tables[k]
	o.mu.RUnlock()
	if ts != nil {
		return ts
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if ts = o.tables[k]; ts == nil {
		ts = &tableStats{buckets: make([]bucket, o.bucketsPerWindow()), started: now}
		o.tables[k] = ts
	}
	return ts
}

func (o *Observer) bucketsPerWindow() int { return max(1, int(o.cfg.Window/o.cfg.Bucket)) }

// current returns the bucket now falls in, rotating out buckets that are over. The caller
// holds ts.mu.
func (ts *tableStats) current(now time.Time, width time.Duration) *bucket {
	for steps := 0; now.Sub(ts.started) >= width && steps <= len(ts.buckets); steps++ {
		ts.cur = (ts.cur + 1) % len(ts.buckets)
		ts.buckets[ts.cur] = bucket{}
		ts.started = ts.started.Add(width)
	}
	if now.Sub(ts.started) >= width { // idle for longer than a window
		ts.started = now
	}
	return &ts.buckets[ts.cur]
}

func (b *bucket) count(partition string, n int) bool {
	b.ops += n
	if b.perPartition == nil {
		b.perPartition = map[string]int{}
	}
	c, seen := b.perPartition[partition]
	if !seen && len(b.perPartition) >= maxTrackedPartitions {
		b.others += n
		return true
	}
	b.perPartition[partition] = c + n
	return !seen
}

// Write observes n entity writes to one partition of a table. For an insert, rowKey is the
// first entity's, size its size in Azure's accounting and props its property count.
func (o *Observer) Write(account, table, partition string, n int, insert bool, size, props int) {
	if o == nil {
		return
	}
	now := o.now()
	ts := o.statsOf(account, table, now)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	b := ts.current(now, o.cfg.Bucket)
	fresh := b.count(partition, n)
	if insert {
		b.inserts += n
		if fresh {
			b.newPartitions += n
		}
		if ts.havePK {
			switch {
			case partition > ts.lastPK:
				b.pkUp += n
			case partition < ts.lastPK:
				b.pkDown += n
			}
		}
		ts.lastPK, ts.havePK = partition, true
	}
	if near := max(float64(size)/maxEntityBytes, float64(props)/maxProperties); near > b.largest {
		b.largest, b.largestPK = near, partition
	}
}

// Read observes n entities read from one partition (partition "" for a query across
// partitions, which is judged as a query instead).
func (o *Observer) Read(account, table, partition string, n int) {
	if o == nil || partition == "" {
		return
	}
	now := o.now()
	ts := o.statsOf(account, table, now)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.current(now, o.cfg.Bucket).count(partition, max(n, 1))
}

// Query observes one query page: its filter (shaped here), plan, and entities scanned and
// returned.
func (o *Observer) Query(account, table, filter, plan string, scanned, returned int) {
	if o == nil {
		return
	}
	shape := Shape(filter)
	now := o.now()
	ts := o.statsOf(account, table, now)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	b := ts.current(now, o.cfg.Bucket)
	if b.queries == nil {
		b.queries = map[string]*queryStats{}
	}
	q := b.queries[shape]
	if q == nil {
		if len(b.queries) >= maxTrackedPartitions {
			return
		}
		q = &queryStats{plan: plan}
		b.queries[shape] = q
	}
	q.count++
	q.scanned += scanned
	q.returned += returned
}

// Run judges the figures once per bucket until ctx is done.
func (o *Observer) Run(ctx context.Context) {
	tick := time.NewTicker(o.cfg.Bucket)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			o.Judge()
		}
	}
}

// Judge turns the current window's figures into findings, logs new ones (each at most once per
// LogEvery) and updates the findings gauge. Run calls it; tests may call it directly.
func (o *Observer) Judge() {
	if o == nil {
		return
	}
	now := o.now()
	o.mu.RLock()
	tables := make(map[tableKey]*tableStats, len(o.tables))
	for k, v := range o.tables {
		tables[k] = v
	}
	o.mu.RUnlock()
	var found []Finding
	for k, ts := range tables {
		found = append(found, o.judgeTable(k, ts, now)...)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, f := range found {
		key := f.Kind + "\x00" + f.Account + "\x00" + f.Table + "\x00" + f.Partition + "\x00" + f.Filter
		old := o.findings[key]
		if old == nil {
			f.FirstSeen = now
			old = &f
			o.findings[key] = old
		} else {
			old.Figures = f.Figures
		}
		old.LastSeen = now
		if o.log != nil && now.Sub(old.loggedAt) >= o.cfg.LogEvery {
			old.loggedAt = now
			attrs := []any{"kind", f.Kind, "account", f.Account, "table", f.Table}
			if f.Partition != "" {
				attrs = append(attrs, "partition", f.Partition)
			}
			if f.Filter != "" {
				attrs = append(attrs, "filter", f.Filter)
			}
			for _, name := range sortedKeys(f.Figures) {
				attrs = append(attrs, name, f.Figures[name])
			}
			attrs = append(attrs, "advice", f.Advice)
			o.log.Warn("design guide", attrs...)
		}
	}
	// A finding not seen for a whole window is over.
	counts := map[string]float64{}
	for key, f := range o.findings {
		if now.Sub(f.LastSeen) > o.cfg.Window {
			delete(o.findings, key)
			continue
		}
		counts[f.Kind]++
	}
	for kind := range advice {
		metrics.InsightFindings.With(prometheus.Labels{"kind": kind}).Set(counts[kind])
	}
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// judgeTable sums a table's window and names what the guide would.
func (o *Observer) judgeTable(k tableKey, ts *tableStats, now time.Time) []Finding {
	ts.mu.Lock()
	ts.current(now, o.cfg.Bucket)
	var sum bucket
	perPartition := map[string]int{}
	queries := map[string]*queryStats{}
	var span time.Duration
	for i := range ts.buckets {
		b := &ts.buckets[i]
		if b.ops == 0 && len(b.queries) == 0 {
			continue
		}
		span += o.cfg.Bucket
		sum.ops += b.ops
		sum.others += b.others
		sum.inserts += b.inserts
		sum.pkUp += b.pkUp
		sum.pkDown += b.pkDown
		sum.newPartitions += b.newPartitions
		if b.largest > sum.largest {
			sum.largest, sum.largestPK = b.largest, b.largestPK
		}
		for p, c := range b.perPartition {
			perPartition[p] += c
		}
		for shape, q := range b.queries {
			all := queries[shape]
			if all == nil {
				all = &queryStats{plan: q.plan}
				queries[shape] = all
			}
			all.count += q.count
			all.scanned += q.scanned
			all.returned += q.returned
		}
	}
	ts.mu.Unlock()
	if span == 0 {
		return nil
	}
	var out []Finding
	add := func(kind, partition, filter string, figures map[string]float64) {
		out = append(out, Finding{Kind: kind, Account: k.account, Table: k.table, Partition: partition, Filter: filter, Figures: figures, Advice: advice[kind]})
	}
	seconds := span.Seconds()
	if sum.ops >= o.cfg.MinOps {
		top, topOps := "", 0
		for p, c := range perPartition {
			if c > topOps || c == topOps && p < top {
				top, topOps = p, c
			}
		}
		share, rate := float64(topOps)/float64(sum.ops), float64(topOps)/seconds
		if len(perPartition) > 1 && share >= o.cfg.HotShare || rate >= o.cfg.HotRate*o.cfg.PartitionTarget {
			add(HotPartition, top, "", map[string]float64{"share": round(share), "perSecond": round(rate), "tableOpsPerSecond": round(float64(sum.ops) / seconds)})
		}
		if len(perPartition) == 1 && sum.inserts >= o.cfg.MinOps {
			add(OnePartition, top, "", map[string]float64{"inserts": float64(sum.inserts)})
		}
	}
	if sum.inserts >= o.cfg.MinOps {
		up, down := float64(sum.pkUp)/float64(sum.inserts), float64(sum.pkDown)/float64(sum.inserts)
		switch {
		case up >= o.cfg.MonotonicShare:
			add(AppendOnlyKeys, "", "", map[string]float64{"increasing": round(up), "inserts": float64(sum.inserts)})
		case down >= o.cfg.MonotonicShare:
			add(PrependOnlyKeys, "", "", map[string]float64{"decreasing": round(down), "inserts": float64(sum.inserts)})
		}
		if fresh := float64(sum.newPartitions) / float64(sum.inserts); fresh >= 0.95 && len(perPartition)+sum.others > 1 {
			add(TinyPartitions, "", "", map[string]float64{"insertsInANewPartition": round(fresh), "inserts": float64(sum.inserts)})
		}
	}
	if sum.largest >= largeEntityNear {
		add(LargeEntity, sum.largestPK, "", map[string]float64{"ofLimit": round(sum.largest)})
	}
	for shape, q := range queries {
		ratio := float64(q.scanned) / float64(max(q.returned, 1))
		if q.scanned >= o.cfg.MinScanned && (q.plan == "table-scan" || ratio >= o.cfg.CostlyRatio) {
			add(CostlyQuery, "", shape, map[string]float64{"queries": float64(q.count), "scanned": float64(q.scanned), "returned": float64(q.returned), "scannedPerReturned": round(ratio)})
		}
	}
	return out
}

func round(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// Findings returns the current findings, most recent first.
func (o *Observer) Findings() []Finding {
	if o == nil {
		return nil
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	out := make([]Finding, 0, len(o.findings))
	for _, f := range o.findings {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastSeen.Equal(out[j].LastSeen) {
			return out[i].LastSeen.After(out[j].LastSeen)
		}
		return fmt.Sprint(out[i].Kind, out[i].Table, out[i].Partition, out[i].Filter) < fmt.Sprint(out[j].Kind, out[j].Table, out[j].Partition, out[j].Filter)
	})
	return out
}
