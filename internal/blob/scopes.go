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
// names none for a blob in a scope): 409 BlobCustomerSpecifiedEncryptionMismatch, the code
// the JS SDK's encryption scope tests see for a snapshot in another scope.
func (st *blobState) checkScope(c Conditions) error {
	if c.EncryptionScope == nil {
		return nil
	}
	want, err := st.scopeFor(*c.EncryptionScope)
	if err != nil {
		return err
	}
	if want != st.b.Scope {
		return azerr.Newf(azerr.BlobCustomerSpecifiedEncryptionMismatch, "The given customer specified encryption does not match the encryption used to encrypt the blob: the request's encryption scope is %q, the blob's %q.", want, st.b.Scope)
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
		// 403, as the JS SDK's recorded encryption scope test sees the real service answer.
		return "", azerr.Newf(azerr.RequestForbiddenByContainerEncryptionPolicy, "The request is forbidden by the container encryption policy: it denies scopes other than %q, and the request names %q.", p.Default, requested)
	}
	return requested, nil
}
