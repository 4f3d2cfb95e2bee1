package tablehttp

import (
	"context"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/table"
)

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
