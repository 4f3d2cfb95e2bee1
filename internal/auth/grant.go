package auth

import (
	"fmt"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// Service names one Azure Storage service. The zero value is the Table service.
type Service uint8

const (
	Table Service = iota
	Blob
	Queue
)

// letter is the service's letter in an account SAS's ss field.
func (s Service) letter() byte { return "tbq"[s] }

func (s Service) String() string {
	switch s {
	case Table:
		return "table"
	case Blob:
		return "blob"
	case Queue:
		return "queue"
	}
	return fmt.Sprintf("Service(%d)", uint8(s))
}

// Operation is one REST operation as authorization sees it. Each service declares its
// operations as package-level values (table_ops.go, blob_ops.go, queue_ops.go) and the HTTP
// layer names the one it serves; identity is the pointer. A nil *Operation is refused to every
// SAS, so an unclassified request fails closed.
type Operation struct {
	Name    string // as the REST reference spells it
	Service Service
	// ResourceType is the account SAS srt letter the operation needs: 's' service, 'c'
	// container level (a table, container or queue), 'o' object (an entity, blob or message);
	// 0 for an operation any resource type may perform.
	ResourceType byte
	// Permissions lists letter sets that must each meet an account SAS's sp: every set needs
	// one of its letters. nil means no account SAS may perform the operation.
	Permissions []string
	// ServicePermissions is the same for a service SAS (table, container, blob or queue SAS).
	// nil means no service SAS may perform the operation.
	ServicePermissions []string
	// Public says that anonymous requests may perform the operation on a container whose
	// public access level is at least this ("blob" or "container"); "" means never.
	Public string
}

func (op *Operation) String() string {
	if op == nil {
		return "no operation"
	}
	return op.Name
}

// Target is what an operation acts on, as far as authorization needs to know.
type Target struct {
	// Name is the table, container or queue; empty for service-level operations.
	Name string
	// Blob is the blob's name (Blob service), empty for container operations.
	Blob string
	// PartitionKey and RowKey address the entity (Table service), empty for queries.
	PartitionKey, RowKey string
	// PublicAccess is the container's public access level ("", "blob" or "container"), which
	// the Blob HTTP layer looks up before authorizing an anonymous request.
	PublicAccess string
}

// Grant is an authenticated principal: the holder of an account key, who may do everything in
// that account; a SAS, which may do what its fields allow; a bearer token, which may do what
// its roles allow; or, on the Blob service, an anonymous caller, who may read what containers
// make public. A nil *Grant allows nothing.
type Grant struct {
	account string
	sas     *sasGrant // nil for the account key holder and for anonymous callers
	// anonymous is set for a request without credentials; version is its x-ms-version, which
	// decides the refusal (401 or 404).
	anonymous bool
	version   string
	// bearer is set for a verified bearer token.
	bearer *bearerGrant
}

// sasGrant is what a verified SAS allows, after any stored policy has been applied.
type sasGrant struct {
	accountSAS    bool
	resourceTypes string // srt (account SAS)
	permissions   string // sp, or the policy's permission
	// resource checks that a service SAS covers the target; nil for an account SAS.
	resource sasResource
	// encryptionScope is the signed encryption scope (ses): the scope of what the SAS writes.
	encryptionScope string
}

// sasResource is the part of a service SAS that names what it covers: a table and key range,
// a container or blob, or a queue.
type sasResource interface {
	// covers returns nil when the SAS's resource includes t for op, else the 403 to answer.
	covers(op *Operation, t Target) error
}

// Account returns the name of the account the grant is for.
func (g *Grant) Account() string {
	if g == nil {
		return ""
	}
	return g.account
}

// Anonymous reports whether the request carried no credentials (Blob service only: the other
// services refuse such requests in Authenticate).
func (g *Grant) Anonymous() bool { return g != nil && g.anonymous }

// EncryptionScope is the encryption scope a SAS signed (ses), in which the blobs it writes are
// encrypted; "" for other credentials.
func (g *Grant) EncryptionScope() string {
	if g == nil || g.sas == nil {
		return ""
	}
	return g.sas.encryptionScope
}

// Authorize checks that the grant allows op on t.
//
// Errors, all 403 unless noted: AuthorizationResourceTypeMismatch when an account SAS's srt
// lacks the operation's type; AuthorizationFailure when a service SAS is used for an operation
// outside its reach; AuthorizationPermissionMismatch when sp lacks a needed letter or the
// operation is never open to an account SAS (ACLs); AuthenticationFailed when a service SAS is used on another resource than
// the one it signs; AuthorizationFailure for an entity outside a table SAS's key range (as
// recorded from the real service). An anonymous request not allowed by t.PublicAccess gets
// 401 NoAuthenticationInformation with the bearer challenge (x-ms-version ≥ 2019-12-12) or
// 404 ResourceNotFound (older versions: the service hides what exists).
func (g *Grant) Authorize(op *Operation, t Target) error {
	if g == nil {
		return azerr.New(azerr.AuthenticationFailed)
	}
	if g.anonymous {
		if op != nil && publicAllows(t.PublicAccess, op.Public) {
			return nil
		}
		return anonymousRefusal(g.version)
	}
	if g.bearer != nil {
		return g.bearer.allows(op)
	}
	s := g.sas
	if s == nil {
		return nil
	}
	if op == nil {
		return azerr.New(azerr.AuthorizationFailure)
	}
	if s.accountSAS {
		if op.ResourceType != 0 && strings.IndexByte(s.resourceTypes, op.ResourceType) < 0 {
			return azerr.New(azerr.AuthorizationResourceTypeMismatch)
		}
		return checkPermissions(op.Permissions, s.permissions)
	}
	if op.ServicePermissions == nil {
		// What a service SAS never reaches (a container's or queue's own lifetime,
		// properties and ACL, the service's operations) is refused by the real service
		// with the generic code, whatever the SAS's letters: recorded by the Go SDK's
		// live tests for Create Container, Get Container Properties and Create Queue.
		return azerr.New(azerr.AuthorizationFailure)
	}
	if err := s.resource.covers(op, t); err != nil {
		return err
	}
	return checkPermissions(op.ServicePermissions, s.permissions)
}

// publicAllows reports whether a container at access level may serve an operation that needs
// level need: "container" access includes everything "blob" access allows.
func publicAllows(level, need string) bool {
	switch need {
	case "blob":
		return level == "blob" || level == "container"
	case "container":
		return level == "container"
	}
	return false
}

func checkPermissions(sets []string, granted string) error {
	if sets == nil {
		return azerr.New(azerr.AuthorizationPermissionMismatch)
	}
	for _, anyOf := range sets {
		if !strings.ContainsAny(granted, anyOf) {
			return azerr.New(azerr.AuthorizationPermissionMismatch)
		}
	}
	return nil
}
