package blob

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

const (
	idA = "0f8b7c2a-1111-4222-8333-444455556666"
	idB = "c820a799-76d7-4ee2-6e15-546f19325c2c"
	idC = "11111111-2222-3333-4444-555555555555"
	// bareA is idA as 32 bare hex digits, the form the Functions host proposes.
	bareA = "0F8B7C2A111142228333444455556666"
)

// leaseStep is one step of a lease scenario: after advancing the clock, run op on blob
// "lock" and expect want ("ok", or "status code").
type leaseStep struct {
	advance time.Duration
	op      string
	want    string
}

// runLeaseOp runs one op, written as words: acquire ID|- SECONDS, renew ID, change ID NEW,
// release ID, break [PERIOD], write [ID], read [ID], delete [ID], state STATE STATUS
// [DURATION].
func runLeaseOp(e *env, p Path, op string) error {
	w := strings.Fields(op)
	arg := func(i int) string {
		if i < len(w) && w[i] != "-" {
			return w[i]
		}
		return ""
	}
	lease := func(req LeaseRequest) error {
		_, err := e.s.LeaseBlob(e.ctx, p, req, Conditions{})
		return err
	}
	switch w[0] {
	case "acquire":
		var d int
		fmt.Sscan(w[2], &d)
		return lease(LeaseRequest{Action: AcquireLease, ProposedID: arg(1), Duration: &d})
	case "renew":
		return lease(LeaseRequest{Action: RenewLease, ID: arg(1)})
	case "change":
		return lease(LeaseRequest{Action: ChangeLease, ID: arg(1), ProposedID: arg(2)})
	case "release":
		return lease(LeaseRequest{Action: ReleaseLease, ID: arg(1)})
	case "break":
		req := LeaseRequest{Action: BreakLease}
		if len(w) > 1 {
			var p int
			fmt.Sscan(w[1], &p)
			req.BreakPeriod = &p
		}
		return lease(req)
	case "write":
		_, err := e.s.SetBlobMetadata(e.ctx, p, Metadata{"FunctionInstance": "x"}, arg(1), Conditions{})
		return err
	case "read":
		_, err := e.s.GetBlobProperties(e.ctx, p, arg(1), Conditions{})
		return err
	case "delete":
		return e.s.DeleteBlob(e.ctx, p, DeleteBlobOnly, arg(1), Conditions{})
	case "state":
		b, err := e.s.GetBlobProperties(e.ctx, p, "", Conditions{})
		if err != nil {
			return err
		}
		got := fmt.Sprintf("%s %s %s", b.Lease.State, b.Lease.Status, b.Lease.Duration)
		if want := strings.Join(w[1:], " "); strings.TrimSpace(got) != want {
			return fmt.Errorf("lease is %q, want %q", got, want)
		}
		return nil
	}
	panic("unknown op " + op)
}

func runLeaseSteps(t *testing.T, e *env, name string, steps []leaseStep) {
	t.Helper()
	p := path(name)
	e.putBlob(name, nil)
	for i, s := range steps {
		e.clock.Advance(s.advance)
		if got := codeOf(runLeaseOp(e, p, s.op)); got != s.want {
			t.Fatalf("step %d (+%v %s): %s, want %s", i, s.advance, s.op, got, s.want)
		}
	}
}

// The lease state machine of shared/spec/blob.md §14.2, over time.
func TestLeaseStateMachine(t *testing.T) {
	scenarios := map[string][]leaseStep{
		"fixed lease expires and can be taken": {
			{0, "acquire " + idA + " 15", "ok"},
			{0, "state leased locked fixed", "ok"},
			{0, "acquire " + idB + " 15", "409 LeaseAlreadyPresent"},
			{0, "acquire - 15", "409 LeaseAlreadyPresent"},
			{14 * time.Second, "state leased locked fixed", "ok"},
			{time.Second, "state expired unlocked", "ok"},
			{0, "acquire " + idB + " 20", "ok"},
			{0, "renew " + idA, "409 LeaseIdMismatchWithLeaseOperation"},
			{0, "release " + idB, "ok"},
			{0, "state available unlocked", "ok"},
		},
		"renewing keeps a lease; acquiring with its id gives a new duration": {
			{0, "acquire " + idA + " 15", "ok"},
			{10 * time.Second, "renew " + idA, "ok"},
			{10 * time.Second, "state leased locked fixed", "ok"},
			{0, "acquire " + idA + " 60", "ok"},
			{50 * time.Second, "state leased locked fixed", "ok"},
			{10 * time.Second, "state expired unlocked", "ok"},
			{time.Hour, "renew " + idA, "ok"}, // an expired lease nobody touched can be renewed
			{0, "state leased locked fixed", "ok"},
		},
		"ids compare as GUIDs": {
			{0, "acquire " + bareA + " 15", "ok"},
			{0, "renew " + idA, "ok"},
			{0, "write " + strings.ToLower(bareA), "ok"},
			{0, "release {" + idA + "}", "ok"},
		},
		"a write forgets an expired lease": {
			{0, "acquire " + idA + " 15", "ok"},
			{16 * time.Second, "write", "ok"},
			{0, "renew " + idA, "409 LeaseIdMismatchWithLeaseOperation"},
		},
		"infinite lease": {
			{0, "acquire " + idA + " -1", "ok"},
			{1000 * time.Hour, "state leased locked infinite", "ok"},
			{0, "break", "ok"},
			{0, "state broken unlocked", "ok"},
			{0, "renew " + idA, "409 LeaseIsBrokenAndCannotBeRenewed"},
			{0, "change " + idA + " " + idB, "409 LeaseNotPresentWithLeaseOperation"},
			{0, "acquire " + idB + " 15", "ok"},
		},
		"breaking a fixed lease waits for its time or the period": {
			{0, "acquire " + idA + " 60", "ok"},
			{0, "break 10", "ok"},
			{0, "state breaking locked", "ok"},
			{0, "acquire " + idA + " 15", "409 LeaseIsBreakingAndCannotBeAcquired"},
			{0, "acquire " + idB + " 15", "409 LeaseAlreadyPresent"},
			{0, "change " + idA + " " + idB, "409 LeaseIsBreakingAndCannotBeChanged"},
			{0, "renew " + idA, "409 LeaseIsBrokenAndCannotBeRenewed"},
			{0, "write", "412 LeaseIdMissing"},
			{0, "write " + idA, "ok"},
			{9 * time.Second, "state breaking locked", "ok"},
			{time.Second, "state broken unlocked", "ok"},
			{0, "write " + idA, "412 LeaseNotPresentWithBlobOperation"},
			{0, "release " + idA, "ok"},
			{0, "state available unlocked", "ok"},
		},
		"a break period longer than the lease's time left changes nothing": {
			{0, "acquire " + idA + " 15", "ok"},
			{0, "break 60", "ok"},
			{15 * time.Second, "state broken unlocked", "ok"},
		},
		"break 0 breaks at once, and breaking again shortens": {
			{0, "acquire " + idA + " -1", "ok"},
			{0, "break 30", "ok"},
			{0, "break 5", "ok"},
			{5 * time.Second, "state broken unlocked", "ok"},
			{0, "acquire " + idA + " 15", "ok"},
			{0, "break 0", "ok"},
			{0, "state broken unlocked", "ok"},
			{0, "break", "ok"},
		},
		"change, and its idempotent retry": {
			{0, "acquire " + idA + " 15", "ok"},
			{0, "change " + idA + " " + idB, "ok"},
			{0, "change " + idA + " " + idB, "ok"},
			{0, "change " + idC + " " + idA, "409 LeaseIdMismatchWithLeaseOperation"},
			{0, "renew " + idB, "ok"},
			{0, "release " + idA, "409 LeaseIdMismatchWithLeaseOperation"},
			{0, "release " + idB, "ok"},
		},
		"no lease": {
			{0, "renew " + idA, "409 LeaseIdMismatchWithLeaseOperation"},
			{0, "release " + idA, "409 LeaseIdMismatchWithLeaseOperation"},
			{0, "change " + idA + " " + idB, "409 LeaseNotPresentWithLeaseOperation"},
			{0, "break", "409 LeaseNotPresentWithLeaseOperation"},
			{0, "write " + idA, "412 LeaseNotPresentWithBlobOperation"},
			{0, "read " + idA, "412 LeaseNotPresentWithBlobOperation"},
		},
		"a held lease guards writes and deletes, not reads": {
			{0, "acquire " + idA + " 15", "ok"},
			{0, "write", "412 LeaseIdMissing"},
			{0, "write " + idB, "412 LeaseIdMismatchWithBlobOperation"},
			{0, "delete", "412 LeaseIdMissing"},
			{0, "read", "ok"},
			{0, "read " + idA, "ok"},
			{0, "read " + idB, "412 LeaseIdMismatchWithBlobOperation"},
			{0, "write " + idA, "ok"},
			{0, "state leased locked fixed", "ok"},
			{0, "delete " + idA, "ok"},
			{0, "state", "404 BlobNotFound"},
		},
	}
	forEachBackend(t, func(t *testing.T, e *env) {
		for name, steps := range scenarios {
			t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
				e.T = t
				runLeaseSteps(t, e, name, steps)
			})
		}
	})
}

func TestLeaseRequestValidation(t *testing.T) {
	cases := []struct {
		req  LeaseRequest
		want string
	}{
		{LeaseRequest{Action: AcquireLease}, "400 MissingRequiredHeader"},
		{LeaseRequest{Action: AcquireLease, Duration: ptr(14)}, "400 InvalidHeaderValue"},
		{LeaseRequest{Action: AcquireLease, Duration: ptr(61)}, "400 InvalidHeaderValue"},
		{LeaseRequest{Action: AcquireLease, Duration: ptr(-2)}, "400 InvalidHeaderValue"},
		{LeaseRequest{Action: AcquireLease, Duration: ptr(15), ProposedID: "not-a-guid"}, "400 InvalidHeaderValue"},
		{LeaseRequest{Action: AcquireLease, Duration: ptr(60), ProposedID: bareA}, "ok"},
		{LeaseRequest{Action: RenewLease}, "400 MissingRequiredHeader"},
		{LeaseRequest{Action: ChangeLease, ID: idA}, "400 MissingRequiredHeader"},
		{LeaseRequest{Action: ReleaseLease, ID: "{" + idA + ")"}, "400 InvalidHeaderValue"},
		{LeaseRequest{Action: BreakLease, BreakPeriod: ptr(61)}, "400 InvalidHeaderValue"},
		{LeaseRequest{Action: BreakLease, BreakPeriod: ptr(0)}, "ok"},
		{LeaseRequest{Action: "steal"}, "400 InvalidHeaderValue"},
	}
	for _, c := range cases {
		if got := codeOf(c.req.validate()); got != c.want {
			t.Errorf("%+v: %s, want %s", c.req, got, c.want)
		}
	}
}

// Lease operations change neither ETag nor Last-Modified; break reports the seconds left.
func TestLeaseOperationsKeepETag(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		b := e.putBlob("lock", []byte("x"))
		r, err := e.s.LeaseBlob(e.ctx, path("lock"), LeaseRequest{Action: AcquireLease, Duration: ptr(30)}, Conditions{})
		if err != nil || r.ETag != b.ETag || !r.LastModified.Equal(b.LastModified) || !validLeaseID(r.ID) {
			t.Fatalf("acquire: %+v, %v (blob ETag %s)", r, err, b.ETag)
		}
		e.clock.Advance(10 * time.Second)
		r, err = e.s.LeaseBlob(e.ctx, path("lock"), LeaseRequest{Action: BreakLease}, Conditions{})
		if err != nil || r.Time != 20 || r.ETag != b.ETag {
			t.Fatalf("break: %+v, %v", r, err)
		}
		got, _ := e.s.GetBlobProperties(e.ctx, path("lock"), "", Conditions{})
		if got.ETag != b.ETag {
			t.Errorf("ETag after lease operations %s, want %s", got.ETag, b.ETag)
		}
		_, err = e.s.LeaseBlob(e.ctx, path("lock"), LeaseRequest{Action: AcquireLease, Duration: ptr(15)}, Conditions{IfMatch: []ETag{`"0x1"`}})
		wantCode(t, err, 412, azerr.ConditionNotMet)
		_, err = e.s.LeaseBlob(e.ctx, path("missing"), LeaseRequest{Action: AcquireLease, Duration: ptr(15)}, Conditions{})
		wantCode(t, err, 404, azerr.BlobNotFound)
		_, err = e.s.LeaseBlob(e.ctx, Path{Account: "acct", Container: "nope", Name: "x"}, LeaseRequest{Action: AcquireLease, Duration: ptr(15)}, Conditions{})
		wantCode(t, err, 404, azerr.ContainerNotFound)
		_, err = e.s.LeaseBlob(e.ctx, Path{Account: "acct", Container: "ctr", Name: "lock", Snapshot: "2024-01-01T00:00:00.0000000Z"}, LeaseRequest{Action: AcquireLease, Duration: ptr(15)}, Conditions{})
		wantCode(t, err, 400, azerr.InvalidOperation)
	})
}

// If-None-Match: * does not stop the holder of a blob's lease from replacing it (the Python
// SDK's recordings: it sends both for an upload with overwrite=False and a lease); without the
// lease id it still does.
func TestLeaseHolderReplacesDespiteIfNoneMatchAny(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.putBlob("leased", []byte("x"))
		if _, err := e.s.LeaseBlob(e.ctx, path("leased"), LeaseRequest{Action: AcquireLease, Duration: ptr(-1), ProposedID: idA}, Conditions{}); err != nil {
			t.Fatal(err)
		}
		noOverwrite := Conditions{IfNoneMatch: []ETag{AnyETag}}
		_, _, err := e.s.PutBlob(e.ctx, path("leased"), strings.NewReader("y"), 1, PutBlobOptions{Type: BlockBlob, LeaseID: idA, Conditions: noOverwrite})
		if err != nil {
			t.Fatalf("the lease holder's Put Blob with If-None-Match: *: %v", err)
		}
		e.putBlob("plain", []byte("x"))
		_, _, err = e.s.PutBlob(e.ctx, path("plain"), strings.NewReader("y"), 1, PutBlobOptions{Type: BlockBlob, Conditions: noOverwrite})
		wantCode(t, err, 409, azerr.BlobAlreadyExists)
	})
}

// A container lease guards only Delete Container.
func TestContainerLease(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		r, err := e.s.LeaseContainer(e.ctx, "acct", "ctr", LeaseRequest{Action: AcquireLease, Duration: ptr(InfiniteLease), ProposedID: idA}, Conditions{})
		if err != nil || r.ID != idA {
			t.Fatalf("acquire: %+v, %v", r, err)
		}
		c, _ := e.s.GetContainer(e.ctx, "acct", "ctr", "")
		if c.Lease != (LeaseInfo{Status: "locked", State: LeaseLeased, Duration: "infinite"}) {
			t.Errorf("lease %+v", c.Lease)
		}
		if _, err := e.s.SetContainerMetadata(e.ctx, "acct", "ctr", Metadata{"a": "b"}, "", Conditions{}); err != nil {
			t.Errorf("Set Container Metadata without the lease id: %v", err)
		}
		_, err = e.s.SetContainerMetadata(e.ctx, "acct", "ctr", nil, idB, Conditions{})
		wantCode(t, err, 412, azerr.LeaseIDMismatchWithContainerOperation)
		e.putBlob("inside", []byte("x")) // blobs are not guarded
		err = e.s.DeleteContainer(e.ctx, "acct", "ctr", "", Conditions{})
		wantCode(t, err, 412, azerr.LeaseIDMissing)
		err = e.s.DeleteContainer(e.ctx, "acct", "ctr", idB, Conditions{})
		wantCode(t, err, 412, azerr.LeaseIDMismatchWithContainerOperation)
		_, err = e.s.LeaseContainer(e.ctx, "acct", "ctr", LeaseRequest{Action: AcquireLease, Duration: ptr(15), ProposedID: idB}, Conditions{})
		wantCode(t, err, 409, azerr.LeaseAlreadyPresent)
		if err := e.s.DeleteContainer(e.ctx, "acct", "ctr", idA, Conditions{}); err != nil {
			t.Fatalf("delete with the lease id: %v", err)
		}
	})
}

// The Azure Functions host's primary-host lock (shared/spec/blob.md §19), played by two
// hosts on two front-ends sharing one store: they race to acquire a 15 s lease with proposed
// ids; the loser gets 409 LeaseAlreadyPresent until the winner releases or the lease expires;
// renewals keep it; a break ends it.
func TestFunctionsHostLockDance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		{
			hosts := []*Service{e.s, e.other}
			ids := []string{"000000000000000000000000A1B2C3D4", "000000000000000000000000B5C6D7E8"}
			lock := Path{Account: "acct", Container: "azure-webjobs-hosts", Name: "locks/myhostid/host"}
			acquire := func(h int) error {
				_, err := hosts[h].LeaseBlob(e.ctx, lock, LeaseRequest{Action: AcquireLease, ProposedID: ids[h], Duration: ptr(15)}, Conditions{})
				return err
			}
			renew := func(h int) error {
				_, err := hosts[h].LeaseBlob(e.ctx, lock, LeaseRequest{Action: RenewLease, ID: ids[h]}, Conditions{})
				return err
			}
			// Step 1: acquire before anything exists: 404 ContainerNotFound, then (after the
			// container exists) 404 BlobNotFound; the hosts create both, ignoring 409s.
			wantCode(t, acquire(0), 404, azerr.ContainerNotFound)
			for h := range hosts {
				_, err := hosts[h].CreateContainer(e.ctx, "acct", "azure-webjobs-hosts", nil, PrivateAccess)
				if h == 1 {
					wantCode(t, err, 409, azerr.ContainerAlreadyExists)
				}
			}
			wantCode(t, acquire(1), 404, azerr.BlobNotFound)
			var wg sync.WaitGroup
			createErrs := make([]error, 2)
			for h := range hosts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _, createErrs[h] = hosts[h].PutBlob(e.ctx, lock, strings.NewReader(""), 0, PutBlobOptions{Type: BlockBlob, Conditions: Conditions{IfNoneMatch: []ETag{AnyETag}}})
				}()
			}
			wg.Wait()
			if ok := codeOf(createErrs[0]) == "ok"; ok == (codeOf(createErrs[1]) == "ok") {
				t.Fatalf("creating the lock blob: %s and %s, want one ok and one 409", codeOf(createErrs[0]), codeOf(createErrs[1]))
			}
			// The race: exactly one host wins.
			errs := make([]error, 2)
			for h := range hosts {
				wg.Add(1)
				go func() { defer wg.Done(); errs[h] = acquire(h) }()
			}
			wg.Wait()
			winner := 0
			if errs[0] != nil {
				winner = 1
			}
			loser := 1 - winner
			if errs[winner] != nil {
				t.Fatalf("nobody won: %v, %v", errs[0], errs[1])
			}
			wantCode(t, errs[loser], 409, azerr.LeaseAlreadyPresent)
			// Owner bookkeeping with the lease id; the loser cannot write.
			if _, err := hosts[winner].SetBlobMetadata(e.ctx, lock, Metadata{"FunctionInstance": "w"}, ids[winner], Conditions{}); err != nil {
				t.Fatal(err)
			}
			_, err := hosts[loser].SetBlobMetadata(e.ctx, lock, Metadata{"FunctionInstance": "l"}, "", Conditions{})
			wantCode(t, err, 412, azerr.LeaseIDMissing)
			// Renewals every 12 s keep it for a minute; the loser keeps getting 409.
			for range 5 {
				e.clock.Advance(12 * time.Second)
				if err := renew(winner); err != nil {
					t.Fatalf("renew: %v", err)
				}
				wantCode(t, acquire(loser), 409, azerr.LeaseAlreadyPresent)
				wantCode(t, renew(loser), 409, azerr.LeaseIDMismatchWithLeaseOperation)
			}
			// The winner stops renewing: 15 s later the loser takes over.
			e.clock.Advance(14 * time.Second)
			wantCode(t, acquire(loser), 409, azerr.LeaseAlreadyPresent)
			e.clock.Advance(time.Second)
			if err := acquire(loser); err != nil {
				t.Fatalf("acquire after expiry: %v", err)
			}
			wantCode(t, renew(winner), 409, azerr.LeaseIDMismatchWithLeaseOperation)
			// Release on shutdown; the other acquires at once.
			if _, err := hosts[loser].LeaseBlob(e.ctx, lock, LeaseRequest{Action: ReleaseLease, ID: ids[loser]}, Conditions{}); err != nil {
				t.Fatal(err)
			}
			if err := acquire(winner); err != nil {
				t.Fatalf("acquire after release: %v", err)
			}
			// A break ends it.
			if _, err := hosts[loser].LeaseBlob(e.ctx, lock, LeaseRequest{Action: BreakLease, BreakPeriod: ptr(0)}, Conditions{}); err != nil {
				t.Fatal(err)
			}
			wantCode(t, renew(winner), 409, azerr.LeaseIsBrokenAndCannotBeRenewed)
			if err := acquire(loser); err != nil {
				t.Fatalf("acquire after break: %v", err)
			}
			props, err := hosts[winner].GetBlobProperties(e.ctx, lock, "", Conditions{})
			if err != nil || props.Lease.State != LeaseLeased || props.Metadata["FunctionInstance"] != "w" {
				t.Fatalf("HEAD: %+v, %v", props, err)
			}
		}
	})
}
