package blob

import (
	"context"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// Version-level immutability (WORM): a blob version, snapshot or the current blob may carry a
// time-based retention policy (until a date, unlocked or locked) and a legal hold, in a
// container with immutable storage with versioning enabled — a management-plane setting,
// given to Tabula by the server's configuration (Service.Immutable). While either protects a
// version it cannot be deleted, nor its metadata, properties or content changed in place
// (409 BlobImmutableDueToLegalHold, else BlobImmutableDueToPolicy); overwriting the current
// blob is allowed, as versioning keeps the protected one as a previous version. A policy whose
// date has passed protects nothing but is still reported.

// immutabilityPolicy is a version's time-based retention policy.
type immutabilityPolicy struct {
	Until  int64 `json:"until"` // Unix nanoseconds, whole seconds
	Locked bool  `json:"locked,omitempty"`
}

// Protection is what a write gives the version it makes: x-ms-immutability-policy-until-date
// and -mode, and x-ms-legal-hold. The zero value gives nothing.
type Protection struct {
	// Until is the policy's date, zero for no policy; Mode is "Unlocked" (the default) or
	// "Locked", in any case.
	Until     time.Time
	Mode      string
	LegalHold *bool
}

func (p Protection) isZero() bool { return p.Until.IsZero() && p.Mode == "" && p.LegalHold == nil }

// ImmutabilityPolicy is a version's policy as reported: the date and "unlocked" or "locked".
type ImmutabilityPolicy struct {
	Until time.Time
	Mode  string
}

// immutable reports whether the account's container has immutable storage with versioning.
func (s *Service) immutable(account, container string) bool {
	return s.Immutable != nil && s.Immutable(account, container)
}

// ImmutableStorageWithVersioning reports whether a container has immutable storage with
// versioning (x-ms-immutable-storage-with-versioning-enabled).
func (s *Service) ImmutableStorageWithVersioning(account, container string) bool {
	return s.immutable(account, container)
}

// notImmutable refuses a policy or legal hold in a container without version-level
// immutability. UNSURE: the real code; the REST reference says only that the container must
// have it enabled.
func notImmutable(container string) error {
	return azerr.Newf(azerr.ImmutableStorageWithVersioningNotEnabled, "This operation is not permitted as the container %s does not have immutable storage with versioning enabled.", container)
}

// policyMode reads a policy's mode: Unlocked (the default) or Locked; Mutable is a value the
// service reports, not one it takes.
func policyMode(mode string) (locked bool, err error) {
	switch strings.ToLower(mode) {
	case "", "unlocked":
		return false, nil
	case "locked":
		return true, nil
	}
	e := azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-immutability-policy-mode %q is not Unlocked or Locked.", mode)
	e.Details = []azerr.Detail{{Name: "HeaderName", Value: "x-ms-immutability-policy-mode"}, {Name: "HeaderValue", Value: mode}}
	return false, e
}

// newPolicy checks a policy given for a version: a date still to come (400 InvalidExpiryTime,
// the code azure-sdk-for-net's issue 35194 quotes from the service) and a known mode.
func newPolicy(until time.Time, mode string, now time.Time) (immutabilityPolicy, error) {
	locked, err := policyMode(mode)
	if err != nil {
		return immutabilityPolicy{}, err
	}
	until = until.Truncate(time.Second)
	if !until.After(now) {
		return immutabilityPolicy{}, azerr.Newf(azerr.InvalidExpiryTime, "The expiry time specified is invalid: the immutability policy's date %s has passed.", until.UTC().Format(time.RFC1123))
	}
	return immutabilityPolicy{Until: until.UnixNano(), Locked: locked}, nil
}

// protect gives rec, a version being written into container p, the protection a write asks
// for.
func (s *Service) protect(p Path, rec *blobRecord, pr Protection, now time.Time) error {
	rec.Immutability, rec.LegalHold = nil, nil
	if pr.isZero() {
		return nil
	}
	if !s.immutable(p.Account, p.Container) {
		if pr.Until.IsZero() && pr.Mode == "" && !*pr.LegalHold {
			return nil // x-ms-legal-hold: false asks for nothing
		}
		return notImmutable(p.Container)
	}
	if !pr.Until.IsZero() {
		policy, err := newPolicy(pr.Until, pr.Mode, now)
		if err != nil {
			return err
		}
		rec.Immutability = &policy
	} else if _, err := policyMode(pr.Mode); err != nil {
		return err
	}
	if pr.LegalHold != nil {
		hold := *pr.LegalHold
		rec.LegalHold = &hold
	}
	return nil
}

// checkMutable refuses to delete or change in place a version that a legal hold or a policy
// still in force protects.
func (b *blobRecord) checkMutable(now time.Time) error {
	if b.LegalHold != nil && *b.LegalHold {
		return azerr.New(azerr.BlobImmutableDueToLegalHold)
	}
	if b.Immutability != nil && b.Immutability.Until > now.UnixNano() {
		return azerr.New(azerr.BlobImmutableDueToPolicy)
	}
	return nil
}

// SetImmutabilityPolicy sets the policy of a blob, snapshot or version (Set Blob Immutability
// Policy), which changes neither its ETag nor Last-Modified. A locked policy can only be kept
// locked and extended (409 BlobImmutableDueToPolicy otherwise; UNSURE: the real code).
// cond's If-Unmodified-Since applies.
func (s *Service) SetImmutabilityPolicy(ctx context.Context, p Path, until time.Time, mode string, cond Conditions) (ImmutabilityPolicy, error) {
	var out ImmutabilityPolicy
	err := s.changeProtection(ctx, p, cond, func(b *blobRecord, now time.Time) error {
		policy, err := newPolicy(until, mode, now)
		if err != nil {
			return err
		}
		if old := b.Immutability; old != nil && old.Locked && old.Until > now.UnixNano() && (!policy.Locked || policy.Until < old.Until) {
			return azerr.Newf(azerr.BlobImmutableDueToPolicy, "This operation is not permitted as the blob is immutable due to a policy: a locked policy can only be extended, not shortened or unlocked.")
		}
		b.Immutability = &policy
		out = policy.public()
		return nil
	})
	return out, err
}

// DeleteImmutabilityPolicy removes the policy of a blob, snapshot or version (Delete Blob
// Immutability Policy); a locked one still in force stays (409
// ImmutabilityPolicyDeleteOnLockedPolicy, the code kopia's live tests see; status UNSURE).
func (s *Service) DeleteImmutabilityPolicy(ctx context.Context, p Path) error {
	return s.changeProtection(ctx, p, Conditions{}, func(b *blobRecord, now time.Time) error {
		if old := b.Immutability; old != nil && old.Locked && old.Until > now.UnixNano() {
			return azerr.New(azerr.ImmutabilityPolicyDeleteOnLockedPolicy)
		}
		b.Immutability = nil
		return nil
	})
}

// SetLegalHold sets or clears the legal hold of a blob, snapshot or version (Set Blob Legal
// Hold). A cleared hold is reported as false from then on.
func (s *Service) SetLegalHold(ctx context.Context, p Path, hold bool) error {
	return s.changeProtection(ctx, p, Conditions{}, func(b *blobRecord, _ time.Time) error {
		b.LegalHold = &hold
		return nil
	})
}

// changeProtection applies change to the policy or legal hold of an existing version in a
// container with version-level immutability.
func (s *Service) changeProtection(ctx context.Context, p Path, cond Conditions, change func(b *blobRecord, now time.Time) error) error {
	return s.update(ctx, func() ([]store.Mutation, error) {
		st, err := s.loadExisting(ctx, p)
		if err != nil {
			return nil, err
		}
		if !s.immutable(p.Account, p.Container) {
			return nil, notImmutable(p.Container)
		}
		now := s.Now()
		if err := cond.checkWrite(true, etagOf(st.b.ETag), time.Unix(0, st.b.Modified), st.b.Tags, modify, azerr.ConditionNotMet); err != nil {
			return nil, err
		}
		if err := change(&st.b, now); err != nil {
			return nil, err
		}
		return s.put(&st, &st.b)
	})
}

func (p immutabilityPolicy) public() ImmutabilityPolicy {
	mode := "unlocked"
	if p.Locked {
		mode = "locked"
	}
	return ImmutabilityPolicy{Until: time.Unix(0, p.Until).UTC(), Mode: mode}
}
