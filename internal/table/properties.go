package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/store"
)

// serviceSpace holds one record per account: its Table service properties.
const serviceSpace = "\x00service"

// ServiceProperties are an account's Table service settings (Set/Get Table Service
// Properties). Logging and metrics are stored and returned, not acted on: Tabula keeps no
// analytics tables. CORS rules govern browser access.
type ServiceProperties struct {
	Logging       Logging    `json:"logging"`
	HourMetrics   Metrics    `json:"hourMetrics"`
	MinuteMetrics Metrics    `json:"minuteMetrics"`
	Cors          []CorsRule `json:"cors,omitempty"`
}

// Logging is the analytics-logging setting.
type Logging struct {
	Version   string          `json:"version"`
	Read      bool            `json:"read"`
	Write     bool            `json:"write"`
	Delete    bool            `json:"delete"`
	Retention RetentionPolicy `json:"retention"`
}

// Metrics is an hour or minute metrics setting.
type Metrics struct {
	Version     string          `json:"version"`
	Enabled     bool            `json:"enabled"`
	IncludeAPIs bool            `json:"includeAPIs"`
	Retention   RetentionPolicy `json:"retention"`
}

// RetentionPolicy says how long analytics data would be kept.
type RetentionPolicy struct {
	Enabled bool `json:"enabled"`
	Days    int  `json:"days,omitempty"`
}

// CorsRule is one CORS rule, its lists already split.
type CorsRule struct {
	AllowedOrigins  []string `json:"allowedOrigins"`
	AllowedMethods  []string `json:"allowedMethods"`
	AllowedHeaders  []string `json:"allowedHeaders"`
	ExposedHeaders  []string `json:"exposedHeaders"`
	MaxAgeInSeconds int      `json:"maxAgeInSeconds"`
}

// DefaultServiceProperties are what a never-configured account reports: analytics off, no
// CORS rules.
func DefaultServiceProperties() ServiceProperties {
	return ServiceProperties{
		Logging:       Logging{Version: "1.0"},
		HourMetrics:   Metrics{Version: "1.0"},
		MinuteMetrics: Metrics{Version: "1.0"},
	}
}

func servicePropertiesKey(account string) store.Key {
	return store.Key{Space: serviceSpace, Partition: account, Row: "properties"}
}

// ServiceProperties returns the account's settings.
func (s *Service) ServiceProperties(ctx context.Context, account string) (ServiceProperties, error) {
	rec, err := s.store.Get(ctx, servicePropertiesKey(account))
	if errors.Is(err, store.ErrNotFound) {
		return DefaultServiceProperties(), nil
	}
	if err != nil {
		return ServiceProperties{}, err
	}
	var p ServiceProperties
	if err := json.Unmarshal(rec.Value, &p); err != nil {
		return ServiceProperties{}, fmt.Errorf("service properties of %s are corrupt: %w", account, err)
	}
	return p, nil
}

// SetServiceProperties replaces the account's settings. update receives the current ones and
// returns the new ones, so a partial update (Azure keeps elements the request omits) is
// applied to the state it read, not to a stale copy.
func (s *Service) SetServiceProperties(ctx context.Context, account string, update func(*ServiceProperties) error) error {
	for {
		var after edm.Ticks
		cur, err := s.store.Get(ctx, servicePropertiesKey(account))
		expect := store.Expect{Kind: store.ExpectAbsent}
		p := DefaultServiceProperties()
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		default:
			expect = store.Expect{Kind: store.ExpectVersion, Version: cur.Version}
			after = edm.Ticks(cur.Version)
			if err := json.Unmarshal(cur.Value, &p); err != nil {
				return fmt.Errorf("service properties of %s are corrupt: %w", account, err)
			}
		}
		if err := update(&p); err != nil {
			return err
		}
		value, err := json.Marshal(&p)
		if err != nil {
			return err
		}
		err = s.store.Commit(ctx, []store.Mutation{{
			Key: servicePropertiesKey(account), Expect: expect, Value: value, Version: int64(s.nextTimestamp(after)),
		}})
		var cf *store.ConditionFailedError
		if !errors.As(err, &cf) {
			return err
		}
	}
}
