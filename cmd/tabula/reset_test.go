package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// storeWithATable leaves a data directory holding a table, as a stopped Tabula would.
func storeWithATable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd, url := startTabula(t, "--data", dir, "--tls")   // --tls: a CA in DIR/tls, which reset keeps
	url = strings.Replace(url, "https://", "http://", 1) // the same address serves both
	if _, err := client(t, url, "kept").CreateTable(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	stopTabula(t, cmd)
	return dir
}

func stopTabula(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, _ := waitExit(t, cmd, 30*time.Second); code != 0 {
		t.Fatalf("tabula exited with %d", code)
	}
}

// tablesIn starts Tabula on dir and lists its tables.
func tablesIn(t *testing.T, dir string) []string {
	t.Helper()
	cmd, url := startTabula(t, "--data", dir)
	defer stopTabula(t, cmd)
	cred, err := aztables.NewSharedKeyCredential("devstoreaccount1", "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := aztables.NewServiceClientWithSharedKey(url, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	pager := svc.NewListTablesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range page.Tables {
			names = append(names, *tb.Name)
		}
	}
	return names
}

func TestResetAsksThenEmptiesTheDataDirectoryButKeepsTheCA(t *testing.T) {
	dir := storeWithATable(t)
	out, errOut, code := runTabula(t, "no\n", "reset", "--data", dir)
	if code != 1 || !strings.Contains(errOut, "Type yes to go on: ") || !strings.Contains(errOut, "not confirmed, nothing deleted") {
		t.Fatalf("answered no: exit %d\n%s%s", code, out, errOut)
	}
	if got := tablesIn(t, dir); len(got) != 1 {
		t.Fatalf("after a no, the tables are %v", got)
	}

	out, errOut, code = runTabula(t, "yes\n", "reset", "--data", dir)
	if code != 0 || !strings.Contains(errOut, "This deletes every table and entity Tabula keeps in "+dir) || out != "emptied "+dir+"\n" {
		t.Fatalf("answered yes: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "tls", "ca.pem")); err != nil {
		t.Errorf("the local CA did not survive the reset: %v", err)
	}
	if got := tablesIn(t, dir); len(got) != 0 {
		t.Fatalf("after reset, the tables are %v", got)
	}
}

func TestResetWithYesDoesNotAsk(t *testing.T) {
	dir := storeWithATable(t)
	t.Setenv("TABULA_DATA", dir) // as the server would take it
	out, errOut, code := runTabula(t, "", "reset", "--yes")
	if code != 0 || errOut != "" || out != "emptied "+dir+"\n" {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if got := tablesIn(t, dir); len(got) != 0 {
		t.Fatalf("after reset, the tables are %v", got)
	}
}

func TestResetRefusesWhileATabulaRuns(t *testing.T) {
	dir := t.TempDir()
	startTabula(t, "--data", dir)
	_, errOut, code := runTabula(t, "", "reset", "--yes", "--data", dir)
	if code != 1 || !strings.Contains(errOut, "another Tabula is using "+dir+": stop it first") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestResetTouchesOnlyTabulaData(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "thesis.tex"), []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runTabula(t, "", "reset", "--yes", "--data", dir)
	if code != 1 || !strings.Contains(errOut, "does not look like a Tabula data directory") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "thesis.tex")); err != nil {
		t.Fatal(err)
	}
	out, _, code := runTabula(t, "", "reset", "--yes", "--data", filepath.Join(dir, "absent"))
	if code != 0 || !strings.Contains(out, "does not exist: nothing to reset") {
		t.Fatalf("a missing directory: exit %d, %s", code, out)
	}
}
