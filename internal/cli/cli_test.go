package cli

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/store/pebble"
	"github.com/tabula-dev/tabula/internal/table"
	"github.com/tabula-dev/tabula/internal/tablehttp"
)

// startTabula serves an in-memory Tabula and returns its connection string.
func startTabula(t *testing.T) string {
	t.Helper()
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewServer(tablehttp.New(table.New(st), auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()}), nil))
	t.Cleanup(srv.Close)
	return "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + devKey + ";TableEndpoint=" + srv.URL + "/devstoreaccount1;"
}

// result is what one run of a verb printed and returned.
type result struct {
	stdout, stderr string
	err            error
}

// tabula runs `tabula VERB ARGS...` against the endpoint of the connection string cs (through
// AZURE_STORAGE_CONNECTION_STRING), with stdin.
func tabula(ctx context.Context, cs, stdin string, env Env, args ...string) result {
	var out, errOut bytes.Buffer
	env.Stdin = strings.NewReader(stdin)
	env.Stdout, env.Stderr = &out, &errOut
	env.Getenv = func(name string) string {
		if name == "AZURE_STORAGE_CONNECTION_STRING" {
			return cs
		}
		return ""
	}
	err := Run(ctx, args[0], args[1:], env)
	return result{out.String(), errOut.String(), err}
}

// must runs tabula and fails the test if the verb fails.
func must(t *testing.T, cs, stdin string, args ...string) result {
	t.Helper()
	r := tabula(context.Background(), cs, stdin, Env{}, args...)
	if r.err != nil {
		t.Fatalf("tabula %s: %v\nstderr: %s", strings.Join(args, " "), r.err, r.stderr)
	}
	return r
}

// fails runs tabula and returns its error, failing the test if there is none.
func fails(t *testing.T, cs, stdin string, args ...string) error {
	t.Helper()
	r := tabula(context.Background(), cs, stdin, Env{}, args...)
	if r.err == nil {
		t.Fatalf("tabula %s succeeded, printing %q", strings.Join(args, " "), r.stdout)
	}
	return r.err
}

func TestTableVerbsCreateListAndDelete(t *testing.T) {
	cs := startTabula(t)
	must(t, cs, "", "table", "create", "orders", "customers")
	if got := must(t, cs, "", "table", "ls").stdout; got != "customers\norders\n" {
		t.Fatalf("table ls printed %q", got)
	}
	err := fails(t, cs, "", "table", "create", "orders")
	if !strings.Contains(err.Error(), "409 Conflict TableAlreadyExists") {
		t.Fatalf("creating an existing table: %v", err)
	}
	must(t, cs, "", "table", "rm", "orders")
	if got := must(t, cs, "", "table", "ls").stdout; got != "customers\n" {
		t.Fatalf("after rm, table ls printed %q", got)
	}
	err = fails(t, cs, "", "table", "rm", "orders")
	if !strings.Contains(err.Error(), "404 Not Found ResourceNotFound") {
		t.Fatalf("deleting a missing table: %v", err)
	}
}

func TestEntityPutGetQueryAndRemove(t *testing.T) {
	cs := startTabula(t)
	must(t, cs, "", "table", "create", "people")
	must(t, cs, "", "entity", "put", "people", `{"PartitionKey":"eu","RowKey":"ada","Age":36,"Born@odata.type":"Edm.DateTime","Born":"1815-12-10T00:00:00Z","Score":5.0,"Id@odata.type":"Edm.Int64","Id":"9007199254740993"}`)
	must(t, cs, `{"PartitionKey":"eu","RowKey":"alan","Age":41}`+"\n\n"+`{"PartitionKey":"us","RowKey":"grace","Age":85,"Navy":true}`+"\n", "entity", "put", "people")

	got := must(t, cs, "", "entity", "get", "people", "eu", "ada").stdout
	for _, want := range []string{`"PartitionKey":"eu","RowKey":"ada","Timestamp@odata.type":"Edm.DateTime"`, `"Age":36,"Born@odata.type":"Edm.DateTime","Born":"1815-12-10T00:00:00Z","Id@odata.type":"Edm.Int64","Id":"9007199254740993","Score@odata.type":"Edm.Double","Score":5.0}`, `{"odata.etag":"W/\"datetime'`} {
		if !strings.Contains(got, want) {
			t.Errorf("entity get printed %s\nwant it to contain %s", got, want)
		}
	}

	lines := must(t, cs, "", "entity", "query", "people", "--filter", "Age gt 40", "--select", "RowKey,Age").stdout
	if n := strings.Count(lines, "\n"); n != 2 || !strings.Contains(lines, `"RowKey":"alan","Age":41}`) || !strings.Contains(lines, `"RowKey":"grace","Age":85}`) {
		t.Fatalf("query printed\n%s", lines)
	}
	lines = must(t, cs, "", "entity", "query", "people", "--top", "2").stdout
	if n := strings.Count(lines, "\n"); n != 2 {
		t.Fatalf("query --top 2 printed %d lines:\n%s", n, lines)
	}

	// --merge keeps what it does not send; a plain put replaces the whole entity.
	must(t, cs, "", "entity", "put", "--merge", "people", `{"PartitionKey":"us","RowKey":"grace","Rank":"Rear Admiral"}`)
	got = must(t, cs, "", "entity", "get", "people", "us", "grace").stdout
	if !strings.Contains(got, `"Age":85,"Navy":true,"Rank":"Rear Admiral"}`) {
		t.Fatalf("after a merge: %s", got)
	}
	must(t, cs, "", "entity", "put", "people", `{"PartitionKey":"us","RowKey":"grace","Rank":"Rear Admiral"}`)
	got = must(t, cs, "", "entity", "get", "people", "us", "grace").stdout
	if strings.Contains(got, "Age") {
		t.Fatalf("a put must replace the entity: %s", got)
	}
	err := fails(t, cs, "", "entity", "put", "--insert", "people", `{"PartitionKey":"us","RowKey":"grace"}`)
	if !strings.Contains(err.Error(), "409 Conflict EntityAlreadyExists") {
		t.Fatalf("put --insert over an entity: %v", err)
	}

	must(t, cs, "", "entity", "rm", "people", "us", "grace")
	err = fails(t, cs, "", "entity", "get", "people", "us", "grace")
	if !strings.Contains(err.Error(), "404 Not Found ResourceNotFound") {
		t.Fatalf("get after rm: %v", err)
	}
}

func TestEntityPutRejectsWhatIsNotAnEntityBeforeSending(t *testing.T) {
	cs := startTabula(t)
	must(t, cs, "", "table", "create", "things")
	for _, tc := range []struct{ input, want string }{
		{`{"PartitionKey":"p"}`, "PartitionKey and RowKey must be strings"},
		{`{"PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Int64","N":"twelve"}`, "'N'"},
		{`[1,2]`, "not an entity"},
	} {
		err := fails(t, cs, "", "entity", "put", "things", tc.input)
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("put %s: %v, want it to mention %s", tc.input, err, tc.want)
		}
	}
	err := fails(t, cs, `{"PartitionKey":"p","RowKey":"1"}`+"\n"+`{"PartitionKey":"p"}`+"\n", "entity", "put", "things")
	if !strings.HasPrefix(err.Error(), "line 2: ") {
		t.Errorf("a bad line of stdin: %v", err)
	}
}

func TestQueryAsATableAlignsColumnsAndReportsThePlan(t *testing.T) {
	cs := startTabula(t)
	must(t, cs, `{"PartitionKey":"p","RowKey":"1","Name":"short"}`+"\n"+`{"PartitionKey":"p","RowKey":"2","Size":12,"Name":"a much longer name\twith a tab"}`+"\n", "import", "things")
	r := must(t, cs, "", "entity", "query", "things", "-o", "table", "--select", "PartitionKey,RowKey,Name,Size", "--filter", "PartitionKey eq 'p'")
	want := "" +
		"PartitionKey  RowKey  Name                            Size\n" +
		"p             1       short                           \n" +
		"p             2       a much longer name\\twith a tab  12\n"
	if r.stdout != want {
		t.Fatalf("table output:\n%s\nwant:\n%s", r.stdout, want)
	}
	if r.stderr != "2 entities (query plan partition-range, 2 entities scanned)\n" {
		t.Fatalf("stderr: %q", r.stderr)
	}
}

func TestQueryAsATableShowsOnlyTheColumnsTheAnswerHas(t *testing.T) {
	cs := startTabula(t)
	must(t, cs, `{"PartitionKey":"eu","RowKey":"1","Total":12.5,"Note":"x"}`+"\n"+`{"PartitionKey":"eu","RowKey":"2","Total":30.0}`+"\n", "import", "orders")
	r := must(t, cs, "", "entity", "query", "orders", "-o", "table", "--filter", "PartitionKey eq 'eu' and Total gt 10", "--select", "RowKey,Total", "--top", "20")
	want := "" +
		"RowKey  Total\n" +
		"1       12.5\n" +
		"2       30.0\n"
	if r.stdout != want {
		t.Fatalf("--select RowKey,Total:\n%s\nwant:\n%s", r.stdout, want)
	}
	r = must(t, cs, "", "entity", "query", "orders", "-o", "table", "--select", "Note")
	want = "" +
		"Note\n" +
		"x\n" +
		"\n"
	if r.stdout != want {
		t.Fatalf("--select Note:\n%q\nwant:\n%q", r.stdout, want)
	}
	r = must(t, cs, "", "entity", "query", "orders", "-o", "table", "--filter", "PartitionKey eq 'none'")
	if r.stdout != "" || r.stderr != "0 entities (query plan partition-range, 0 entities scanned)\n" {
		t.Fatalf("no entities: stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

func TestEntityGetOnATerminalShowsTypes(t *testing.T) {
	cs := startTabula(t)
	must(t, cs, `{"PartitionKey":"p","RowKey":"r","G@odata.type":"Edm.Guid","G":"C9DA6455-213D-42C9-9A79-3E9149A57833","Bin@odata.type":"Edm.Binary","Bin":"AQID"}`+"\n", "import", "things")
	got := must(t, cs, "", "entity", "get", "things", "p", "r", "-o", "table", "--select", "PartitionKey,RowKey,G,Bin").stdout
	want := "" +
		"PartitionKey  Edm.String  p\n" +
		"RowKey        Edm.String  r\n" +
		"Bin           Edm.Binary  AQID\n" +
		"G             Edm.Guid    c9da6455-213d-42c9-9a79-3e9149a57833\n"
	if !strings.HasSuffix(got, want) || !strings.HasPrefix(got, "ETag ") {
		t.Fatalf("got\n%s\nwant an ETag line, then\n%s", got, want)
	}
}

func TestVerbsSayWhatTheyWant(t *testing.T) {
	cs := startTabula(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"table"}, "want ls, create or rm"},
		{[]string{"table", "drop", "x"}, "want ls, create or rm"},
		{[]string{"table", "create"}, "which table?"},
		{[]string{"entity", "get", "things", "p"}, "get wants TABLE PK RK"},
		{[]string{"entity", "query", "t", "-o", "yaml"}, `--output "yaml"`},
		{[]string{"entity", "query", "t", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"entity", "put", "--merge", "--insert", "t", "{}"}, "exclude each other"},
		{[]string{"import"}, "wants TABLE [FILE]"},
		{[]string{"export", "t", "a", "b"}, "wants TABLE [FILE]"},
	} {
		err := fails(t, cs, "", tc.args...)
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("tabula %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

func TestHelpOfEveryVerbGoesToStdoutOnce(t *testing.T) {
	for _, v := range Verbs {
		for _, help := range []string{"--help", "-h"} {
			r := tabula(context.Background(), "", "", Env{}, v.Name, help)
			if r.err != nil || !strings.HasPrefix(r.stdout, "usage: tabula "+v.Name) || !strings.Contains(r.stdout, "--connection-string") || r.stderr != "" {
				t.Errorf("tabula %s %s: %v\nstdout: %s\nstderr: %s", v.Name, help, r.err, r.stdout, r.stderr)
			}
			if n := strings.Count(r.stdout, "usage: tabula "); n != 1 {
				t.Errorf("tabula %s %s printed its usage %d times", v.Name, help, n)
			}
		}
	}
}

func TestAWrongFlagIsAnErrorWithoutTheUsage(t *testing.T) {
	for _, args := range [][]string{
		{"entity", "query", "orders", "--nope"},
		{"table", "ls", "--nope"},
		{"export", "orders", "--nope"},
		{"import", "orders", "--nope"},
	} {
		r := tabula(context.Background(), "", "", Env{}, args...)
		want := "flag provided but not defined: -nope (see tabula " + args[0] + " --help)"
		if r.err == nil || r.err.Error() != want || r.stdout != "" || r.stderr != "" {
			t.Errorf("tabula %s: %v, want %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.err, want, r.stdout, r.stderr)
		}
	}
}

func TestKeysThatStartWithADashFollowDoubleDash(t *testing.T) {
	cs := startTabula(t)
	must(t, cs, `{"PartitionKey":"-1","RowKey":"-2","V":1}`+"\n", "import", "things")
	got := must(t, cs, "", "entity", "get", "things", "--", "-1", "-2").stdout
	if !strings.Contains(got, `"PartitionKey":"-1","RowKey":"-2"`) {
		t.Fatalf("got %s", got)
	}
}

func TestTheProgressLineIsRedrawnInPlaceThenErased(t *testing.T) {
	var buf bytes.Buffer
	var n atomic.Int64
	stop := startProgress(&buf, func() string { return strings.Repeat("x", int(4-n.Add(1)%2)) })
	for deadline := time.Now().Add(time.Minute); n.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(progressEvery / 5)
	}
	stop()
	got := buf.String()
	if !strings.HasPrefix(got, "\rxxx\rxxxx") || !strings.HasSuffix(got, "\r    \r") {
		t.Fatalf("progress wrote %q", got)
	}
	if got := bar(45, 100); got != "[#########-----------]  45%" {
		t.Fatalf("bar: %q", got)
	}
	if got := bar(120, 100); got != "[####################] 100%" {
		t.Fatalf("bar past the end: %q", got)
	}
	if thousands(1234567) != "1,234,567" || thousands(-1000) != "-1,000" || thousands(999) != "999" {
		t.Fatalf("thousands: %s %s %s", thousands(1234567), thousands(-1000), thousands(999))
	}
}
