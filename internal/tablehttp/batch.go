package tablehttp

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/batchwire"
	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/table"
)

// batch serves an entity group transaction. Failures found before any operation is examined
// (size, multipart syntax, authorization) are top-level errors; a failing operation is
// reported inside a 202 envelope with its index, as Azure does, and nothing is applied.
func (s *Server) batch(rq *request) error {
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	req, err := batchwire.Decode(rq.r.Header.Get("Content-Type"), body, table.MaxBatchOperations)
	var ce *batchwire.ChangesetError
	if errors.As(err, &ce) {
		return s.batchFailure(rq, ce.Index, ce.Err)
	}
	if err != nil {
		return err
	}
	if req.Query != nil {
		return s.batchQuery(rq, req.Query)
	}
	if rq.secondary {
		return azerr.Newf(azerr.InsufficientAccountPermissions, "The account being accessed does not have sufficient permissions to execute this operation: the secondary endpoint (%s-secondary) is a read-only replica.", rq.account)
	}
	writes := make([]table.Write, len(req.Changeset))
	prefer := make([]string, len(req.Changeset))
	var tableName string
	for i, p := range req.Changeset {
		w, op, res, err := s.decodeBatchWrite(rq, p)
		if err != nil {
			return s.batchFailure(rq, i, err)
		}
		if i == 0 {
			tableName = res.table
		} else if !strings.EqualFold(res.table, tableName) {
			return s.batchFailure(rq, i, azerr.Newf(azerr.InvalidInput, "All operations of a batch must address one table; operation %d addresses %q, operation 0 %q.", i, res.table, tableName))
		}
		if err := rq.grant.Authorize(op, res.table, w.Entity.PartitionKey, w.Entity.RowKey); err != nil {
			return err
		}
		writes[i] = w
		prefer[i] = preferReturn(p.Header)
	}
	if err := table.ValidateBatch(writes); err != nil {
		return s.batchFailure(rq, 0, err)
	}
	t, err := s.svc.Table(rq.ctx, rq.account, tableName)
	if err != nil {
		return s.batchFailure(rq, 0, err)
	}
	stored, err := s.svc.ExecuteBatch(rq.ctx, t, writes)
	if err != nil {
		return s.batchFailure(rq, 0, err)
	}
	responses := make([]batchwire.Response, len(writes))
	for i, w := range writes {
		h := make(http.Header, 8)
		h["X-Content-Type-Options"] = noSniffValue
		h["Cache-Control"] = noCacheValue
		h["Dataserviceversion"] = dataServiceVersionValue
		resp := batchwire.Response{Status: http.StatusNoContent, Header: h, ContentID: req.Changeset[i].ContentID}
		if w.Kind != table.Delete {
			h["Etag"] = []string{edm.ETag(stored[i].Timestamp)}
		}
		if w.Kind == table.Insert {
			location := []string{rq.baseURL + "/" + entityPath(t.Name, stored[i].PartitionKey, stored[i].RowKey)}
			h["Location"] = location
			if prefer[i] != "" {
				h["Preference-Applied"] = []string{prefer[i]}
			}
			if prefer[i] == "return-no-content" {
				h["Dataserviceid"] = location
			} else {
				level, err := negotiateHeader(req.Changeset[i].Header.Get("Accept"))
				if err != nil {
					level = edm.MinimalMetadata
				}
				opts := entityOptions(rq, t, level)
				opts.MetadataURL = metadataURL(rq, level, t.Name+"/@Element")
				resp.Status = http.StatusCreated
				resp.Body = edm.AppendJSON(nil, &stored[i], &opts)
				h["Content-Type"] = jsonContentType[level]
			}
		}
		responses[i] = resp
	}
	ct, out := batchwire.EncodeChangesetResponse(responses)
	rq.writeBatch(ct, out)
	return nil
}

// decodeBatchWrite reads one changeset operation.
func (s *Server) decodeBatchWrite(rq *request, p batchwire.Part) (table.Write, auth.Operation, resource, error) {
	method, err := tunnelledMethod(p.Method, p.Header)
	if err != nil {
		return table.Write{}, 0, resource{}, err
	}
	res, err := parseResource(s.batchResourcePath(rq, p.URL))
	if err != nil {
		return table.Write{}, 0, resource{}, err
	}
	if res.kind != resEntity && res.kind != resEntities {
		return table.Write{}, 0, resource{}, azerr.Newf(azerr.InvalidInput, "A batch operation must address an entity or a table's entities, not %q.", p.RawTarget)
	}
	w, op, err := decodeWrite(method, p.Header, p.Body, res)
	return w, op, res, err
}

// batchResourcePath finds the resource path of a sub-request URL, which clients write
// absolute (host or path style) or relative to the service root.
func (s *Server) batchResourcePath(rq *request, u *url.URL) string {
	path := u.EscapedPath()
	if u.Host != "" {
		host := u.Hostname()
		if label, _, ok := strings.Cut(host, "."); ok {
			if name, _ := s.hostedAccount(label); name == rq.account {
				return path
			}
		}
	}
	trimmed := strings.TrimPrefix(path, "/")
	seg, rest, _ := strings.Cut(trimmed, "/")
	if name, _ := s.hostedAccount(seg); name == rq.account && name != "" {
		return "/" + rest
	}
	return "/" + trimmed
}

// batchFailure answers a changeset whose operation index failed: 202 with one sub-response
// carrying the operation's own status and an error message prefixed with the index.
func (s *Server) batchFailure(rq *request, index int, err error) error {
	var oe *table.OperationError
	if errors.As(err, &oe) {
		index, err = oe.Index, oe.Err
	}
	e := azerr.As(err)
	if e.Status >= 500 {
		// A server-side failure (storage unreachable, full or failed) is the whole request's,
		// not an operation's: answered as the batch's own status, it is what SDKs retry,
		// whereas a 5xx inside a 202 would reach the application as a failed transaction.
		return err
	}
	h := http.Header{}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("DataServiceVersion", "3.0;")
	h["Content-Type"] = jsonContentType[edm.MinimalMetadata]
	ct, out := batchwire.EncodeChangesetResponse([]batchwire.Response{{
		Status: e.Status, Header: h, Body: errorBodyWithIndex(e, rq.id, true, index),
	}})
	// Not sent by the real service on the 202, but harmless to other SDKs: the Go SDK (v1.4.1)
	// reads the failing operation's code only from this header, since the multipart body is
	// not JSON, and otherwise reports a failed transaction without a code.
	rq.w.Header().Set("x-ms-error-code", string(e.Code))
	rq.writeBatch(ct, out)
	return nil
}

// batchQuery serves a batch holding one point query (legacy clients send these).
func (s *Server) batchQuery(rq *request, p *batchwire.Part) error {
	res, err := parseResource(s.batchResourcePath(rq, p.URL))
	if err != nil {
		return err
	}
	if res.kind != resEntity {
		return azerr.Newf(azerr.InvalidInput, "A query inside a batch must be a point query Table(PartitionKey='...',RowKey='...').")
	}
	if err := rq.grant.Authorize(auth.OpQueryEntities, res.table, res.partitionKey, res.rowKey); err != nil {
		return err
	}
	level, err := negotiateHeader(p.Header.Get("Accept"))
	if err != nil {
		level = edm.MinimalMetadata
	}
	h := http.Header{}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("DataServiceVersion", "3.0;")
	h["Content-Type"] = jsonContentType[edm.MinimalMetadata]
	resp := batchwire.Response{Header: h}
	t, err := s.svc.Table(rq.ctx, rq.account, res.table)
	var e edm.Entity
	if err == nil {
		e, err = s.svc.Entity(rq.ctx, t, res.partitionKey, res.rowKey)
	}
	if err != nil {
		ae := azerr.As(err)
		if ae.Status >= 500 {
			return err
		}
		resp.Status, resp.Body = ae.Status, errorBody(ae, rq.id, true)
	} else {
		opts := entityOptions(rq, t, level)
		opts.MetadataURL = metadataURL(rq, level, t.Name+"/@Element")
		resp.Status, resp.Body = http.StatusOK, edm.AppendJSON(nil, &e, &opts)
		h["Content-Type"] = jsonContentType[level]
		h.Set("ETag", edm.ETag(e.Timestamp))
	}
	ct, out := batchwire.EncodeQueryResponse(resp)
	rq.writeBatch(ct, out)
	return nil
}

func (rq *request) writeBatch(contentType string, body []byte) {
	h := rq.w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	rq.w.WriteHeader(http.StatusAccepted)
	_, _ = rq.w.Write(body)
}
