package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBooleansTakeTheUsualSpellingsAndNothingElse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    bool
		invalid bool
	}{
		{"1", true, false}, {"true", true, false}, {"TRUE", true, false}, {"True", true, false},
		{"yes", true, false}, {"Yes", true, false}, {"on", true, false}, {"ON", true, false},
		{"0", false, false}, {"false", false, false}, {"False", false, false}, {"no", false, false},
		{"NO", false, false}, {"off", false, false}, {" yes ", true, false},
		{"maybe", false, true}, {"", false, true}, {"2", false, true}, {"y", false, true}, {"t", false, true}, {"enabled", false, true},
	} {
		got, err := parseBool(tc.in)
		if tc.invalid != (err != nil) || got != tc.want {
			t.Errorf("parseBool(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestBooleanSettingsFromTheEnvironmentAndFlags(t *testing.T) {
	for _, tc := range []struct {
		env     string // TABULA_IN_MEMORY, "-" for unset
		args    []string
		want    bool
		wantErr string
	}{
		{"-", nil, false, ""},
		{"1", nil, true, ""},
		{"TRUE", nil, true, ""},
		{"yes", nil, true, ""},
		{"off", nil, false, ""},
		{"maybe", nil, false, `TABULA_IN_MEMORY="maybe"`},
		{"", nil, false, `TABULA_IN_MEMORY=""`},
		{"-", []string{"--in-memory"}, true, ""},
		{"-", []string{"--in-memory=yes"}, true, ""},
		{"1", []string{"--in-memory=off"}, false, ""},
		{"-", []string{"--in-memory=maybe"}, false, `"maybe" is not a yes or no`},
	} {
		if tc.env != "-" {
			t.Setenv("TABULA_IN_MEMORY", tc.env)
		} else {
			os.Unsetenv("TABULA_IN_MEMORY")
		}
		c, err := parseFlags(tc.args, io.Discard)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("TABULA_IN_MEMORY=%q %v: error %v, want %q", tc.env, tc.args, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || c.inMemory != tc.want):
			t.Errorf("TABULA_IN_MEMORY=%q %v: in-memory %v, %v; want %v", tc.env, tc.args, c.inMemory, err, tc.want)
		}
	}
	os.Unsetenv("TABULA_IN_MEMORY")
	t.Setenv("TABULA_TLS", "On")
	if c, err := parseFlags(nil, io.Discard); err != nil || !c.tls {
		t.Errorf("TABULA_TLS=On: %v, %v", c.tls, err)
	}
	// Insights are on unless turned off; throttling is off unless turned on.
	if c, err := parseFlags(nil, io.Discard); err != nil || !c.insights || c.throttle {
		t.Errorf("defaults: insights %v, throttle %v, %v", c.insights, c.throttle, err)
	}
	t.Setenv("TABULA_INSIGHTS", "0")
	t.Setenv("TABULA_THROTTLE", "yes")
	if c, err := parseFlags(nil, io.Discard); err != nil || c.insights || !c.throttle {
		t.Errorf("TABULA_INSIGHTS=0 TABULA_THROTTLE=yes: insights %v, throttle %v, %v", c.insights, c.throttle, err)
	}
	if c, err := parseFlags([]string{"--insights"}, io.Discard); err != nil || !c.insights {
		t.Errorf("--insights over TABULA_INSIGHTS=0: %v, %v", c.insights, err)
	}
	// Copies fetch sources on other servers, as Azure's do, unless turned off.
	if c, err := parseFlags(nil, io.Discard); err != nil || !c.fetchSources {
		t.Errorf("default fetch-copy-sources: %v, %v", c.fetchSources, err)
	}
	t.Setenv("TABULA_FETCH_COPY_SOURCES", "off")
	if c, err := parseFlags(nil, io.Discard); err != nil || c.fetchSources {
		t.Errorf("TABULA_FETCH_COPY_SOURCES=off: %v, %v", c.fetchSources, err)
	}
	os.Unsetenv("TABULA_FETCH_COPY_SOURCES")
	t.Setenv("TABULA_THROTTLE", "sometimes")
	if _, err := parseFlags(nil, io.Discard); err == nil || !strings.Contains(err.Error(), "TABULA_THROTTLE") {
		t.Errorf("TABULA_THROTTLE=sometimes: %v", err)
	}
}

func TestAddressesMustNameAPort(t *testing.T) {
	for _, tc := range []struct {
		env     string // TABULA_TABLE_ADDR, "-" for unset
		args    []string
		wantErr string
	}{
		{"", nil, "--table-addr (TABULA_TABLE_ADDR) is empty"},
		{"-", []string{"--table-addr", ""}, "is empty"},
		{"-", []string{"--table-addr", "127.0.0.1"}, "want HOST:PORT"},
		{"-", []string{"--table-addr", "127.0.0.1:http"}, "the port must be a number"},
		{"-", []string{"--table-addr", "127.0.0.1:70000"}, "the port must be a number"},
		{"-", []string{"--console-addr", "localhost"}, "--console-addr \"localhost\": want HOST:PORT"},
		{"-", []string{"--data", ""}, "--data (TABULA_DATA) is empty"},
		{"-", []string{"--table-addr", ":10002"}, ""},
		{"-", []string{"--table-addr", "[::1]:0", "--console-addr", ""}, ""},
		{"127.0.0.1:0", nil, ""},
	} {
		if tc.env != "-" {
			t.Setenv("TABULA_TABLE_ADDR", tc.env)
		} else {
			os.Unsetenv("TABULA_TABLE_ADDR")
		}
		_, err := parseFlags(tc.args, io.Discard)
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("TABULA_TABLE_ADDR=%q %q: %v, want %q", tc.env, tc.args, err, tc.wantErr)
		}
	}
}

// runTabula runs tabula in a child process to its end, with stdin, and returns what it printed
// and its exit code.
func runTabula(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), testServeEnv...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

func TestHelpListsEveryCommandAndExitsZero(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"--in-memory", "--help"}} {
		out, errOut, code := runTabula(t, "", args...)
		if code != 0 {
			t.Errorf("tabula %v: exit %d, %s", args, code, errOut)
		}
		for _, verb := range []string{"tabula table", "tabula entity", "tabula export", "tabula import", "tabula bench", "tabula reset", "tabula version", "tabula help", "-table-addr", "-in-memory"} {
			if !strings.Contains(out, verb) {
				t.Errorf("tabula %v does not mention %q:\n%s", args, verb, out)
			}
		}
	}
	out, _, code := runTabula(t, "", "help", "import")
	if code != 0 || !strings.HasPrefix(out, "usage: tabula import") || strings.Count(out, "usage:") != 1 {
		t.Errorf("tabula help import: exit %d\n%s", code, out)
	}
	_, errOut, code := runTabula(t, "", "--no-such-flag")
	if code != 1 || !strings.Contains(errOut, "flag provided but not defined: -no-such-flag (tabula help lists the flags)") {
		t.Errorf("an unknown flag: exit %d, %s", code, errOut)
	}
	_, errOut, code = runTabula(t, "", "tables")
	if code != 1 || !strings.Contains(errOut, `unexpected argument "tables" (tabula help lists the commands)`) {
		t.Errorf("an unknown command: exit %d, %s", code, errOut)
	}
}

func TestEveryCommandsHelpGoesToStdoutAndExitsZero(t *testing.T) {
	for _, args := range [][]string{
		{"table", "--help"}, {"entity", "-h"}, {"export", "--help"}, {"import", "--help"},
		{"bench", "--help"}, {"reset", "--help"}, {"version", "--help"},
		{"help", "table"}, {"help", "bench"}, {"help", "reset"}, {"help", "version"},
	} {
		out, errOut, code := runTabula(t, "", args...)
		verb := args[0]
		if verb == "help" {
			verb = args[1]
		}
		if code != 0 || !strings.HasPrefix(out, "usage: tabula "+verb) || strings.Count(out, "usage:") != 1 || errOut != "" {
			t.Errorf("tabula %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// A wrong flag is named on stderr in one line with where the help is, and nothing goes to
// stdout, which may be a pipe of NDJSON.
func TestAFlagErrorIsOneLineOnStderr(t *testing.T) {
	for _, c := range []struct{ args []string }{
		{[]string{"entity", "query", "orders", "--nope"}},
		{[]string{"table", "ls", "--nope"}},
		{[]string{"bench", "--nope"}},
		{[]string{"reset", "--nope"}},
	} {
		out, errOut, code := runTabula(t, "", c.args...)
		want := "tabula: flag provided but not defined: -nope (see tabula " + c.args[0] + " --help)\n"
		if code != 1 || out != "" || errOut != want {
			t.Errorf("tabula %s: exit %d\nstdout: %s\nstderr: %q, want %q", strings.Join(c.args, " "), code, out, errOut, want)
		}
	}
}

func TestVersionPrintsTheVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		out, _, code := runTabula(t, "", arg)
		if code != 0 || !strings.HasPrefix(out, "tabula ") || !strings.Contains(out, "go1.") {
			t.Errorf("tabula %s: exit %d, %q", arg, code, out)
		}
	}
}

// An address on every interface is said to be one, with an address a client can use.
func TestEveryInterfaceIsAnnouncedWithAUsableURL(t *testing.T) {
	_, out := startTabulaOutput(t, "--in-memory", "--table-addr", "0.0.0.0:0", "--console-addr", ":0")
	if !strings.HasPrefix(out.endpoint, "http://127.0.0.1:") {
		t.Fatalf("endpoint %s", out.endpoint)
	}
	if !strings.HasPrefix(out.console, "http://127.0.0.1:") {
		t.Fatalf("console %s", out.console)
	}
	if strings.Count(out.banner, "WARNING: ") != 2 || !strings.Contains(out.banner, "the table endpoint listens on every interface") ||
		!strings.Contains(out.banner, "the console endpoint listens on every interface") || !strings.Contains(out.banner, "reachable from the network") {
		t.Fatalf("banner:\n%s", out.banner)
	}
	if _, err := client(t, out.endpoint, "reachable").CreateTable(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	_, out = startTabulaOutput(t, "--in-memory")
	if strings.Contains(out.banner, "WARNING") {
		t.Fatalf("loopback announced as every interface:\n%s", out.banner)
	}
}

// The data directory nobody chose is called out: every Tabula without --data shares it.
func TestTheDefaultDataDirectoryIsCalledOut(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_DATA_HOME", xdg)
	os.Unsetenv("TABULA_DATA")
	_, out := startTabulaOutput(t)
	dir := filepath.Join(xdg, "tabula")
	if !strings.Contains(out.banner, dir+" is the default data directory, shared by every Tabula started without --data; `tabula reset` empties it") {
		t.Fatalf("banner:\n%s", out.banner)
	}
	_, out = startTabulaOutput(t, "--data", t.TempDir())
	if strings.Contains(out.banner, "default data directory") {
		t.Fatalf("a chosen directory called the default:\n%s", out.banner)
	}
}

// A console address in use stops Tabula before it announces anything.
func TestABusyConsoleAddressFailsBeforeTheBanner(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, errOut, code := runTabula(t, "", "--in-memory", "--table-addr", "127.0.0.1:0", "--console-addr", ln.Addr().String())
	if code != 1 || !strings.Contains(errOut, "the console cannot listen on \""+ln.Addr().String()+"\"") || strings.Contains(out, "serving") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

func TestASecondTabulaOnTheSameDataSaysSo(t *testing.T) {
	dir := t.TempDir()
	startTabula(t, "--data", dir)
	_, errOut, code := runTabula(t, "", "--data", dir, "--table-addr", "127.0.0.1:0", "--console-addr", "")
	if code != 1 || !strings.Contains(errOut, "another Tabula is using "+dir) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// The client verbs are wired to the binary and find the endpoint as the az CLI does.
func TestClientVerbsReachTheServerOfTheConnectionString(t *testing.T) {
	_, out := startTabulaOutput(t, "--in-memory")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", out.connectionString)
	if _, errOut, code := runTabula(t, "", "table", "create", "wired"); code != 0 {
		t.Fatalf("table create: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runTabula(t, `{"PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Int64","N":"5"}`+"\n", "import", "wired"); code != 0 {
		t.Fatalf("import: exit %d, %s", code, errOut)
	}
	got, errOut, code := runTabula(t, "", "export", "wired")
	if code != 0 || !strings.Contains(got, `"RowKey":"r","Timestamp@odata.type":"Edm.DateTime"`) || !strings.HasSuffix(got, `"N@odata.type":"Edm.Int64","N":"5"}`+"\n") {
		t.Fatalf("export: exit %d, %s%s", code, got, errOut)
	}
	if got, _, code := runTabula(t, "", "table", "ls"); code != 0 || got != "wired\n" {
		t.Fatalf("table ls: exit %d, %q", code, got)
	}
}
