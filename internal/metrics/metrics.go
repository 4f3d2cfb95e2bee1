// Package metrics counts what Tabula does, for Prometheus: requests by service, operation and
// status with their latency, and what the services read and write (entities, blobs, messages,
// entities a query scanned against those it returned). Every counter is package-level, so any
// package may count without wiring; Registry serves them all, with whatever the store reports
// about itself (Register).
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Registry holds every Tabula metric and Go's runtime and process metrics.
var Registry = prometheus.NewRegistry()

var (
	// Requests counts finished requests by service, operation (Azure's name, "" when the
	// request was refused before it was routed) and HTTP status.
	Requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tabula_requests_total", Help: "Requests answered, by service, operation and status.",
	}, []string{"service", "operation", "status"})

	// RequestDuration is the time from a request's arrival to its last byte of response.
	RequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "tabula_request_duration_seconds", Help: "Time to answer a request, by service and operation.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"service", "operation"})

	// RequestBytes and ResponseBytes count bodies in and out, by service.
	RequestBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tabula_request_body_bytes_total", Help: "Request body bytes read, by service.",
	}, []string{"service"})
	ResponseBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tabula_response_body_bytes_total", Help: "Response body bytes written, by service.",
	}, []string{"service"})

	// EntitiesWritten and EntitiesRead count entities inserted, updated, merged or deleted, and
	// entities returned by point reads and queries.
	EntitiesWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tabula_entities_written_total", Help: "Entities inserted, replaced, merged or deleted.",
	})
	EntitiesRead = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tabula_entities_read_total", Help: "Entities returned by point reads and queries.",
	})
	// EntitiesScanned counts entities queries examined, by query plan: the design guide's cost
	// ladder (point, partition-range, range, table-scan). Against EntitiesRead it shows how much
	// reading a table's queries waste.
	EntitiesScanned = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tabula_query_entities_scanned_total", Help: "Entities examined by queries, by query plan.",
	}, []string{"plan"})

	// BlobsWritten and BlobBytesWritten count blob writes (blobs created or replaced, blocks,
	// pages and appends) and their bytes; BlobBytesRead the bytes of blobs read.
	BlobsWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tabula_blob_writes_total", Help: "Blob data writes: blobs put, blocks, pages and appends.",
	})
	BlobBytesWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tabula_blob_bytes_written_total", Help: "Blob bytes written.",
	})
	BlobBytesRead = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tabula_blob_bytes_read_total", Help: "Blob bytes read.",
	})
	// CopySourceFetches counts the GETs of copy sources on other servers (Copy Blob and the
	// *From URL operations), CopySourceBytes the bytes they read.
	CopySourceFetches = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tabula_blob_copy_source_fetches_total", Help: "GETs of copy sources on other servers.",
	})
	CopySourceBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tabula_blob_copy_source_bytes_total", Help: "Bytes read from copy sources on other servers.",
	})

	// MessagesPut, MessagesGot and MessagesDeleted count queue messages.
	MessagesPut = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tabula_queue_messages_put_total", Help: "Queue messages put.",
	})
	MessagesGot = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tabula_queue_messages_received_total", Help: "Queue messages handed out by Get Messages (not peeks).",
	})
	MessagesDeleted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tabula_queue_messages_deleted_total", Help: "Queue messages deleted.",
	})

	// FaultsInjected counts requests a fault rule hit, by rule.
	FaultsInjected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tabula_faults_injected_total", Help: "Requests failed, delayed or cut on purpose by a fault rule, by rule id.",
	}, []string{"rule"})
	// InsightFindings is the number of current design-guide findings, by kind.
	InsightFindings = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tabula_insight_findings", Help: "Current design-guide findings (hot partitions, append-only keys, costly queries, ...), by kind.",
	}, []string{"kind"})
	// Throttled counts requests refused for exceeding Azure's scalability targets (--throttle),
	// by scope: partition or account.
	Throttled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tabula_throttled_requests_total", Help: "Requests answered 503 ServerBusy for exceeding a scalability target, by scope.",
	}, []string{"scope"})
)

func init() {
	Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		Requests, RequestDuration, RequestBytes, ResponseBytes,
		EntitiesWritten, EntitiesRead, EntitiesScanned,
		BlobsWritten, BlobBytesWritten, BlobBytesRead, CopySourceFetches, CopySourceBytes,
		MessagesPut, MessagesGot, MessagesDeleted,
		FaultsInjected, Throttled, InsightFindings,
	)
}

// Register adds collectors (a store's statistics) to Registry; one already there is ignored,
// so that a store reopened in one process (tests) does not fail.
func Register(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := Registry.Register(c); err != nil {
			if _, dup := err.(prometheus.AlreadyRegisteredError); !dup {
				panic(err)
			}
		}
	}
}
