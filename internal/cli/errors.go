package cli

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// serviceError is a failure the service reported, in one line: the SDK's own error text spans
// a dozen lines with the whole response.
type serviceError struct {
	Status  int
	Code    string // x-ms-error-code, or the body's code
	Message string
}

func (e *serviceError) Error() string {
	s := fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// describe turns an SDK error into a serviceError when the service answered, and leaves any
// other error (transport, context) as it is.
func describe(err error) error {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return err
	}
	e := &serviceError{Status: re.StatusCode, Code: re.ErrorCode}
	if re.RawResponse != nil {
		if body, err := runtime.Payload(re.RawResponse); err == nil {
			code, msg := errorBody(body)
			if e.Code == "" {
				e.Code = code
			}
			e.Message = msg
		}
	}
	return e
}

// errorCode returns the Azure error code of err, "" if the service did not give one.
func errorCode(err error) string {
	var se *serviceError
	if errors.As(err, &se) {
		return se.Code
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}

// errorBody reads the code and message of a Table service error body, JSON or XML.
func errorBody(body []byte) (code, message string) {
	var j struct {
		Error struct {
			Code    string `json:"code"`
			Message struct {
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if json.Unmarshal(body, &j) == nil && j.Error.Code != "" {
		return j.Error.Code, firstLine(j.Error.Message.Value)
	}
	var x struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if xml.Unmarshal(body, &x) == nil && x.Code != "" {
		return x.Code, firstLine(x.Message)
	}
	return "", ""
}

// firstLine drops the RequestId and Time lines Azure appends to its messages.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}
