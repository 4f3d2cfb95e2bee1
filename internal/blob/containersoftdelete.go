package blob

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// Container soft delete (an account setting of Azure's management plane; here
// Service.ContainerRetention). With it on, a deleted container is kept, blobs and all, for the
// account's retention: List Containers with include=deleted shows it with a Version, and
// Restore Container brings it back under its name while none has taken that name. Past its
// retention it is reclaimed as a deleted container is without soft delete.
//
// A deleted container is a record in deletedContainersSpace (partition account, row name +
// "!" + version, so that a listing merges the two spaces in name order: no container name
// holds a "!"), and an entry in deletedSpace whose version is the time of its expiry, which
// is when the collector reclaims it (gc.go), record included.

// deletedContainerRecord is a soft-deleted container as stored.
type deletedContainerRecord struct {
	containerRecord
	Deleted int64 `json:"deleted"` // Unix nanoseconds
	Expires int64 `json:"expires"` // Unix nanoseconds
}

func deletedContainerKey(account, name, version string) store.Key {
	return store.Key{Space: deletedContainersSpace, Partition: account, Row: name + "!" + version}
}

// containerRetention is the number of days account keeps deleted containers, 0 for none.
func (s *Service) containerRetention(account string) int {
	if s.ContainerRetention == nil {
		return 0
	}
	return s.ContainerRetention(account)
}

// softDeleteContainer returns the mutations keeping c, read as rec, as a deleted container for
// days, in place of deleting it outright.
func (s *Service) softDeleteContainer(rec *store.Record, c containerRecord, days int, now time.Time) ([]store.Mutation, error) {
	version := fmt.Sprintf("%016X", s.nextTicks(0))
	d := deletedContainerRecord{containerRecord: c, Deleted: now.UnixNano(), Expires: now.Add(time.Duration(days) * 24 * time.Hour).UnixNano()}
	d.Lease = lease{}
	value, err := json.Marshal(&d)
	if err != nil {
		return nil, err
	}
	k := deletedContainerKey(rec.Key.Partition, rec.Key.Row, version)
	return []store.Mutation{
		{Key: rec.Key, Expect: expectRead(rec), Delete: true},
		{Key: k, Expect: store.Expect{Kind: store.ExpectAbsent}, Value: value, Version: s.nextTicks(0)},
		// Reclaimed once the retention is over (and Grace after it).
		{Key: store.Key{Space: deletedSpace, Row: c.Space}, Value: []byte(k.Partition + "\x00" + k.Row), Version: ticksOf(time.Unix(0, d.Expires))},
	}, nil
}

// RestoreContainer brings back the soft-deleted container deletedName of that version under
// name (Restore Container): 404 ContainerNotFound when there is no such deleted container, or
// its retention is over; 409 ContainerAlreadyExists while a container has the name.
func (s *Service) RestoreContainer(ctx context.Context, account, name, deletedName, version string) (Container, error) {
	if err := ValidateContainerName(name); err != nil {
		return Container{}, err
	}
	var out Container
	err := s.update(ctx, func() ([]store.Mutation, error) {
		dk := deletedContainerKey(account, deletedName, version)
		drec, err := s.get(ctx, dk)
		if err != nil {
			return nil, err
		}
		now := s.Now()
		var d deletedContainerRecord
		if drec != nil {
			if err := json.Unmarshal(drec.Value, &d); err != nil {
				return nil, fmt.Errorf("deleted container record %s is corrupt: %w", dk, err)
			}
		}
		if drec == nil || now.UnixNano() >= d.Expires {
			return nil, azerr.Newf(azerr.ContainerNotFound, "The specified container does not exist. (No deleted container %s of version %s is kept.)", deletedName, version)
		}
		rec, err := s.get(ctx, containerKey(account, name))
		if err != nil {
			return nil, err
		}
		if rec != nil {
			return nil, azerr.New(azerr.ContainerAlreadyExists)
		}
		c := d.containerRecord
		s.touch(&c.ETag, &c.Modified)
		value, err := json.Marshal(&c)
		if err != nil {
			return nil, err
		}
		out = c.public(name, now)
		return []store.Mutation{
			{Key: dk, Expect: expectRead(drec), Delete: true},
			{Key: store.Key{Space: deletedSpace, Row: c.Space}, Delete: true},
			{Key: containerKey(account, name), Expect: store.Expect{Kind: store.ExpectAbsent}, Value: value, Version: s.nextTicks(0)},
		}, nil
	})
	return out, err
}

// deletedContainers returns up to limit of account's soft-deleted containers within their
// retention, from the listing key start on (a name, or name!version; inclusive, as markers
// are), with prefix, each with its listing key.
func (s *Service) deletedContainers(ctx context.Context, account, prefix, start string, limit int, now time.Time) ([]Container, []string, error) {
	r := store.PartitionRange(deletedContainersSpace, account)
	r.Start.Row = max(prefix, start)
	if end, ok := prefixEnd(prefix); ok {
		r.End = store.Key{Space: deletedContainersSpace, Partition: account, Row: end}
	}
	var out []Container
	var keys []string
	err := s.store.Scan(ctx, r, func(rec store.Record) (bool, error) {
		var d deletedContainerRecord
		if err := json.Unmarshal(rec.Value, &d); err != nil {
			return false, fmt.Errorf("deleted container record %s is corrupt: %w", rec.Key, err)
		}
		if now.UnixNano() >= d.Expires {
			return true, nil
		}
		name, version, _ := strings.Cut(rec.Key.Row, "!")
		c := d.public(name, now)
		c.Lease = LeaseInfo{}
		c.Deleted, c.Version = true, version
		c.DeletedTime = time.Unix(0, d.Deleted).UTC()
		c.RemainingRetentionDays = max(0, int(time.Unix(0, d.Expires).Sub(now)/(24*time.Hour)))
		out = append(out, c)
		keys = append(keys, rec.Key.Row)
		return len(out) < limit, nil
	})
	return out, keys, err
}
