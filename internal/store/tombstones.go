package store

import (
	"context"
	"errors"
)

// SweepTombstones finishes deletions of whole spaces. A service that deletes a container of
// records (a table, a queue) writes a tombstone in tombstones whose Row names the deleted
// space and whose Version says when; deleting the space itself may be cut short by a crash,
// or outlived by a write from another front-end that read the container just before it was
// deleted. SweepTombstones deletes, once more, the space of every tombstone of version at most
// cutoff, then the tombstone, on the condition that it is unchanged (another front-end
// sweeping the same one is no error). It returns how many tombstones it swept.
func SweepTombstones(ctx context.Context, st Store, tombstones string, cutoff int64) (int, error) {
	var due []Record
	err := st.Scan(ctx, SpaceRange(tombstones), func(rec Record) (bool, error) {
		if rec.Version <= cutoff {
			due = append(due, Record{Key: rec.Key, Version: rec.Version})
		}
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	for i, rec := range due {
		if err := st.DeleteSpace(ctx, rec.Key.Row); err != nil {
			return i, err
		}
		err := st.Commit(ctx, []Mutation{{
			Key: rec.Key, Delete: true, Expect: Expect{Kind: ExpectVersion, Version: rec.Version},
		}})
		var cf *ConditionFailedError
		if err != nil && !errors.As(err, &cf) {
			return i, err
		}
	}
	return len(due), nil
}
