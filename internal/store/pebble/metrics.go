package pebble

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector reports the store's own state to Prometheus: disk use, write-ahead log bytes,
// flushes and compactions, read amplification and block cache hits.
func (s *Store) Collector() prometheus.Collector { return storeCollector{s} }

type storeCollector struct{ s *Store }

var (
	diskUsage      = prometheus.NewDesc("tabula_pebble_disk_usage_bytes", "Bytes the embedded store uses on disk.", nil, nil)
	walBytes       = prometheus.NewDesc("tabula_pebble_wal_bytes_written_total", "Bytes written to the write-ahead log.", nil, nil)
	flushes        = prometheus.NewDesc("tabula_pebble_flushes_total", "Memtable flushes.", nil, nil)
	compactions    = prometheus.NewDesc("tabula_pebble_compactions_total", "Compactions.", nil, nil)
	compactionDebt = prometheus.NewDesc("tabula_pebble_compaction_debt_bytes", "Estimated bytes to compact before the LSM is stable.", nil, nil)
	readAmp        = prometheus.NewDesc("tabula_pebble_read_amplification", "Sorted runs a read may consult.", nil, nil)
	cacheHits      = prometheus.NewDesc("tabula_pebble_block_cache_hits_total", "Block cache hits.", nil, nil)
	cacheMisses    = prometheus.NewDesc("tabula_pebble_block_cache_misses_total", "Block cache misses.", nil, nil)
	memtableBytes  = prometheus.NewDesc("tabula_pebble_memtable_bytes", "Bytes held in memtables.", nil, nil)

	// The same four on every backend (store/postgres has them too), so that one reading tells
	// what a durable write costs: commits per sync is how many writes share one.
	storeCommits   = prometheus.NewDesc("tabula_store_commits_total", "Commits the store applied and made durable.", nil, nil)
	storeMutations = prometheus.NewDesc("tabula_store_mutations_total", "Records written or deleted by those commits.", nil, nil)
	storeSyncs     = prometheus.NewDesc("tabula_store_syncs_total", "Syncs (fdatasync) of the write-ahead log.", nil, nil)
	storeWALWrites = prometheus.NewDesc("tabula_store_wal_writes_total", "Writes to the write-ahead log (system calls).", nil, nil)
)

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{diskUsage, walBytes, flushes, compactions, compactionDebt, readAmp, cacheHits, cacheMisses, memtableBytes,
		storeCommits, storeMutations, storeSyncs, storeWALWrites} {
		ch <- d
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	if c.s.guard.Enter(context.Background()) != nil {
		return // closed
	}
	defer c.s.guard.Exit()
	m := c.s.db.Metrics()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(diskUsage, float64(m.DiskSpaceUsage()))
	counter(walBytes, float64(m.WAL.BytesWritten))
	counter(flushes, float64(m.Flush.Count))
	counter(compactions, float64(m.Compact.Count))
	gauge(compactionDebt, float64(m.Compact.EstimatedDebt))
	gauge(readAmp, float64(m.ReadAmp()))
	counter(cacheHits, float64(m.BlockCache.Hits))
	counter(cacheMisses, float64(m.BlockCache.Misses))
	gauge(memtableBytes, float64(m.MemTable.Size))
	counter(storeCommits, float64(c.s.wal.commits.Load()))
	counter(storeMutations, float64(c.s.wal.mutations.Load()))
	counter(storeSyncs, float64(c.s.wal.syncs.Load()))
	counter(storeWALWrites, float64(c.s.wal.writes.Load()))
}
