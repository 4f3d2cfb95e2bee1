// Command tabula serves Azure Storage's Blob, Queue and Table services, and is a client of
// any storage account.
//
//	tabula [flags]                  serve (defaults: blob 127.0.0.1:10000, queue :10001, table :10002, account devstoreaccount1)
//	tabula table|entity|export|import|container|blob|queue   the client verbs (package cli)
//	tabula bench [flags]            load-test any Azure Table, Queue or Blob endpoint (tabula bench --help)
//	tabula reset|version|help
//
// Every flag can also be set through the environment variable named in its help; tabula help
// lists them all.
package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/blobhttp"
	"github.com/tabula-dev/tabula/internal/console"
	"github.com/tabula-dev/tabula/internal/faults"
	"github.com/tabula-dev/tabula/internal/insight"
	"github.com/tabula-dev/tabula/internal/metrics"
	"github.com/tabula-dev/tabula/internal/queue"
	"github.com/tabula-dev/tabula/internal/queuehttp"
	"github.com/tabula-dev/tabula/internal/server"
	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/pebble"
	"github.com/tabula-dev/tabula/internal/store/postgres"
	"github.com/tabula-dev/tabula/internal/table"
	"github.com/tabula-dev/tabula/internal/tablehttp"
	"github.com/tabula-dev/tabula/internal/throttle"
)

func main() { os.Exit(runUntilSignalled(os.Args[1:])) }

// runUntilSignalled runs the command until it ends or SIGINT/SIGTERM asks it to stop, and
// returns the process exit code. A second signal ends the process at once, for when the
// shutdown takes longer than the operator will wait.
func runUntilSignalled(args []string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		select {
		case <-signals:
		case <-ctx.Done():
			return
		}
		cancel()
		if sig, ok := <-signals; ok {
			fmt.Fprintf(os.Stderr, "tabula: second %v: exiting at once\n", sig)
			os.Exit(1)
		}
	}()
	if err := run(ctx, args, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "tabula:", err)
		return 1
	}
	return 0
}

// config is the server's configuration, from flags with environment fallbacks.
type config struct {
	tableAddr string
	blobAddr  string
	queueAddr string
	dataDir   string
	// dataDirIsDefault says dataDir is the default, shared by every Tabula not given one.
	dataDirIsDefault bool
	inMemory         bool
	inMemoryLimit    string
	memoryLimit      int64 // inMemoryLimit in bytes, read by parseFlags
	storeURL         string
	storeWait        time.Duration
	rehydrateAfter   time.Duration
	blobVersioning   string // "", "all" or account names
	premiumAccounts  string // "", "all" or account names
	blobImmutability string // "", "all", account names or account/container names
	containerDays    string // container soft delete: "", N (days, every account) or NAME:N,...
	accounts         string
	consoleAddr      string
	limits           server.Limits

	tls            bool   // HTTPS with a local CA made in dataDir/tls
	certFile       string // HTTPS with the operator's certificate
	keyFile        string
	oauth          string // "" or "basic"
	oauthJWKS      string // file or URL: verify bearer tokens' signatures
	oauthIssuers   string
	oauthAudiences string

	logFormat  string // text or json
	requestLog string // all, errors, off or 1/N

	insights bool
	throttle bool
	// fetchSources lets copies read sources on other servers (blobfetch).
	fetchSources  bool
	partitionRate int
	queueRate     int
	blobRate      int
	accountRate   int
	faultsFile    string
}

// parseFlags reads the serving configuration from args and the environment. --help prints
// tabula's usage to out and returns flag.ErrHelp.
// rates are the --throttle-*-rate flags.
func (c *config) rates() throttle.Rates {
	return throttle.Rates{Partition: float64(c.partitionRate), Queue: float64(c.queueRate), Blob: float64(c.blobRate), Account: float64(c.accountRate)}
}

func parseFlags(args []string, out io.Writer) (config, error) {
	fs := flag.NewFlagSet("tabula", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c config
	var envErrsPre []error
	fs.StringVar(&c.tableAddr, "table-addr", envOr("TABULA_TABLE_ADDR", "127.0.0.1:10002"), "`HOST:PORT` to serve the table endpoint on (env TABULA_TABLE_ADDR)")
	fs.StringVar(&c.blobAddr, "blob-addr", envOr("TABULA_BLOB_ADDR", "127.0.0.1:10000"), "`HOST:PORT` to serve the blob endpoint on (env TABULA_BLOB_ADDR)")
	fs.StringVar(&c.queueAddr, "queue-addr", envOr("TABULA_QUEUE_ADDR", "127.0.0.1:10001"), "`HOST:PORT` to serve the queue endpoint on (env TABULA_QUEUE_ADDR)")
	fs.StringVar(&c.dataDir, "data", envOr("TABULA_DATA", defaultDataDir()), "`DIR` holding the embedded store (env TABULA_DATA)")
	fs.StringVar(&c.storeURL, "store", envOr("TABULA_STORE", ""), "`postgres://...` URL of a PostgreSQL (or CockroachDB) database to keep the data in, shared by every Tabula pointed at it; empty: the embedded store in --data (env TABULA_STORE)")
	durationFlag(fs, &envErrsPre, &c.storeWait, "store-wait", "TABULA_STORE_WAIT", time.Minute, "how long start-up waits for an unreachable --store database, trying again and logging each attempt; 0 fails at once")
	fs.StringVar(&c.accounts, "accounts", envOr("TABULA_ACCOUNTS", ""), "`NAME:KEY[:KEY2][,NAME:KEY...]` accounts to host instead of devstoreaccount1; keys are base64 (env TABULA_ACCOUNTS)")
	fs.StringVar(&c.blobVersioning, "blob-versioning", envOr("TABULA_BLOB_VERSIONING", ""), "`all|NAME[,NAME...]`: accounts whose blobs keep previous versions when overwritten or deleted (blob versioning, an account setting on Azure); none when empty (env TABULA_BLOB_VERSIONING)")
	fs.StringVar(&c.containerDays, "container-soft-delete", envOr("TABULA_CONTAINER_SOFT_DELETE", ""), "`DAYS|NAME:DAYS[,NAME:DAYS...]`: how long every account, or each account named, keeps its deleted containers, restorable (container soft delete, an account setting on Azure: 1 to 365 days); off when empty (env TABULA_CONTAINER_SOFT_DELETE)")
	fs.StringVar(&c.blobImmutability, "blob-immutability", envOr("TABULA_BLOB_IMMUTABILITY", ""), "`all|NAME[/CONTAINER][,...]`: accounts, or single containers, with immutable storage with versioning, whose blob versions take immutability policies and legal holds (a management-plane setting on Azure); their accounts must keep versions (--blob-versioning); none when empty (env TABULA_BLOB_IMMUTABILITY)")
	fs.StringVar(&c.premiumAccounts, "premium-accounts", envOr("TABULA_PREMIUM_ACCOUNTS", ""), "`all|NAME[,NAME...]`: accounts of the premium performance tier, whose page blobs have disk tiers P4 to P80 (chosen when an account is made on Azure); none when empty (env TABULA_PREMIUM_ACCOUNTS)")
	fs.StringVar(&c.consoleAddr, "console-addr", envOr("TABULA_CONSOLE_ADDR", "127.0.0.1:10003"), "`HOST:PORT` of the console: the web console at /, /metrics (Prometheus), /healthz, /readyz, /insights, /admin/faults, /debug/pprof/; off when empty (env TABULA_CONSOLE_ADDR)")
	fs.StringVar(&c.certFile, "cert", envOr("TABULA_CERT", ""), "`FILE`: serve HTTPS beside HTTP with this PEM certificate chain (with --key; env TABULA_CERT)")
	fs.StringVar(&c.keyFile, "key", envOr("TABULA_KEY", ""), "`FILE`: the PEM private key of --cert (env TABULA_KEY)")
	fs.StringVar(&c.oauth, "oauth", envOr("TABULA_OAUTH", ""), "`basic`: take bearer (Entra ID) tokens, checking their claims but not their signatures: for local development only (needs HTTPS; env TABULA_OAUTH)")
	fs.StringVar(&c.oauthJWKS, "oauth-jwks", envOr("TABULA_OAUTH_JWKS", ""), "`FILE|URL` of a JSON Web Key Set: take bearer tokens whose RS256 signatures these keys verify (needs HTTPS; env TABULA_OAUTH_JWKS)")
	fs.StringVar(&c.oauthIssuers, "oauth-issuer", envOr("TABULA_OAUTH_ISSUER", ""), "`ISS[,ISS...]`: token issuers to accept besides Entra ID's (env TABULA_OAUTH_ISSUER)")
	fs.StringVar(&c.oauthAudiences, "oauth-audience", envOr("TABULA_OAUTH_AUDIENCE", ""), "`AUD[,AUD...]`: token audiences to accept besides the storage ones (env TABULA_OAUTH_AUDIENCE)")
	fs.StringVar(&c.logFormat, "log-format", envOr("TABULA_LOG_FORMAT", "text"), "`text|json`: how log lines are written to stderr (env TABULA_LOG_FORMAT)")
	fs.StringVar(&c.requestLog, "request-log", envOr("TABULA_REQUEST_LOG", "all"), "`all|errors|off|1/N`: which requests get a log line; 1/N logs one in N successful requests and every failed one (env TABULA_REQUEST_LOG)")
	boolFlag(fs, &envErrsPre, &c.insights, "insights", "TABULA_INSIGHTS", true, "watch the workload for hot partitions, append-only keys, costly queries and entities that belong in blobs, and log each finding")
	boolFlag(fs, &envErrsPre, &c.throttle, "throttle", "TABULA_THROTTLE", false, "hold each table partition, queue, blob and account to Azure's scalability targets, answering 503 ServerBusy beyond them, as Azure does")
	intFlag(fs, &envErrsPre, &c.partitionRate, "throttle-partition-rate", "TABULA_THROTTLE_PARTITION_RATE", throttle.DefaultPartitionRate, "entities a second one table partition may serve under --throttle")
	intFlag(fs, &envErrsPre, &c.queueRate, "throttle-queue-rate", "TABULA_THROTTLE_QUEUE_RATE", throttle.DefaultQueueRate, "messages a second one queue may serve under --throttle")
	intFlag(fs, &envErrsPre, &c.blobRate, "throttle-blob-rate", "TABULA_THROTTLE_BLOB_RATE", throttle.DefaultBlobRate, "requests a second one blob may serve under --throttle")
	intFlag(fs, &envErrsPre, &c.accountRate, "throttle-account-rate", "TABULA_THROTTLE_ACCOUNT_RATE", throttle.DefaultAccountRate, "requests a second one account may serve over all services under --throttle (a table request counts its entities)")
	boolFlag(fs, &envErrsPre, &c.fetchSources, "fetch-copy-sources", "TABULA_FETCH_COPY_SOURCES", true, "let Copy Blob and the From URL operations fetch a source on another server (any URL a client names: another account, Azurite, a public web object), as Azure does; off, only this server's blobs are copied (404 CannotVerifyCopySource), and no client can make Tabula send a request elsewhere")
	fs.StringVar(&c.faultsFile, "faults", envOr("TABULA_FAULTS", ""), "`FILE` of fault rules (a JSON array) to start with; rules change live at the console's /admin/faults (env TABULA_FAULTS)")
	d := server.DefaultLimits()
	envErrs := envErrsPre
	boolFlag(fs, &envErrs, &c.inMemory, "in-memory", "TABULA_IN_MEMORY", false, "keep everything in memory, write nothing to disk")
	fs.StringVar(&c.inMemoryLimit, "in-memory-limit", envOr("TABULA_IN_MEMORY_LIMIT", defaultInMemoryLimit), "`SIZE|PERCENT|0`: with --in-memory, the memory the data may take (4GiB, 512MiB, or a share of this machine's memory); near it, writes that add data get 503 ServerBusy as on a full disk, deletions go on; 0 for no limit (env TABULA_IN_MEMORY_LIMIT)")
	boolFlag(fs, &envErrs, &c.tls, "tls", "TABULA_TLS", false, "serve HTTPS beside HTTP on every endpoint, with a certificate for 127.0.0.1 and localhost from a local CA made in DIR/tls on first use")
	durationFlag(fs, &envErrs, &c.limits.HeaderTimeout, "header-timeout", "TABULA_HEADER_TIMEOUT", d.HeaderTimeout, "longest time to receive a request's header block")
	durationFlag(fs, &envErrs, &c.limits.BodyStallTimeout, "body-stall-timeout", "TABULA_BODY_STALL_TIMEOUT", d.BodyStallTimeout, "longest pause between two pieces of a request body before the request is cut (408)")
	durationFlag(fs, &envErrs, &c.limits.IdleTimeout, "idle-timeout", "TABULA_IDLE_TIMEOUT", d.IdleTimeout, "closes keep-alive connections idle this long")
	durationFlag(fs, &envErrs, &c.limits.ShutdownGrace, "shutdown-grace", "TABULA_SHUTDOWN_GRACE", d.ShutdownGrace, "how long a shutdown lets requests in flight finish before closing their connections")
	durationFlag(fs, &envErrs, &c.rehydrateAfter, "rehydrate-after", "TABULA_REHYDRATE_AFTER", blob.DefaultRehydrateAfter, "how long a blob moved out of the Archive tier stays there, being rehydrated (Azure: hours)")
	intFlag(fs, &envErrs, &c.limits.MaxConnections, "max-connections", "TABULA_MAX_CONNECTIONS", d.MaxConnections, "connections open at once over all endpoints; idle ones are closed to make room, then new ones wait")
	intFlag(fs, &envErrs, &c.limits.MaxHeaderBytes, "max-header-bytes", "TABULA_MAX_HEADER_BYTES", d.MaxHeaderBytes, "largest request header block accepted")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(out, fs)
			return c, err
		}
		return c, fmt.Errorf("%w (tabula help lists the flags)", err)
	}
	_, dataFromEnv := os.LookupEnv("TABULA_DATA")
	c.dataDirIsDefault = !dataFromEnv && !flagGiven(fs, "data")
	if len(envErrs) > 0 {
		return c, envErrs[0]
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q (tabula help lists the commands)", fs.Arg(0))
	}
	if err := checkAddr("table-addr", "TABULA_TABLE_ADDR", c.tableAddr); err != nil {
		return c, err
	}
	if err := checkAddr("blob-addr", "TABULA_BLOB_ADDR", c.blobAddr); err != nil {
		return c, err
	}
	if c.consoleAddr != "" {
		if err := checkAddr("console-addr", "TABULA_CONSOLE_ADDR", c.consoleAddr); err != nil {
			return c, err
		}
	}
	if c.dataDir == "" {
		return c, errors.New("--data (TABULA_DATA) is empty: give the directory to keep the data in")
	}
	if c.storeURL != "" && c.inMemory {
		return c, errors.New("--store and --in-memory exclude each other")
	}
	if c.inMemory {
		var err error
		if c.memoryLimit, err = memoryLimitOf(c.inMemoryLimit, availableMemory); err != nil {
			return c, err
		}
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		return c, fmt.Errorf("--log-format: want text or json, got %q", c.logFormat)
	}
	if _, err := requestLogOf(c.requestLog, nil); err != nil {
		return c, err
	}
	if (c.certFile == "") != (c.keyFile == "") {
		return c, errors.New("--cert and --key go together")
	}
	if c.tls && c.certFile != "" {
		return c, errors.New("--tls makes a certificate, --cert brings one: choose one")
	}
	switch {
	case c.oauth != "" && c.oauth != "basic":
		return c, fmt.Errorf("--oauth: want basic, got %q (for verified tokens give --oauth-jwks)", c.oauth)
	case c.oauth != "" && c.oauthJWKS != "":
		return c, errors.New("--oauth basic takes tokens unverified, --oauth-jwks verifies them: choose one")
	case (c.oauth != "" || c.oauthJWKS != "") && !c.tls && c.certFile == "":
		return c, errors.New("bearer tokens travel over HTTPS only: add --tls (or --cert and --key)")
	}
	return c, nil
}

// versioningOf reads --blob-versioning: all hosted accounts, or the hosted accounts named.
func versioningOf(spec string, hosted []auth.Account) (func(account string) bool, error) {
	return accountsOf("--blob-versioning", spec, hosted)
}

// accountsOf reads a flag naming all hosted accounts, or some of them.
func accountsOf(flagName, spec string, hosted []auth.Account) (func(account string) bool, error) {
	switch spec {
	case "":
		return nil, nil
	case "all":
		return func(string) bool { return true }, nil
	}
	on := map[string]bool{}
	for _, name := range strings.Split(spec, ",") {
		if !slices.ContainsFunc(hosted, func(a auth.Account) bool { return a.Name == name }) {
			return nil, fmt.Errorf("%s: %q is not a hosted account (give all, or names from --accounts)", flagName, name)
		}
		on[name] = true
	}
	return func(account string) bool { return on[account] }, nil
}

// immutabilityOf reads --blob-immutability: all hosted accounts, or accounts and single
// containers (NAME/CONTAINER), each of an account that keeps versions, as Azure requires.
func immutabilityOf(spec string, hosted []auth.Account, versioning func(string) bool) (func(account, container string) bool, error) {
	if spec == "" {
		return nil, nil
	}
	versioned := func(account string) bool { return versioning != nil && versioning(account) }
	if spec == "all" {
		for _, a := range hosted {
			if !versioned(a.Name) {
				return nil, fmt.Errorf("--blob-immutability: account %q does not keep versions (--blob-versioning), which immutable storage needs", a.Name)
			}
		}
		return func(string, string) bool { return true }, nil
	}
	accounts, containers := map[string]bool{}, map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		name, container, one := strings.Cut(item, "/")
		if !slices.ContainsFunc(hosted, func(a auth.Account) bool { return a.Name == name }) {
			return nil, fmt.Errorf("--blob-immutability: %q is not a hosted account (give all, NAME or NAME/CONTAINER, with names from --accounts)", name)
		}
		if !versioned(name) {
			return nil, fmt.Errorf("--blob-immutability: account %q does not keep versions (--blob-versioning), which immutable storage needs", name)
		}
		if one {
			containers[name+"/"+container] = true
		} else {
			accounts[name] = true
		}
	}
	return func(account, container string) bool { return accounts[account] || containers[account+"/"+container] }, nil
}

// containerRetentionOf reads --container-soft-delete: days for every hosted account, or
// NAME:DAYS for each account named.
func containerRetentionOf(spec string, hosted []auth.Account) (func(account string) int, error) {
	if spec == "" {
		return nil, nil
	}
	days := func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 365 {
			return 0, fmt.Errorf("--container-soft-delete: %q is not a number of days from 1 to 365", v)
		}
		return n, nil
	}
	if !strings.Contains(spec, ":") {
		n, err := days(spec)
		return func(string) int { return n }, err
	}
	each := map[string]int{}
	for _, part := range strings.Split(spec, ",") {
		name, v, _ := strings.Cut(part, ":")
		if !slices.ContainsFunc(hosted, func(a auth.Account) bool { return a.Name == name }) {
			return nil, fmt.Errorf("--container-soft-delete: %q is not a hosted account (give DAYS, or NAME:DAYS for names from --accounts)", name)
		}
		n, err := days(v)
		if err != nil {
			return nil, err
		}
		each[name] = n
	}
	return func(account string) int { return each[account] }, nil
}

// durationFlag defines a duration flag whose default comes from env when set; an env value
// that does not parse is added to errs, for parseFlags to report.
func durationFlag(fs *flag.FlagSet, errs *[]error, p *time.Duration, name, env string, def time.Duration, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("%s=%q: not a duration such as 30s or 2m", env, v))
		} else {
			def = d
		}
	}
	fs.DurationVar(p, name, def, "`DURATION`: "+usage+" (env "+env+")")
}

// intFlag is durationFlag for a positive whole number.
func intFlag(fs *flag.FlagSet, errs *[]error, p *int, name, env string, def int, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			*errs = append(*errs, fmt.Errorf("%s=%q: not a positive whole number", env, v))
		} else {
			def = n
		}
	}
	fs.IntVar(p, name, def, "`N`: "+usage+" (env "+env+")")
}

func envOr(name, fallback string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return fallback
}

// defaultDataDir follows the XDG base directory convention, so data outlives the working
// directory the server happened to be started from.
func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "tabula")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "tabula")
	}
	return "tabula-data"
}

// tuneGC trades a little memory for less garbage-collection work. The Go heap of a serving
// Tabula is small (Pebble's block cache lives outside it) and mostly short-lived request
// garbage, so collecting at 5x the live heap rather than 2x costs tens of MiB and, measured
// with tabula bench, gives point gets 14% and batch inserts 20% more throughput. A soft
// limit keeps bursts of large requests and concurrent scans from growing the heap unchecked
// (16 concurrent full scans: RSS 645 MiB at a 384 MiB limit, 776 MiB at 768 MiB, same
// throughput). GOGC and GOMEMLIMIT, when set, win.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(heapHeadroom)
	}
}

// openStore opens the store c selects: a PostgreSQL database given as a postgres:// URL, else
// the embedded Pebble store. where says which, for the start-up message.
func openStore(ctx context.Context, c config) (st store.Backend, where string, err error) {
	if c.storeURL != "" {
		u, err := url.Parse(c.storeURL)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return nil, "", fmt.Errorf("--store: want a postgres:// URL, got %q", c.storeURL)
		}
		st, err := postgres.Open(ctx, c.storeURL, postgres.Options{StartupWait: c.storeWait})
		if err != nil {
			return nil, "", fmt.Errorf("opening the PostgreSQL store at %s: %w", u.Redacted(), err)
		}
		return st, "in PostgreSQL at " + u.Redacted(), nil
	}
	limit := c.memoryLimit
	pst, err := pebble.Open(c.dataDir, pebble.Options{InMemory: c.inMemory, MemoryLimit: limit})
	if err != nil {
		return nil, "", dataDirError(c.dataDir, err)
	}
	if c.inMemory {
		go followStoreMemory(ctx, pst.MemoryHeld)
		if limit == 0 {
			return pst, "in memory (nothing is written to disk; no memory limit)", nil
		}
		return pst, fmt.Sprintf("in memory (nothing is written to disk; at most %.1f GiB of data, --in-memory-limit)", float64(limit)/(1<<30)), nil
	}
	return pst, "in " + c.dataDir, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if v, ok := verbs[args[0]]; ok {
			return v(ctx, args[1:], os.Stdin, stdout, stderr)
		}
	}
	c, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	tuneGC()
	accounts := []auth.Account{auth.DevelopmentAccount()}
	if c.accounts != "" {
		if accounts, err = auth.ParseAccounts(c.accounts); err != nil {
			return fmt.Errorf("--accounts: %w", err)
		}
	}
	versioning, err := versioningOf(c.blobVersioning, accounts)
	if err != nil {
		return err
	}
	containerRetention, err := containerRetentionOf(c.containerDays, accounts)
	if err != nil {
		return err
	}
	premium, err := accountsOf("--premium-accounts", c.premiumAccounts, accounts)
	if err != nil {
		return err
	}
	immutable, err := immutabilityOf(c.blobImmutability, accounts, versioning)
	if err != nil {
		return err
	}
	st, where, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	log := newLogger(c.logFormat, stderr)
	defer closeStore(st, log)
	logCtx, stopLogging := context.WithCancel(context.Background())
	defer stopLogging() // after the store's close, which may log
	requestLog, _ := requestLogOf(c.requestLog, newLogger(c.logFormat, server.NewBufferedWriter(logCtx, stderr)))

	authn := auth.NewAuthenticator(accounts)
	if authn.OAuth, err = oauthConfig(ctx, c); err != nil {
		return err
	}
	tlsConfig, caFile, err := loadTLS(c)
	if err != nil {
		return err
	}
	faultSet := &faults.Set{}
	if c.faultsFile != "" {
		doc, err := os.ReadFile(c.faultsFile)
		if err == nil {
			var rules []faults.Rule
			if rules, err = faults.Parse(doc); err == nil {
				err = faultSet.Replace(rules)
			}
		}
		if err != nil {
			return fmt.Errorf("--faults: %w", err)
		}
	}
	var insights *insight.Observer
	if c.insights {
		insights = insight.New(insight.DefaultConfig(), log)
		go insights.Run(logCtx)
	}
	// Every listener is bound before the banner, which must not announce what cannot serve.
	var consoleLn net.Listener
	if c.consoleAddr != "" {
		if consoleLn, err = net.Listen("tcp", c.consoleAddr); err != nil {
			return fmt.Errorf("the console cannot listen on %q (--console-addr; empty turns it off): %w", c.consoleAddr, err)
		}
		defer consoleLn.Close()
	}
	tables := table.New(st)
	tableHandler := tablehttp.New(tables, authn, log)
	tableHandler.Insights = insights
	var limiter *throttle.Limiter
	if c.throttle {
		// One limiter for the three services: Azure's account target covers them together.
		limiter = throttle.New(c.rates())
	}
	tableHandler.Throttle = limiter
	blobs := blob.New(st, st)
	collectEvery := blobCollectInterval
	if c.inMemory {
		blobs.Grace, collectEvery = inMemoryBlobGrace, inMemoryCollectInterval
	}
	blobs.RehydrateAfter = c.rehydrateAfter
	blobs.Versioning = versioning
	blobs.ContainerRetention = containerRetention
	blobs.Premium = premium
	blobs.Immutable = immutable
	blobs.CopyEnded = func(e blob.CopyEnd) { logCopyEnd(log, e) }
	defer stopCopies(blobs)
	queues := queue.New(st, queue.Options{})
	blobHandler, queueHandler := blobhttp.New(blobs, authn, log), queuehttp.New(queues, authn, log)
	blobHandler.Throttle, queueHandler.Throttle = limiter, limiter
	if !c.fetchSources {
		blobHandler.Fetcher = nil
	}
	// The services, in the order of their ports; each is named in the connection string by
	// its endpoint keyword.
	services := []struct {
		endpoint server.Endpoint
		keyword  string // in connection strings
		port     string // the emulator's well-known port
	}{
		{server.Endpoint{Name: "blob", Addr: c.blobAddr, Handler: blobHandler, ErrorBody: blobhttp.ErrorBody}, "BlobEndpoint", "10000"},
		{server.Endpoint{Name: "queue", Addr: c.queueAddr, Handler: queueHandler, ErrorBody: queuehttp.ErrorBody}, "QueueEndpoint", "10001"},
		{server.Endpoint{Name: "table", Addr: c.tableAddr, Handler: tableHandler, ErrorBody: tablehttp.ErrorBody}, "TableEndpoint", "10002"},
	}
	var endpoints []server.Endpoint
	for _, svc := range services {
		endpoints = append(endpoints, svc.endpoint)
	}
	group, err := server.Listen(c.limits, log, endpoints...)
	if err != nil {
		return err
	}
	group.TLS, group.Log, group.Faults = tlsConfig, requestLog, faultSet
	sweepCtx, stopSweeping := context.WithCancel(ctx)
	defer stopSweeping()
	go sweepDeletedTables(sweepCtx, tables, log)
	go collectBlobs(sweepCtx, blobs, collectEvery, log)
	go sweepQueues(sweepCtx, queues, log)

	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "Tabula is serving Azure Storage (Blob, Queue, Table), data %s\n", where)
	sharedDataNote(stdout, c)
	first := accounts[0]
	var connectionString strings.Builder
	fmt.Fprintf(&connectionString, "DefaultEndpointsProtocol=%s;AccountName=%s;AccountKey=%s;",
		scheme, first.Name, base64.StdEncoding.EncodeToString(first.Keys[0]))
	wellKnownPorts := true
	for _, svc := range services {
		addr := group.Addr(svc.endpoint.Name)
		hostPort, _ := usableHostPort(addr)
		root := scheme + "://" + hostPort
		fmt.Fprintf(stdout, "  %s endpoint: %s/{account}\n", svc.endpoint.Name, root)
		warnEveryInterface(stdout, svc.endpoint.Name, scheme, addr)
		fmt.Fprintf(&connectionString, "%s=%s/%s;", svc.keyword, root, first.Name)
		wellKnownPorts = wellKnownPorts && strings.HasSuffix(hostPort, ":"+svc.port)
	}
	names := make([]string, len(accounts))
	for i, a := range accounts {
		names[i] = a.Name
	}
	fmt.Fprintf(stdout, "  accounts: %s\n", strings.Join(names, ", "))
	if tlsConfig != nil {
		fmt.Fprintln(stdout, "  HTTPS and HTTP are both served on each address")
		if caFile != "" {
			fmt.Fprintf(stdout, "  trust the local CA to use HTTPS: %s (e.g. SSL_CERT_FILE=%s or NODE_EXTRA_CA_CERTS=%s)\n", caFile, caFile, caFile)
		}
	}
	if limiter != nil {
		targets := ""
		if c.rates() == throttle.DefaultRates() {
			targets = ", Azure's targets"
		}
		fmt.Fprintf(stdout, "  throttle: %d entities/s per table partition, %d messages/s per queue, %d requests/s per blob, %d per account%s (503 ServerBusy beyond)\n",
			c.partitionRate, c.queueRate, c.blobRate, c.accountRate, targets)
	}
	if n := len(faultSet.Rules()); n > 0 {
		fmt.Fprintf(stdout, "  fault rules: %d from %s\n", n, c.faultsFile)
	}
	switch {
	case authn.OAuth.Mode == auth.OAuthBasic:
		fmt.Fprintln(stdout, "  bearer tokens: taken with their claims checked and their signatures NOT checked (--oauth basic: for development only)")
	case authn.OAuth.Mode == auth.OAuthVerify:
		fmt.Fprintf(stdout, "  bearer tokens: taken when signed by a key of %s\n", c.oauthJWKS)
	}
	if consoleLn != nil {
		if sc, ok := st.(interface{ Collector() prometheus.Collector }); ok {
			metrics.Register(sc.Collector())
		}
		consoleSrv := &http.Server{Handler: console.Handler(console.Options{Store: st, Tables: tables, Blobs: blobs, Queues: queues, Insights: insights, Faults: faultSet, Accounts: accounts}), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
		go func() { _ = consoleSrv.Serve(consoleLn) }()
		defer consoleSrv.Close()
		hostPort, _ := usableHostPort(consoleLn.Addr())
		fmt.Fprintf(stdout, "  console: http://%s/ (the web console; metrics at /metrics)\n", hostPort)
		warnEveryInterface(stdout, "console", "http", consoleLn.Addr())
	}

	// The connection string comes last: scripts and tests read the banner up to it.
	fmt.Fprintf(stdout, "  connection string: %s\n", connectionString.String())
	if first.Name == auth.DevelopmentAccount().Name && wellKnownPorts && scheme == "http" {
		fmt.Fprintln(stdout, "  (UseDevelopmentStorage=true works too, except with the Go SDK, which needs the string above)")
	}

	go func() {
		<-ctx.Done()
		fmt.Fprintln(stdout, "Tabula is shutting down")
	}()
	// Serve returns once ctx is done and in-flight requests have finished (each write is
	// durable before it is acknowledged) or the grace is over; the deferred close of the store
	// follows.
	return group.Serve(ctx)
}

func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// requestLogOf reads --request-log: all, errors, off, or 1/N (one in N successful requests and
// every failure).
func requestLogOf(spec string, log *slog.Logger) (*server.RequestLog, error) {
	switch spec {
	case "all":
		return &server.RequestLog{Logger: log}, nil
	case "errors":
		return &server.RequestLog{Logger: log, ErrorsOnly: true}, nil
	case "off":
		return &server.RequestLog{}, nil
	}
	if n, ok := strings.CutPrefix(spec, "1/"); ok {
		if every, err := strconv.ParseUint(n, 10, 64); err == nil && every > 0 {
			return &server.RequestLog{Logger: log, SampleEvery: every}, nil
		}
	}
	return nil, fmt.Errorf("--request-log: want all, errors, off or 1/N, got %q", spec)
}

// loadTLS returns the HTTPS configuration c asks for (nil for none) and, for --tls, the file
// of the local CA clients must trust.
func loadTLS(c config) (*tls.Config, string, error) {
	switch {
	case c.certFile != "":
		cfg, err := server.LoadTLS(c.certFile, c.keyFile)
		return cfg, "", err
	case c.tls:
		ca, err := server.OpenLocalCA(filepath.Join(c.dataDir, "tls"))
		if err != nil {
			return nil, "", fmt.Errorf("--tls: %w", err)
		}
		return ca.TLS, ca.CAFile, nil
	}
	return nil, "", nil
}

// oauthConfig returns how bearer tokens are taken.
func oauthConfig(ctx context.Context, c config) (auth.OAuth, error) {
	o := auth.OAuth{Issuers: splitComma(c.oauthIssuers), Audiences: splitComma(c.oauthAudiences)}
	switch {
	case c.oauth == "basic":
		o.Mode = auth.OAuthBasic
	case c.oauthJWKS != "":
		keys, err := auth.LoadKeySet(ctx, c.oauthJWKS)
		if err != nil {
			return o, fmt.Errorf("--oauth-jwks: %w", err)
		}
		o.Mode, o.Keys = auth.OAuthVerify, keys
	}
	return o, nil
}

func splitComma(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// storeCloseTimeout bounds the store's close at shutdown: a store wedged by a failing disk must
// not keep the process alive. Everything acknowledged is already durable.
const storeCloseTimeout = 10 * time.Second

func closeStore(st store.Store, log *slog.Logger) {
	done := make(chan error, 1)
	go func() { done <- st.Close() }()
	select {
	case err := <-done:
		if err != nil {
			log.Error("closing the store", "err", err)
		}
	case <-time.After(storeCloseTimeout):
		log.Error("the store did not close in time; exiting without waiting for it", "waited", storeCloseTimeout)
	}
}

// logCopyEnd writes the line of a pending copy that ended after its request was answered:
// INFO when it succeeded, WARN when it failed (a source that broke off is not Tabula's
// failure, but the copy's owner should hear of it).
func logCopyEnd(log *slog.Logger, e blob.CopyEnd) {
	attrs := []any{"service", "blob", "account", e.Path.Account, "resource", e.Path.Container + "/" + e.Path.Name, "copy_id", e.ID, "copy_status", e.Status}
	if e.Status == "success" {
		log.Info("copy ended", append(attrs, "bytes", e.Bytes)...)
		return
	}
	log.Warn("copy ended", append(attrs, "copy_status_description", e.Description)...)
}

// copyStopTimeout bounds the wait at shutdown for the pending copies to record that they
// stopped.
const copyStopTimeout = 5 * time.Second

// stopCopies stops the Blob service's pending copies before the store closes: each records
// that it failed, rather than waiting for its beat to go stale.
func stopCopies(blobs *blob.Service) {
	ctx, cancel := context.WithTimeout(context.Background(), copyStopTimeout)
	defer cancel()
	blobs.StopCopies(ctx)
}

// blobCollectInterval is how often the Blob service reclaims what deletions and overwrites
// left (after its grace); orphanSweepInterval how often it looks for the objects of uploads
// a crash cut short.
//
// In memory, bytes a deletion or overwrite left wait inMemoryBlobGrace rather than the
// service's ten minutes: under the Go SDK's blob suite, whose tests write and delete blocks
// of gigabytes, ten minutes of them held 11.6 GB while the suite's own process needed 12 GB
// more, and the kernel killed one of the two. The price: a download of a blob deleted or
// overwritten meanwhile that lasts longer than a minute may be cut short.
const (
	blobCollectInterval     = time.Minute
	orphanSweepInterval     = 6 * time.Hour
	inMemoryBlobGrace       = time.Minute
	inMemoryCollectInterval = 15 * time.Second
)

// collectBlobs runs the Blob service's reclamation, every interval, until ctx is done.
func collectBlobs(ctx context.Context, svc *blob.Service, interval time.Duration, log *slog.Logger) {
	go svc.RunCollector(ctx, interval, func(err error) { log.Error("reclaiming blob storage", "err", err) })
	tick := time.NewTicker(orphanSweepInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n, err := svc.SweepOrphans(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Error("sweeping objects of interrupted uploads", "err", err)
		case n > 0:
			log.Info("swept objects of interrupted uploads", "count", n)
		}
	}
}

// Deleted tables are swept (see table.Service.SweepDeletedTables) every sweepInterval, once
// they were deleted sweepGrace ago: far longer than any request takes, so that a write that
// raced the deletion has landed by then.
const (
	sweepInterval = 5 * time.Minute
	sweepGrace    = 10 * time.Minute
)

// sweepDeletedTables sweeps until ctx is done.
func sweepDeletedTables(ctx context.Context, svc *table.Service, log *slog.Logger) {
	tick := time.NewTicker(sweepInterval)
	defer tick.Stop()
	for {
		n, err := svc.SweepDeletedTables(ctx, sweepGrace)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Error("sweeping deleted tables", "err", err)
		case n > 0:
			log.Info("swept deleted tables", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
