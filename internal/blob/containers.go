package blob

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// PublicAccess is a container's public access level (x-ms-blob-public-access).
type PublicAccess string

const (
	PrivateAccess   PublicAccess = ""          // no anonymous access
	BlobAccess      PublicAccess = "blob"      // anonymous reads of blobs
	ContainerAccess PublicAccess = "container" // and anonymous listing and container reads
)

// ParsePublicAccess reads x-ms-blob-public-access ("" when absent): 400 InvalidHeaderValue
// for anything but container or blob.
func ParsePublicAccess(v string) (PublicAccess, error) {
	switch a := PublicAccess(strings.ToLower(v)); a {
	case PrivateAccess, BlobAccess, ContainerAccess:
		return a, nil
	}
	return "", azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-blob-public-access %q is not container or blob.", v)
}

// AccessPolicy is one stored access policy (signed identifier) of a container, as Set
// Container ACL gives it.
type AccessPolicy = auth.AccessPolicy

// Container is a container as Get Container Properties, Get Container ACL and List
// Containers report it.
type Container struct {
	Name         string
	ETag         ETag
	LastModified time.Time
	Metadata     Metadata
	PublicAccess PublicAccess
	Policies     []AccessPolicy
	Lease        LeaseInfo
	// Scope is the container's encryption scope policy; its Default is "" for the account's
	// key.
	Scope ScopePolicy
	// Deleted marks a soft-deleted container (List Containers with include=deleted), kept as
	// Version until RemainingRetentionDays pass (containersoftdelete.go).
	Deleted                bool
	Version                string
	DeletedTime            time.Time
	RemainingRetentionDays int
}

// containerRecord is a container as stored.
type containerRecord struct {
	// Space holds the container's blobs. Each creation gets a fresh one, so a container
	// created again never sees blobs of the one deleted before, whose space may still be
	// being reclaimed.
	Space    string         `json:"space"`
	Modified int64          `json:"modified"` // Unix nanoseconds
	ETag     int64          `json:"etag"`
	Metadata Metadata       `json:"md,omitempty"`
	Access   PublicAccess   `json:"access,omitempty"`
	Policies []AccessPolicy `json:"policies,omitempty"`
	Lease    lease          `json:"lease,omitzero"`
	Scope    ScopePolicy    `json:"scopes,omitzero"`
}

func containerKey(account, name string) store.Key {
	return store.Key{Space: containersSpace, Partition: account, Row: name}
}

func (c *containerRecord) public(name string, now time.Time) Container {
	return Container{
		Name:         name,
		ETag:         etagOf(c.ETag),
		LastModified: time.Unix(0, c.Modified).UTC(),
		Metadata:     c.Metadata,
		PublicAccess: c.Access,
		Policies:     c.Policies,
		Lease:        c.Lease.info(now),
		Scope:        c.Scope,
	}
}

func decodeContainer(rec *store.Record) (containerRecord, error) {
	var c containerRecord
	if err := json.Unmarshal(rec.Value, &c); err != nil {
		return c, fmt.Errorf("container record %s is corrupt: %w", rec.Key, err)
	}
	return c, nil
}

// loadContainer reads a container: 404 ContainerNotFound when it does not exist.
func (s *Service) loadContainer(ctx context.Context, account, name string) (*store.Record, containerRecord, error) {
	if err := ValidateContainerName(name); err != nil {
		return nil, containerRecord{}, err
	}
	rec, err := s.get(ctx, containerKey(account, name))
	if err != nil {
		return nil, containerRecord{}, err
	}
	if rec == nil {
		return nil, containerRecord{}, azerr.New(azerr.ContainerNotFound)
	}
	c, err := decodeContainer(rec)
	return rec, c, err
}

// putContainer is the mutation writing c over the record read as rec.
func (s *Service) putContainer(rec *store.Record, c *containerRecord) (store.Mutation, error) {
	value, err := json.Marshal(c)
	if err != nil {
		return store.Mutation{}, err
	}
	return store.Mutation{Key: rec.Key, Expect: expectRead(rec), Value: value, Version: s.nextTicks(rec.Version)}, nil
}

// touch gives c a new ETag and Last-Modified, as every change but a lease operation does.
func (s *Service) touch(etag *int64, modified *int64) {
	ticks := s.nextTicks(*etag)
	*etag = ticks
	*modified = timeOfTicks(ticks).UnixNano()
}

// CreateContainer creates a container: 409 ContainerAlreadyExists if it exists.
func (s *Service) CreateContainer(ctx context.Context, account, name string, md Metadata, access PublicAccess) (Container, error) {
	return s.CreateContainerWithScope(ctx, account, name, md, access, ScopePolicy{})
}

// CreateContainerWithScope is CreateContainer with an encryption scope policy (scopes.go).
func (s *Service) CreateContainerWithScope(ctx context.Context, account, name string, md Metadata, access PublicAccess, scope ScopePolicy) (Container, error) {
	if err := ValidateContainerName(name); err != nil {
		return Container{}, err
	}
	if err := md.Validate(); err != nil {
		return Container{}, err
	}
	if _, err := ParsePublicAccess(string(access)); err != nil {
		return Container{}, err
	}
	c := containerRecord{
		Space:    "b/" + account + "/" + name + "/" + randomID(),
		Metadata: md,
		Access:   access,
		Scope:    scope,
	}
	if c.Scope.Default == accountScope {
		c.Scope.Default = ""
	}
	s.touch(&c.ETag, &c.Modified)
	value, err := json.Marshal(&c)
	if err != nil {
		return Container{}, err
	}
	err = s.update(ctx, func() ([]store.Mutation, error) {
		rec, err := s.get(ctx, containerKey(account, name))
		if err != nil {
			return nil, err
		}
		if rec != nil {
			return nil, azerr.New(azerr.ContainerAlreadyExists)
		}
		return []store.Mutation{{
			Key: containerKey(account, name), Expect: store.Expect{Kind: store.ExpectAbsent},
			Value: value, Version: s.nextTicks(0),
		}}, nil
	})
	if err != nil {
		return Container{}, err
	}
	return c.public(name, s.Now()), nil
}

// GetContainer returns a container's properties, metadata and ACL. leaseID, when given, must
// be the container's active lease.
func (s *Service) GetContainer(ctx context.Context, account, name, leaseID string) (Container, error) {
	_, c, err := s.loadContainer(ctx, account, name)
	if err != nil {
		return Container{}, err
	}
	now := s.Now()
	if err := c.Lease.checkAccess(now, leaseID, false, containerLease); err != nil {
		return Container{}, err
	}
	return c.public(name, now), nil
}

// changeContainer applies change to a container after its lease (leaseID is optional but
// must match when given, unless required) and conditions are checked, and stores the result
// with a new ETag.
func (s *Service) changeContainer(ctx context.Context, account, name, leaseID string, cond Conditions, change func(*containerRecord)) (Container, error) {
	var out Container
	err := s.update(ctx, func() ([]store.Mutation, error) {
		rec, c, err := s.loadContainer(ctx, account, name)
		if err != nil {
			return nil, err
		}
		now := s.Now()
		if err := c.Lease.checkAccess(now, leaseID, false, containerLease); err != nil {
			return nil, err
		}
		if err := cond.onContainer().checkWrite(true, etagOf(c.ETag), time.Unix(0, c.Modified), nil, modify, azerr.ConditionNotMet); err != nil {
			return nil, err
		}
		change(&c)
		s.touch(&c.ETag, &c.Modified)
		m, err := s.putContainer(rec, &c)
		out = c.public(name, now)
		return []store.Mutation{m}, err
	})
	return out, err
}

// SetContainerMetadata replaces a container's metadata.
func (s *Service) SetContainerMetadata(ctx context.Context, account, name string, md Metadata, leaseID string, cond Conditions) (Container, error) {
	if err := md.Validate(); err != nil {
		return Container{}, err
	}
	return s.changeContainer(ctx, account, name, leaseID, cond, func(c *containerRecord) { c.Metadata = md })
}

// SetContainerACL replaces a container's public access level and stored access policies
// (at most five, ids of 1–64 characters, unique: otherwise 400 InvalidXmlDocument, as the
// real service answers a sixth).
func (s *Service) SetContainerACL(ctx context.Context, account, name string, access PublicAccess, policies []AccessPolicy, leaseID string, cond Conditions) (Container, error) {
	if _, err := ParsePublicAccess(string(access)); err != nil {
		return Container{}, err
	}
	if len(policies) > MaxStoredPolicies {
		return Container{}, azerr.Newf(azerr.InvalidXMLDocument, "XML specified is not syntactically valid. A container has at most %d stored access policies; %d were given.", MaxStoredPolicies, len(policies))
	}
	seen := make(map[string]bool, len(policies))
	for _, p := range policies {
		if p.ID == "" || len(p.ID) > MaxPolicyIDLength {
			return Container{}, azerr.Newf(azerr.InvalidXMLDocument, "XML specified is not syntactically valid. A signed identifier's Id must be 1 to %d characters long; %q is not.", MaxPolicyIDLength, p.ID)
		}
		if seen[p.ID] {
			return Container{}, azerr.Newf(azerr.InvalidXMLDocument, "XML specified is not syntactically valid. The signed identifier %q is given more than once.", p.ID)
		}
		seen[p.ID] = true
	}
	return s.changeContainer(ctx, account, name, leaseID, cond, func(c *containerRecord) {
		c.Access, c.Policies = access, policies
	})
}

// DeleteContainer deletes a container and, with it, every blob in it, leased or not. A
// leased container needs its lease id. The container is gone for every reader when this
// returns; its blobs' storage is reclaimed in the background (Collect), after the account's
// container retention when it has one (containersoftdelete.go).
func (s *Service) DeleteContainer(ctx context.Context, account, name, leaseID string, cond Conditions) error {
	err := s.update(ctx, func() ([]store.Mutation, error) {
		rec, c, err := s.loadContainer(ctx, account, name)
		if err != nil {
			return nil, err
		}
		if s.immutable(account, name) {
			// Only the management plane deletes such a container on Azure (the message is
			// the one azure-sdk-for-python's issue 22255 quotes; status UNSURE): here, the
			// server's configuration, which names it.
			return nil, azerr.New(azerr.ContainerImmutableStorageWithVersioningEnabled)
		}
		if err := c.Lease.checkAccess(s.Now(), leaseID, true, containerLease); err != nil {
			return nil, err
		}
		if err := cond.onContainer().checkWrite(true, etagOf(c.ETag), time.Unix(0, c.Modified), nil, modify, azerr.ConditionNotMet); err != nil {
			return nil, err
		}
		if days := s.containerRetention(account); days > 0 {
			return s.softDeleteContainer(rec, c, days, s.Now())
		}
		return []store.Mutation{
			{Key: rec.Key, Expect: expectRead(rec), Delete: true},
			{Key: store.Key{Space: deletedSpace, Row: c.Space}, Value: []byte{}, Version: s.nextTicks(0)},
		}, nil
	})
	return err
}

// LeaseContainer runs a lease action on a container. It changes neither ETag nor
// Last-Modified.
func (s *Service) LeaseContainer(ctx context.Context, account, name string, req LeaseRequest, cond Conditions) (LeaseResult, error) {
	if err := req.validate(); err != nil {
		return LeaseResult{}, err
	}
	var out LeaseResult
	err := s.update(ctx, func() ([]store.Mutation, error) {
		rec, c, err := s.loadContainer(ctx, account, name)
		if err != nil {
			return nil, err
		}
		if err := cond.onContainer().checkWrite(true, etagOf(c.ETag), time.Unix(0, c.Modified), nil, modify, azerr.ConditionNotMet); err != nil {
			return nil, err
		}
		next, result, err := c.Lease.apply(req, s.Now(), containerLease)
		if err != nil {
			return nil, err
		}
		c.Lease = next
		result.ETag, result.LastModified = etagOf(c.ETag), time.Unix(0, c.Modified).UTC()
		out = result
		m, err := s.putContainer(rec, &c)
		return []store.Mutation{m}, err
	})
	return out, err
}

// ListContainersOptions selects a page of List Containers. Marker is a previous page's
// NextMarker; MaxResults 0 means the maximum, 5,000 (larger values are clamped).
type ListContainersOptions struct {
	Prefix     string
	Marker     string
	MaxResults int
	// Deleted adds the soft-deleted containers (include=deleted).
	Deleted bool
	// System adds the system containers (include=system): $logs, which every account has.
	System bool
}

// logsContainer is where Azure's analytics logging writes; every account has it, and only
// listings that ask for system containers show it.
const logsContainer = "$logs"

// ContainerPage is one page of List Containers. NextMarker is empty on the last page.
type ContainerPage struct {
	Containers []Container
	NextMarker string
}

// ListContainers lists an account's containers in name order. A page reads only the
// containers it returns (and one more, to know whether the listing goes on).
func (s *Service) ListContainers(ctx context.Context, account string, o ListContainersOptions) (ContainerPage, error) {
	if o.System {
		// Made the first time it is asked for, as Azure accounts come with it.
		_, err := s.CreateContainer(ctx, account, logsContainer, nil, PrivateAccess)
		if err != nil && azerr.As(err).Code != azerr.ContainerAlreadyExists {
			return ContainerPage{}, err
		}
	}
	limit := pageLimit(o.MaxResults)
	r := store.PartitionRange(containersSpace, account)
	r.Start.Row = max(o.Prefix, o.Marker)
	if end, ok := prefixEnd(o.Prefix); ok {
		r.End = store.Key{Space: containersSpace, Partition: account, Row: end}
	}
	var live []Container
	var keys []string
	now := s.Now()
	err := s.store.Scan(ctx, r, func(rec store.Record) (bool, error) {
		if rec.Key.Row == logsContainer && !o.System {
			return true, nil
		}
		c, err := decodeContainer(&rec)
		if err != nil {
			return false, err
		}
		live = append(live, c.public(rec.Key.Row, now))
		keys = append(keys, rec.Key.Row)
		return len(live) <= limit, nil
	})
	if err != nil {
		return ContainerPage{}, err
	}
	if o.Deleted {
		dead, deadKeys, err := s.deletedContainers(ctx, account, o.Prefix, o.Marker, limit+1, now)
		if err != nil {
			return ContainerPage{}, err
		}
		live, keys = mergeListings(live, keys, dead, deadKeys)
	}
	// One more than a page was read: it is where the next page starts.
	var page ContainerPage
	if len(live) > limit {
		page.NextMarker = keys[limit]
		live = live[:limit]
	}
	page.Containers = live
	return page, nil
}

// mergeListings merges two listings ordered by their keys into one.
func mergeListings(a []Container, aKeys []string, b []Container, bKeys []string) ([]Container, []string) {
	out := make([]Container, 0, len(a)+len(b))
	keys := make([]string, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		if len(b) == 0 || len(a) > 0 && aKeys[0] < bKeys[0] {
			out, keys, a, aKeys = append(out, a[0]), append(keys, aKeys[0]), a[1:], aKeys[1:]
		} else {
			out, keys, b, bKeys = append(out, b[0]), append(keys, bKeys[0]), b[1:], bKeys[1:]
		}
	}
	return out, keys
}

// pageLimit is a listing's page size for maxresults n (0: absent).
func pageLimit(n int) int {
	if n <= 0 || n > MaxListResults {
		return MaxListResults
	}
	return n
}

// prefixEnd returns the smallest string greater than every string starting with prefix, or
// false when there is none (an empty prefix, or one of only 0xFF bytes).
func prefixEnd(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}
