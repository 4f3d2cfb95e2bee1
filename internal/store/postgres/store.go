// Package postgres is Tabula's PostgreSQL storage backend: the store.Store contract on one
// database that any number of Tabula processes (front-ends) share. The database provides
// durability and replication; the front-ends keep no state.
//
// Layout (schema.go, keys.go): one table, tabula_records, holding each record's key in bytea
// columns (space, partition_key, row_key), compared bytewise whatever the collation, under
// a primary key (key_head, key_hash) that orders records as the contract does and fits a
// btree entry however long the key. Tabula creates and migrates the schema itself and
// refuses a database whose schema is newer than it knows.
//
// Reads: Get is one primary-key lookup. Scan reads one snapshot (a REPEATABLE READ, READ
// ONLY transaction) in pages of pageRows rows, each page one index range scan resuming after
// the last key of the previous one, so that memory stays bounded by a page.
//
// Commits: one READ COMMITTED transaction that first locks the rows its conditions read
// (SELECT … FOR UPDATE, in key order), checks the conditions, then writes. A row that does not
// exist cannot be locked, so a mutation expecting a key absent inserts it with a plain INSERT:
// a concurrent insert of the same key makes one of the two fail with a unique violation, and
// that commit starts over (and then finds the row). Every other transaction touching the rows
// waits for the lock, so conditions are checked and applied as one step across processes.
// Deadlocks, serialization failures and those insert races are retried up to maxAttempts
// times. A commit is two round trips (BEGIN and the locking reads; the writes and COMMIT),
// or one when its only conditions expect keys absent: the INSERTs check those by themselves,
// and only when one fails are the rows locked and read to report which.
//
// Errors: a database that cannot be reached — connection refused, a connection lost, a server
// shutting down or starting — is reported wrapping store.ErrUnavailable, after one retry on a
// fresh connection (the first call after a database restart meets a dead pooled connection).
// Nothing was applied then (DeleteSpace aside, which is idempotent). The one exception is a
// connection lost after COMMIT was sent: the commit may or may not have been applied, and
// Commit says so with an error that does not wrap ErrUnavailable. When the database comes back, calls succeed again: connections are opened
// as needed and idle ones are checked before reuse.
//
// CockroachDB speaks the same protocol and accepts this SQL; nothing here uses PL/pgSQL,
// advisory locks or LISTEN. Differences there: transactions run SERIALIZABLE unless READ
// COMMITTED is enabled on the cluster (correct either way, with more retried 40001 errors);
// its primary key is clustered (rows live in key order, Azure's own layout); a very large
// DeleteSpace may exceed its transaction size limits; and it reports a commit of unknown
// outcome as SQLSTATE 40003, which Commit reports like a lost COMMIT. Scans of more than
// one page run in a read-only transaction that CockroachDB may ask to retry (40001) after
// records have been handed to the callback; such a Scan fails rather than repeat records.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tabula-dev/tabula/internal/store"
)

// Options configures Open. The zero value is ready to use.
type Options struct {
	// MaxConns bounds the connections doing work at once; 0 means 16. A Scan's connection is
	// not counted while the Scan's callback runs (the callback may call the store and needs
	// connections of its own), so a process may have more connections open than MaxConns
	// while many Scans are in callbacks at once. The database's max_connections must allow
	// for every Tabula process sharing it.
	MaxConns int
	// StartupWait is how long Open waits for a database it cannot reach, trying again with
	// growing pauses and logging each attempt; 0 fails at once.
	StartupWait time.Duration
	// Logger receives the store's log lines: each attempt to reach the database at start-up,
	// and once each when the database becomes unreachable and when it is back. nil means
	// slog.Default().
	Logger *slog.Logger
}

// Store is a store.Store on a PostgreSQL database. It is safe for concurrent use, and any
// number of Stores, in any number of processes, may share one database.
type Store struct {
	pool     *pool
	pageRows int // rows per Scan page; tests lower it to exercise paging
	log      *slog.Logger
	where    string // the database's host and name, for the log
	// outageSince is when the database was first found unreachable, in Unix nanoseconds,
	// or 0 while it is reachable: an outage is logged once when it begins and once when it
	// ends, not once per call.
	outageSince atomic.Int64
	serving     atomic.Bool // set once Open has succeeded
	// commits and mutations count the commits this front-end applied and their records
	// (metrics.go).
	commits, mutations atomic.Uint64

	guard store.CloseGuard
}

var _ store.Store = (*Store)(nil)

const (
	defaultMaxConns = 16
	// defaultConnectTimeout applies when the DSN sets no connect_timeout: an unreachable
	// database should be reported well before a client gives up on its request.
	defaultConnectTimeout = 5 * time.Second
	// defaultPageRows is one more than Azure's page size: the service reads one record past
	// a full page of 1000 to know where the next page starts, and that should not take a
	// second round trip and a second page of 1000.
	defaultPageRows = 1001
	// maxAttempts bounds the attempts of a call that meets deadlocks, serialization failures
	// or insert races. Only sustained contention on the same rows exhausts it.
	maxAttempts = 10
	// cancelGrace is how long a commit whose context ends while its COMMIT is in flight waits
	// for the server to answer the cancel request (see contextWatcher).
	cancelGrace = 10 * time.Second
)

// Open connects to the database at dsn (a postgres:// URL or a key=value string, as libpq
// accepts) and creates or migrates Tabula's schema. It fails with *SchemaTooNewError if a
// newer Tabula has migrated the database, and with an error wrapping store.ErrUnavailable
// if the database cannot be reached within opts.StartupWait (or ctx ends first).
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	config, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	if config.ConnectTimeout == 0 {
		config.ConnectTimeout = defaultConnectTimeout
	}
	if _, ok := config.RuntimeParams["application_name"]; !ok {
		config.RuntimeParams["application_name"] = "tabula"
	}
	config.BuildContextWatcherHandler = newContextWatcher
	maxConns := opts.MaxConns
	if maxConns <= 0 {
		maxConns = defaultMaxConns
	}
	s := &Store{pool: newPool(config, maxConns), pageRows: defaultPageRows, log: opts.Logger,
		where: fmt.Sprintf("%s:%d/%s", config.Host, config.Port, config.Database)}
	if s.log == nil {
		s.log = slog.Default()
	}
	// An unreachable database is tried again, after pauses growing from a quarter of a
	// second to five, until StartupWait has passed.
	start := time.Now()
	deadline := start.Add(opts.StartupWait)
	pause := 250 * time.Millisecond
	attempt := 1
	for ; ; attempt++ {
		err = s.retry(ctx, "open", func() error {
			return s.withConn(ctx, func(conn *pgx.Conn) error { return migrate(ctx, conn) })
		})
		if err == nil || !errors.Is(err, store.ErrUnavailable) || !time.Now().Before(deadline) {
			break
		}
		s.log.Warn("waiting for PostgreSQL", "database", s.where, "attempt", attempt,
			"waited", time.Since(start).Round(time.Millisecond).String(), "gives_up_after", opts.StartupWait.String(), "err", err.Error())
		select {
		case <-time.After(min(pause, time.Until(deadline))):
		case <-ctx.Done():
			err = ctx.Err()
		}
		if ctx.Err() != nil {
			break
		}
		pause = min(2*pause, 5*time.Second)
	}
	if err != nil {
		s.pool.close()
		return nil, err
	}
	if attempt > 1 {
		s.log.Info("PostgreSQL is reachable", "database", s.where, "waited", time.Since(start).Round(time.Millisecond).String())
	}
	s.serving.Store(true)
	return s, nil
}

// unreachable records that the database could not be reached, logging it if that begins an
// outage. (While Open waits for the database, it logs its attempts itself.)
func (s *Store) unreachable(err error) {
	if s.serving.Load() && s.outageSince.CompareAndSwap(0, time.Now().UnixNano()) {
		s.log.Error("PostgreSQL is unreachable: answering 503 ServerBusy until it is back", "database", s.where, "err", err.Error())
	}
}

// reachable records that a call reached the database, logging the end of an outage.
func (s *Store) reachable() {
	if s.outageSince.Load() == 0 {
		return
	}
	if since := s.outageSince.Swap(0); since != 0 {
		s.log.Info("PostgreSQL is reachable again", "database", s.where, "outage", time.Since(time.Unix(0, since)).Round(time.Millisecond).String())
	}
}

// The statements. Keys are addressed through the primary key (key_head, key_hash) (see
// keys.go): equality for a point, a range of key_head for a scan, so that the planner turns
// each into an index lookup or an index range scan (see the package's tests for the plans);
// a range scan then keeps, by the full key in row values, only the records in its range,
// and orders them by key_head and then the full key, which is the key order.
const (
	sqlGet    = `SELECT version, value FROM tabula_records WHERE key_head = $1 AND key_hash = $2`
	sqlLock   = sqlGet + ` FOR UPDATE`
	sqlInsert = `INSERT INTO tabula_records (key_head, key_hash, space, partition_key, row_key, version, value) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	sqlUpsert = sqlInsert + ` ON CONFLICT (key_head, key_hash) DO UPDATE SET version = excluded.version, value = excluded.value`
	sqlDelete = `DELETE FROM tabula_records WHERE key_head = $1 AND key_hash = $2`

	// sqlDeleteSpace deletes the records of space $3, whose key_heads lie in [$1, $2].
	sqlDeleteSpace = `DELETE FROM tabula_records WHERE key_head >= $1 AND key_head <= $2 AND space = $3`

	// sqlScanFrom reads the first page of [($3,$4,$5), ($6,$7,$8)), whose key_heads lie in
	// [$1, $2]; sqlScanAfter the next page, after the last key read.
	sqlScanFrom = `SELECT partition_key, row_key, version, value FROM tabula_records
		WHERE key_head >= $1 AND key_head <= $2
		AND (space, partition_key, row_key) >= ($3, $4, $5) AND (space, partition_key, row_key) < ($6, $7, $8)
		ORDER BY key_head, space, partition_key, row_key LIMIT $9`
	sqlScanAfter = `SELECT partition_key, row_key, version, value FROM tabula_records
		WHERE key_head >= $1 AND key_head <= $2
		AND (space, partition_key, row_key) > ($3, $4, $5) AND (space, partition_key, row_key) < ($6, $7, $8)
		ORDER BY key_head, space, partition_key, row_key LIMIT $9`

	sqlBeginCommit = `BEGIN ISOLATION LEVEL READ COMMITTED`
	sqlBeginScan   = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`
)

// keyArgs returns the parameters addressing k in sqlGet, sqlLock and sqlDelete.
func keyArgs(k store.Key) []any {
	head, hash := keyColumns(k)
	return []any{head, hash}
}

// bytea returns s as a bytea parameter. pgx sends a nil []byte as NULL, and the key and value
// columns are NOT NULL, so the empty string is sent as a non-nil empty slice.
func bytea(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return []byte(s)
}

// enter registers an in-flight call, or reports ErrClosed. Every enter is paired with exit.

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key store.Key) (store.Record, error) {
	if err := s.guard.Enter(ctx); err != nil {
		return store.Record{}, err
	}
	defer s.guard.Exit()
	rec := store.Record{Key: key}
	err := s.retry(ctx, "get", func() error {
		return s.withConn(ctx, func(conn *pgx.Conn) error {
			err := conn.QueryRow(ctx, sqlGet, keyArgs(key)...).Scan(&rec.Version, &rec.Value)
			if errors.Is(err, pgx.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		})
	})
	if err != nil {
		return store.Record{}, err
	}
	return rec, nil
}

// Scan implements store.Store. A range whose Start or End lies in another space is rejected
// with an error.
//
// A range that fits in one page is read in one round trip, and its transaction ends and its
// connection goes back to the pool before fn is called; the first page holds r.Limit records
// when that is fewer. A longer one keeps its connection (and transaction) until
// the range is exhausted or fn stops, so fn runs while a connection is held; it is not
// counted against Options.MaxConns meanwhile, so fn may call the store (see pool.park). A
// connection lost after the first page ends the Scan with an error wrapping
// store.ErrUnavailable: the snapshot cannot be resumed elsewhere.
func (s *Store) Scan(ctx context.Context, r store.Range, fn func(store.Record) (bool, error)) error {
	if err := s.guard.Enter(ctx); err != nil {
		return err
	}
	defer s.guard.Exit()
	if r.Start.Space != r.Space || (!r.EndUnbounded && r.End.Space != r.Space) {
		return fmt.Errorf("postgres store: range bounds %v, %v outside space %q", r.Start, r.End, r.Space)
	}
	end := r.End
	if r.EndUnbounded {
		// The smallest key after every key of the space.
		end = store.Key{Space: r.Space + "\x00"}
	}
	if r.Start.Compare(end) >= 0 {
		return nil
	}

	// conn holds the snapshot's transaction while pages remain to be read.
	var conn *pgx.Conn
	var page []store.Record
	firstRows := s.pageRows
	if r.Limit > 0 && r.Limit < firstRows {
		firstRows = r.Limit
	}
	err := s.retry(ctx, "scan", func() error {
		c, err := s.pool.acquire(ctx)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(sqlBeginScan)
		s.queuePage(b, sqlScanFrom, r.Space, r.Start, end, firstRows, &page)
		err = c.SendBatch(ctx, b).Close()
		if err == nil && len(page) == firstRows {
			conn = c
			return nil
		}
		if err != nil && c.IsClosed() {
			err = &connLostError{err}
		}
		s.pool.release(c) // ends the transaction
		return err
	})
	if err != nil {
		return err
	}
	for {
		more, err := s.emit(ctx, conn, page, fn)
		if err != nil || !more || conn == nil {
			if conn != nil {
				s.pool.release(conn)
			}
			return err
		}
		from := page[len(page)-1].Key
		b := &pgx.Batch{}
		s.queuePage(b, sqlScanAfter, r.Space, from, end, s.pageRows, &page)
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			lost := conn.IsClosed()
			s.pool.release(conn)
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case lost || unavailable(err):
				s.unreachable(err)
				return fmt.Errorf("postgres store: scan: %w: %w", store.ErrUnavailable, err)
			}
			return fmt.Errorf("postgres store: scan: %w", err)
		}
		if len(page) < s.pageRows {
			s.pool.release(conn)
			conn = nil
		}
	}
}

// queuePage queues the query of one page of at most limit records of space, from from
// (included by sqlScanFrom, excluded by sqlScanAfter) to end (excluded), to be stored in
// *page when the batch is closed.
func (s *Store) queuePage(b *pgx.Batch, sql, space string, from, end store.Key, limit int, page *[]store.Record) {
	b.Queue(sql, keyHead(from), keyHead(end), bytea(from.Space), bytea(from.Partition), bytea(from.Row),
		bytea(end.Space), bytea(end.Partition), bytea(end.Row), limit,
	).Query(func(rows pgx.Rows) error {
		*page = (*page)[:0]
		// Rows of one partition follow each other: keep its string rather than allocate
		// it again for every row.
		var partition, row pgtype.DriverBytes
		var lastPartition string
		for rows.Next() {
			rec := store.Record{Key: store.Key{Space: space}}
			if err := rows.Scan(&partition, &row, &rec.Version, &rec.Value); err != nil {
				return err
			}
			if string(partition) != lastPartition {
				lastPartition = string(partition)
			}
			rec.Key.Partition, rec.Key.Row = lastPartition, string(row)
			*page = append(*page, rec)
		}
		return rows.Err()
	})
}

// emit calls fn for each record of page until fn stops, fails or ctx is done, and reports
// whether fn wants more. conn, if not nil, is the Scan's connection, parked meanwhile.
func (s *Store) emit(ctx context.Context, conn *pgx.Conn, page []store.Record, fn func(store.Record) (bool, error)) (bool, error) {
	if conn != nil {
		s.pool.park()
		defer s.pool.unpark()
	}
	done := ctx.Done()
	for _, rec := range page {
		select {
		case <-done:
			return false, ctx.Err()
		default:
		}
		if more, err := fn(rec); err != nil || !more {
			return false, err
		}
	}
	return true, nil
}

// Commit implements store.Store; the package comment describes the transaction. Mutations
// sharing a key are rejected with a plain error.
//
// If ctx ends once the final round trip (the writes and COMMIT) has been sent, the server is
// asked to cancel it, and Commit returns its answer: nil if the COMMIT won the race, else
// ctx.Err() with nothing applied. Only if the connection is lost then, or the server does not
// answer within cancelGrace, is the outcome unknown; Commit returns an error saying so, which
// does not wrap store.ErrUnavailable.
func (s *Store) Commit(ctx context.Context, mutations []store.Mutation) error {
	if err := s.guard.Enter(ctx); err != nil {
		return err
	}
	defer s.guard.Exit()
	if len(mutations) == 0 {
		return nil
	}
	for i, m := range mutations {
		if m.Expect.Kind > store.ExpectVersion {
			return fmt.Errorf("postgres store: mutation %d: unknown expect kind %d", i, m.Expect.Kind)
		}
	}
	// Rows are locked and written in key order, so that two commits over the same keys take
	// their locks in the same order instead of deadlocking.
	order := make([]int, len(mutations))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return mutations[a].Key.Compare(mutations[b].Key) })
	for k := 1; k < len(order); k++ {
		if a, b := order[k-1], order[k]; mutations[a].Key == mutations[b].Key {
			return fmt.Errorf("postgres store: mutations %d and %d share key %v", min(a, b), max(a, b), mutations[a].Key)
		}
	}
	err := s.retry(ctx, "commit", func() error {
		return s.withConn(ctx, func(conn *pgx.Conn) error { return commitOnce(ctx, conn, mutations, order) })
	})
	if err == nil {
		s.commits.Add(1)
		s.mutations.Add(uint64(len(mutations)))
	}
	return err
}

// errInsertRaced reports that an INSERT of a key expected absent met a row: one that existed
// already (commitOnce then reads it) or one inserted since the key was found absent (the
// commit is retried, and then finds the row).
var errInsertRaced = errors.New("postgres store: INSERT of a key expected absent met an existing row")

// commitOnce makes one attempt at committing mutations, whose indexes in key order are order.
func commitOnce(ctx context.Context, conn *pgx.Conn, mutations []store.Mutation, order []int) error {
	conditional := false
	for _, m := range mutations {
		switch m.Expect.Kind {
		case store.ExpectAnything:
		case store.ExpectAbsent:
			// An INSERT checks absence by itself; see below.
		default:
			conditional = true
		}
	}
	if !conditional {
		// Every condition, if any, expects its key absent: writing at once checks them all,
		// since the INSERT of a key that exists fails. That is one round trip, and the
		// common case (inserts that do not collide) ends there. Otherwise the keys are
		// locked and read to tell which condition failed, and with what.
		err := apply(ctx, conn, mutations, order, false)
		if !errors.Is(err, errInsertRaced) {
			return err
		}
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			return err
		}
	}
	if err := lockAndCheck(ctx, conn, mutations, order); err != nil {
		return err // the pool rolls back
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return apply(ctx, conn, mutations, order, true)
}

// lockAndCheck begins the transaction, locks the rows that the conditions of mutations read,
// in key order, and checks the conditions: it returns a *store.ConditionFailedError naming the
// lowest failing one, if any. Absent rows cannot be locked: apply's INSERTs keep them absent.
func lockAndCheck(ctx context.Context, conn *pgx.Conn, mutations []store.Mutation, order []int) error {
	found := make([]*store.Record, len(mutations))
	b := &pgx.Batch{}
	b.Queue(sqlBeginCommit)
	for _, i := range order {
		if mutations[i].Expect.Kind == store.ExpectAnything {
			continue
		}
		k := mutations[i].Key
		b.Queue(sqlLock, keyArgs(k)...).QueryRow(func(row pgx.Row) error {
			rec := store.Record{Key: k}
			switch err := row.Scan(&rec.Version, &rec.Value); {
			case errors.Is(err, pgx.ErrNoRows):
				return nil
			case err != nil:
				return err
			}
			found[i] = &rec
			return nil
		})
	}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	for i, m := range mutations {
		var version int64
		if found[i] != nil {
			version = found[i].Version
		}
		if !m.Expect.Holds(found[i] != nil, version) {
			return &store.ConditionFailedError{Index: i, Found: found[i]}
		}
	}
	return nil
}

// apply writes mutations in key order and commits, in one round trip, beginning the
// transaction unless inTx. A mutation expecting its key absent is a plain INSERT, which
// fails with errInsertRaced if the key exists (or a concurrent transaction inserts it and
// commits first); the transaction is then aborted and nothing applied.
func apply(ctx context.Context, conn *pgx.Conn, mutations []store.Mutation, order []int, inTx bool) error {
	b := &pgx.Batch{}
	if !inTx {
		b.Queue(sqlBeginCommit)
	}
	for _, i := range order {
		m := mutations[i]
		head, hash := keyColumns(m.Key)
		row := func(version int64, value []byte) []any {
			return []any{head, hash, bytea(m.Key.Space), bytea(m.Key.Partition), bytea(m.Key.Row), version, valueOf(value)}
		}
		switch {
		case m.Delete && m.Expect.Kind == store.ExpectAbsent:
			// Nothing to delete, but the key must stay absent until COMMIT: inserting and
			// deleting a row makes a concurrent insert of the key wait for this transaction,
			// as the lock of an existing row would.
			b.Queue(sqlInsert, row(0, nil)...)
			b.Queue(sqlDelete, head, hash)
		case m.Delete:
			b.Queue(sqlDelete, head, hash)
		case m.Expect.Kind == store.ExpectAbsent:
			b.Queue(sqlInsert, row(m.Version, m.Value)...)
		default:
			b.Queue(sqlUpsert, row(m.Version, m.Value)...)
		}
	}
	committed := false
	b.Queue("COMMIT").Exec(func(tag pgconn.CommandTag) error {
		// A COMMIT of a failed transaction answers ROLLBACK, without an error.
		committed = tag.String() == "COMMIT"
		return nil
	})
	err := conn.SendBatch(context.WithValue(ctx, finishing{}, true), b).Close()
	var pgErr *pgconn.PgError
	switch {
	case committed:
		return nil
	case err == nil:
		return errors.New("transaction rolled back at COMMIT")
	case errors.As(err, &pgErr):
		// The server answered a statement before COMMIT (or COMMIT itself) with an error, a
		// cancelled one included, so it aborted the transaction (or the session) there:
		// nothing was applied.
		switch pgErr.Code {
		case uniqueViolation:
			return errInsertRaced
		case statementCompletionUnknown:
			return &inDoubtError{err} // CockroachDB's ambiguous commit
		}
		return err
	case pgconn.SafeToRetry(err):
		return err // nothing was sent
	default:
		return &inDoubtError{err}
	}
}

// finishing marks the context of a commit's final round trip, for contextWatcher.
type finishing struct{}

// contextWatcher decides what an ended context does to the statement in flight on a
// connection. Usually the connection's socket gets a deadline at once: the call returns
// immediately and the connection is discarded. During a commit's final round trip (its
// context marked with finishing) the server is sent a cancel request instead, and its answer
// awaited for up to cancelGrace: the server then either completes the COMMIT or rolls the
// transaction back, and Commit can tell which.
type contextWatcher struct {
	deadline pgconn.DeadlineContextWatcherHandler
	cancel   pgconn.CancelRequestContextWatcherHandler
	active   ctxwatch.Handler
}

func newContextWatcher(conn *pgconn.PgConn) ctxwatch.Handler {
	return &contextWatcher{
		deadline: pgconn.DeadlineContextWatcherHandler{Conn: conn.Conn()},
		cancel:   pgconn.CancelRequestContextWatcherHandler{Conn: conn, DeadlineDelay: cancelGrace},
	}
}

func (w *contextWatcher) HandleCancel(ctx context.Context) {
	w.active = &w.deadline
	if ctx.Value(finishing{}) != nil {
		w.active = &w.cancel
	}
	w.active.HandleCancel(ctx)
}

func (w *contextWatcher) HandleUnwatchAfterCancel() { w.active.HandleUnwatchAfterCancel() }

// valueOf returns v as a bytea parameter that is never NULL.
func valueOf(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

// DeleteSpace implements store.Store with one DELETE, atomic for readers like any
// transaction. It takes time proportional to the size of the space. An error wrapping
// store.ErrUnavailable may come after the deletion was applied; repeating it is harmless.
func (s *Store) DeleteSpace(ctx context.Context, space string) error {
	if err := s.guard.Enter(ctx); err != nil {
		return err
	}
	defer s.guard.Exit()
	return s.retry(ctx, "delete space", func() error {
		return s.withConn(ctx, func(conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, sqlDeleteSpace, keyHead(store.Key{Space: space}), keyHead(store.Key{Space: space + "\x00"}), bytea(space))
			return err
		})
	})
}

// Close waits for in-flight calls to return, then closes the connections. Calls made once
// Close has begun, including Close, return store.ErrClosed.
func (s *Store) Close() error {
	if err := s.guard.Close(); err != nil {
		return err
	}
	s.pool.close()
	return nil
}

// withConn calls fn with a pooled connection. An error from fn that left the connection
// closed is returned as a *connLostError.
func (s *Store) withConn(ctx context.Context, fn func(*pgx.Conn) error) error {
	conn, err := s.pool.acquire(ctx)
	if err != nil {
		return err
	}
	err = fn(conn)
	if err != nil && conn.IsClosed() {
		err = &connLostError{err}
	}
	s.pool.release(conn)
	return err
}

// retry runs attempt until it succeeds or fails for good, and turns its error into what the
// store returns: ctx.Err() once ctx is done; the contract's own errors as they are; errors
// meaning the database is unreachable wrapping store.ErrUnavailable, after one more attempt
// on a fresh connection; the others prefixed with "postgres store: " and what.
func (s *Store) retry(ctx context.Context, what string, attempt func() error) error {
	for n := 1; ; n++ {
		err := attempt()
		var cf *store.ConditionFailedError
		var doubt *inDoubtError
		switch {
		case err == nil:
			s.reachable()
			return nil
		case errors.Is(err, store.ErrNotFound), errors.As(err, &cf):
			s.reachable()
			return err
		case errors.As(err, &doubt):
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		case unavailable(err):
			s.pool.discardIdle()
			if n == 1 && !errors.As(err, new(*pgconn.ConnectError)) {
				continue // most likely a pooled connection the server closed
			}
			s.unreachable(err)
			return fmt.Errorf("postgres store: %s: %w: %w", what, store.ErrUnavailable, err)
		case refused(err):
			s.reachable()
			return fmt.Errorf("postgres store: %s: %w: %w", what, store.ErrRefused, err)
		case transient(err) && n < maxAttempts:
			// Jittered exponential backoff, so that the colliding transactions do not collide
			// again.
			select {
			case <-time.After(rand.N(time.Millisecond << min(n, 7))):
			case <-ctx.Done():
				return ctx.Err()
			}
		case transient(err):
			return fmt.Errorf("postgres store: %s: still conflicting after %d attempts: %w", what, n, err)
		default:
			return fmt.Errorf("postgres store: %s: %w", what, err)
		}
	}
}

// SQLSTATEs this package acts on.
const (
	uniqueViolation      = "23505"
	serializationFailure = "40001"
	deadlockDetected     = "40P01"
	// statementCompletionUnknown is CockroachDB's "result is ambiguous".
	statementCompletionUnknown = "40003"
	duplicateTable             = "42P07"
	// duplicateObject is what a concurrent CREATE TABLE IF NOT EXISTS can also lose with: the
	// table's row type collides in pg_type ("type ... already exists").
	duplicateObject = "42710"
)

func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// transient reports whether err is worth a new attempt of the whole transaction.
func transient(err error) bool {
	code := sqlState(err)
	return code == serializationFailure || code == deadlockDetected || errors.Is(err, errInsertRaced)
}

// refused reports whether err is the database's answer to a statement it will never accept,
// however often it is repeated: a data exception (class 22: a value it cannot hold), an
// integrity constraint other than the unique key Commit handles (23), a program limit
// exceeded (54: an index entry too large), a feature it does not support (0A), or a missing
// table or privilege (42). Resources (53), operator intervention (57), and system or internal
// errors (58, XX) may clear, and are not among them.
func refused(err error) bool {
	code := sqlState(err)
	if len(code) != 5 || code == uniqueViolation {
		return false
	}
	switch code[:2] {
	case "0A", "22", "23", "42", "54":
		return true
	}
	return false
}

// unavailable reports whether err means the database cannot be reached or cannot serve:
// a failed dial, a lost connection, or the server saying it is shutting down, starting up or
// unreachable (SQLSTATE class 08, and 57P01–57P03).
func unavailable(err error) bool {
	if errors.As(err, new(*pgconn.ConnectError)) || errors.As(err, new(*connLostError)) {
		return true
	}
	switch code := sqlState(err); {
	case len(code) == 5 && code[:2] == "08":
		return true
	case code == "57P01", code == "57P02", code == "57P03":
		return true
	}
	return false
}

// connLostError wraps an error after which the connection was closed.
type connLostError struct{ err error }

func (e *connLostError) Error() string { return "connection lost: " + e.err.Error() }
func (e *connLostError) Unwrap() error { return e.err }

// inDoubtError reports a connection lost after COMMIT was sent: the commit may have been
// applied or not. It deliberately does not wrap store.ErrUnavailable, which promises that
// nothing was applied.
type inDoubtError struct{ err error }

func (e *inDoubtError) Error() string {
	return "postgres store: commit: connection lost after COMMIT was sent, so whether the commit was applied is unknown: " + e.err.Error()
}
func (e *inDoubtError) Unwrap() error { return e.err }
