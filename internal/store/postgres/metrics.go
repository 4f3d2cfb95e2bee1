package postgres

import "github.com/prometheus/client_golang/prometheus"

// Collector reports the connection pool to Prometheus: connections busy (in use, parked ones
// included), parked in a Scan's callback, and idle.
func (s *Store) Collector() prometheus.Collector { return poolCollector{s.pool} }

type poolCollector struct{ p *pool }

var (
	poolBusy   = prometheus.NewDesc("tabula_postgres_connections_busy", "PostgreSQL connections in use.", nil, nil)
	poolParked = prometheus.NewDesc("tabula_postgres_connections_parked", "PostgreSQL connections held by a scan while its callback runs.", nil, nil)
	poolIdle   = prometheus.NewDesc("tabula_postgres_connections_idle", "PostgreSQL connections open and idle.", nil, nil)
	poolMax    = prometheus.NewDesc("tabula_postgres_connections_max", "PostgreSQL connections this front-end may have busy at once.", nil, nil)
)

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolBusy
	ch <- poolParked
	ch <- poolIdle
	ch <- poolMax
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	c.p.mu.Lock()
	busy, parked, idle := c.p.busy, c.p.parked, len(c.p.idle)
	c.p.mu.Unlock()
	for _, m := range []struct {
		d *prometheus.Desc
		v int
	}{{poolBusy, busy}, {poolParked, parked}, {poolIdle, idle}, {poolMax, c.p.max}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, float64(m.v))
	}
}
