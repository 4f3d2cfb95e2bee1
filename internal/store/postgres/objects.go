package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tabula-dev/tabula/internal/store"
)

// Objects live in two tables (schema.go, version 2): a row in tabula_objects per object, whose
// size stays NULL until the object is complete, and its bytes in tabula_object_chunks, in rows
// of objectChunkBytes. A PutObject holds one chunk in memory and commits each chunk as it
// comes, in its own short transaction, so that a slow client holds no transaction and no
// connection between chunks, and no transaction grows with the object (CockroachDB limits
// their size). Setting the size commits the object; only then can ReadObject find it.
//
// Each chunk is inserted only while the object's row is there and incomplete, with that row
// locked (FOR SHARE) until the chunk commits: a DeleteObjects sweeping an abandoned PutObject
// waits for the chunk and deletes it too, and the PutObject's next chunk then fails. So no
// chunk is ever left without a row that ScanObjects reports.
//
// A reader fetches one chunk at a time, on a pooled connection per fetch.
//
// CockroachDB runs this SQL too (INSERT … SELECT … FOR SHARE, ON CONFLICT, substr of bytes,
// = ANY of an array), untested here. Under its default SERIALIZABLE isolation the chunk
// insert reads the object's row, so a concurrent deletion of the row makes one of the two
// transactions retry (40001, which retry handles) even where FOR SHARE takes no lock; and
// as every transaction here touches at most one chunk (or the rows and chunks of the objects
// deleted at once), none approaches its transaction size limits.
//
// On PostgreSQL each 1 MiB chunk is stored out of line (TOAST), in about 500 rows of its
// own; a single PutObject measured 15–20 MB/s on a loaded 2-core machine, the database's
// work and not the client's.

// objectChunkBytes is the size of a chunk row: large enough that a chunk costs one round
// trip per MiB, small enough that a chunk in flight is cheap to hold per request.
const objectChunkBytes = 1 << 20

const (
	sqlObjectBegin = `INSERT INTO tabula_objects (id, size) VALUES ($1, NULL) ON CONFLICT (id) DO NOTHING`
	// sqlObjectWhole inserts an object of at most one chunk, already complete.
	sqlObjectWhole = `INSERT INTO tabula_objects (id, size) VALUES ($1, $2)`
	// sqlChunkPut inserts a chunk of an incomplete object, or nothing if it is gone. A retry
	// of a chunk that was committed after all finds it and rewrites the same bytes.
	sqlChunkPut = `INSERT INTO tabula_object_chunks (id, off, data)
		SELECT id, $2, $3 FROM tabula_objects WHERE id = $1 AND size IS NULL FOR SHARE
		ON CONFLICT (id, off) DO UPDATE SET data = excluded.data`
	sqlChunkPutWhole = `INSERT INTO tabula_object_chunks (id, off, data) VALUES ($1, $2, $3)`
	// sqlObjectDone completes the object; a retry after an answer lost finds it complete.
	sqlObjectDone = `UPDATE tabula_objects SET size = $2 WHERE id = $1 AND (size IS NULL OR size = $2)`

	sqlObjectSize = `SELECT size FROM tabula_objects WHERE id = $1`
	// sqlChunkRead returns the part of the chunk holding byte $2 that starts there, at most
	// $3 bytes of it.
	sqlChunkRead = `SELECT substr(data, ($2 - off + 1)::int4, $3::int4) FROM tabula_object_chunks
		WHERE id = $1 AND off <= $2 ORDER BY off DESC LIMIT 1`

	sqlObjectsDelete = `DELETE FROM tabula_objects WHERE id = ANY($1)`
	sqlChunksDelete  = `DELETE FROM tabula_object_chunks WHERE id = ANY($1)`

	// sqlObjectsScan reads a page of the objects begun before $1 and after $2 (by id), with
	// the bytes stored so far as the size of the incomplete ones.
	sqlObjectsScan = `SELECT o.id, COALESCE(o.size,
			(SELECT COALESCE(sum(length(c.data)), 0)::int8 FROM tabula_object_chunks c WHERE c.id = o.id))
		FROM tabula_objects o WHERE o.id < $1 AND o.id > $2 ORDER BY o.id LIMIT $3`
)

var chunkBuffers = sync.Pool{New: func() any { return new([objectChunkBytes]byte) }}

// errObjectSwept reports a PutObject whose row was deleted (by a sweeper) while it ran.
var errObjectSwept = errors.New("the object was deleted while being written")

// PutObject implements store.Objects. A failed attempt deletes what it wrote unless that
// fails too.
func (s *Store) PutObject(ctx context.Context, r io.Reader) (id string, size int64, err error) {
	if err := s.guard.Enter(ctx); err != nil {
		return "", 0, err
	}
	defer s.guard.Exit()
	id = store.NewObjectID(time.Now())
	key := []byte(id)
	buf := chunkBuffers.Get().(*[objectChunkBytes]byte)
	defer chunkBuffers.Put(buf)

	begun := false
	defer func() {
		if err != nil && begun {
			cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			s.deleteObjects(cleanup, [][]byte{key})
		}
	}()
	for {
		n, rerr := io.ReadFull(r, buf[:])
		last := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
		if rerr != nil && !last {
			return "", 0, rerr
		}
		if err := ctx.Err(); err != nil {
			return "", 0, err
		}
		chunk := buf[:n]
		switch {
		case !begun && last:
			// The whole object is one chunk: one transaction.
			err = s.retry(ctx, "put object", func() error {
				return s.withConn(ctx, func(conn *pgx.Conn) error {
					b := &pgx.Batch{}
					b.Queue(sqlBeginCommit)
					b.Queue(sqlObjectWhole, key, int64(n))
					if n > 0 {
						b.Queue(sqlChunkPutWhole, key, int64(0), chunk)
					}
					b.Queue("COMMIT")
					return conn.SendBatch(ctx, b).Close()
				})
			})
			if err != nil {
				return "", 0, err
			}
			return id, int64(n), nil
		case !begun:
			begun = true
			err = s.retry(ctx, "put object", func() error {
				return s.withConn(ctx, func(conn *pgx.Conn) error {
					b := &pgx.Batch{}
					b.Queue(sqlBeginCommit)
					b.Queue(sqlObjectBegin, key)
					b.Queue(sqlChunkPut, key, size, chunk)
					b.Queue("COMMIT")
					return conn.SendBatch(ctx, b).Close()
				})
			})
		case n > 0:
			err = s.putChunk(ctx, key, size, chunk)
		}
		if err != nil {
			return "", 0, err
		}
		size += int64(n)
		if last {
			break
		}
	}
	err = s.retry(ctx, "put object", func() error {
		return s.withConn(ctx, func(conn *pgx.Conn) error {
			tag, err := conn.Exec(ctx, sqlObjectDone, key, size)
			if err == nil && tag.RowsAffected() == 0 {
				err = errObjectSwept
			}
			return err
		})
	})
	if err != nil {
		return "", 0, err
	}
	return id, size, nil
}

// putChunk commits the chunk of object key at off.
func (s *Store) putChunk(ctx context.Context, key []byte, off int64, chunk []byte) error {
	return s.retry(ctx, "put object", func() error {
		return s.withConn(ctx, func(conn *pgx.Conn) error {
			tag, err := conn.Exec(ctx, sqlChunkPut, key, off, chunk)
			if err == nil && tag.RowsAffected() == 0 {
				err = errObjectSwept
			}
			return err
		})
	})
}

// ReadObject implements store.Objects. The reader fetches a chunk at a time with ctx.
func (s *Store) ReadObject(ctx context.Context, id string, off, n int64) (io.ReadCloser, error) {
	if err := s.guard.Enter(ctx); err != nil {
		return nil, err
	}
	defer s.guard.Exit()
	if !store.ValidObjectID(id) {
		return nil, store.ErrNotFound
	}
	if off < 0 || n < 0 {
		return nil, fmt.Errorf("postgres store: read object %s: invalid range [%d, +%d)", id, off, n)
	}
	var size *int64
	err := s.retry(ctx, "read object", func() error {
		return s.withConn(ctx, func(conn *pgx.Conn) error {
			err := conn.QueryRow(ctx, sqlObjectSize, []byte(id)).Scan(&size)
			if errors.Is(err, pgx.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	if size == nil {
		return nil, store.ErrNotFound // a PutObject in progress or abandoned
	}
	if off > *size || n > *size-off {
		return nil, fmt.Errorf("postgres store: read object %s: range [%d, +%d) outside its %d bytes", id, off, n, *size)
	}
	return &chunkReader{s: s, ctx: ctx, key: []byte(id), off: off, remaining: n}, nil
}

// chunkReader reads remaining bytes of object key from off, holding at most one chunk.
type chunkReader struct {
	s         *Store
	ctx       context.Context
	key       []byte
	off       int64
	remaining int64
	buf       []byte // fetched, not yet read: the bytes at off
}

var errObjectGone = errors.New("the object was deleted while being read")

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.remaining <= 0 {
		return 0, io.EOF
	}
	if len(r.buf) == 0 {
		if err := r.fetch(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf[:min(int64(len(r.buf)), r.remaining)])
	r.buf = r.buf[n:]
	r.off += int64(n)
	r.remaining -= int64(n)
	return n, nil
}

// fetch reads the rest of the chunk holding r.off, up to r.remaining bytes, into r.buf.
func (r *chunkReader) fetch() error {
	s := r.s
	if err := s.guard.Enter(r.ctx); err != nil {
		return err
	}
	defer s.guard.Exit()
	want := min(r.remaining, objectChunkBytes)
	err := s.retry(r.ctx, "read object", func() error {
		return s.withConn(r.ctx, func(conn *pgx.Conn) error {
			err := conn.QueryRow(r.ctx, sqlChunkRead, r.key, r.off, want).Scan(&r.buf)
			if errors.Is(err, pgx.ErrNoRows) {
				return errObjectGone
			}
			return err
		})
	})
	if err == nil && len(r.buf) == 0 {
		err = errObjectGone // the chunk holding r.off was deleted and an earlier one found
	}
	return err
}

func (r *chunkReader) Close() error {
	r.buf = nil
	return nil
}

// DeleteObjects implements store.Objects: one transaction deletes the objects' rows and
// chunks.
func (s *Store) DeleteObjects(ctx context.Context, ids []string) error {
	if err := s.guard.Enter(ctx); err != nil {
		return err
	}
	defer s.guard.Exit()
	var keys [][]byte
	for _, id := range ids {
		if store.ValidObjectID(id) {
			keys = append(keys, []byte(id))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return s.deleteObjects(ctx, keys)
}

func (s *Store) deleteObjects(ctx context.Context, keys [][]byte) error {
	return s.retry(ctx, "delete objects", func() error {
		return s.withConn(ctx, func(conn *pgx.Conn) error {
			b := &pgx.Batch{}
			b.Queue(sqlBeginCommit)
			b.Queue(sqlObjectsDelete, keys)
			b.Queue(sqlChunksDelete, keys)
			b.Queue("COMMIT")
			return conn.SendBatch(ctx, b).Close()
		})
	})
}

// scanPageObjects is how many objects a ScanObjects page holds.
const scanPageObjects = 1000

// ScanObjects implements store.Objects, a page of ids at a time; fn runs between pages with
// no connection held.
func (s *Store) ScanObjects(ctx context.Context, before time.Time, fn func(id string, size int64) (bool, error)) error {
	if err := s.guard.Enter(ctx); err != nil {
		return err
	}
	defer s.guard.Exit()
	limit := []byte(store.ObjectIDBefore(before))
	after := []byte{}
	type object struct {
		id   string
		size int64
	}
	var page []object
	for {
		page = page[:0]
		err := s.retry(ctx, "scan objects", func() error {
			return s.withConn(ctx, func(conn *pgx.Conn) error {
				page = page[:0]
				rows, err := conn.Query(ctx, sqlObjectsScan, limit, after, scanPageObjects)
				if err != nil {
					return err
				}
				var id []byte
				var size int64
				_, err = pgx.ForEachRow(rows, []any{&id, &size}, func() error {
					page = append(page, object{string(id), size})
					return nil
				})
				return err
			})
		})
		if err != nil {
			return err
		}
		for _, o := range page {
			if more, err := fn(o.id, o.size); err != nil || !more {
				return err
			}
		}
		if len(page) < scanPageObjects {
			return nil
		}
		after = []byte(page[len(page)-1].id)
	}
}

var _ store.Objects = (*Store)(nil)
