package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector reports the connection pool to Prometheus — connections busy (in use, parked ones
// included), parked in a Scan's callback, and idle — and what durable writes cost: the
// commits this front-end made, their records, and the database server's own WAL writes and
// syncs (pg_stat_wal, PostgreSQL 14 and later; left out where the server has no such view, as
// CockroachDB has not).
func (s *Store) Collector() prometheus.Collector { return poolCollector{s} }

type poolCollector struct{ s *Store }

var (
	poolBusy   = prometheus.NewDesc("tabula_postgres_connections_busy", "PostgreSQL connections in use.", nil, nil)
	poolParked = prometheus.NewDesc("tabula_postgres_connections_parked", "PostgreSQL connections held by a scan while its callback runs.", nil, nil)
	poolIdle   = prometheus.NewDesc("tabula_postgres_connections_idle", "PostgreSQL connections open and idle.", nil, nil)
	poolMax    = prometheus.NewDesc("tabula_postgres_connections_max", "PostgreSQL connections this front-end may have busy at once.", nil, nil)

	// The same four as store/pebble's, so that one reading tells what a durable write costs
	// on either backend. The syncs and WAL writes are the database server's, for every
	// database and client of the cluster, as pg_stat_wal counts them (its counts reach the
	// view up to a second late).
	storeCommits   = prometheus.NewDesc("tabula_store_commits_total", "Commits the store applied and made durable (transactions committed by this front-end).", nil, nil)
	storeMutations = prometheus.NewDesc("tabula_store_mutations_total", "Records written or deleted by those commits.", nil, nil)
	storeSyncs     = prometheus.NewDesc("tabula_store_syncs_total", "Syncs of the write-ahead log (the PostgreSQL server's, pg_stat_wal.wal_sync).", nil, nil)
	storeWALWrites = prometheus.NewDesc("tabula_store_wal_writes_total", "Writes of the write-ahead log (the PostgreSQL server's, pg_stat_wal.wal_write).", nil, nil)
)

// walStatsTimeout bounds the query of pg_stat_wal during a scrape.
const walStatsTimeout = time.Second

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolBusy, poolParked, poolIdle, poolMax, storeCommits, storeMutations, storeSyncs, storeWALWrites} {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.s.pool
	p.mu.Lock()
	busy, parked, idle := p.busy, p.parked, len(p.idle)
	p.mu.Unlock()
	for _, m := range []struct {
		d *prometheus.Desc
		v int
	}{{poolBusy, busy}, {poolParked, parked}, {poolIdle, idle}, {poolMax, p.max}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, float64(m.v))
	}
	ch <- prometheus.MustNewConstMetric(storeCommits, prometheus.CounterValue, float64(c.s.commits.Load()))
	ch <- prometheus.MustNewConstMetric(storeMutations, prometheus.CounterValue, float64(c.s.mutations.Load()))
	if writes, syncs, ok := c.s.walStats(); ok {
		ch <- prometheus.MustNewConstMetric(storeSyncs, prometheus.CounterValue, float64(syncs))
		ch <- prometheus.MustNewConstMetric(storeWALWrites, prometheus.CounterValue, float64(writes))
	}
}

// walStats reads the server's WAL write and sync counts; ok is false when they cannot be read
// (no pg_stat_wal, the database unreachable, the store closed).
func (s *Store) walStats() (writes, syncs int64, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), walStatsTimeout)
	defer cancel()
	if s.guard.Enter(ctx) != nil {
		return 0, 0, false
	}
	defer s.guard.Exit()
	err := s.withConn(ctx, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "SELECT wal_write, wal_sync FROM pg_stat_wal").Scan(&writes, &syncs)
	})
	return writes, syncs, err == nil
}
