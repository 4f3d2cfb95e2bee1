package auth

import (
	"fmt"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// Operation classifies a request for SAS permission checks. The zero value is no operation and
// is refused to every SAS, so an unclassified request fails closed.
type Operation int

// The operations of the Table service, in Azure's names. A point query is OpQueryEntities with
// its key; a $batch is authorized once per sub-request with that sub-request's operation.
const (
	OpQueryTables Operation = iota + 1
	OpCreateTable
	OpDeleteTable
	OpGetTableACL
	OpSetTableACL
	OpGetServiceProperties
	OpSetServiceProperties
	OpGetServiceStats
	OpQueryEntities
	OpInsertEntity
	OpUpdateEntity
	OpMergeEntity
	OpInsertOrReplaceEntity
	OpInsertOrMergeEntity
	OpDeleteEntity
)

// rule is what a SAS needs for an operation (auth.md §5, "Required (resource type; permission)").
type rule struct {
	name string
	// resourceType is the account SAS srt letter: 's' service, 'c' table-level, 'o' entity.
	// Only 'o' operations are open to a table SAS.
	resourceType byte
	// permissions lists letter sets that must each meet sp: every set needs one of its letters.
	// nil means no SAS may perform the operation.
	permissions []string
}

var rules = [...]rule{
	OpQueryTables:           {"Query Tables", 'c', []string{"l"}},
	OpCreateTable:           {"Create Table", 'c', []string{"acw"}}, // docs: c or w; a is accepted as harmless
	OpDeleteTable:           {"Delete Table", 'c', []string{"d"}},
	OpGetTableACL:           {"Get Table ACL", 'c', nil}, // account key only
	OpSetTableACL:           {"Set Table ACL", 'c', nil},
	OpGetServiceProperties:  {"Get Table Service Properties", 's', []string{"r"}},
	OpSetServiceProperties:  {"Set Table Service Properties", 's', []string{"w"}},
	OpGetServiceStats:       {"Get Table Service Stats", 's', []string{"r"}},
	OpQueryEntities:         {"Query Entities", 'o', []string{"r"}},
	OpInsertEntity:          {"Insert Entity", 'o', []string{"a"}},
	OpUpdateEntity:          {"Update Entity", 'o', []string{"u"}},
	OpMergeEntity:           {"Merge Entity", 'o', []string{"u"}},
	OpInsertOrReplaceEntity: {"Insert Or Replace Entity", 'o', []string{"a", "u"}},
	OpInsertOrMergeEntity:   {"Insert Or Merge Entity", 'o', []string{"a", "u"}},
	OpDeleteEntity:          {"Delete Entity", 'o', []string{"d"}},
}

func (op Operation) rule() (rule, bool) {
	if op <= 0 || int(op) >= len(rules) {
		return rule{}, false
	}
	return rules[op], true
}

// String returns the operation's name as the REST documentation spells it.
func (op Operation) String() string {
	if r, ok := op.rule(); ok {
		return r.name
	}
	return fmt.Sprintf("Operation(%d)", int(op))
}

// Grant is an authenticated principal: the holder of an account key, who may do everything in
// that account, or a SAS, which may do what its fields allow. A nil *Grant allows nothing.
type Grant struct {
	account string
	sas     *sasGrant // nil for the account key holder
}

// sasGrant is what a verified SAS allows, after any stored policy has been applied.
type sasGrant struct {
	accountSAS    bool
	resourceTypes string // srt (account SAS)
	permissions   string // sp, or the policy's permission
	table         string // tn (table SAS)
	// Key range of a table SAS; "" is absent. srk is set only with spk, erk only with epk.
	spk, srk, epk, erk string
}

// Account returns the name of the account the grant is for.
func (g *Grant) Account() string {
	if g == nil {
		return ""
	}
	return g.account
}

// Authorize checks that the grant allows op on table (empty for service and table-list
// operations) and, for a table SAS with a key range, on the entity (pk, rk). Insert, update,
// merge, upsert and delete always carry their key. OpQueryEntities is checked against the range
// only when pk or rk is non-empty (a point query); a query is left to the caller, who returns
// only the entities InKeyRange accepts.
//
// Errors, all 403: AuthorizationResourceTypeMismatch when an account SAS's srt lacks the
// operation's type or a table SAS is used for anything but entities;
// AuthorizationPermissionMismatch when sp lacks a needed letter or the operation is never open
// to a SAS (table ACLs); AuthenticationFailed when a table SAS is used on another table than tn;
// AuthorizationFailure for an entity outside the key range (as recorded from the real service).
func (g *Grant) Authorize(op Operation, table, pk, rk string) error {
	if g == nil {
		return azerr.New(azerr.AuthenticationFailed)
	}
	s := g.sas
	if s == nil {
		return nil
	}
	r, ok := op.rule()
	if !ok {
		return azerr.New(azerr.AuthorizationFailure)
	}
	if s.accountSAS {
		if strings.IndexByte(s.resourceTypes, r.resourceType) < 0 {
			return azerr.New(azerr.AuthorizationResourceTypeMismatch)
		}
		return s.checkPermissions(r)
	}
	if r.resourceType != 'o' {
		if r.permissions == nil {
			return azerr.New(azerr.AuthorizationPermissionMismatch)
		}
		return azerr.New(azerr.AuthorizationResourceTypeMismatch)
	}
	// The signature covers /table/{account}/{tn}; for any other table it proves nothing.
	if !strings.EqualFold(table, s.table) {
		return authenticationFailed(fmt.Sprintf("The SAS is for table %q, not %q.", s.table, table))
	}
	if err := s.checkPermissions(r); err != nil {
		return err
	}
	if op == OpQueryEntities && pk == "" && rk == "" {
		return nil
	}
	if !g.InKeyRange(pk, rk) {
		return azerr.New(azerr.AuthorizationFailure)
	}
	return nil
}

func (s *sasGrant) checkPermissions(r rule) error {
	if r.permissions == nil {
		return azerr.New(azerr.AuthorizationPermissionMismatch)
	}
	for _, anyOf := range r.permissions {
		if !strings.ContainsAny(s.permissions, anyOf) {
			return azerr.New(azerr.AuthorizationPermissionMismatch)
		}
	}
	return nil
}

// KeyRange returns the key range a table SAS is limited to, ok=false when unrestricted. An
// empty string is an absent bound; srk is empty whenever spk is, and erk whenever epk is.
func (g *Grant) KeyRange() (spk, srk, epk, erk string, ok bool) {
	if g == nil || g.sas == nil {
		return "", "", "", "", false
	}
	s := g.sas
	return s.spk, s.srk, s.epk, s.erk, s.spk != "" || s.epk != ""
}

// InKeyRange reports whether the entity (pk, rk) is inside the grant's key range, comparing
// ordinally: after (spk, srk) and up to (epk, erk), both ends inclusive. It is true when the
// grant has no range.
func (g *Grant) InKeyRange(pk, rk string) bool {
	spk, srk, epk, erk, ok := g.KeyRange()
	if !ok {
		return true
	}
	afterStart := spk == "" || pk > spk || pk == spk && (srk == "" || rk >= srk)
	beforeEnd := epk == "" || pk < epk || pk == epk && (erk == "" || rk <= erk)
	return afterStart && beforeEnd
}
