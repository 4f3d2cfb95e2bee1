package auth

import (
	"fmt"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// The operations of the Blob service (blob.md §6.2–6.3, §6.6). Letters are the account SAS's
// and, where a service SAS may perform the operation, the container or blob SAS's. A service
// SAS reaches blobs and List Blobs only: never the container's own properties, metadata, ACL,
// lease or lifetime.
var (
	OpGetBlobServiceProperties = blobServiceOp("Get Blob Service Properties", "r")
	OpSetBlobServiceProperties = blobServiceOp("Set Blob Service Properties", "w")
	OpGetBlobServiceStats      = blobServiceOp("Get Blob Service Stats", "r")
	OpListContainers           = blobServiceOp("List Containers", "l")
	OpFindBlobsByTags          = &Operation{Name: "Find Blobs by Tags", Service: Blob, ResourceType: 's', Permissions: []string{"f"}}
	// Get Account Information answers any valid credential, whatever its resource type.
	OpGetAccountInformation = &Operation{Name: "Get Account Information", Service: Blob, Permissions: []string{}, ServicePermissions: []string{}}

	OpCreateContainer        = containerOp("Create Container", "cw")
	OpGetContainerProperties = publicContainerOp("Get Container Properties", "r")
	OpGetContainerMetadata   = publicContainerOp("Get Container Metadata", "r")
	OpSetContainerMetadata   = containerOp("Set Container Metadata", "w")
	OpGetContainerACL        = &Operation{Name: "Get Container ACL", Service: Blob, ResourceType: 'c'} // account key only
	OpSetContainerACL        = &Operation{Name: "Set Container ACL", Service: Blob, ResourceType: 'c'}
	OpLeaseContainer         = containerOp("Lease Container", "w")
	OpBreakContainerLease    = containerOp("Lease Container (break)", "dw") // d may break a lease (≥ 2017-07-29)
	OpDeleteContainer        = containerOp("Delete Container", "d")
	OpRestoreContainer       = containerOp("Restore Container", "w")
	OpListBlobs              = &Operation{Name: "List Blobs", Service: Blob, ResourceType: 'c', Permissions: []string{"l"}, ServicePermissions: []string{"l"}, Public: "container"}
	OpFindBlobsInContainer   = &Operation{Name: "Find Blobs by Tags in Container", Service: Blob, ResourceType: 'c', Permissions: []string{"f"}, ServicePermissions: []string{"f"}}

	// Creating a blob (Put Blob, Put Block, Put Block List, copies) needs c or w; overwriting
	// one needs w: the HTTP layer asks OpOverwriteBlob, and without it the write may only
	// create (403 UnauthorizedBlobOverwrite once the blob is found to exist).
	OpPutBlob           = blobOp("Put Blob", "cw")
	OpOverwriteBlob     = blobOp("Put Blob (overwrite)", "w")
	OpPutBlock          = blobOp("Put Block", "cw")
	OpPutBlockList      = blobOp("Put Block List", "cw")
	OpCopyBlob          = blobOp("Copy Blob", "cw")
	OpIncrementalCopy   = blobOp("Incremental Copy Blob", "cw")
	OpAbortCopyBlob     = blobOp("Abort Copy Blob", "w")
	OpPutPage           = blobOp("Put Page", "w")
	OpAppendBlock       = blobOp("Append Block", "aw")
	OpSealBlob          = blobOp("Seal Append Blob", "w")
	OpSetBlobProperties = blobOp("Set Blob Properties", "w")
	OpSetBlobMetadata   = blobOp("Set Blob Metadata", "w")
	OpSetBlobTier       = blobOp("Set Blob Tier", "w")
	OpSnapshotBlob      = blobOp("Snapshot Blob", "cw")
	OpLeaseBlob         = blobOp("Lease Blob", "w")
	OpBreakBlobLease    = blobOp("Lease Blob (break)", "dw") // d may break a lease (≥ 2017-07-29)
	OpDeleteBlob        = blobOp("Delete Blob", "d")
	OpDeleteBlobVersion = blobOp("Delete Blob (a previous version)", "x")
	OpPermanentDelete   = blobOp("Delete Blob (permanent)", "y")
	OpUndeleteBlob      = blobOp("Undelete Blob", "w")
	OpGetBlobTags       = blobOp("Get Blob Tags", "t")
	// Immutability policies and legal holds need i (2020-06-12).
	OpSetImmutabilityPolicy    = blobOp("Set Blob Immutability Policy", "i")
	OpDeleteImmutabilityPolicy = blobOp("Delete Blob Immutability Policy", "i")
	OpSetLegalHold             = blobOp("Set Blob Legal Hold", "i")
	OpSetBlobTags              = blobOp("Set Blob Tags", "t")
	OpGetBlob                  = publicBlobOp("Get Blob", "r")
	OpGetBlobProperties        = publicBlobOp("Get Blob Properties", "r")
	OpGetBlobMetadata          = publicBlobOp("Get Blob Metadata", "r")
	OpGetBlockList             = publicBlobOp("Get Block List", "r")
	OpGetPageRanges            = publicBlobOp("Get Page Ranges", "r")
	OpQueryBlob                = publicBlobOp("Query Blob Contents", "r")
	OpReadCopySourceBlob       = blobOp("Read Copy Source", "r") // the source of a copy, by the same credential

	// OpSubmitBatch is a Blob Batch's own request (blob.md §16). Each of its sub-requests is
	// authorized on its own, so the batch needs only a credential for its scope: an account
	// key, a bearer token, an account SAS, or, for a container's batch, a SAS of that
	// container (its signature names the container, so no other gets this far).
	OpSubmitBatch = &Operation{Name: "Blob Batch", Service: Blob, Permissions: []string{}, ServicePermissions: []string{}}
)

// BlobOperations are the operations a Blob request (or a Blob Batch's sub-request) is logged,
// counted and matched by fault rules under: the HTTP layer notes one of these for each.
// OpOverwriteBlob and OpReadCopySourceBlob are not among them: they are asked of a grant
// during Put Blob, Put Block or a copy, never served as requests of their own.
var BlobOperations = []*Operation{
	OpGetBlobServiceProperties, OpSetBlobServiceProperties, OpGetBlobServiceStats, OpListContainers,
	OpFindBlobsByTags, OpGetAccountInformation, OpGetUserDelegationKey,
	OpCreateContainer, OpGetContainerProperties, OpGetContainerMetadata, OpSetContainerMetadata,
	OpGetContainerACL, OpSetContainerACL, OpLeaseContainer, OpBreakContainerLease, OpDeleteContainer,
	OpRestoreContainer, OpListBlobs, OpFindBlobsInContainer,
	OpPutBlob, OpPutBlock, OpPutBlockList, OpCopyBlob, OpIncrementalCopy, OpAbortCopyBlob, OpPutPage, OpAppendBlock,
	OpSealBlob, OpSetBlobProperties, OpSetBlobMetadata, OpSetBlobTier, OpSnapshotBlob, OpLeaseBlob,
	OpBreakBlobLease, OpDeleteBlob, OpDeleteBlobVersion, OpPermanentDelete, OpUndeleteBlob,
	OpGetBlobTags, OpSetImmutabilityPolicy, OpDeleteImmutabilityPolicy, OpSetLegalHold, OpSetBlobTags,
	OpGetBlob, OpGetBlobProperties, OpGetBlobMetadata, OpGetBlockList, OpGetPageRanges, OpQueryBlob,
	OpSubmitBatch,
}

func blobServiceOp(name string, letters string) *Operation {
	return &Operation{Name: name, Service: Blob, ResourceType: 's', Permissions: []string{letters}}
}

func containerOp(name string, letters string) *Operation {
	return &Operation{Name: name, Service: Blob, ResourceType: 'c', Permissions: []string{letters}}
}

func publicContainerOp(name string, letters string) *Operation {
	op := containerOp(name, letters)
	op.Public = "container"
	return op
}

func blobOp(name string, letters string) *Operation {
	return &Operation{Name: name, Service: Blob, ResourceType: 'o', Permissions: []string{letters}, ServicePermissions: []string{letters}}
}

func publicBlobOp(name string, letters string) *Operation {
	op := blobOp(name, letters)
	op.Public = "blob"
	return op
}

// blobSAS is what a container SAS (sr=c) or a blob SAS (sr=b, bs, bv) covers. Its signature
// was computed over the container and blob the request addresses, so a request for another
// resource never gets this far; what is left is to keep each kind to its operations.
type blobSAS struct {
	signedResource  string // sr
	container, blob string
	snapshot        string // the signed snapshot time or version of sr=bs/bv
}

func (s *blobSAS) covers(op *Operation, t Target) error {
	if op == OpSubmitBatch && t.Name == "" {
		// As recorded from the real service for a container SAS on the account's batch.
		return authenticationFailed("The specified signed resource is not allowed for this resource level")
	}
	if op.ResourceType == 0 {
		return nil
	}
	if t.Name != s.container {
		return authenticationFailed(fmt.Sprintf("The SAS is for container %q, not %q.", s.container, t.Name))
	}
	if s.signedResource == "c" {
		return nil // any blob in the container, and List Blobs
	}
	if op.ResourceType != 'o' {
		return azerr.New(azerr.AuthorizationFailure) // as for any operation beyond a service SAS
	}
	if s.signedResource == "d" {
		// The blob named like the directory, and every blob under it.
		if t.Blob != s.blob && !strings.HasPrefix(t.Blob, s.blob+"/") {
			return authenticationFailed(fmt.Sprintf("The SAS is for directory %q, not for blob %q.", s.blob, t.Blob))
		}
		return nil
	}
	if t.Blob != s.blob {
		return authenticationFailed(fmt.Sprintf("The SAS is for blob %q, not %q.", s.blob, t.Blob))
	}
	return nil
}

// OpGetUserDelegationKey issues a user delegation key: for bearer tokens only, whatever a
// SAS or an account key would allow (blob.md §6.4).
var OpGetUserDelegationKey = &Operation{Name: "Get User Delegation Key", Service: Blob, ResourceType: 's'}
