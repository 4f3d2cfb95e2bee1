// Package azerr is the one error type Tabula answers clients with: an HTTP status, an Azure
// error code and a human message. Errors are built here and rendered by the HTTP layer, so the
// same failure reads the same whether it came from a single request or from inside a $batch.
package azerr

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is an Azure Storage error code as sent in x-ms-error-code and odata.error.code.
type Code string

// Error is a failure the client is told about. Message is the human text without the
// RequestId/Time trailer, which the renderer appends.
type Error struct {
	Status  int
	Code    Code
	Message string
	// Header holds extra response headers the failure implies (for example WWW-Authenticate).
	Header http.Header
	// Details are extra elements the Blob and Queue services' XML error body carries after the
	// message (HeaderName, QueryParameterName, Reason, ...), in order.
	Details []Detail
}

// Detail is one extra element of an XML error body.
type Detail struct{ Name, Value string }

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// New returns the error for code with Azure's default status and message.
func New(code Code) *Error {
	d, ok := defaults[code]
	if !ok {
		d = defaultOf{http.StatusBadRequest, "One of the request inputs is not valid."}
	}
	return &Error{Status: d.status, Code: code, Message: d.message}
}

// Newf returns the error for code with Azure's default status and a specific message, for
// when the message can name what was wrong.
func Newf(code Code, format string, args ...any) *Error {
	e := New(code)
	e.Message = fmt.Sprintf(format, args...)
	return e
}

// As extracts an *Error from err. The storage failures the store contract names get their
// own answers (see fromStore); anything else is an internal failure, 500 InternalError, so
// that clients retry rather than trust a wrong answer.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if e := fromStore(err); e != nil {
		return e
	}
	return New(InternalError)
}

// The codes Tabula uses. Status and message are Azure's, as documented or as recorded from the
// real service (see shared/spec/errors.md).
const (
	TableAlreadyExists                      Code = "TableAlreadyExists"
	TableNotFound                           Code = "TableNotFound"
	ResourceNotFound                        Code = "ResourceNotFound"
	EntityAlreadyExists                     Code = "EntityAlreadyExists"
	UpdateConditionNotSatisfied             Code = "UpdateConditionNotSatisfied"
	PropertiesNeedValue                     Code = "PropertiesNeedValue"
	PropertyNameTooLong                     Code = "PropertyNameTooLong"
	PropertyNameInvalid                     Code = "PropertyNameInvalid"
	DuplicatePropertiesSpecified            Code = "DuplicatePropertiesSpecified"
	TooManyProperties                       Code = "TooManyProperties"
	EntityTooLarge                          Code = "EntityTooLarge"
	PropertyValueTooLarge                   Code = "PropertyValueTooLarge"
	KeyValueTooLarge                        Code = "KeyValueTooLarge"
	InvalidValueType                        Code = "InvalidValueType"
	OutOfRangeInput                         Code = "OutOfRangeInput"
	InvalidResourceName                     Code = "InvalidResourceName"
	InvalidDuplicateRow                     Code = "InvalidDuplicateRow"
	CommandsInBatchActOnDifferentPartitions Code = "CommandsInBatchActOnDifferentPartitions"
	InvalidInput                            Code = "InvalidInput"
	AtomFormatNotSupported                  Code = "AtomFormatNotSupported"
	JSONFormatNotSupported                  Code = "JsonFormatNotSupported"
	XMethodNotUsingPost                     Code = "XMethodNotUsingPost"
	XMethodIncorrectValue                   Code = "XMethodIncorrectValue"
	XMethodIncorrectCount                   Code = "XMethodIncorrectCount"
	MethodNotAllowed                        Code = "MethodNotAllowed"
	NotImplemented                          Code = "NotImplemented"
	PrimaryKeyPropertyIsInvalidType         Code = "PrimaryKeyPropertyIsInvalidType"
	AuthenticationFailed                    Code = "AuthenticationFailed"
	InvalidAuthenticationInfo               Code = "InvalidAuthenticationInfo"
	NoAuthenticationInformation             Code = "NoAuthenticationInformation"
	AuthorizationFailure                    Code = "AuthorizationFailure"
	AuthorizationPermissionMismatch         Code = "AuthorizationPermissionMismatch"
	AuthorizationResourceTypeMismatch       Code = "AuthorizationResourceTypeMismatch"
	AuthorizationServiceMismatch            Code = "AuthorizationServiceMismatch"
	AuthorizationProtocolMismatch           Code = "AuthorizationProtocolMismatch"
	AuthorizationSourceIPMismatch           Code = "AuthorizationSourceIPMismatch"
	InsufficientAccountPermissions          Code = "InsufficientAccountPermissions"
	CorsPreflightFailure                    Code = "CorsPreflightFailure"
	InvalidHeaderValue                      Code = "InvalidHeaderValue"
	MissingRequiredHeader                   Code = "MissingRequiredHeader"
	InvalidQueryParameterValue              Code = "InvalidQueryParameterValue"
	OutOfRangeQueryParameterValue           Code = "OutOfRangeQueryParameterValue"
	MissingRequiredQueryParameter           Code = "MissingRequiredQueryParameter"
	UnsupportedQueryParameter               Code = "UnsupportedQueryParameter"
	MutuallyExclusiveQueryParameters        Code = "MutuallyExclusiveQueryParameters"
	InvalidURI                              Code = "InvalidUri"
	UnsupportedHTTPVerb                     Code = "UnsupportedHttpVerb"
	InvalidXMLDocument                      Code = "InvalidXmlDocument"
	InvalidXMLNodeValue                     Code = "InvalidXmlNodeValue"
	MissingRequiredXMLNode                  Code = "MissingRequiredXmlNode"
	RequestBodyTooLarge                     Code = "RequestBodyTooLarge"
	InternalError                           Code = "InternalError"
	OperationTimedOut                       Code = "OperationTimedOut"
	ServerBusy                              Code = "ServerBusy"
)

type defaultOf struct {
	status  int
	message string
}

var defaults = map[Code]defaultOf{
	TableAlreadyExists:                      {409, "The table specified already exists."},
	TableNotFound:                           {404, "The table specified does not exist."},
	ResourceNotFound:                        {404, "The specified resource does not exist."},
	EntityAlreadyExists:                     {409, "The specified entity already exists."},
	UpdateConditionNotSatisfied:             {412, "The update condition specified in the request was not satisfied."},
	PropertiesNeedValue:                     {400, "The values are not specified for all properties in the entity."},
	PropertyNameTooLong:                     {400, "The property name exceeds the maximum allowed length (255)."},
	PropertyNameInvalid:                     {400, "The property name is invalid."},
	DuplicatePropertiesSpecified:            {400, "A property is specified more than one time."},
	TooManyProperties:                       {400, "The entity contains more properties than allowed."},
	EntityTooLarge:                          {400, "The entity is larger than the maximum allowed size (1MB)."},
	PropertyValueTooLarge:                   {400, "The property value exceeds the maximum allowed size (64KB). If the property value is a string, it is UTF-16 encoded and the maximum number of characters should be 32K or less."},
	KeyValueTooLarge:                        {400, "The key value exceeds the maximum allowed size."},
	InvalidValueType:                        {400, "The value specified is invalid."},
	OutOfRangeInput:                         {400, "One of the request inputs is out of range."},
	InvalidResourceName:                     {400, "The specifed resource name contains invalid characters."},
	InvalidDuplicateRow:                     {400, "The batch request contains multiple changes with same row key. An entity can appear only once in a batch request."},
	CommandsInBatchActOnDifferentPartitions: {400, "All commands in a batch must operate on same entity group."},
	InvalidInput:                            {400, "One of the request inputs is not valid."},
	AtomFormatNotSupported:                  {415, "Atom format is not supported."},
	JSONFormatNotSupported:                  {415, "JSON format is not supported."},
	XMethodNotUsingPost:                     {400, "The request uses X-HTTP-Method with an HTTP verb other than POST."},
	XMethodIncorrectValue:                   {400, "The specified X-HTTP-Method is invalid."},
	XMethodIncorrectCount:                   {400, "More than one X-HTTP-Method is specified."},
	MethodNotAllowed:                        {405, "The requested method is not allowed on the specified resource."},
	NotImplemented:                          {501, "The requested operation is not implemented on the specified resource."},
	PrimaryKeyPropertyIsInvalidType:         {400, "The value of PartitionKey or RowKey must be a string."},
	AuthenticationFailed:                    {403, "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature."},
	InvalidAuthenticationInfo:               {400, "The authentication information was not provided in the correct format. Verify the value of Authorization header."},
	NoAuthenticationInformation:             {401, "Server failed to authenticate the request. Please refer to the information in the www-authenticate header."},
	AuthorizationFailure:                    {403, "This request is not authorized to perform this operation."},
	AuthorizationPermissionMismatch:         {403, "This request is not authorized to perform this operation using this permission."},
	AuthorizationResourceTypeMismatch:       {403, "This request is not authorized to perform this operation using this resource type."},
	AuthorizationServiceMismatch:            {403, "This request is not authorized to perform this operation using this service."},
	AuthorizationProtocolMismatch:           {403, "This request is not authorized to perform this operation using this protocol."},
	AuthorizationSourceIPMismatch:           {403, "This request is not authorized to perform this operation using this source IP."},
	InsufficientAccountPermissions:          {403, "The account being accessed does not have sufficient permissions to execute this operation."},
	CorsPreflightFailure:                    {403, "CORS not enabled or no matching rule found for this request."},
	InvalidHeaderValue:                      {400, "The value for one of the HTTP headers is not in the correct format."},
	MissingRequiredHeader:                   {400, "A required HTTP header was not specified."},
	InvalidQueryParameterValue:              {400, "Value for one of the query parameters specified in the request URI is invalid."},
	OutOfRangeQueryParameterValue:           {400, "One of the query parameters specified in the request URI is outside the permissible range."},
	MissingRequiredQueryParameter:           {400, "A required query parameter was not specified for this request."},
	UnsupportedQueryParameter:               {400, "One of the query parameters specified in the request URI is not supported."},
	MutuallyExclusiveQueryParameters:        {400, "The query parameters specified in the request URI are mutually exclusive."},
	InvalidURI:                              {400, "The requested URI does not represent any resource on the server."},
	UnsupportedHTTPVerb:                     {405, "The resource doesn't support the specified HTTP verb."},
	InvalidXMLDocument:                      {400, "XML specified is not syntactically valid."},
	InvalidXMLNodeValue:                     {400, "The value for one of the XML nodes is not in the correct format."},
	MissingRequiredXMLNode:                  {400, "A required XML node was not specified in the request body."},
	RequestBodyTooLarge:                     {413, "The request body is too large and exceeds the maximum permissible limit."},
	OperationTimedOut:                       {500, "The operation could not be completed within the permitted time."},
	InternalError:                           {500, "The server encountered an internal error. Please retry the request."},
	ServerBusy:                              {503, "The server is currently unable to receive requests. Please retry your request."},
}
