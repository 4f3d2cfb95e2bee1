package tablehttp

import (
	"net/http"
	"strings"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/server"
)

// call is what a request asks for, as route finds it from the URL, the method and the
// headers before the request is authenticated: the operation and table it names, under which
// the request is logged and counted even when authentication refuses it, and serve, which
// serves it once it is authenticated (noting it for the fault rules, authorizing it, applying
// it).
type call struct {
	op    *auth.Operation
	table string
	serve func(*request) error
	// xml says the operation answers in plain XML, its errors too (service properties and
	// stats, ACLs); a request that authentication refuses keeps its own error style.
	xml bool
}

// route finds what the request asks for. Its error is answered only once the request is
// authenticated: authentication is judged first, as Azure judges it.
func (s *Server) route(rq *request) (call, error) {
	res, err := parseResource(rq.Path)
	if err != nil {
		return call{}, err
	}
	method, err := tunnelledMethod(rq.R.Method, rq.R.Header)
	if err != nil {
		return call{}, err
	}
	if rq.Secondary && method != http.MethodGet && method != http.MethodHead && res.kind != resBatch {
		return call{}, server.SecondaryIsReadOnly(rq.Account)
	}
	q := rq.Query
	if res.kind == resService || q.Has("comp") || q.Has("restype") {
		c, err := s.routeXML(rq, res, method)
		c.xml = true
		return c, err
	}
	switch res.kind {
	case resTables:
		switch method {
		case http.MethodGet:
			return s.authorized(auth.OpQueryTables, "", "", "", s.queryTables), nil
		case http.MethodPost:
			// The body names the table: createTable notes it once read, so that fault rules
			// naming a table see it.
			return call{op: auth.OpCreateTable, serve: func(rq *request) error {
				if err := rq.grant.Authorize(auth.OpCreateTable, auth.Target{}); err != nil {
					return err
				}
				return s.createTable(rq)
			}}, nil
		}
	case resTable:
		switch method {
		case http.MethodGet:
			return s.authorized(auth.OpQueryTables, "", "", "", func(rq *request) error { return s.getTable(rq, res.table) }), nil
		case http.MethodDelete:
			return s.authorized(auth.OpDeleteTable, res.table, "", "", func(rq *request) error { return s.deleteTable(rq, res.table) }), nil
		}
	case resBatch:
		if method == http.MethodPost {
			return call{op: auth.OpEntityGroupTransaction, serve: s.batch}, nil
		}
	case resEntities:
		switch method {
		case http.MethodGet:
			return s.authorized(auth.OpQueryEntities, res.table, "", "", func(rq *request) error { return s.queryEntities(rq, res.table) }), nil
		case http.MethodPost:
			return s.writeCall(rq, res, method), nil
		}
	case resEntity:
		if method == http.MethodGet {
			return s.authorized(auth.OpQueryEntities, res.table, res.partitionKey, res.rowKey, func(rq *request) error {
				return s.getEntity(rq, res.table, res.partitionKey, res.rowKey)
			}), nil
		}
		switch method {
		case http.MethodPut, http.MethodPatch, "MERGE", http.MethodDelete:
			return s.writeCall(rq, res, method), nil
		}
	case resUnder:
		return s.routeUnder(rq, res, method)
	}
	return call{}, azerr.Newf(azerr.MethodNotAllowed, "The requested method is not allowed on the specified resource: %s %s.", method, rq.Path)
}

// writeCall is the call of an entity write. Its operation follows from the method and
// If-Match alone; a request whose headers are wrong goes unnamed, for writeEntity to refuse in
// its own order.
func (s *Server) writeCall(rq *request, res resource, method string) call {
	w, op, err := writeKind(method, rq.R.Header, res)
	return call{op: op, table: res.table, serve: func(rq *request) error { return s.writeEntity(rq, res, w, op, err) }}
}

// routeUnder answers paths below a table as Azure does (recorded for a client whose endpoint
// ends in a table name, the Python SDK's test_client_with_url_ends_with_table_name): a POST
// inserts into the table (so Create Table there is 404 TableNotFound, or 400
// PropertiesNeedValue once the table exists), a keyed path has the wrong number of keys for
// an entity, and reading is not implemented.
func (s *Server) routeUnder(rq *request, res resource, method string) (call, error) {
	switch {
	case method == http.MethodPost:
		insert := s.writeCall(rq, resource{kind: resEntities, table: res.table}, method)
		return call{op: insert.op, table: res.table, serve: func(rq *request) error {
			// The table is looked up before the body is judged: Create Table there answers
			// 404 TableNotFound until the table exists.
			if _, err := s.svc.Table(rq.ctx, rq.Account, res.table); err != nil {
				return err
			}
			return insert.serve(rq)
		}}, nil
	case method == http.MethodGet || method == http.MethodHead:
		return call{}, azerr.New(azerr.NotImplemented)
	case strings.Contains(res.under, "("):
		return call{}, azerr.Newf(azerr.InvalidInput, "The number of keys specified in the URI does not match number of key properties for the resource '%s.%s'.", rq.Account, res.table)
	}
	return call{}, azerr.New(azerr.NotImplemented)
}

// authorized is the call of op on table (and on the entity pk, rk), served by handler once
// the request's grant allows it.
func (s *Server) authorized(op *auth.Operation, table, pk, rk string, handler func(*request) error) call {
	return call{op: op, table: table, serve: func(rq *request) error {
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
	}}
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
