package azerr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tabula-dev/tabula/internal/store"
)

func TestAsMapsEveryFailureToAnAzureError(t *testing.T) {
	cases := []struct {
		err    error
		status int
		code   Code
	}{
		{Newf(EntityAlreadyExists, "custom"), 409, EntityAlreadyExists},
		{fmt.Errorf("wrapped: %w", New(TableNotFound)), 404, TableNotFound},
		// An unreachable backend is retryable for every SDK: 503, not a 500.
		{fmt.Errorf("postgres: dial: %w", store.ErrUnavailable), 503, ServerBusy},
		// A full store recovers once space is freed: retryable too.
		{fmt.Errorf("pebble: %w", store.ErrFull), 503, ServerBusy},
		// A write that may or may not have been applied: Azure's own answer for that.
		{fmt.Errorf("pebble: commit: %w", store.ErrInDoubt), 500, OperationTimedOut},
		// A request the database can never store must not invite retries.
		{fmt.Errorf("postgres: %w: index row size", store.ErrRefused), 400, InvalidInput},
		{errors.New("anything else"), 500, InternalError},
	}
	for _, tc := range cases {
		e := As(tc.err)
		if e.Status != tc.status || e.Code != tc.code {
			t.Errorf("As(%v) = %d %s, want %d %s", tc.err, e.Status, e.Code, tc.status, tc.code)
		}
	}
}

func TestEveryCodeHasAStatusAndMessage(t *testing.T) {
	for code, d := range defaults {
		if d.status < 400 || d.status > 599 || d.message == "" {
			t.Errorf("%s: status %d, message %q", code, d.status, d.message)
		}
	}
}
