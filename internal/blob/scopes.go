package blob

import (
	"github.com/tabula-dev/tabula/internal/azerr"
)

// Encryption scopes name the key a blob is encrypted with on Azure, made with the management
// plane. Here nothing is encrypted, so any scope a request names is taken: a blob remembers
// the scope it was written in, and answers and listings report it, as Azure's do. A
// container may name a default scope, which blobs written without one take, and deny
// others.

// accountScope is the name Azure gives the account's own encryption key as a scope.
const accountScope = "$account-encryption-key"

// ScopePolicy is a container's encryption scope policy (x-ms-default-encryption-scope,
// x-ms-deny-encryption-scope-override).
type ScopePolicy struct {
	Default      string `json:"scope,omitempty"`     // "" for the account's key
	DenyOverride bool   `json:"denyScope,omitempty"` // writes may not name another scope
}

// ref is what a blob request needs of the container.
func (c *containerRecord) ref() containerRef {
	return containerRef{space: c.Space, scope: c.Scope}
}

// checkScope refuses an operation that writes metadata into the existing blob st read in
// another encryption scope than the blob's, as azblob's recorded TestGetSetBlobMetadataWithCPKScope
// and TestBlobSnapshotWithCPKScope see the real service refuse it (also when the request
// names none for a blob in a scope). UNSURE: the refusal's code; its status is taken from the
// customer-provided key's like refusals, 409.
func (st *blobState) checkScope(c Conditions) error {
	if c.EncryptionScope == nil {
		return nil
	}
	want, err := st.scopeFor(*c.EncryptionScope)
	if err != nil {
		return err
	}
	if want != st.b.Scope {
		return azerr.Newf(azerr.EncryptionScopeMismatch, "The encryption scope of the request (%q) is not the blob's (%q).", want, st.b.Scope)
	}
	return nil
}

// scopeFor is the scope a write that names requested ("" for none) puts the blob in, under
// the container's policy: a write naming another scope than a container's that denies
// overrides is refused.
func (st *blobState) scopeFor(requested string) (string, error) {
	p := st.scope
	def := p.Default
	if def == accountScope {
		def = ""
	}
	if requested == accountScope {
		requested = ""
	}
	if requested == "" {
		return def, nil
	}
	if p.DenyOverride && requested != def {
		// UNSURE: the code of this refusal is undocumented; its status, 409, is the REST
		// reference's for a request the container's policy forbids.
		return "", azerr.Newf(azerr.RequestForbiddenByContainerPolicy, "This request is not permitted by the container's encryption scope policy: it denies scopes other than %q, and the request names %q.", p.Default, requested)
	}
	return requested, nil
}
