// Package pgtest runs throw-away PostgreSQL clusters for tests, from the PostgreSQL binaries
// installed on the machine (initdb and postgres; Debian's `postgresql` package puts them in
// /usr/lib/postgresql/<version>/bin).
//
// A test calls Start for a fresh, empty database on a cluster shared by the whole test binary,
// or NewCluster for a cluster of its own that it may stop and restart. A package using Start
// should run its tests through Main, which stops the shared cluster and removes its files when
// the tests end:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// Without the binaries the tests are skipped with a message saying so, except when the
// environment has CI=true: CI must never skip them, so there they fail.
//
// Clusters run without fsync: they are for tests only. On Linux every postmaster is started
// with a parent-death signal, so that even a test binary killed outright (a -timeout panic,
// SIGKILL) leaves no server running; only its temporary directory remains.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// superuser is the cluster's bootstrap superuser; it authenticates with trust, over
// 127.0.0.1 only.
const superuser = "tabula"

var (
	sharedMu sync.Mutex
	shared   *Cluster
	// sharedErr remembers why the shared cluster could not start, so that every later test
	// reports it at once instead of trying again.
	sharedErr error
)

// Start returns the DSN of a new, empty database on the shared cluster, starting the cluster
// on first use. The database is dropped when t ends. Start skips t (fails it when CI=true) if
// the PostgreSQL binaries are not installed.
func Start(t testing.TB) string {
	t.Helper()
	sharedMu.Lock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = startCluster()
	}
	c, err := shared, sharedErr
	sharedMu.Unlock()
	if err != nil {
		fail(t, err)
	}
	return c.NewDatabase(t)
}

// Main runs the tests of m, then stops the shared cluster (if Start started one) and exits
// with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	sharedMu.Lock()
	c := shared
	shared, sharedErr = nil, errors.New("pgtest: the shared cluster was stopped by Main")
	sharedMu.Unlock()
	if c != nil {
		if err := c.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stopping the shared cluster: %v\n", err)
			code = max(code, 1)
		}
		c.remove()
	}
	os.Exit(code)
}

// errNoBinaries is returned when initdb and postgres cannot be found.
var errNoBinaries = errors.New("PostgreSQL binaries (initdb, postgres) not found " +
	"in $TABULA_PG_BIN, $PATH or /usr/lib/postgresql/*/bin")

// install says how to get the binaries.
const install = "Install PostgreSQL (Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql) " +
	"or set TABULA_PG_BIN to the directory holding initdb and postgres"

// fail skips t when the binaries are missing outside CI, and fails it otherwise.
func fail(t testing.TB, err error) {
	t.Helper()
	switch {
	case !errors.Is(err, errNoBinaries):
		t.Fatal(err)
	case os.Getenv("CI") == "true":
		t.Fatalf("CI=true and the PostgreSQL tests cannot run: %v. %s.", err, install)
	default:
		t.Skipf("*** PostgreSQL tests SKIPPED: %v. %s to run them (with CI=true this is a failure). ***", err, install)
	}
}

// Cluster is one running (or stopped) throw-away PostgreSQL server listening on 127.0.0.1.
type Cluster struct {
	bin  string // directory holding initdb and postgres
	dir  string // temporary directory: data/, the unix socket and postgres.log
	port int
	cred *syscall.Credential // the unprivileged user to run as when the tests run as root

	mu     sync.Mutex
	proc   *os.Process
	exited chan struct{} // closed when proc has exited
	admin  *pgx.Conn     // to the "postgres" database, for CREATE and DROP DATABASE
	major  int           // server major version
	nextDB atomic.Int64
}

// NewCluster starts a cluster for t alone, which t may Stop and Restart; it is stopped and its
// files removed when t ends. It skips or fails t as Start does when the binaries are missing.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := startCluster()
	if err != nil {
		fail(t, err)
	}
	t.Cleanup(func() {
		if err := c.stop(); err != nil {
			t.Errorf("pgtest: stopping cluster: %v", err)
		}
		c.remove()
	})
	return c
}

// Port returns the TCP port the cluster listens on (on 127.0.0.1), the same across restarts.
func (c *Cluster) Port() int { return c.port }

// NewDatabase creates an empty database and returns its DSN. The database is dropped when t
// ends (if the cluster is still running then), closing any connection left open to it.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test_%d", c.nextDB.Add(1))
	create := "CREATE DATABASE " + name
	if err := c.adminExec(create); err != nil {
		t.Fatalf("pgtest: %s: %v", create, err)
	}
	t.Cleanup(func() {
		drop := "DROP DATABASE IF EXISTS " + name
		if c.major >= 13 {
			drop += " WITH (FORCE)"
		}
		if err := c.adminExec(drop); err != nil && c.running() {
			t.Errorf("pgtest: %s: %v", drop, err)
		}
	})
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, c.port, name)
}

// Stop shuts the server down (a fast shutdown: open connections are terminated) and waits
// for it to exit. The data stays; Restart brings the same cluster back.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	if err := c.stop(); err != nil {
		t.Fatalf("pgtest: stop: %v", err)
	}
}

// Restart starts a stopped cluster again, on the same port and data.
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	if err := c.start(); err != nil {
		t.Fatalf("pgtest: restart: %v", err)
	}
}

func (c *Cluster) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc != nil
}

// startCluster creates a cluster in a new temporary directory and starts it.
func startCluster() (*Cluster, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := unprivilegedUser()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(tempRoot(), "tabula-pgtest-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: dir, cred: cred}
	if err := c.initdb(); err != nil {
		c.remove()
		return nil, err
	}
	if c.port, err = freePort(); err != nil {
		c.remove()
		return nil, err
	}
	if err := c.start(); err != nil {
		c.remove()
		return nil, err
	}
	return c, nil
}

// findBinaries returns the directory of initdb and postgres: $TABULA_PG_BIN, else the one
// on $PATH, else the newest /usr/lib/postgresql/<version>/bin (Debian keeps them off $PATH).
func findBinaries() (string, error) {
	has := func(dir string) bool {
		for _, name := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv("TABULA_PG_BIN"); dir != "" {
		if has(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("%w (TABULA_PG_BIN=%s has none)", errNoBinaries, dir)
	}
	if p, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return int(version(b) - version(a)) })
	for _, dir := range dirs {
		if has(dir) {
			return dir, nil
		}
	}
	return "", errNoBinaries
}

// unprivilegedUser returns nil when the tests do not run as root; as root (initdb and
// postgres refuse to run as root) it returns the credentials of the "postgres" user that
// PostgreSQL packages create, or else of "nobody".
func unprivilegedUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
		}
	}
	return nil, errors.New("pgtest: running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as (it refuses to run as root)")
}

// command returns cmd to run as the cluster's unprivileged user, if any.
func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	return cmd
}

func (c *Cluster) initdb() error {
	if c.cred != nil {
		if err := os.Chown(c.dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return err
		}
	}
	cmd := c.command("initdb", "-D", filepath.Join(c.dir, "data"), "-U", superuser,
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgtest: initdb: %v\n%s", err, out.Bytes())
	}
	return nil
}

// tempRoot returns where to put clusters: /dev/shm when it is a roomy tmpfs, since creating a
// database writes a copy of the template (over ten times faster there than on a plain disk
// in CI), else the default temporary directory.
func tempRoot() string {
	var fs syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &fs); err == nil && uint64(fs.Bavail)*uint64(fs.Bsize) >= 1<<30 {
		return "/dev/shm"
	}
	return ""
}

// freePort returns a TCP port on 127.0.0.1 that nothing listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start starts the postmaster and waits until it accepts connections.
func (c *Cluster) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		return errors.New("already running")
	}
	logPath := filepath.Join(c.dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := c.command("postgres", "-D", filepath.Join(c.dir, "data"),
		"-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-k", c.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=32MB", "-c", "max_wal_size=128MB",
		"-c", "log_min_messages=warning", "-c", "log_min_error_statement=panic")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	setParentDeathSignal(cmd)

	// The parent-death signal fires when the thread that forked the child exits, not the
	// process: fork from a thread locked to a goroutine that lives as long as the child.
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			runtime.UnlockOSThread()
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
		runtime.UnlockOSThread()
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.proc, c.exited = cmd.Process, exited

	dsn := fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", superuser, c.port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, dsn)
		cancel()
		if err == nil {
			c.admin = conn
			num, _ := strconv.Atoi(conn.PgConn().ParameterStatus("server_version_num"))
			c.major = num / 10000
			return nil
		}
		select {
		case <-exited:
			c.proc = nil
			return fmt.Errorf("postgres exited during startup; its log:\n%s", tail(logPath))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.proc.Signal(syscall.SIGQUIT)
			<-exited
			c.proc = nil
			return fmt.Errorf("postgres did not accept connections within a minute (%v); its log:\n%s", err, tail(logPath))
		}
	}
}

// stop shuts a running cluster down with a fast shutdown, escalating to an immediate one
// (SIGQUIT) and then SIGKILL if it takes too long. Stopping a stopped cluster does nothing.
func (c *Cluster) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return nil
	}
	if c.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c.admin.Close(ctx)
		cancel()
		c.admin = nil
	}
	var err error
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGINT, 20 * time.Second}, {syscall.SIGQUIT, 10 * time.Second}, {syscall.SIGKILL, 10 * time.Second}} {
		if err = c.proc.Signal(step.sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			break
		}
		select {
		case <-c.exited:
			c.proc = nil
			return nil
		case <-time.After(step.wait):
			err = fmt.Errorf("postgres (pid %d) still running %v after %v", c.proc.Pid, step.wait, step.sig)
		}
	}
	return err
}

// remove deletes the cluster's files. The cluster must be stopped.
func (c *Cluster) remove() { os.RemoveAll(c.dir) }

// adminExec runs sql on the "postgres" database as the superuser.
func (c *Cluster) adminExec(sql string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.admin == nil {
		return errors.New("cluster not running")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.admin.Exec(ctx, sql)
	return err
}

// tail returns the end of the file at path, for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	const keep = 4 << 10
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return strings.TrimSpace(string(b))
}
