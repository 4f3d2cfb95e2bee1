package tablehttp

import (
	"github.com/tabula-dev/tabula/internal/insight"
	"github.com/tabula-dev/tabula/internal/odata"
	"github.com/tabula-dev/tabula/internal/table"
)

// The design guide, alive: each request that reads or writes entities passes the throttle
// (Azure's scalability targets, when --throttle asks for them) before it runs, and tells the
// insight observer what it did after. Both are off (nil) unless cmd/tabula sets them.

// admit lets a request acting on n entities of one partition run now, or refuses it with
// 503 ServerBusy as Azure does beyond its targets.
func (s *Server) admit(rq *request, tableName, partition string, n int) error {
	return s.Throttle.Take(rq.Account, tableName, partition, n)
}

// observeWrites tells the insight observer about writes applied to one partition.
func (s *Server) observeWrites(rq *request, tableName string, writes []table.Write) {
	if s.Insights == nil || len(writes) == 0 {
		return
	}
	insert, size, props := false, 0, 0
	for i := range writes {
		w := &writes[i]
		if w.Kind == table.Delete {
			continue
		}
		insert = insert || w.Kind == table.Insert
		size, props = max(size, w.Entity.SizeOver(insight.LargeEntityBytes)), max(props, len(w.Entity.Properties))
	}
	s.Insights.Write(rq.Account, tableName, writes[0].Entity.PartitionKey, len(writes), insert, size, props)
}

// observeQuery charges a query's results to the throttle and tells the insight observer.
func (s *Server) observeQuery(rq *request, tableName, filter string, parsed *odata.Filter, page table.Page) {
	partition := singlePartition(parsed)
	s.Throttle.Charge(rq.Account, tableName, partition, len(page.Entities)-1)
	if s.Insights == nil {
		return
	}
	s.Insights.Query(rq.Account, tableName, filter, string(page.Plan), page.Scanned, len(page.Entities))
	if partition != "" {
		s.Insights.Read(rq.Account, tableName, partition, len(page.Entities))
	}
}

// singlePartition returns the partition a filter confines a query to, "" when it may read
// several (or has no filter).
func singlePartition(f *odata.Filter) string {
	if f == nil {
		return ""
	}
	ranges := f.KeyRanges()
	if len(ranges) != 1 || !ranges[0].SinglePartition() {
		return ""
	}
	return ranges[0].StartPK
}
