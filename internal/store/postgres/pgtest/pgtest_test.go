package pgtest

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestEachStartIsAFreshDatabase(t *testing.T) {
	a, b := connect(t, Start(t)), connect(t, Start(t))
	if _, err := a.Exec(t.Context(), "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.QueryRow(t.Context(), "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("a table created in one Start's database is visible in another's")
	}
}

func TestClusterStopsAndRestartsWithItsData(t *testing.T) {
	c := NewCluster(t)
	dsn := c.NewDatabase(t)
	conn := connect(t, dsn)
	if _, err := conn.Exec(t.Context(), "CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	c.Stop(t)
	if _, err := pgx.Connect(t.Context(), dsn); err == nil {
		t.Fatal("connected to a stopped cluster")
	}
	c.Restart(t)
	var x int
	if err := connect(t, dsn).QueryRow(t.Context(), "SELECT x FROM kept").Scan(&x); err != nil || x != 42 {
		t.Fatalf("after restart: %d, %v; want 42", x, err)
	}
}

func TestStoppedClusterLeavesNoProcess(t *testing.T) {
	c := NewCluster(t)
	c.mu.Lock()
	pid := c.proc.Pid
	c.mu.Unlock()
	c.Stop(t)
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("postmaster %d still exists after Stop (kill 0: %v)", pid, err)
	}
	if _, err := os.Stat(c.dir); err != nil {
		t.Fatalf("Stop removed the cluster's files: %v", err)
	}
}
