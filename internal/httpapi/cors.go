package httpapi

import (
	"context"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/table"
)

// preflight answers a CORS preflight (OPTIONS, never authenticated). Tabula does not store
// CORS rules yet, so every well-formed preflight is refused the way Azure refuses one when
// CORS is not enabled for the account.
func (s *Server) preflight(rq *request) error {
	rq.jsonErrors = false
	if rq.r.Header.Get("Origin") == "" || rq.r.Header.Get("Access-Control-Request-Method") == "" {
		return azerr.Newf(azerr.InvalidHeaderValue, "A required CORS header is not present: a preflight request needs Origin and Access-Control-Request-Method.")
	}
	return azerr.New(azerr.CorsPreflightFailure)
}

// policyStore lets the authenticator read the stored access policies a SAS refers to (si=).
type policyStore struct{ svc *table.Service }

func (p policyStore) Policy(ctx context.Context, account, tableName, id string) (auth.AccessPolicy, bool, error) {
	t, err := p.svc.Table(ctx, account, tableName)
	if e, ok := err.(*azerr.Error); ok && e.Status == 404 {
		return auth.AccessPolicy{}, false, nil
	}
	if err != nil {
		return auth.AccessPolicy{}, false, err
	}
	for _, pol := range t.Policies {
		if pol.ID == id {
			return auth.AccessPolicy{ID: pol.ID, Start: pol.Start, Expiry: pol.Expiry, Permission: pol.Permission}, true, nil
		}
	}
	return auth.AccessPolicy{}, false, nil
}
