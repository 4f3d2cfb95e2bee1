package auth

import (
	"fmt"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// The operations of the Table service (auth.md §5, "Required (resource type; permission)").
// A point query is OpQueryEntities with its key; a $batch is authorized once per sub-request
// with that sub-request's operation. A table SAS reaches entities only, with the same letters
// as an account SAS.
var (
	OpQueryTables           = tableOp("Query Tables", 'c', "l")
	OpCreateTable           = tableOp("Create Table", 'c', "acw") // docs: c or w; a is accepted as harmless
	OpDeleteTable           = tableOp("Delete Table", 'c', "d")
	OpGetTableACL           = &Operation{Name: "Get Table ACL", Service: Table, ResourceType: 'c'} // account key only
	OpSetTableACL           = &Operation{Name: "Set Table ACL", Service: Table, ResourceType: 'c'}
	OpGetServiceProperties  = tableOp("Get Table Service Properties", 's', "r")
	OpSetServiceProperties  = tableOp("Set Table Service Properties", 's', "w")
	OpGetServiceStats       = tableOp("Get Table Service Stats", 's', "r")
	OpQueryEntities         = entityOp("Query Entities", "r")
	OpInsertEntity          = entityOp("Insert Entity", "a")
	OpUpdateEntity          = entityOp("Update Entity", "u")
	OpMergeEntity           = entityOp("Merge Entity", "u")
	OpInsertOrReplaceEntity = entityOp("Insert Or Replace Entity", "a", "u")
	OpInsertOrMergeEntity   = entityOp("Insert Or Merge Entity", "a", "u")
	OpDeleteEntity          = entityOp("Delete Entity", "d")

	// OpEntityGroupTransaction is a $batch, as logs, metrics and fault rules name it; it is
	// never authorized itself: each of its operations is, as that operation.
	OpEntityGroupTransaction = &Operation{Name: "Entity Group Transaction", Service: Table}
)

// TableOperations are the operations a Table request is logged, counted and matched by
// fault rules under: the HTTP layer notes one of these for each request.
var TableOperations = []*Operation{
	OpQueryTables, OpCreateTable, OpDeleteTable, OpGetTableACL, OpSetTableACL,
	OpGetServiceProperties, OpSetServiceProperties, OpGetServiceStats, OpGetTableUserDelegationKey,
	OpQueryEntities, OpInsertEntity, OpUpdateEntity, OpMergeEntity, OpInsertOrReplaceEntity,
	OpInsertOrMergeEntity, OpDeleteEntity, OpEntityGroupTransaction,
}

// tableOp is a service- or table-level operation: open to an account SAS, never to a table SAS.
func tableOp(name string, resourceType byte, letters ...string) *Operation {
	return &Operation{Name: name, Service: Table, ResourceType: resourceType, Permissions: letters}
}

func entityOp(name string, letters ...string) *Operation {
	return &Operation{Name: name, Service: Table, ResourceType: 'o', Permissions: letters, ServicePermissions: letters}
}

// tableSAS is what a table SAS covers: one table and, optionally, a key range.
type tableSAS struct {
	table string // tn
	// Key range; "" is absent. srk is set only with spk, erk only with epk.
	spk, srk, epk, erk string
}

// covers accepts the SAS's table and, for an operation on one entity, an entity inside the key
// range. A query (no keys) is left to the caller, who returns only what InKeyRange accepts.
func (s *tableSAS) covers(op *Operation, t Target) error {
	// The signature covers /table/{account}/{tn}; for any other table it proves nothing.
	if !strings.EqualFold(t.Name, s.table) {
		return authenticationFailed(fmt.Sprintf("The SAS is for table %q, not %q.", s.table, t.Name))
	}
	if op == OpQueryEntities && t.PartitionKey == "" && t.RowKey == "" {
		return nil
	}
	if !s.inKeyRange(t.PartitionKey, t.RowKey) {
		return azerr.New(azerr.AuthorizationFailure)
	}
	return nil
}

func (s *tableSAS) inKeyRange(pk, rk string) bool {
	afterStart := s.spk == "" || pk > s.spk || pk == s.spk && (s.srk == "" || rk >= s.srk)
	beforeEnd := s.epk == "" || pk < s.epk || pk == s.epk && (s.erk == "" || rk <= s.erk)
	return afterStart && beforeEnd
}

// KeyRange returns the key range a table SAS is limited to, ok=false when unrestricted. An
// empty string is an absent bound; srk is empty whenever spk is, and erk whenever epk is.
func (g *Grant) KeyRange() (spk, srk, epk, erk string, ok bool) {
	if g == nil || g.sas == nil {
		return "", "", "", "", false
	}
	s, isTable := g.sas.resource.(*tableSAS)
	if !isTable {
		return "", "", "", "", false
	}
	return s.spk, s.srk, s.epk, s.erk, s.spk != "" || s.epk != ""
}

// InKeyRange reports whether the entity (pk, rk) is inside the grant's key range, comparing
// ordinally: after (spk, srk) and up to (epk, erk), both ends inclusive. It is true when the
// grant has no range.
func (g *Grant) InKeyRange(pk, rk string) bool {
	if g == nil || g.sas == nil {
		return true
	}
	s, isTable := g.sas.resource.(*tableSAS)
	return !isTable || s.inKeyRange(pk, rk)
}
