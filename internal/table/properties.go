package table

import (
	"context"

	"github.com/tabula-dev/tabula/internal/serviceprops"
)

// ServiceProperties returns the account's Table service settings (Get Table Service
// Properties).
func (s *Service) ServiceProperties(ctx context.Context, account string) (serviceprops.Properties, error) {
	return s.props.Get(ctx, account)
}

// SetServiceProperties replaces the account's Table service settings with what update makes
// of the current ones (Set Table Service Properties: elements the request omits are kept).
func (s *Service) SetServiceProperties(ctx context.Context, account string, update func(*serviceprops.Properties)) error {
	return s.props.Update(ctx, account, func(p *serviceprops.Properties) error {
		update(p)
		return nil
	})
}
