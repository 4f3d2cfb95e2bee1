// Package faults makes chosen requests fail on purpose, so that an application's handling of
// Azure's failures — retries, timeouts, "applied but the client saw an error" — can be tested
// before production tests it. Rules name the requests they hit (service, operation, account,
// resource, partition, probability, count, time window) and what happens to them (an Azure
// error, a closed connection, added latency), before or after the operation is applied.
//
// Rules come from a file at start (--faults) and from the console's admin API while running;
// internal/server applies them to each request.
package faults

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/metrics"
)

// Rule is one fault to inject. Empty match fields match anything.
type Rule struct {
	ID string `json:"id"`

	// What the rule hits.
	Service   string `json:"service,omitempty"`   // "table", "blob", "queue"
	Operation string `json:"operation,omitempty"` // as requests are logged (op=): "Insert Entity", "Put Blob", ...
	Account   string `json:"account,omitempty"`
	Resource  string `json:"resource,omitempty"`  // table, container or queue
	Partition string `json:"partition,omitempty"` // PartitionKey (Table service), a blob's name (Blob service: its partition in Azure)
	// Probability of hitting a matching request, in (0, 1]; 0 means 1.
	Probability float64 `json:"probability,omitempty"`
	// Count bounds how many requests the rule hits; 0 means no bound.
	Count int `json:"count,omitempty"`
	// From and Until bound when the rule is active; zero means no bound.
	From  time.Time `json:"from,omitzero"`
	Until time.Time `json:"until,omitzero"`

	// What happens to a request hit.
	Action Action `json:"action"`
	// After applies the operation first and fails only its answer: the client sees an error
	// for a change that happened.
	After bool `json:"after,omitempty"`
	// Status and Code are the Azure error of ActionError (500 InternalError when empty);
	// Message replaces Azure's default message.
	Status  int    `json:"status,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Latency is the delay of ActionLatency, as a Go duration ("250ms").
	Latency string `json:"latency,omitempty"`

	latency time.Duration
	hits    int
}

// Action is what a rule does to the requests it hits.
type Action string

const (
	ActionError   Action = "error"   // answer an Azure error
	ActionClose   Action = "close"   // close the connection without an answer
	ActionLatency Action = "latency" // answer late
)

// validate checks r and fills its parsed fields. A rule that could never match (a service or
// an operation no request is logged under) is refused rather than left to hit nothing.
func (r *Rule) validate() error {
	if r.ID == "" {
		return fmt.Errorf("a rule needs an id")
	}
	if err := r.checkNames(); err != nil {
		return fmt.Errorf("rule %s: %w", r.ID, err)
	}
	if r.Probability < 0 || r.Probability > 1 {
		return fmt.Errorf("rule %s: probability %v is not in (0, 1]", r.ID, r.Probability)
	}
	if r.Count < 0 {
		return fmt.Errorf("rule %s: count must not be negative", r.ID)
	}
	switch r.Action {
	case ActionError:
		if r.Status == 0 && r.Code == "" {
			r.Status, r.Code = http.StatusInternalServerError, string(azerr.InternalError)
		}
		if r.Status < 400 || r.Status > 599 || r.Code == "" {
			return fmt.Errorf("rule %s: an error needs a 4xx or 5xx status and an Azure code", r.ID)
		}
	case ActionClose:
	case ActionLatency:
		d, err := time.ParseDuration(r.Latency)
		if err != nil || d <= 0 {
			return fmt.Errorf("rule %s: latency %q is not a positive duration such as 250ms", r.ID, r.Latency)
		}
		r.latency = d
	default:
		return fmt.Errorf("rule %s: action %q is not error, close or latency", r.ID, r.Action)
	}
	return nil
}

// service is a service a rule may name, with the operations its requests are logged,
// counted and matched under: the list its HTTP layer notes operations from.
type service struct {
	name string
	ops  []*auth.Operation
}

var services = []service{
	{auth.Table.String(), auth.TableOperations},
	{auth.Blob.String(), auth.BlobOperations},
	{auth.Queue.String(), auth.QueueOperations},
}

// Operations returns the operations a rule may name, by service ("table", "blob", "queue"),
// each in Azure's words as requests are logged under it.
func Operations() map[string][]string {
	out := make(map[string][]string, len(services))
	for _, s := range services {
		for _, op := range s.ops {
			out[s.name] = append(out[s.name], op.Name)
		}
	}
	return out
}

// checkNames refuses a service other than the three, and an operation that the rule's
// service (any service, when it names none) does not serve. Names compare without case, as
// matching does; a name that differs from a real one only in case and spaces is suggested.
func (r *Rule) checkNames() error {
	named := func(s service) bool { return r.Service == "" || strings.EqualFold(s.name, r.Service) }
	if r.Service != "" && !slices.ContainsFunc(services, named) {
		return fmt.Errorf("service %q is unknown: a rule names table, blob or queue (or none, for all three)", r.Service)
	}
	if r.Operation == "" {
		return nil
	}
	squashed := squash(r.Operation)
	var elsewhere, suggestion string
	for _, s := range services {
		for _, op := range s.ops {
			switch {
			case strings.EqualFold(op.Name, r.Operation) && named(s):
				return nil
			case strings.EqualFold(op.Name, r.Operation):
				elsewhere = s.name
			case named(s) && suggestion == "" && squash(op.Name) == squashed:
				suggestion = op.Name
			}
		}
	}
	switch {
	case elsewhere != "":
		return fmt.Errorf("operation %q is not a %s operation (it is a %s one)", r.Operation, strings.ToLower(r.Service), elsewhere)
	case suggestion != "":
		return fmt.Errorf("operation %q is unknown; did you mean %q?", r.Operation, suggestion)
	}
	return fmt.Errorf("operation %q is unknown: operations are named as the request log's op= names them, in Azure's words (\"Insert Entity\", \"Put Blob\", \"Put Message\")", r.Operation)
}

// squash is an operation name without case or spaces: "InsertEntity" for "Insert Entity".
func squash(name string) string {
	return strings.ToLower(strings.Join(strings.Fields(name), ""))
}

// Request is what the rules match against.
type Request struct {
	Service, Operation, Account, Resource, Partition string
}

// Hit is a rule's decision about one request.
type Hit struct {
	Rule    string
	Action  Action
	After   bool
	Latency time.Duration
	Err     *azerr.Error // for ActionError
}

// Set holds the active rules. The zero value has none; it is safe for concurrent use.
type Set struct {
	count atomic.Int32 // len(rules), read without the lock on every request
	mu    sync.Mutex
	rules []*Rule
	now   func() time.Time
	rand  func() float64
}

// Parse reads rules from a JSON array.
func Parse(doc []byte) ([]Rule, error) {
	var rules []Rule
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rules); err != nil {
		return nil, fmt.Errorf("fault rules: %w", err)
	}
	return rules, nil
}

// Replace makes rules the active set; it changes nothing if one of them is invalid or two
// share an id.
func (s *Set) Replace(rules []Rule) error {
	checked := make([]*Rule, 0, len(rules))
	seen := map[string]bool{}
	for _, r := range rules {
		r := r
		if err := r.validate(); err != nil {
			return err
		}
		if seen[r.ID] {
			return fmt.Errorf("two rules have the id %q", r.ID)
		}
		seen[r.ID] = true
		checked = append(checked, &r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = checked
	s.count.Store(int32(len(s.rules)))
	return nil
}

// Add adds a rule, replacing any with the same id.
func (s *Set) Add(r Rule) error {
	if err := r.validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, old := range s.rules {
		if old.ID == r.ID {
			s.rules[i] = &r
			return nil
		}
	}
	s.rules = append(s.rules, &r)
	s.count.Store(int32(len(s.rules)))
	return nil
}

// Remove removes the rule with id and reports whether there was one.
func (s *Set) Remove(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.rules {
		if r.ID == id {
			s.rules = append(s.rules[:i], s.rules[i+1:]...)
			s.count.Store(int32(len(s.rules)))
			return true
		}
	}
	return false
}

// Rules returns the active rules with how many requests each has hit.
func (s *Set) Rules() []RuleStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RuleStatus, len(s.rules))
	for i, r := range s.rules {
		out[i] = RuleStatus{Rule: *r, Hits: r.hits}
	}
	return out
}

// RuleStatus is a rule and how many requests it has hit.
type RuleStatus struct {
	Rule
	Hits int `json:"hits"`
}

// Empty reports whether there are no rules, so that requests skip matching altogether.
func (s *Set) Empty() bool {
	return s == nil || s.count.Load() == 0
}

// Match returns the first rule that hits req, counting the hit. A rule with a Partition is
// judged only once the partition is known (partitioned true), one without it only before.
func (s *Set) Match(req Request, partitioned bool) (Hit, bool) {
	if s.Empty() {
		return Hit{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.now != nil {
		now = s.now()
	}
	for _, r := range s.rules {
		if (r.Partition != "") != partitioned || !r.matches(req, now) {
			continue
		}
		if r.Probability > 0 && r.Probability < 1 {
			roll := rand.Float64()
			if s.rand != nil {
				roll = s.rand()
			}
			if roll >= r.Probability {
				continue
			}
		}
		r.hits++
		metrics.FaultsInjected.With(prometheus.Labels{"rule": r.ID}).Inc()
		h := Hit{Rule: r.ID, Action: r.Action, After: r.After, Latency: r.latency}
		if r.Action == ActionError {
			h.Err = azerr.New(azerr.Code(r.Code))
			h.Err.Status = r.Status
			if r.Message != "" {
				h.Err.Message = r.Message
			}
		}
		return h, true
	}
	return Hit{}, false
}

func (r *Rule) matches(req Request, now time.Time) bool {
	switch {
	case r.Count > 0 && r.hits >= r.Count:
	case !r.From.IsZero() && now.Before(r.From):
	case !r.Until.IsZero() && !now.Before(r.Until):
	case r.Service != "" && !strings.EqualFold(r.Service, req.Service):
	case r.Operation != "" && !strings.EqualFold(r.Operation, req.Operation):
	case r.Account != "" && r.Account != req.Account:
	case r.Resource != "" && !strings.EqualFold(r.Resource, req.Resource):
	case r.Partition != "" && r.Partition != req.Partition:
	default:
		return true
	}
	return false
}
