package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tabula-dev/tabula/internal/store"
)

// migrations[i] takes the schema from version i to version i+1, inside the transaction that
// migrate holds. Append only: a released migration never changes, since databases out there
// have already run it.
var migrations = []func(ctx context.Context, tx pgx.Tx) error{
	// Version 1: one table of records whose primary key is the contract's key order. The key
	// components are bytea, compared bytewise (memcmp, then length) as the contract requires,
	// whatever the database's collation. Every Azure partition is one contiguous range of the
	// primary key index: point reads are index lookups, partition and range scans index range
	// scans. (PostgreSQL stores rows in a heap beside that index; CockroachDB stores them in
	// the primary index itself, which is Azure's own layout.)
	execMigration(`CREATE TABLE tabula_records (
		space         bytea NOT NULL,
		partition_key bytea NOT NULL,
		row_key       bytea NOT NULL,
		version       int8  NOT NULL,
		value         bytea NOT NULL,
		PRIMARY KEY (space, partition_key, row_key)
	)`),
	// Version 2: objects (objects.go). tabula_objects has a row per object, and per PutObject
	// in progress or abandoned (size NULL until the object is complete); tabula_object_chunks
	// holds the bytes in rows of up to objectChunkBytes, keyed by the object and the offset of
	// the chunk's first byte, so that a range read is an index lookup of the chunk holding its
	// first byte, then a range scan.
	execMigration(`CREATE TABLE tabula_objects (
		id   bytea PRIMARY KEY,
		size int8
	);
	CREATE TABLE tabula_object_chunks (
		id   bytea NOT NULL,
		off  int8  NOT NULL,
		data bytea NOT NULL,
		PRIMARY KEY (id, off)
	)`),
	// Version 3: the records' primary key becomes (key_head, key_hash) (see keys.go), because
	// a btree entry cannot hold every key Azure accepts: PartitionKey and RowKey of 450 CJK
	// characters each already exceeded it. The existing rows get their columns computed here.
	keyHeadMigration,
}

// execMigration is a migration made of SQL statements alone.
func execMigration(statements ...string) func(context.Context, pgx.Tx) error {
	return func(ctx context.Context, tx pgx.Tx) error {
		for _, sql := range statements {
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
		}
		return nil
	}
}

// keyHeadMigration adds key_head and key_hash, fills them in pages of rows read in key
// order, and makes them the primary key.
func keyHeadMigration(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `ALTER TABLE tabula_records ADD COLUMN key_head bytea, ADD COLUMN key_hash bytea`); err != nil {
		return err
	}
	const page = 1000
	var last *store.Key
	for {
		sql := `SELECT space, partition_key, row_key FROM tabula_records ORDER BY space, partition_key, row_key LIMIT $1`
		args := []any{page}
		if last != nil {
			sql = `SELECT space, partition_key, row_key FROM tabula_records
				WHERE (space, partition_key, row_key) > ($2, $3, $4) ORDER BY space, partition_key, row_key LIMIT $1`
			args = append(args, bytea(last.Space), bytea(last.Partition), bytea(last.Row))
		}
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Key, error) {
			var space, partition, rowKey []byte
			err := row.Scan(&space, &partition, &rowKey)
			return store.Key{Space: string(space), Partition: string(partition), Row: string(rowKey)}, err
		})
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			break
		}
		b := &pgx.Batch{}
		for _, k := range keys {
			head, hash := keyColumns(k)
			b.Queue(`UPDATE tabula_records SET key_head = $1, key_hash = $2 WHERE space = $3 AND partition_key = $4 AND row_key = $5`,
				head, hash, bytea(k.Space), bytea(k.Partition), bytea(k.Row))
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if len(keys) < page {
			break
		}
		last = &keys[len(keys)-1]
	}
	return execMigration(
		`ALTER TABLE tabula_records ALTER COLUMN key_head SET NOT NULL, ALTER COLUMN key_hash SET NOT NULL`,
		`ALTER TABLE tabula_records DROP CONSTRAINT tabula_records_pkey, ADD CONSTRAINT tabula_records_pkey PRIMARY KEY (key_head, key_hash)`,
	)(ctx, tx)
}

// schemaVersion is the version of the database schema this build of Tabula creates and
// works on.
var schemaVersion = len(migrations)

// migrate brings the schema to schemaVersion, creating it in an empty database. It refuses a
// database whose schema is newer than schemaVersion: an older Tabula must not write records
// in a layout it does not know.
//
// Several Tabula processes may start at once. The version row is locked (FOR UPDATE) while
// migrations run, so one process migrates and the others then find nothing to do; DDL is
// transactional in PostgreSQL, so a failed migration leaves the previous version whole.
func migrate(ctx context.Context, conn *pgx.Conn) error {
	// Two processes creating the table at once can collide on the catalog's unique indexes
	// even with IF NOT EXISTS; the loser's statement fails and succeeds when repeated.
	var err error
	for range 5 {
		_, err = conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS tabula_schema (
			id      int8 PRIMARY KEY CHECK (id = 1),
			version int8 NOT NULL
		)`)
		if code := sqlState(err); code != uniqueViolation && code != duplicateTable && code != duplicateObject {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("create tabula_schema: %w", err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO tabula_schema (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`); err != nil {
		return fmt.Errorf("initialise tabula_schema: %w", err)
	}

	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var version int
	if err := tx.QueryRow(ctx, `SELECT version FROM tabula_schema WHERE id = 1 FOR UPDATE`).Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if version > schemaVersion {
		return &SchemaTooNewError{Found: version, Known: schemaVersion}
	}
	for v := version; v < schemaVersion; v++ {
		if err := migrations[v](ctx, tx); err != nil {
			return fmt.Errorf("migrate schema from version %d to %d: %w", v, v+1, err)
		}
	}
	if version < schemaVersion {
		if _, err := tx.Exec(ctx, `UPDATE tabula_schema SET version = $1 WHERE id = 1`, schemaVersion); err != nil {
			return fmt.Errorf("record schema version: %w", err)
		}
	}
	return tx.Commit(ctx)
}

// SchemaTooNewError is returned by Open for a database whose schema a newer Tabula created.
type SchemaTooNewError struct {
	Found, Known int
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("database schema version %d is newer than this Tabula knows (up to %d): upgrade Tabula, or point it at another database", e.Found, e.Known)
}
