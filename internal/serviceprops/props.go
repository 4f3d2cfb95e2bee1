// Package serviceprops keeps an account's settings for one storage service — analytics
// logging and metrics, CORS rules, and the Blob service's extras — and reads and writes them as
// the StorageServiceProperties XML of Get/Set Service Properties. The three services share the
// format; each keeps its own copy per account.
//
// Logging and metrics are stored and returned, not acted on: Tabula keeps no analytics data.
// CORS rules govern browser access (internal/server applies them).
package serviceprops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/store"
)

// Properties are an account's settings for one service.
type Properties struct {
	Logging       Logging    `json:"logging"`
	HourMetrics   Metrics    `json:"hourMetrics"`
	MinuteMetrics Metrics    `json:"minuteMetrics"`
	Cors          []CorsRule `json:"cors,omitempty"`

	// The Blob service's extras (blob.md §7.1); the other services neither read nor write them.
	DeleteRetentionPolicy DeleteRetention `json:"deleteRetentionPolicy,omitzero"`
	StaticWebsite         StaticWebsite   `json:"staticWebsite,omitzero"`
	// DefaultServiceVersion applies to requests that send no x-ms-version; "" while unset.
	DefaultServiceVersion string `json:"defaultServiceVersion,omitempty"`
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

// DeleteRetention is the Blob service's soft-delete setting: when enabled, deleted blobs and
// snapshots are kept for Days.
type DeleteRetention struct {
	Enabled              bool `json:"enabled"`
	Days                 int  `json:"days,omitempty"`
	AllowPermanentDelete bool `json:"allowPermanentDelete,omitempty"`
}

// StaticWebsite is the Blob service's static website setting, stored and returned; Tabula does
// not serve $web as a site.
type StaticWebsite struct {
	Enabled                  bool   `json:"enabled"`
	IndexDocument            string `json:"indexDocument,omitempty"`
	ErrorDocument404Path     string `json:"errorDocument404Path,omitempty"`
	DefaultIndexDocumentPath string `json:"defaultIndexDocumentPath,omitempty"`
}

// Default are what a never-configured account reports: analytics off, no CORS rules.
func Default() Properties {
	return Properties{
		Logging:       Logging{Version: "1.0"},
		HourMetrics:   Metrics{Version: "1.0"},
		MinuteMetrics: Metrics{Version: "1.0"},
	}
}

// Store keeps one Properties per account for one service, in records of the store.
type Store struct {
	st      store.Store
	service auth.Service
	space   string
}

// NewStore returns the properties of service kept in st.
func NewStore(st store.Store, service auth.Service) *Store {
	// The Table service's space predates the others and keeps its name: stores written by
	// earlier versions stay readable.
	space := "\x00service"
	if service != auth.Table {
		space = "\x00service/" + service.String()
	}
	return &Store{st: st, service: service, space: space}
}

func (s *Store) key(account string) store.Key {
	return store.Key{Space: s.space, Partition: account, Row: "properties"}
}

// Get returns the account's settings, Default when never set.
func (s *Store) Get(ctx context.Context, account string) (Properties, error) {
	rec, err := s.st.Get(ctx, s.key(account))
	if errors.Is(err, store.ErrNotFound) {
		return Default(), nil
	}
	if err != nil {
		return Properties{}, err
	}
	var p Properties
	if err := json.Unmarshal(rec.Value, &p); err != nil {
		return Properties{}, fmt.Errorf("%s service properties of %s are corrupt: %w", s.service, account, err)
	}
	return p, nil
}

// Update replaces the account's settings with what update makes of the current ones, so a
// partial update (Azure keeps the elements a request omits) applies to the state it read, not
// to a stale copy; it retries when another writer got there first.
func (s *Store) Update(ctx context.Context, account string, update func(*Properties) error) error {
	for {
		cur, err := s.st.Get(ctx, s.key(account))
		expect := store.Expect{Kind: store.ExpectAbsent}
		var version int64
		p := Default()
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		default:
			expect = store.Expect{Kind: store.ExpectVersion, Version: cur.Version}
			version = cur.Version
			if err := json.Unmarshal(cur.Value, &p); err != nil {
				return fmt.Errorf("%s service properties of %s are corrupt: %w", s.service, account, err)
			}
		}
		if err := update(&p); err != nil {
			return err
		}
		value, err := json.Marshal(&p)
		if err != nil {
			return err
		}
		err = s.st.Commit(ctx, []store.Mutation{{
			Key: s.key(account), Expect: expect, Value: value, Version: max(time.Now().UnixNano(), version+1),
		}})
		var cf *store.ConditionFailedError
		if !errors.As(err, &cf) {
			return err
		}
	}
}
