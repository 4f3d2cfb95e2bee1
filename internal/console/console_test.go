package console

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/faults"
	"github.com/tabula-dev/tabula/internal/insight"
	"github.com/tabula-dev/tabula/internal/store/pebble"
)

func newConsole(t *testing.T) (*httptest.Server, *faults.Set) {
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	set := &faults.Set{}
	obs := insight.New(insight.DefaultConfig(), nil)
	srv := httptest.NewServer(Handler(Options{Store: st, Insights: obs, Faults: set, Accounts: []auth.Account{auth.DevelopmentAccount()}}))
	t.Cleanup(srv.Close)
	return srv, set
}

func call(t *testing.T, method, url, body string, owner bool) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if owner {
		req.SetBasicAuth("devstoreaccount1", auth.DevelopmentAccountKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestTheFaultAdminAPIIsForTheAccountOwner(t *testing.T) {
	srv, set := newConsole(t)
	rule := `{"id":"r1","operation":"Insert Entity","action":"error","status":503,"code":"ServerBusy"}`
	if status, _ := call(t, "POST", srv.URL+"/admin/faults", rule, false); status != 401 {
		t.Fatalf("anonymous POST: %d", status)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/admin/faults", nil)
	req.SetBasicAuth("devstoreaccount1", base64.StdEncoding.EncodeToString([]byte("not the key")))
	if resp, _ := http.DefaultClient.Do(req); resp.StatusCode != 401 {
		t.Fatalf("wrong key: %d", resp.StatusCode)
	}
	if status, body := call(t, "POST", srv.URL+"/admin/faults", rule, true); status != 200 || !strings.Contains(body, `"r1"`) {
		t.Fatalf("POST: %d %s", status, body)
	}
	if len(set.Rules()) != 1 {
		t.Fatal("the rule is not active")
	}
	if status, body := call(t, "POST", srv.URL+"/admin/faults", `{"id":"bad","action":"explode"}`, true); status != 400 || !strings.Contains(body, "explode") {
		t.Fatalf("invalid rule: %d %s", status, body)
	}
	if status, _ := call(t, "PUT", srv.URL+"/admin/faults", `[{"id":"a","action":"close"},{"id":"b","action":"latency","latency":"1s"}]`, true); status != 200 || len(set.Rules()) != 2 {
		t.Fatalf("PUT: %d, %d rules", status, len(set.Rules()))
	}
	if status, _ := call(t, "DELETE", srv.URL+"/admin/faults/a", "", true); status != 200 || len(set.Rules()) != 1 {
		t.Fatalf("DELETE one: %d", status)
	}
	if status, _ := call(t, "DELETE", srv.URL+"/admin/faults/a", "", true); status != 404 {
		t.Fatalf("DELETE again: %d", status)
	}
	if status, _ := call(t, "DELETE", srv.URL+"/admin/faults", "", true); status != 200 || !set.Empty() {
		t.Fatalf("DELETE all: %d", status)
	}
}

func TestTheFaultAdminAPIRefusesRulesThatCouldNeverMatch(t *testing.T) {
	srv, set := newConsole(t)
	for _, c := range []struct{ rule, want string }{
		{`{"id":"r","operation":"InsertEntity","action":"close"}`, `operation \"InsertEntity\" is unknown; did you mean \"Insert Entity\"?`},
		{`{"id":"r","service":"tabel","action":"close"}`, `service \"tabel\" is unknown: a rule names table, blob or queue`},
	} {
		status, body := call(t, "POST", srv.URL+"/admin/faults", c.rule, true)
		if status != 400 || !strings.Contains(body, `"InvalidInput"`) || !strings.Contains(body, c.want) {
			t.Errorf("POST %s: %d %s, want 400 InvalidInput saying %s", c.rule, status, body, c.want)
		}
		status, body = call(t, "PUT", srv.URL+"/admin/faults", "["+c.rule+"]", true)
		if status != 400 || !strings.Contains(body, c.want) {
			t.Errorf("PUT [%s]: %d %s, want 400 saying %s", c.rule, status, body, c.want)
		}
	}
	if !set.Empty() {
		t.Fatalf("a refused rule is active: %+v", set.Rules())
	}
}

func TestInsightsAreJSON(t *testing.T) {
	srv, _ := newConsole(t)
	status, body := call(t, "GET", srv.URL+"/insights", "", false)
	var v struct {
		Findings []insight.Finding `json:"findings"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &v) != nil || v.Findings == nil {
		t.Fatalf("%d %s", status, body)
	}
}
