package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrations[i] takes the schema from version i to version i+1. Append only: a released
// migration never changes, since databases out there have already run it.
//
// Version 1: one table of records whose primary key is the contract's key order. The key
// components are bytea, compared bytewise (memcmp, then length) as the contract requires,
// whatever the database's collation. Every Azure partition is one contiguous range of the
// primary key index: point reads are index lookups, partition and range scans index range
// scans. (PostgreSQL stores rows in a heap beside that index; CockroachDB stores them in
// the primary index itself, which is Azure's own layout.)
//
// Version 2: objects (objects.go). tabula_objects has a row per object, and per PutObject in
// progress or abandoned (size NULL until the object is complete); tabula_object_chunks holds
// the bytes in rows of up to objectChunkBytes, keyed by the object and the offset of the
// chunk's first byte, so that a range read is an index lookup of the chunk holding its first
// byte, then a range scan.
var migrations = []string{
	`CREATE TABLE tabula_records (
		space         bytea NOT NULL,
		partition_key bytea NOT NULL,
		row_key       bytea NOT NULL,
		version       int8  NOT NULL,
		value         bytea NOT NULL,
		PRIMARY KEY (space, partition_key, row_key)
	)`,
	`CREATE TABLE tabula_objects (
		id   bytea PRIMARY KEY,
		size int8
	);
	CREATE TABLE tabula_object_chunks (
		id   bytea NOT NULL,
		off  int8  NOT NULL,
		data bytea NOT NULL,
		PRIMARY KEY (id, off)
	)`,
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
		if _, err := tx.Exec(ctx, migrations[v]); err != nil {
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
