package azerr

// The codes of x-ms-meta-* metadata, shared by the Blob and Queue services
// (shared/spec/blob.md §5).
const (
	InvalidMetadata  Code = "InvalidMetadata"
	EmptyMetadataKey Code = "EmptyMetadataKey"
	MetadataTooLarge Code = "MetadataTooLarge"
)

func init() {
	for code, d := range map[Code]defaultOf{
		InvalidMetadata:  {400, "The metadata specified is invalid. It has characters that are not permitted."},
		EmptyMetadataKey: {400, "The key for one of the metadata key-value pairs is empty."},
		MetadataTooLarge: {400, "The size of the specified metadata exceeds the maximum size permitted."},
	} {
		defaults[code] = d
	}
}
