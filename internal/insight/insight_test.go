package insight

import (
	"fmt"
	"testing"
	"time"
)

func clocked() (*Observer, *time.Time) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := New(DefaultConfig(), nil)
	o.now = func() time.Time { return now }
	return o, &now
}

func kinds(o *Observer) map[string]Finding {
	out := map[string]Finding{}
	for _, f := range o.Findings() {
		out[f.Kind] = f
	}
	return out
}

func TestShape(t *testing.T) {
	for in, want := range map[string]string{
		"PartitionKey eq 'p1' and Price gt 10.5":                     "PartitionKey eq ? and Price gt ?",
		"  RowKey  ge  'it''s'   ":                                   "RowKey ge ?",
		"When lt datetime'2021-01-01T00:00:00Z' or Id eq guid'a-b'":  "When lt ? or Id eq ?",
		"Big eq 12345678901L and Ratio lt -1.5E+10 and Flag eq true": "Big eq ? and Ratio lt ? and Flag eq ?",
		"(Blob eq X'00ff') and not (Name2 ne 'x')":                   "(Blob eq ?) and not (Name2 ne ?)",
		"": "",
	} {
		if got := Shape(in); got != want {
			t.Errorf("Shape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAHotPartitionIsFound(t *testing.T) {
	o, now := clocked()
	for i := 0; i < 1000; i++ {
		pk := "hot"
		if i%4 == 0 {
			pk = fmt.Sprintf("cold%d", i)
		}
		o.Write("acct", "Orders", pk, 1, false, 100, 3)
		if i%100 == 99 {
			*now = now.Add(time.Second)
		}
	}
	o.Judge()
	f, ok := kinds(o)[HotPartition]
	if !ok || f.Partition != "hot" || f.Table != "orders" || f.Figures["share"] < 0.7 || f.Advice == "" {
		t.Fatalf("findings %+v", o.Findings())
	}
	// Spread traffic makes no finding.
	spread, _ := clocked()
	for i := 0; i < 1000; i++ {
		spread.Write("acct", "Orders", fmt.Sprint(i%10), 1, false, 100, 3)
	}
	spread.Judge()
	if _, ok := kinds(spread)[HotPartition]; ok {
		t.Fatalf("spread traffic: %+v", spread.Findings())
	}
}

func TestAPartitionNearAzuresTargetIsHotAlone(t *testing.T) {
	o, now := clocked()
	for s := 0; s < 10; s++ {
		for i := 0; i < 1700; i++ { // 1,700 a second: 85% of 2,000
			o.Write("acct", "t", "p", 1, false, 100, 3)
		}
		*now = now.Add(time.Second)
	}
	o.Judge()
	if f, ok := kinds(o)[HotPartition]; !ok || f.Figures["perSecond"] < 1600 {
		t.Fatalf("%+v", o.Findings())
	}
}

func TestAppendAndPrependOnlyKeys(t *testing.T) {
	for _, tc := range []struct {
		kind string
		key  func(i int) string
	}{
		{AppendOnlyKeys, func(i int) string { return fmt.Sprintf("%012d", 1700000000+i) }},
		{PrependOnlyKeys, func(i int) string { return fmt.Sprintf("%012d", 9999999999-i) }},
	} {
		o, _ := clocked()
		for i := 0; i < 500; i++ {
			o.Write("acct", "log", tc.key(i), 1, true, 200, 4)
		}
		o.Judge()
		if _, ok := kinds(o)[tc.kind]; !ok {
			t.Errorf("%s not found: %+v", tc.kind, o.Findings())
		}
	}
	// Random keys are neither.
	o, _ := clocked()
	for i := 0; i < 500; i++ {
		o.Write("acct", "t", fmt.Sprintf("%x", (i*2654435761)%1000003), 1, true, 200, 4)
	}
	o.Judge()
	k := kinds(o)
	if _, ok := k[AppendOnlyKeys]; ok {
		t.Errorf("random keys taken for append-only: %+v", o.Findings())
	}
}

func TestCostlyQueriesAreGroupedByShape(t *testing.T) {
	o, _ := clocked()
	for i := 0; i < 5; i++ {
		o.Query("acct", "people", fmt.Sprintf("Age gt %d", i), "table-scan", 2000, 3)
		o.Query("acct", "people", fmt.Sprintf("PartitionKey eq 'p%d' and RowKey eq 'r'", i), "point", 1, 1)
	}
	o.Judge()
	var costly []Finding
	for _, f := range o.Findings() {
		if f.Kind == CostlyQuery {
			costly = append(costly, f)
		}
	}
	if len(costly) != 1 || costly[0].Filter != "Age gt ?" || costly[0].Figures["scanned"] != 10000 || costly[0].Figures["queries"] != 5 {
		t.Fatalf("%+v", costly)
	}
}

func TestLargeEntitiesTinyAndSinglePartitions(t *testing.T) {
	o, _ := clocked()
	o.Write("acct", "docs", "p", 1, true, 900<<10, 10)
	o.Judge()
	if _, ok := kinds(o)[LargeEntity]; !ok {
		t.Errorf("a 900 KiB entity: %+v", o.Findings())
	}
	tiny, _ := clocked()
	for i := 0; i < 400; i++ {
		tiny.Write("acct", "users", fmt.Sprintf("%x", (i*2654435761)%1000003), 1, true, 200, 4)
	}
	tiny.Judge()
	if _, ok := kinds(tiny)[TinyPartitions]; !ok {
		t.Errorf("a partition per entity: %+v", tiny.Findings())
	}
	one, _ := clocked()
	for i := 0; i < 400; i++ {
		one.Write("acct", "all", "everything", 1, true, 200, 4)
	}
	one.Judge()
	if _, ok := kinds(one)[OnePartition]; !ok {
		t.Errorf("one partition: %+v", one.Findings())
	}
}

func TestFindingsEndWhenTheWorkloadChanges(t *testing.T) {
	o, now := clocked()
	for i := 0; i < 500; i++ {
		o.Write("acct", "t", "hot", 1, false, 100, 3)
		o.Write("acct", "t", "x", 1, false, 100, 3)
		o.Write("acct", "t", "hot", 1, false, 100, 3)
	}
	o.Judge()
	if len(o.Findings()) == 0 {
		t.Fatal("no finding to begin with")
	}
	*now = now.Add(3 * time.Minute)
	o.Judge()
	if f := o.Findings(); len(f) != 0 {
		t.Fatalf("findings outlived their workload: %+v", f)
	}
}
