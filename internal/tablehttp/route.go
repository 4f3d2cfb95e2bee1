package tablehttp

import (
	"net/http"
	"strings"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/server"
)

// route dispatches an authenticated request to its operation.
func (s *Server) route(rq *request) error {
	res, err := parseResource(rq.Path)
	if err != nil {
		return err
	}
	method, err := tunnelledMethod(rq.R.Method, rq.R.Header)
	if err != nil {
		return err
	}
	if rq.Secondary && method != http.MethodGet && method != http.MethodHead && res.kind != resBatch {
		return server.SecondaryIsReadOnly(rq.Account)
	}
	q := rq.Query
	if res.kind == resService || q.Has("comp") || q.Has("restype") {
		return s.routeXML(rq, res, method)
	}
	switch res.kind {
	case resTables:
		switch method {
		case http.MethodGet:
			return s.authorized(rq, auth.OpQueryTables, "", "", "", s.queryTables)
		case http.MethodPost:
			return s.authorized(rq, auth.OpCreateTable, "", "", "", s.createTable)
		}
	case resTable:
		switch method {
		case http.MethodGet:
			return s.authorized(rq, auth.OpQueryTables, "", "", "", func(rq *request) error { return s.getTable(rq, res.table) })
		case http.MethodDelete:
			return s.authorized(rq, auth.OpDeleteTable, res.table, "", "", func(rq *request) error { return s.deleteTable(rq, res.table) })
		}
	case resBatch:
		if method == http.MethodPost {
			return s.batch(rq)
		}
	case resEntities:
		switch method {
		case http.MethodGet:
			return s.authorized(rq, auth.OpQueryEntities, res.table, "", "", func(rq *request) error { return s.queryEntities(rq, res.table) })
		case http.MethodPost:
			return s.writeEntity(rq, res, method)
		}
	case resEntity:
		if method == http.MethodGet {
			return s.authorized(rq, auth.OpQueryEntities, res.table, res.partitionKey, res.rowKey, func(rq *request) error {
				return s.getEntity(rq, res.table, res.partitionKey, res.rowKey)
			})
		}
		switch method {
		case http.MethodPut, http.MethodPatch, "MERGE", http.MethodDelete:
			return s.writeEntity(rq, res, method)
		}
	case resUnder:
		return s.routeUnder(rq, res, method)
	}
	return azerr.Newf(azerr.MethodNotAllowed, "The requested method is not allowed on the specified resource: %s %s.", method, rq.Path)
}

// routeUnder answers paths below a table as Azure does (recorded for a client whose endpoint
// ends in a table name, the Python SDK's test_client_with_url_ends_with_table_name): a POST
// inserts into the table (so Create Table there is 404 TableNotFound, or 400
// PropertiesNeedValue once the table exists), a keyed path has the wrong number of keys for
// an entity, and reading is not implemented.
func (s *Server) routeUnder(rq *request, res resource, method string) error {
	switch {
	case method == http.MethodPost:
		// The table is looked up before the body is judged: Create Table there answers 404
		// TableNotFound until the table exists.
		if _, err := s.svc.Table(rq.ctx, rq.Account, res.table); err != nil {
			return err
		}
		return s.writeEntity(rq, resource{kind: resEntities, table: res.table}, method)
	case method == http.MethodGet || method == http.MethodHead:
		return azerr.New(azerr.NotImplemented)
	case strings.Contains(res.under, "("):
		return azerr.Newf(azerr.InvalidInput, "The number of keys specified in the URI does not match number of key properties for the resource '%s.%s'.", rq.Account, res.table)
	}
	return azerr.New(azerr.NotImplemented)
}

// authorized runs handler if the request's grant allows op.
func (s *Server) authorized(rq *request, op *auth.Operation, table, pk, rk string, handler func(*request) error) error {
	if err := rq.Note(op.Name, table); err != nil {
		return err
	}
	if pk != "" {
		if err := rq.NotePartition(pk); err != nil {
			return err
		}
	}
	if err := rq.grant.Authorize(op, auth.Target{Name: table, PartitionKey: pk, RowKey: rk}); err != nil {
		return err
	}
	return handler(rq)
}

// tunnelledMethod applies X-HTTP-Method tunnelling: a POST carrying X-HTTP-Method acts as the
// named verb, in a request or a $batch operation. (SharedKey signatures still cover the verb on
// the wire.)
func tunnelledMethod(method string, h http.Header) (string, error) {
	values := h.Values("X-HTTP-Method")
	if len(values) == 0 {
		return method, nil
	}
	if len(values) > 1 {
		return "", azerr.New(azerr.XMethodIncorrectCount)
	}
	if method != http.MethodPost {
		return "", azerr.New(azerr.XMethodNotUsingPost)
	}
	switch v := strings.ToUpper(strings.TrimSpace(values[0])); v {
	case "MERGE", "PATCH", "PUT", "DELETE":
		return v, nil
	}
	return "", azerr.Newf(azerr.XMethodIncorrectValue, "The specified X-HTTP-Method %q is invalid; use MERGE, PATCH, PUT or DELETE.", values[0])
}
