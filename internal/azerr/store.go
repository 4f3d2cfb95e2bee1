package azerr

import (
	"errors"

	"github.com/tabula-dev/tabula/internal/store"
)

// fromStore is the answer to a storage failure the store contract names, or nil.
//
// The choices, by what a client can do about the failure:
//   - unreachable (ErrUnavailable) or full (ErrFull): 503 ServerBusy. Every SDK retries it
//     with backoff, and both clear up by themselves (the database returns, space is freed —
//     deleting entities and tables still works on a full store), so retrying is right.
//   - outcome unknown (ErrInDoubt): 500 OperationTimedOut, which Azure documents as "may or
//     may not have succeeded"; SDKs retry it, and a retried insert then meets 409
//     EntityAlreadyExists exactly as after a timeout on Azure.
//   - refused for good (ErrRefused): 400 InvalidInput, which no SDK retries: retrying a
//     request the database cannot store only repeats the failure.
func fromStore(err error) *Error {
	switch {
	case errors.Is(err, store.ErrUnavailable):
		return Newf(ServerBusy, "The server is currently unable to receive requests. Please retry your request. (The storage backend is unreachable.)")
	case errors.Is(err, store.ErrFull):
		return Newf(ServerBusy, "The server is currently unable to receive requests. Please retry your request. (The server's storage is full: writes that add data are refused until space is freed; deleting entities and tables still works.)")
	case errors.Is(err, store.ErrInDoubt):
		return Newf(OperationTimedOut, "The operation could not be completed within the permitted time. The operation may or may not have succeeded on the server side. Please query the server state before retrying the operation.")
	case errors.Is(err, store.ErrRefused):
		return Newf(InvalidInput, "One of the request inputs is not valid: the storage backend cannot store it, and retrying will not change that (%v).", err)
	}
	return nil
}
