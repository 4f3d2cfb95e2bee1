package table

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/odata"
	"github.com/tabula-dev/tabula/internal/store"
)

// tablesSpace holds one record per table: partition = account, row = lower-cased table name
// (names are unique and matched case-insensitively), value = the encoded Table.
const tablesSpace = "\x00tables"

// deletedSpace holds one record per deleted table whose entities may not all be gone yet:
// row = the table's space, version = when the table was deleted (ticks). A deletion writes
// it in the same commit that deletes the table's record, so a space is never forgotten, even
// if the process stops before its entities are removed; SweepDeletedTables removes it.
const deletedSpace = "\x00deleted"

// Table is a table's metadata.
type Table struct {
	Account string `json:"-"`
	// Name is the name as created; lookups ignore case.
	Name string `json:"name"`
	// Space is the store space holding the table's entities. Each creation gets a fresh space,
	// so a table deleted and created again never sees the old entities, even if removing them
	// was interrupted.
	Space string `json:"space"`
	// Policies are the stored access policies set with Set Table ACL.
	Policies []AccessPolicy `json:"policies,omitempty"`
	version  int64
}

// AccessPolicy is one signed identifier of a table's ACL. Zero times and an empty Permission
// mean the element was absent.
type AccessPolicy = auth.AccessPolicy

// ValidateTableName applies Azure's table-name rules: 3-63 ASCII letters and digits, starting
// with a letter, and not the reserved name "tables". Length is checked first, as Azurite does
// (the real service's order is undocumented).
func ValidateTableName(name string) error {
	if len(name) < 3 || len(name) > 63 {
		return azerr.Newf(azerr.OutOfRangeInput, "The specified resource name length is not within the permissible limits. Table names must be 3 to 63 characters long; %q has %d.", name, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return azerr.Newf(azerr.InvalidResourceName, "The specifed resource name contains invalid characters. Table names must start with a letter and contain only letters and digits; %q does not.", name)
		}
	}
	if strings.EqualFold(name, "tables") {
		return azerr.Newf(azerr.InvalidResourceName, "The specifed resource name contains invalid characters. %q is a reserved table name.", name)
	}
	return nil
}

func tableKey(account, name string) store.Key {
	return store.Key{Space: tablesSpace, Partition: account, Row: strings.ToLower(name)}
}

func newSpace(account, name string) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return "t/" + account + "/" + strings.ToLower(name) + "/" + hex.EncodeToString(b[:])
}

// CreateTable creates a table. A table whose name differs only in case already counts as
// existing (409 TableAlreadyExists).
func (s *Service) CreateTable(ctx context.Context, account, name string) (Table, error) {
	if err := ValidateTableName(name); err != nil {
		return Table{}, err
	}
	t := Table{Account: account, Name: name, Space: newSpace(account, name)}
	t.version = int64(s.nextTimestamp(0))
	value, err := json.Marshal(&t)
	if err != nil {
		return Table{}, err
	}
	err = s.store.Commit(ctx, []store.Mutation{{
		Key: tableKey(account, name), Expect: store.Expect{Kind: store.ExpectAbsent},
		Value: value, Version: t.version,
	}})
	var cf *store.ConditionFailedError
	if errors.As(err, &cf) {
		return Table{}, azerr.New(azerr.TableAlreadyExists)
	}
	if err != nil {
		return Table{}, err
	}
	s.forgetTable(account, name)
	return t, nil
}

// Table returns the table called name (any case), or 404 TableNotFound. The returned Table
// may be shared with other callers: its Policies must not be modified in place.
func (s *Service) Table(ctx context.Context, account, name string) (Table, error) {
	if err := ValidateTableName(name); err != nil {
		return Table{}, err
	}
	if s.tables == nil {
		return s.loadTable(ctx, account, name)
	}
	key := nameOf(account, name)
	t, generation, ok := s.tables.Lookup(key)
	if ok {
		return t, nil
	}
	t, err := s.loadTable(ctx, account, name)
	if err == nil {
		s.tables.Fill(key, t, generation)
	}
	return t, err
}

// forgetTable tells the table cache, if any, that the table's record changed.
func (s *Service) forgetTable(account, name string) {
	if s.tables != nil {
		s.tables.Forget(nameOf(account, name))
	}
}

// loadTable reads the table's record from the store.
func (s *Service) loadTable(ctx context.Context, account, name string) (Table, error) {
	rec, err := s.store.Get(ctx, tableKey(account, name))
	if errors.Is(err, store.ErrNotFound) {
		return Table{}, azerr.New(azerr.TableNotFound)
	}
	if err != nil {
		return Table{}, err
	}
	return decodeTable(account, rec)
}

func decodeTable(account string, rec store.Record) (Table, error) {
	var t Table
	if err := json.Unmarshal(rec.Value, &t); err != nil {
		return Table{}, fmt.Errorf("table record %s is corrupt: %w", rec.Key, err)
	}
	t.Account = account
	t.version = rec.Version
	return t, nil
}

// DeleteTable removes a table and all its entities. A missing table is 404 ResourceNotFound,
// which is what the real service answers here (not TableNotFound).
func (s *Service) DeleteTable(ctx context.Context, account, name string) error {
	space, err := s.deleteTableRecord(ctx, account, name)
	if err != nil {
		return err
	}
	// The table is gone for every reader once the record is deleted; its space is now
	// unreachable and only needs its storage reclaimed.
	return s.store.DeleteSpace(ctx, space)
}

// deleteTableRecord deletes the table's record and returns the space that held its entities.
func (s *Service) deleteTableRecord(ctx context.Context, account, name string) (space string, err error) {
	if s.tables != nil {
		lock := s.tables.deletionLock(nameOf(account, name))
		lock.Lock()
		defer lock.Unlock()
	}
	t, err := s.Table(ctx, account, name)
	if e, ok := err.(*azerr.Error); ok && e.Code == azerr.TableNotFound {
		return "", azerr.New(azerr.ResourceNotFound)
	}
	if err != nil {
		return "", err
	}
	err = s.store.Commit(ctx, []store.Mutation{{
		Key: tableKey(account, name), Delete: true,
		Expect: store.Expect{Kind: store.ExpectVersion, Version: t.version},
	}, {
		Key: store.Key{Space: deletedSpace, Row: t.Space}, Value: []byte{}, Version: int64(s.nextTimestamp(0)),
	}})
	s.forgetTable(account, name)
	var cf *store.ConditionFailedError
	if errors.As(err, &cf) {
		// Deleted (or deleted and re-created) concurrently: this request lost the race.
		return "", azerr.New(azerr.ResourceNotFound)
	}
	if err != nil {
		return "", err
	}
	return t.Space, nil
}

// SetTablePolicies replaces a table's stored access policies.
func (s *Service) SetTablePolicies(ctx context.Context, account, name string, policies []AccessPolicy) error {
	for {
		t, err := s.Table(ctx, account, name)
		if err != nil {
			return err
		}
		t.Policies = policies
		value, err := json.Marshal(&t)
		if err != nil {
			return err
		}
		err = s.store.Commit(ctx, []store.Mutation{{
			Key: tableKey(account, name), Value: value, Version: int64(s.nextTimestamp(edm.Ticks(t.version))),
			Expect: store.Expect{Kind: store.ExpectVersion, Version: t.version},
		}})
		s.forgetTable(account, name)
		var cf *store.ConditionFailedError
		if !errors.As(err, &cf) {
			return err
		}
	}
}

// TableQuery selects tables: Filter may reference TableName only; Top bounds the page (0 means
// the maximum of 1000); NextTableName resumes after a previous page.
type TableQuery struct {
	Filter        *odata.Filter
	Top           int
	NextTableName string
}

// TablePage is one page of Query Tables. NextTableName is set when more tables may remain.
type TablePage struct {
	Tables        []Table
	NextTableName string
}

// QueryTables lists an account's tables in name order (case-insensitive, as they are keyed).
// Only the keys the filter's TableName conditions allow are read (keyRangesOfNames), and a
// continuation is handed out only when a further table matches: Azure ends a query over
// TableName ge 'zzza' and TableName lt 'zzzb' with the last matching table, without a
// NextTableName that would make clients fetch an empty page (Go SDK recording
// TestQueryTable_storage.json in Azure/azure-sdk-assets). When the page's time budget runs
// out first, the continuation points where reading stopped.
func (s *Service) QueryTables(ctx context.Context, account string, q TableQuery) (TablePage, error) {
	top := q.Top
	if top <= 0 || top > MaxPageSize {
		top = MaxPageSize
	}
	deadline := time.Now().Add(s.PageBudget)
	scanned := 0
	var page TablePage
	for _, kr := range keyRangesOfNames(q.Filter.TableNameRanges()) {
		r := store.PartitionRange(tablesSpace, account)
		r.Start.Row = kr.start
		if !kr.endUnbounded {
			r.End, r.EndUnbounded = store.Key{Space: tablesSpace, Partition: account, Row: kr.end}, false
		}
		if q.NextTableName != "" {
			if !kr.endUnbounded && q.NextTableName >= kr.end {
				continue // finished on an earlier page
			}
			if q.NextTableName > r.Start.Row {
				r.Start.Row = q.NextTableName
			}
		}
		err := s.store.Scan(ctx, r, func(rec store.Record) (bool, error) {
			scanned++
			if scanned%budgetCheckEvery == 0 && time.Now().After(deadline) {
				page.NextTableName = rec.Key.Row
				return false, errPageDone
			}
			t, err := decodeTable(account, rec)
			if err != nil {
				return false, err
			}
			if !q.Filter.Match(func(name string) (edm.Value, bool) {
				if name == "TableName" {
					return edm.Value{Type: edm.String, Str: t.Name}, true
				}
				return edm.Value{}, false
			}) {
				return true, nil
			}
			if len(page.Tables) == top {
				page.NextTableName = rec.Key.Row
				return false, errPageDone
			}
			page.Tables = append(page.Tables, t)
			return true, nil
		})
		if errors.Is(err, errPageDone) {
			return page, nil
		}
		if err != nil {
			return TablePage{}, err
		}
	}
	return page, nil
}

// keyRange is an interval [start, end) of table keys (lower-cased names).
type keyRange struct {
	start, end   string
	endUnbounded bool
}

// keyRangesOfNames turns intervals of table names, compared as created (case-sensitively),
// into sorted, disjoint intervals of the lower-cased keys tables are stored under, holding the
// key of every name in them. Lower-casing does not preserve order ("Z" < "a" but "z" > "a"), so
// each interval is bounded through what its names share: every name in [lo, hi) starts with
// the common prefix C of lo and hi, and its next character lies between lo's and hi's. A name
// consists of ASCII letters and digits, so an interval whose prefix holds anything else holds
// no name.
func keyRangesOfNames(names []odata.StringRange) []keyRange {
	var out []keyRange
	for _, n := range names {
		r, ok := keyRangeOfNames(n)
		if !ok {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b keyRange) int { return strings.Compare(a.start, b.start) })
	merged := out[:0]
	for _, r := range out {
		if k := len(merged) - 1; k >= 0 && (merged[k].endUnbounded || merged[k].end >= r.start) {
			if !merged[k].endUnbounded && (r.endUnbounded || r.end > merged[k].end) {
				merged[k].end, merged[k].endUnbounded = r.end, r.endUnbounded
			}
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// keyRangeOfNames bounds the keys of the names in one interval; ok is false when no name can
// lie in it.
func keyRangeOfNames(n odata.StringRange) (keyRange, bool) {
	// Every name N >= lo has lower(N) >= N >= lo, as lower-casing only raises bytes.
	r := keyRange{start: n.Start, endUnbounded: true}
	if n.EndUnbounded {
		return r, true
	}
	lo, hi := n.Start, n.End
	k := 0
	for k < len(lo) && k < len(hi) && lo[k] == hi[k] {
		k++
	}
	prefix := lo[:k]
	for i := 0; i < len(prefix); i++ {
		if !isNameChar(prefix[i]) {
			return keyRange{}, false
		}
	}
	if k == len(hi) {
		return keyRange{}, false // hi is a prefix of lo: an empty interval
	}
	// The names longer than the prefix continue with a character c, lo[k] <= c <= hi[k]
	// (below hi[k] when hi ends there); lower-cased, c lies in [minLower, maxLower].
	from := 0
	if k < len(lo) {
		from = int(lo[k])
	}
	to := int(hi[k])
	if k+1 == len(hi) {
		to--
	}
	minLower, maxLower := 256, -1
	for c := from; c <= to; c++ {
		if isNameChar(byte(c)) {
			l := int(lowerASCII(byte(c)))
			minLower, maxLower = min(minLower, l), max(maxLower, l)
		}
	}
	lowPrefix := strings.ToLower(prefix)
	r.endUnbounded = false
	least := lowPrefix // the least key: the prefix itself, when it is in the interval
	switch {
	case maxLower < 0 && k == len(lo):
		r.end = lowPrefix + "\x00"
	case maxLower < 0:
		return keyRange{}, false
	default:
		r.end = lowPrefix + string(rune(maxLower+1))
		if k < len(lo) {
			least = lowPrefix + string(rune(minLower))
		}
	}
	if least > r.start {
		r.start = least
	}
	return r, r.start < r.end
}

func isNameChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// SweepDeletedTables removes, once more, the entities of every table deleted more than grace
// ago, and then forgets the deletion. Deleting a table removes its entities at once, but two
// kinds can outlive that: all of them, when the process stopped between deleting the table
// and removing its entities, and the entity of a write that read the table before another
// front-end deleted it and committed after (possible over a store shared by front-ends; over
// an exclusive store writes and deletions exclude each other). grace should exceed the time
// any request can take. It returns how many deletions were swept.
func (s *Service) SweepDeletedTables(ctx context.Context, grace time.Duration) (int, error) {
	return store.SweepTombstones(ctx, s.store, deletedSpace, int64(edm.TicksOf(s.now().Add(-grace))))
}
