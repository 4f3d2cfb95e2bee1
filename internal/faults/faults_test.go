package faults

import (
	"strings"
	"testing"
	"time"
)

func TestRulesAreValidated(t *testing.T) {
	for _, doc := range []string{
		`[{"action":"error"}]`,                          // no id
		`[{"id":"a","action":"boom"}]`,                  // unknown action
		`[{"id":"a","action":"latency","latency":"x"}]`, // bad duration
		`[{"id":"a","action":"error","status":200,"code":"X"}]`,
		`[{"id":"a","action":"close","probability":2}]`,
		`[{"id":"a","action":"close"},{"id":"a","action":"close"}]`,
		`[{"id":"a","action":"close","colour":"red"}]`, // unknown field
	} {
		rules, err := Parse([]byte(doc))
		if err == nil {
			err = (&Set{}).Replace(rules)
		}
		if err == nil {
			t.Errorf("%s accepted", doc)
		}
	}
}

func TestRulesThatCouldNeverMatchAreRefused(t *testing.T) {
	for _, c := range []struct {
		rule Rule
		want []string // in the error
	}{
		{Rule{ID: "a", Service: "tabel"}, []string{`service "tabel" is unknown`, "table, blob or queue"}},
		{Rule{ID: "a", Operation: "InsertEntity"}, []string{`operation "InsertEntity" is unknown`, `did you mean "Insert Entity"?`}},
		{Rule{ID: "a", Service: "blob", Operation: "Insert Entity"}, []string{`operation "Insert Entity" is not a blob operation`}},
		{Rule{ID: "a", Service: "queue", Operation: "put  message"}, []string{`did you mean "Put Message"?`}},
		{Rule{ID: "a", Operation: "Explode Table"}, []string{`operation "Explode Table" is unknown`}},
	} {
		c.rule.Action = ActionClose
		err := (&Set{}).Add(c.rule)
		if err == nil {
			t.Errorf("service %q, operation %q accepted", c.rule.Service, c.rule.Operation)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("service %q, operation %q: error %q does not say %q", c.rule.Service, c.rule.Operation, err, w)
			}
		}
	}
	// Names compare as matching does: without case.
	for _, r := range []Rule{
		{ID: "a", Service: "Table", Operation: "insert entity"},
		{ID: "b", Operation: "Entity Group Transaction"},
		{ID: "c", Service: "blob", Operation: "Blob Batch"},
		{ID: "d", Service: "queue", Operation: "Get User Delegation Key"},
	} {
		r.Action = ActionClose
		if err := (&Set{}).Add(r); err != nil {
			t.Errorf("service %q, operation %q refused: %v", r.Service, r.Operation, err)
		}
	}
}

func TestMatchingHonoursCountProbabilityAndWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s := &Set{now: func() time.Time { return now }}
	roll := 0.0
	s.rand = func() float64 { return roll }
	if err := s.Replace([]Rule{
		{ID: "windowed", Operation: "Get Blob", From: now.Add(time.Minute), Until: now.Add(2 * time.Minute), Action: ActionClose},
		{ID: "half", Operation: "Put Blob", Probability: 0.5, Action: ActionError, Status: 503, Code: "ServerBusy"},
		{ID: "once", Service: "queue", Count: 1, Action: ActionLatency, Latency: "10ms"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, hit := s.Match(Request{Service: "blob", Operation: "Get Blob"}, false); hit {
		t.Fatal("a rule hit before its window")
	}
	now = now.Add(90 * time.Second)
	if h, hit := s.Match(Request{Service: "blob", Operation: "get blob"}, false); !hit || h.Rule != "windowed" {
		t.Fatal("a rule missed inside its window (operation names compare without case)")
	}
	now = now.Add(time.Minute)
	if _, hit := s.Match(Request{Service: "blob", Operation: "Get Blob"}, false); hit {
		t.Fatal("a rule hit after its window")
	}
	roll = 0.7
	if _, hit := s.Match(Request{Operation: "Put Blob"}, false); hit {
		t.Fatal("a 0.5 rule hit on a roll of 0.7")
	}
	roll = 0.2
	if h, hit := s.Match(Request{Operation: "Put Blob"}, false); !hit || h.Err.Status != 503 || h.Err.Code != "ServerBusy" {
		t.Fatalf("a 0.5 rule missed on a roll of 0.2: %+v", h)
	}
	if _, hit := s.Match(Request{Service: "queue"}, false); !hit {
		t.Fatal("count 1: first request missed")
	}
	if _, hit := s.Match(Request{Service: "queue"}, false); hit {
		t.Fatal("count 1: second request hit")
	}
	// A rule naming a partition waits for the partition to be known.
	if err := s.Replace([]Rule{{ID: "p", Partition: "hot", Action: ActionClose}}); err != nil {
		t.Fatal(err)
	}
	if _, hit := s.Match(Request{Partition: "hot"}, false); hit {
		t.Fatal("a partition rule hit before the partition was known")
	}
	if _, hit := s.Match(Request{Partition: "hot"}, true); !hit {
		t.Fatal("a partition rule missed its partition")
	}
}
