package queuehttp

import (
	"net/url"
	"strconv"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// The query-parameter errors, with the detail elements the real service's bodies carry
// (shared/spec/queue.md §5.3).

func invalidParam(name, value, reason string) error {
	e := azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid: %s=%q: %s.", name, value, reason)
	e.Details = []azerr.Detail{
		{Name: "QueryParameterName", Value: name},
		{Name: "QueryParameterValue", Value: value},
		{Name: "Reason", Value: reason},
	}
	return e
}

func outOfRange(name string, value, lowest, highest int64) error {
	e := azerr.Newf(azerr.OutOfRangeQueryParameterValue, "One of the query parameters specified in the request URI is outside the permissible range: %s=%d is not within %d to %d.", name, value, lowest, highest)
	e.Details = []azerr.Detail{
		{Name: "QueryParameterName", Value: name},
		{Name: "QueryParameterValue", Value: strconv.FormatInt(value, 10)},
		{Name: "MinimumAllowed", Value: strconv.FormatInt(lowest, 10)},
		{Name: "MaximumAllowed", Value: strconv.FormatInt(highest, 10)},
	}
	return e
}

func missingParam(name string) error {
	e := azerr.Newf(azerr.MissingRequiredQueryParameter, "A required query parameter was not specified for this request: %s.", name)
	e.Details = []azerr.Detail{{Name: "QueryParameterName", Value: name}}
	return e
}

// intParam reads an integer query parameter that is present.
func intParam(q url.Values, name string) (int64, error) {
	v := q.Get(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, invalidParam(name, v, "not an integer")
	}
	return n, nil
}

// intParamOr reads an integer query parameter, def when it is absent.
func intParamOr(q url.Values, name string, def int64) (int64, error) {
	if !q.Has(name) {
		return def, nil
	}
	return intParam(q, name)
}
