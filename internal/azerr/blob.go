package azerr

// The Blob service's codes (shared/spec/blob.md §18). Status and message are Azure's, from the
// REST reference's list of Blob service error codes; where a message names "the blob" but the
// error is about a container, the service builds it with Newf. UnsupportedHeader,
// MissingContentLengthHeader and FeatureVersionMismatch are the wire protocol's to answer.
const (
	ContainerNotFound                              Code = "ContainerNotFound"
	ContainerAlreadyExists                         Code = "ContainerAlreadyExists"
	BlobNotFound                                   Code = "BlobNotFound"
	BlobAlreadyExists                              Code = "BlobAlreadyExists"
	SnapshotsPresent                               Code = "SnapshotsPresent"
	InvalidBlobType                                Code = "InvalidBlobType"
	BlobIsSealed                                   Code = "BlobIsSealed"
	BlockCountExceedsLimit                         Code = "BlockCountExceedsLimit"
	BlockListTooLong                               Code = "BlockListTooLong"
	InvalidBlockList                               Code = "InvalidBlockList"
	InvalidBlockID                                 Code = "InvalidBlockId"
	InvalidBlobOrBlock                             Code = "InvalidBlobOrBlock"
	NoPendingCopyOperation                         Code = "NoPendingCopyOperation"
	PendingCopyOperation                           Code = "PendingCopyOperation"
	CopyIDMismatch                                 Code = "CopyIdMismatch"
	CannotVerifyCopySource                         Code = "CannotVerifyCopySource"
	LeaseAlreadyPresent                            Code = "LeaseAlreadyPresent"
	LeaseIDMismatchWithLeaseOperation              Code = "LeaseIdMismatchWithLeaseOperation"
	LeaseNotPresentWithLeaseOperation              Code = "LeaseNotPresentWithLeaseOperation"
	LeaseIsBreakingAndCannotBeAcquired             Code = "LeaseIsBreakingAndCannotBeAcquired"
	LeaseIsBreakingAndCannotBeChanged              Code = "LeaseIsBreakingAndCannotBeChanged"
	LeaseIsBrokenAndCannotBeRenewed                Code = "LeaseIsBrokenAndCannotBeRenewed"
	LeaseIDMissing                                 Code = "LeaseIdMissing"
	LeaseIDMismatchWithBlobOperation               Code = "LeaseIdMismatchWithBlobOperation"
	LeaseIDMismatchWithContainerOperation          Code = "LeaseIdMismatchWithContainerOperation"
	LeaseNotPresentWithBlobOperation               Code = "LeaseNotPresentWithBlobOperation"
	LeaseNotPresentWithContainerOperation          Code = "LeaseNotPresentWithContainerOperation"
	InfiniteLeaseDurationRequired                  Code = "InfiniteLeaseDurationRequired"
	ConditionNotMet                                Code = "ConditionNotMet"
	SourceConditionNotMet                          Code = "SourceConditionNotMet"
	TargetConditionNotMet                          Code = "TargetConditionNotMet"
	BlobImmutableDueToPolicy                       Code = "BlobImmutableDueToPolicy"
	BlobImmutableDueToLegalHold                    Code = "BlobImmutableDueToLegalHold"
	ImmutabilityPolicyDeleteOnLockedPolicy         Code = "ImmutabilityPolicyDeleteOnLockedPolicy"
	ImmutableStorageWithVersioningNotEnabled       Code = "ImmutableStorageWithVersioningNotEnabled"
	ContainerImmutableStorageWithVersioningEnabled Code = "ContainerImmutableStorageWithVersioningEnabled"
	InvalidExpiryTime                              Code = "InvalidExpiryTime"
	AppendPositionConditionNotMet                  Code = "AppendPositionConditionNotMet"
	MaxBlobSizeConditionNotMet                     Code = "MaxBlobSizeConditionNotMet"
	SequenceNumberConditionNotMet                  Code = "SequenceNumberConditionNotMet"
	InvalidRange                                   Code = "InvalidRange"
	InvalidPageRange                               Code = "InvalidPageRange"
	InvalidOperation                               Code = "InvalidOperation"
	OperationNotAllowedOnRootBlob                  Code = "OperationNotAllowedOnRootBlob"
	OperationNotAllowedOnIncrementalCopyBlob       Code = "OperationNotAllowedOnIncrementalCopyBlob"
	IncrementalCopySourceMustBeSnapshot            Code = "IncrementalCopySourceMustBeSnapshot"
	IncrementalCopyOfEarlierSnapshotNotAllowed     Code = "IncrementalCopyOfEarlierSnapshotNotAllowed"
	IncrementalCopyBlobMismatch                    Code = "IncrementalCopyBlobMismatch"
	InvalidSourceBlobType                          Code = "InvalidSourceBlobType"
	RequestForbiddenByContainerEncryptionPolicy    Code = "RequestForbiddenByContainerEncryptionPolicy"
	BlobSnapshotNotSoftDeleted                     Code = "BlobSnapshotNotSoftDeleted"
	PermanentDeleteNotAllowed                      Code = "PermanentDeleteNotAllowed"
	MD5Mismatch                                    Code = "Md5Mismatch"
	CRC64Mismatch                                  Code = "Crc64Mismatch"
	BlobUsesCustomerSpecifiedEncryption            Code = "BlobUsesCustomerSpecifiedEncryption"
	UnauthorizedBlobOverwrite                      Code = "UnauthorizedBlobOverwrite"
	BlobArchived                                   Code = "BlobArchived"
	HierarchicalNamespaceNotEnabled                Code = "HierarchicalNamespaceNotEnabled"
	AccessTierChangeTimeConditionNotMet            Code = "AccessTierChangeTimeConditionNotMet"
	BlobBeingRehydrated                            Code = "BlobBeingRehydrated"
	BlobDoesNotUseCustomerSpecifiedEncryption      Code = "BlobDoesNotUseCustomerSpecifiedEncryption"
	BlobCustomerSpecifiedEncryptionMismatch        Code = "BlobCustomerSpecifiedEncryptionMismatch"
	AccessTierNotSupportedForBlobType              Code = "AccessTierNotSupportedForBlobType"
	InvalidMD5                                     Code = "InvalidMd5"
	UnsatisfiableCondition                         Code = "UnsatisfiableCondition"
	UnsupportedHeader                              Code = "UnsupportedHeader"
	MissingContentLengthHeader                     Code = "MissingContentLengthHeader"
	FeatureVersionMismatch                         Code = "FeatureVersionMismatch"
	InvalidBlobTier                                Code = "InvalidBlobTier"
	BlobTierInadequateForContentLength             Code = "BlobTierInadequateForContentLength"
	PreviousSnapshotNotFound                       Code = "PreviousSnapshotNotFound"
	InvalidTag                                     Code = "InvalidTag"
	SequenceNumberIncrementTooLarge                Code = "SequenceNumberIncrementTooLarge"
	// Blob Batch's refusals of a batch as a whole (recorded from the real service).
	ExceedsMaxBatchRequestCount        Code = "ExceedsMaxBatchRequestCount"
	AllBatchSubRequestsShouldBeSameAPI Code = "AllBatchSubRequestsShouldBeSameApi"
)

func init() {
	for code, d := range blobDefaults {
		defaults[code] = d
	}
}

var blobDefaults = map[Code]defaultOf{
	ContainerNotFound:                              {404, "The specified container does not exist."},
	ExceedsMaxBatchRequestCount:                    {400, "The batch operation exceeds maximum number of allowed subrequests."},
	AllBatchSubRequestsShouldBeSameAPI:             {400, "All batch subrequests should be the same api."},
	ContainerAlreadyExists:                         {409, "The specified container already exists."},
	BlobNotFound:                                   {404, "The specified blob does not exist."},
	BlobAlreadyExists:                              {409, "The specified blob already exists."},
	SnapshotsPresent:                               {409, "This operation is not permitted because the blob has snapshots."},
	InvalidBlobType:                                {409, "The blob type is invalid for this operation."},
	BlobIsSealed:                                   {409, "This operation is not permitted on a sealed blob."},
	BlockCountExceedsLimit:                         {409, "The committed block count cannot exceed the maximum limit of 50,000 blocks."},
	BlockListTooLong:                               {400, "The block list may not contain more than 50,000 blocks."},
	InvalidBlockList:                               {400, "The specified block list is invalid."},
	InvalidBlockID:                                 {400, "The specified block ID is invalid. The block ID must be Base64-encoded."},
	InvalidBlobOrBlock:                             {400, "The specified blob or block content is invalid."},
	NoPendingCopyOperation:                         {409, "There is currently no pending copy operation."},
	PendingCopyOperation:                           {409, "There is currently a pending copy operation."},
	CopyIDMismatch:                                 {409, "The specified copy ID did not match the copy ID for the pending copy operation."},
	CannotVerifyCopySource:                         {404, "The specified blob does not exist."},
	LeaseAlreadyPresent:                            {409, "There is already a lease present."},
	LeaseIDMismatchWithLeaseOperation:              {409, "The lease ID specified did not match the lease ID for the blob."},
	LeaseNotPresentWithLeaseOperation:              {409, "There is currently no lease on the blob."},
	LeaseIsBreakingAndCannotBeAcquired:             {409, "The lease ID matched, but the lease is currently in breaking state and cannot be acquired until it is broken."},
	LeaseIsBreakingAndCannotBeChanged:              {409, "The lease ID matched, but the lease is currently in breaking state and cannot be changed."},
	LeaseIsBrokenAndCannotBeRenewed:                {409, "The lease ID matched, but the lease has been broken explicitly and cannot be renewed."},
	LeaseIDMissing:                                 {412, "There is currently a lease on the blob and no lease ID was specified in the request."},
	LeaseIDMismatchWithBlobOperation:               {412, "The lease ID specified did not match the lease ID for the blob."},
	LeaseIDMismatchWithContainerOperation:          {412, "The lease ID specified did not match the lease ID for the container."},
	LeaseNotPresentWithBlobOperation:               {412, "There is currently no lease on the blob."},
	LeaseNotPresentWithContainerOperation:          {412, "There is currently no lease on the container."},
	InfiniteLeaseDurationRequired:                  {412, "The lease ID matched, but the specified lease must be an infinite-duration lease."},
	ConditionNotMet:                                {412, "The condition specified using HTTP conditional header(s) is not met."},
	SourceConditionNotMet:                          {412, "The source condition specified using HTTP conditional header(s) is not met."},
	TargetConditionNotMet:                          {412, "The target condition specified using HTTP conditional header(s) is not met."},
	BlobImmutableDueToPolicy:                       {409, "This operation is not permitted as the blob is immutable due to a policy."},
	BlobImmutableDueToLegalHold:                    {409, "This operation is not permitted as the blob is immutable due to one or more legal holds."},
	ImmutabilityPolicyDeleteOnLockedPolicy:         {409, "This operation is not permitted as the blob's immutability policy is locked."},
	ImmutableStorageWithVersioningNotEnabled:       {409, "This operation is not permitted as the container does not have immutable storage with versioning enabled."},
	ContainerImmutableStorageWithVersioningEnabled: {409, "The requested operation is not allowed as the container has a immutable storage with versioning enabled."},
	InvalidExpiryTime:                              {400, "The expiry time specified is invalid."},
	AppendPositionConditionNotMet:                  {412, "The append position condition specified was not met."},
	MaxBlobSizeConditionNotMet:                     {412, "The max blob size condition specified was not met."},
	SequenceNumberConditionNotMet:                  {412, "The sequence number condition specified was not met."},
	InvalidRange:                                   {416, "The range specified is invalid for the current size of the resource."},
	InvalidPageRange:                               {416, "The page range specified is invalid."},
	InvalidOperation:                               {400, "Invalid operation against a blob snapshot."},
	OperationNotAllowedOnRootBlob:                  {403, "This operation is not permitted on the root blob."},
	OperationNotAllowedOnIncrementalCopyBlob:       {409, "The specified operation is not allowed on an incremental copy blob."},
	IncrementalCopySourceMustBeSnapshot:            {409, "The source for incremental copy request must be a snapshot."},
	IncrementalCopyOfEarlierSnapshotNotAllowed:     {409, "The specified snapshot is earlier than the last snapshot copied into the incremental copy blob."},
	IncrementalCopyBlobMismatch:                    {409, "The specified source blob is different than the copy source of the existing incremental copy blob."},
	InvalidSourceBlobType:                          {409, "The copy source blob type is invalid for this operation."},
	RequestForbiddenByContainerEncryptionPolicy:    {403, "The request is forbidden by the container encryption policy."},
	BlobSnapshotNotSoftDeleted:                     {409, "The specified blob snapshot or version is not soft-deleted."},
	PermanentDeleteNotAllowed:                      {409, "Permanent delete is not enabled for this account."},
	MD5Mismatch:                                    {400, "The MD5 value specified in the request did not match with the MD5 value calculated by the server."},
	CRC64Mismatch:                                  {400, "The CRC64 value specified in the request did not match with the CRC64 value calculated by the server."},
	UnauthorizedBlobOverwrite:                      {403, "This request is not authorized to perform blob overwrites."},
	BlobArchived:                                   {409, "This operation is not permitted on an archived blob."},
	HierarchicalNamespaceNotEnabled:                {400, "This operation is only supported on a hierarchical namespace account."},
	AccessTierChangeTimeConditionNotMet:            {412, "The access tier change time condition specified using HTTP conditional header(s) is not met."},
	BlobBeingRehydrated:                            {409, "This operation is not permitted because the blob is being rehydrated."},
	BlobUsesCustomerSpecifiedEncryption:            {409, "The blob is encrypted with customer specified encryption, but it was not provided in the request."},
	BlobDoesNotUseCustomerSpecifiedEncryption:      {409, "The blob is not encrypted with customer specified encryption, but one was provided in the request."},
	AccessTierNotSupportedForBlobType:              {400, "The access tier is not supported for this blob type."},
	BlobCustomerSpecifiedEncryptionMismatch:        {409, "The given customer specified encryption does not match the encryption used to encrypt the blob."},
	InvalidMD5:                                     {400, "The MD5 value specified in the request is invalid. The MD5 value must be 128 bits and Base64-encoded."},
	UnsatisfiableCondition:                         {400, "The request includes an unsatisfiable condition for this operation."},
	UnsupportedHeader:                              {400, "One of the headers specified in the request is not supported."},
	MissingContentLengthHeader:                     {411, "The Content-Length header was not specified."},
	FeatureVersionMismatch:                         {409, "The type of blob in the container is unrecognized by this version."},
	InvalidBlobTier:                                {400, "The specified blob tier is invalid."},
	BlobTierInadequateForContentLength:             {409, "The specified blob tier size limit cannot be less than content length."},
	PreviousSnapshotNotFound:                       {409, "The previous snapshot is not found."},
	InvalidTag:                                     {400, "The tags specified are invalid. It contains characters that are not permitted."},
	SequenceNumberIncrementTooLarge:                {409, "Incrementing the sequence number would cause it to exceed the maximum value."},
}
