package postgres

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tabula-dev/tabula/internal/store/postgres/pgtest"
	"github.com/tabula-dev/tabula/internal/store/storetest"
)

func TestObjectsContract(t *testing.T) {
	storetest.RunObjects(t, storetest.ObjectsBackend{Open: func(t *testing.T) (storetest.ObjectStore, func() storetest.ObjectStore) {
		dsn := pgtest.Start(t)
		return mustOpen(t, dsn, Options{}), func() storetest.ObjectStore { return mustOpen(t, dsn, Options{}) }
	}})
}

// TestSweepingAPutInProgressFailsItAndLeavesNoChunks deletes, as a sweeper would, a PutObject that is
// still sending chunks: the put fails, and no chunk row outlives the object's row, however
// the deletion and the chunk inserts interleave.
func TestSweepingAPutInProgressFailsItAndLeavesNoChunks(t *testing.T) {
	s := mustOpen(t, pgtest.Start(t), Options{})
	ctx := t.Context()
	for round := range 5 {
		// A reader that never ends, so only the sweep can end the put.
		chunks := make(chan struct{}, 1)
		r := readerFunc(func(p []byte) (int, error) {
			select {
			case chunks <- struct{}{}:
			default:
			}
			for i := range p {
				p[i] = byte(round)
			}
			return len(p), nil
		})
		failed := make(chan error, 1)
		go func() {
			_, _, err := s.PutObject(ctx, r)
			failed <- err
		}()
		var id string
		for id == "" {
			<-chunks
			s.ScanObjects(ctx, time.Now(), func(found string, size int64) (bool, error) {
				id = found
				return false, nil
			})
		}
		time.Sleep(time.Duration(round) * 5 * time.Millisecond)
		if err := s.DeleteObjects(ctx, []string{id}); err != nil {
			t.Fatal(err)
		}
		if err := <-failed; err == nil {
			t.Fatal("PutObject whose object was swept succeeded")
		}
		var rows int
		err := s.withConn(ctx, func(conn *pgx.Conn) error {
			return conn.QueryRow(ctx, `SELECT count(*) FROM tabula_object_chunks`).Scan(&rows)
		})
		if err != nil {
			t.Fatal(err)
		}
		if rows != 0 {
			t.Fatalf("round %d: %d chunk rows outlive the swept object", round, rows)
		}
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
