package blob

import (
	"encoding/hex"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/uuid"
)

// LeaseState is x-ms-lease-state.
type LeaseState string

const (
	LeaseAvailable LeaseState = "available"
	LeaseLeased    LeaseState = "leased"
	LeaseExpired   LeaseState = "expired"
	LeaseBreaking  LeaseState = "breaking"
	LeaseBroken    LeaseState = "broken"
)

// LeaseInfo is a container's or blob's lease as reported: x-ms-lease-status (locked or
// unlocked), x-ms-lease-state, and x-ms-lease-duration (fixed or infinite; empty unless the
// state is leased).
type LeaseInfo struct {
	Status   string
	State    LeaseState
	Duration string
}

// LeaseAction is x-ms-lease-action.
type LeaseAction string

const (
	AcquireLease LeaseAction = "acquire"
	RenewLease   LeaseAction = "renew"
	ChangeLease  LeaseAction = "change"
	ReleaseLease LeaseAction = "release"
	BreakLease   LeaseAction = "break"
)

// LeaseRequest is one Lease Container or Lease Blob request. Empty strings are absent
// headers.
type LeaseRequest struct {
	Action LeaseAction
	// ID is x-ms-lease-id: required by renew, change and release.
	ID string
	// ProposedID is x-ms-proposed-lease-id: optional for acquire, required by change.
	ProposedID string
	// Duration is x-ms-lease-duration for acquire: 15–60 seconds or InfiniteLease; nil when
	// absent.
	Duration *int
	// BreakPeriod is x-ms-lease-break-period for break: 0–60 seconds; nil when absent.
	BreakPeriod *int
}

// LeaseResult is what a lease operation answers besides ETag and Last-Modified (which lease
// operations never change): the lease id (acquire, renew, change) and, for break, the
// seconds until the lease is broken (x-ms-lease-time).
type LeaseResult struct {
	ID           string
	Time         int
	ETag         ETag
	LastModified time.Time
}

// lease is a lease as stored. Time-driven transitions (leased → expired, breaking → broken)
// are not written back: at evaluates them when the lease is read.
type lease struct {
	// State is LeaseLeased, LeaseBreaking or LeaseBroken; empty is available.
	State LeaseState `json:"state,omitempty"`
	// ID is the lease id as the client gave it (or as generated); compared as a GUID.
	ID string `json:"id,omitempty"`
	// Seconds is the duration acquired, InfiniteLease for an infinite lease.
	Seconds int `json:"seconds,omitempty"`
	// Until is when a fixed lease expires (leased) or when a breaking lease breaks, in Unix
	// nanoseconds.
	Until int64 `json:"until,omitempty"`
}

// at returns the lease as it stands at now.
func (l lease) at(now time.Time) lease {
	switch {
	case l.State == LeaseLeased && l.Seconds != InfiniteLease && now.UnixNano() >= l.Until:
		l.State = LeaseExpired
	case l.State == LeaseBreaking && now.UnixNano() >= l.Until:
		l.State = LeaseBroken
	case l.State == "":
		l.State = LeaseAvailable
	}
	return l
}

// held reports whether the lease (evaluated with at) gives its holder exclusive write access.
func (l lease) held() bool { return l.State == LeaseLeased || l.State == LeaseBreaking }

// info reports the lease at now.
func (l lease) info(now time.Time) LeaseInfo {
	l = l.at(now)
	i := LeaseInfo{Status: "unlocked", State: l.State}
	if l.held() {
		i.Status = "locked"
	}
	if l.State == LeaseLeased {
		i.Duration = "fixed"
		if l.Seconds == InfiniteLease {
			i.Duration = "infinite"
		}
	}
	return i
}

// afterWrite is the lease once a write allowed by checkAccess has been applied: a lease that
// expired or was broken is forgotten (so its holder can no longer renew it); a held one stays.
func (l lease) afterWrite(now time.Time) lease {
	if l.at(now).held() {
		return l
	}
	return lease{}
}

// leaseTarget selects the wording and codes of lease errors.
type leaseTarget bool

const (
	blobLease      leaseTarget = false
	containerLease leaseTarget = true
)

func (t leaseTarget) noun() string {
	if t == containerLease {
		return "container"
	}
	return "blob"
}

// checkAccess applies a lease to another operation (shared/spec/blob.md §14.3). id is the
// request's x-ms-lease-id ("" when absent); required tells whether the operation needs it on
// a leased resource (writes and deletes) or only checks it when given (reads and the rest).
func (l lease) checkAccess(now time.Time, id string, required bool, t leaseTarget) error {
	l = l.at(now)
	if id == "" {
		if required && l.held() {
			return azerr.Newf(azerr.LeaseIDMissing, "There is currently a lease on the %s and no lease ID was specified in the request.", t.noun())
		}
		return nil
	}
	notPresent, mismatch := azerr.LeaseNotPresentWithBlobOperation, azerr.LeaseIDMismatchWithBlobOperation
	if t == containerLease {
		notPresent, mismatch = azerr.LeaseNotPresentWithContainerOperation, azerr.LeaseIDMismatchWithContainerOperation
	}
	if !l.held() {
		// For an expired lease whose id this is, the REST reference names LeaseLost; the
		// error list and Azurite answer LeaseNotPresent. Both are 412, which is what
		// clients branch on.
		return azerr.Newf(notPresent, "There is currently no lease on the %s.", t.noun())
	}
	if !sameLeaseID(id, l.ID) {
		return azerr.Newf(mismatch, "The lease ID specified did not match the lease ID for the %s.", t.noun())
	}
	return nil
}

// validate checks what a lease request must carry, before anything is read.
func (r LeaseRequest) validate() error {
	if r.ID != "" && !validLeaseID(r.ID) {
		return azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-lease-id %q is not a GUID.", r.ID)
	}
	if r.ProposedID != "" && !validLeaseID(r.ProposedID) {
		return azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-proposed-lease-id %q is not a GUID.", r.ProposedID)
	}
	switch r.Action {
	case AcquireLease:
		if r.Duration == nil {
			return azerr.Newf(azerr.MissingRequiredHeader, "A required HTTP header was not specified: x-ms-lease-duration.")
		}
		if d := *r.Duration; d != InfiniteLease && (d < MinLeaseSeconds || d > MaxLeaseSeconds) {
			return azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-lease-duration must be %d to %d seconds or -1; it is %d.", MinLeaseSeconds, MaxLeaseSeconds, d)
		}
	case RenewLease, ReleaseLease:
		if r.ID == "" {
			return azerr.Newf(azerr.MissingRequiredHeader, "A required HTTP header was not specified: x-ms-lease-id.")
		}
	case ChangeLease:
		if r.ID == "" {
			return azerr.Newf(azerr.MissingRequiredHeader, "A required HTTP header was not specified: x-ms-lease-id.")
		}
		if r.ProposedID == "" {
			return azerr.Newf(azerr.MissingRequiredHeader, "A required HTTP header was not specified: x-ms-proposed-lease-id.")
		}
	case BreakLease:
		if p := r.BreakPeriod; p != nil && (*p < 0 || *p > MaxBreakPeriodSeconds) {
			return azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-lease-break-period must be 0 to %d seconds; it is %d.", MaxBreakPeriodSeconds, *p)
		}
	default:
		return azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-lease-action %q is not acquire, renew, change, release or break.", r.Action)
	}
	return nil
}

// apply runs the lease state machine (shared/spec/blob.md §14.2) on l at now. It returns the
// new stored lease and the result; every refusal is a 409.
func (l lease) apply(r LeaseRequest, now time.Time, t leaseTarget) (lease, LeaseResult, error) {
	cur := l.at(now)
	mismatch := func() error {
		return azerr.Newf(azerr.LeaseIDMismatchWithLeaseOperation, "The lease ID specified did not match the lease ID for the %s.", t.noun())
	}
	notPresent := func() error {
		return azerr.Newf(azerr.LeaseNotPresentWithLeaseOperation, "There is currently no lease on the %s.", t.noun())
	}
	ours := cur.State != LeaseAvailable && sameLeaseID(r.ID, cur.ID)
	switch r.Action {
	case AcquireLease:
		switch cur.State {
		case LeaseLeased:
			if r.ProposedID == "" || !sameLeaseID(r.ProposedID, cur.ID) {
				return l, LeaseResult{}, azerr.New(azerr.LeaseAlreadyPresent)
			}
		case LeaseBreaking:
			if r.ProposedID != "" && sameLeaseID(r.ProposedID, cur.ID) {
				return l, LeaseResult{}, azerr.New(azerr.LeaseIsBreakingAndCannotBeAcquired)
			}
			return l, LeaseResult{}, azerr.New(azerr.LeaseAlreadyPresent)
		}
		id := r.ProposedID
		if id == "" {
			id = uuid.New()
		}
		// Acquiring again with the holder's id renews the lease with the new duration; the
		// id is echoed as the client sent it this time.
		next := fixedOrInfinite(id, *r.Duration, now)
		return next, LeaseResult{ID: id}, nil

	case RenewLease:
		if !ours {
			return l, LeaseResult{}, mismatch()
		}
		switch cur.State {
		case LeaseBreaking, LeaseBroken:
			return l, LeaseResult{}, azerr.Newf(azerr.LeaseIsBrokenAndCannotBeRenewed, "The lease ID matched, but the lease has been broken explicitly and cannot be renewed.")
		}
		next := fixedOrInfinite(cur.ID, cur.Seconds, now)
		return next, LeaseResult{ID: cur.ID}, nil

	case ChangeLease:
		switch cur.State {
		case LeaseAvailable, LeaseBroken, LeaseExpired:
			return l, LeaseResult{}, notPresent()
		}
		if !ours && !sameLeaseID(r.ProposedID, cur.ID) {
			return l, LeaseResult{}, mismatch()
		}
		if cur.State == LeaseBreaking {
			return l, LeaseResult{}, azerr.New(azerr.LeaseIsBreakingAndCannotBeChanged)
		}
		next := l
		next.ID = r.ProposedID
		return next, LeaseResult{ID: r.ProposedID}, nil

	case ReleaseLease:
		if !ours {
			return l, LeaseResult{}, mismatch()
		}
		return lease{}, LeaseResult{}, nil

	case BreakLease:
		if cur.State == LeaseAvailable {
			return l, LeaseResult{}, notPresent()
		}
		breakAt := now
		switch cur.State {
		case LeaseLeased:
			if cur.Seconds == InfiniteLease {
				if r.BreakPeriod != nil {
					breakAt = now.Add(time.Duration(*r.BreakPeriod) * time.Second)
				}
			} else {
				// A fixed lease breaks when its time runs out, or after the period if that
				// is sooner.
				breakAt = time.Unix(0, cur.Until)
				if r.BreakPeriod != nil {
					breakAt = minTime(breakAt, now.Add(time.Duration(*r.BreakPeriod)*time.Second))
				}
			}
		case LeaseBreaking:
			breakAt = time.Unix(0, cur.Until)
			if r.BreakPeriod != nil {
				breakAt = minTime(breakAt, now.Add(time.Duration(*r.BreakPeriod)*time.Second))
			}
		}
		next := lease{ID: cur.ID, Seconds: cur.Seconds}
		if breakAt.After(now) {
			next.State, next.Until = LeaseBreaking, breakAt.UnixNano()
		} else {
			next.State = LeaseBroken
		}
		remaining := breakAt.Sub(now)
		secs := int((remaining + time.Second - 1) / time.Second)
		return next, LeaseResult{Time: max(secs, 0)}, nil
	}
	return l, LeaseResult{}, r.validate()
}

func fixedOrInfinite(id string, seconds int, now time.Time) lease {
	l := lease{State: LeaseLeased, ID: id, Seconds: seconds}
	if seconds != InfiniteLease {
		l.Until = now.Add(time.Duration(seconds) * time.Second).UnixNano()
	}
	return l
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// parseLeaseID reads a GUID in any of .NET's text forms Azure accepts for lease ids:
// 32 hex digits, 8-4-4-4-12 hyphenated, or the latter in braces or parentheses (the
// Functions host proposes bare hex ids). The version and variant bits are not checked.
func parseLeaseID(s string) ([16]byte, bool) {
	var g [16]byte
	if len(s) == 38 && (s[0] == '{' && s[37] == '}' || s[0] == '(' && s[37] == ')') {
		s = s[1:37]
	}
	switch len(s) {
	case 32:
	case 36:
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return g, false
		}
		s = s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	default:
		return g, false
	}
	if _, err := hex.Decode(g[:], []byte(s)); err != nil {
		return g, false
	}
	return g, true
}

func validLeaseID(s string) bool { _, ok := parseLeaseID(s); return ok }

// ValidLeaseID tells a lease id a request may carry: a GUID, hyphenated or bare.
func ValidLeaseID(s string) bool { return validLeaseID(s) }

// sameLeaseID compares lease ids as GUID values, so that one GUID's bare and hyphenated forms
// match.
func sameLeaseID(a, b string) bool {
	ga, oka := parseLeaseID(a)
	gb, okb := parseLeaseID(b)
	return oka && okb && ga == gb
}
