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
	"github.com/tabula-dev/tabula/internal/server"
	"github.com/tabula-dev/tabula/internal/table"
)

// batch serves an entity group transaction. Failures found before any operation is examined
// (size, multipart syntax, authorization) are top-level errors; a failing operation is
// reported inside a 202 envelope with its index, as Azure does, and nothing is applied.
func (s *Server) batch(rq *request) error {
	// Named before authentication (serve); fault rules are judged once the table and
	// partition are known, below, so that each batch rolls a rule's probability once.
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	req, err := batchwire.Decode(rq.R.Header.Get("Content-Type"), body, table.MaxBatchOperations)
	var ce *batchwire.ChangesetError
	if errors.As(err, &ce) {
		return s.batchFailure(rq, nil, ce.Index, ce.Err)
	}
	if err != nil {
		return err
	}
	if req.Query != nil {
		return s.batchQuery(rq, req.Query)
	}
	if rq.Secondary {
		return server.SecondaryIsReadOnly(rq.Account)
	}
	writes := make([]table.Write, len(req.Changeset))
	prefer := make([]string, len(req.Changeset))
	var tableName string
	for i, p := range req.Changeset {
		w, op, res, err := s.decodeBatchWrite(rq, p)
		if err != nil {
			return s.batchFailure(rq, req.Changeset, i, err)
		}
		if i == 0 {
			tableName = res.table
		} else if !strings.EqualFold(res.table, tableName) {
			return s.batchFailure(rq, req.Changeset, i, azerr.Newf(azerr.InvalidInput, "All operations of a batch must address one table; operation %d addresses %q, operation 0 %q.", i, res.table, tableName))
		}
		if err := rq.grant.Authorize(op, auth.Target{Name: res.table, PartitionKey: w.Entity.PartitionKey, RowKey: w.Entity.RowKey}); err != nil {
			return err
		}
		writes[i] = w
		prefer[i] = preferReturn(p.Header)
	}
	if err := table.ValidateBatch(writes); err != nil {
		return s.batchFailure(rq, req.Changeset, 0, err)
	}
	if err := rq.Note(auth.OpEntityGroupTransaction.Name, tableName); err != nil {
		return err
	}
	if err := rq.NotePartition(writes[0].Entity.PartitionKey); err != nil {
		return err
	}
	if err := s.admit(rq, tableName, writes[0].Entity.PartitionKey, len(writes)); err != nil {
		return err
	}
	t, err := s.svc.Table(rq.ctx, rq.Account, tableName)
	if err != nil {
		return s.batchFailure(rq, req.Changeset, 0, err)
	}
	stored, err := s.svc.ExecuteBatch(rq.ctx, t, writes)
	if err != nil {
		return s.batchFailure(rq, req.Changeset, 0, err)
	}
	s.observeWrites(rq, tableName, writes)
	responses := make([]batchwire.Response, len(writes))
	var atom atomDoc
	for i, w := range writes {
		part := req.Changeset[i]
		f := s.partFormat(rq, part)
		resp := batchwire.Response{Status: http.StatusNoContent, Header: partHeader(f), ContentID: part.ContentID}
		h := resp.Header
		if w.Kind != table.Delete {
			h["Etag"] = []string{edm.ETag(stored[i].Timestamp)}
		}
		if w.Kind == table.Insert {
			location := []string{rq.BaseURL + "/" + entityPath(t.Name, stored[i].PartitionKey, stored[i].RowKey)}
			h["Location"] = location
			if prefer[i] != "" {
				h["Preference-Applied"] = []string{prefer[i]}
			}
			switch {
			case prefer[i] == "return-no-content":
				h["Dataserviceid"] = location
			case f.atom:
				if atom.rq == nil {
					atom = newAtomDoc(rq)
				}
				resp.Status = http.StatusCreated
				resp.Body = atom.appendEntry(nil, atom.entityEntry(t, &stored[i], nil), true)
				h["Content-Type"] = atomContentType
			default:
				opts := entityOptions(rq, t, f.level)
				opts.MetadataURL = metadataURL(rq, f.level, t.Name+"/@Element")
				resp.Status = http.StatusCreated
				resp.Body = edm.AppendJSON(nil, &stored[i], &opts)
				h["Content-Type"] = jsonContentType[f.level]
			}
		}
		responses[i] = resp
	}
	ct, out := batchwire.EncodeChangesetResponse(responses)
	rq.writeBatch(ct, out)
	return nil
}

// decodeBatchWrite reads one changeset operation.
func (s *Server) decodeBatchWrite(rq *request, p batchwire.Part) (table.Write, *auth.Operation, resource, error) {
	method, err := tunnelledMethod(p.Method, p.Header)
	if err != nil {
		return table.Write{}, nil, resource{}, err
	}
	res, err := parseResource(s.batchResourcePath(rq, p.URL))
	if err != nil {
		return table.Write{}, nil, resource{}, err
	}
	if res.kind != resEntity && res.kind != resEntities {
		return table.Write{}, nil, resource{}, azerr.Newf(azerr.InvalidInput, "A batch operation must address an entity or a table's entities, not %q.", p.RawTarget)
	}
	w, op, err := decodeWrite(method, p.Header, p.Body, res, rq.Version)
	return w, op, res, err
}

// partFormat negotiates the response format of one batch operation from its own Accept
// header, under the batch's service version. An Accept the service would refuse gets the
// version's default format: the batch as a whole has been accepted.
func (s *Server) partFormat(rq *request, p batchwire.Part) format {
	f, err := negotiateHeader(p.Header.Get("Accept"), rq.Version, p.Header)
	if err != nil {
		f, _ = negotiateHeader("", rq.Version, p.Header)
	}
	return f
}

// partHeader starts the headers of a sub-response. Those of an Atom operation are as recorded
// from the real service in 2013 (azure-sdk-for-node tableservice-batch-tests): Cache-Control
// and DataServiceVersion 1.0; those of a JSON operation as in the Go and Python SDK recordings
// (batch.md §5.1).
func partHeader(f format) http.Header {
	h := make(http.Header, 8)
	if f.atom {
		h["Cache-Control"] = noCacheValue
		h["Dataserviceversion"] = atomDataServiceVersionValue
		return h
	}
	h["X-Content-Type-Options"] = noSniffValue
	h["Cache-Control"] = noCacheValue
	h["Dataserviceversion"] = dataServiceVersionValue
	return h
}

// atomDataServiceVersionValue is the DataServiceVersion of Atom sub-responses.
var atomDataServiceVersionValue = []string{"1.0;"}

// batchResourcePath finds the resource path of a sub-request URL, which clients write
// absolute (host or path style) or relative to the service root.
func (s *Server) batchResourcePath(rq *request, u *url.URL) string {
	path := u.EscapedPath()
	if u.Host != "" {
		host := u.Hostname()
		if label, _, ok := strings.Cut(host, "."); ok {
			if name, _ := server.HostedAccount(s.auth, label); name == rq.Account {
				return path
			}
		}
	}
	trimmed := strings.TrimPrefix(path, "/")
	seg, rest, _ := strings.Cut(trimmed, "/")
	if name, _ := server.HostedAccount(s.auth, seg); name == rq.Account && name != "" {
		return "/" + rest
	}
	return "/" + trimmed
}

// batchFailure answers a changeset whose operation index failed: 202 with one sub-response
// carrying the operation's own status and an error message prefixed with the index. The error
// is written as the failing operation asked (parts[index]'s Accept; the $batch request's own
// when the operations are unknown): JSON, or XML in the form of the batch's service version.
func (s *Server) batchFailure(rq *request, parts []batchwire.Part, index int, err error) error {
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
	var f format
	resp := batchwire.Response{Status: e.Status}
	if index < len(parts) {
		f = s.partFormat(rq, parts[index])
	} else if f, err = negotiate(rq); err != nil {
		f, _ = negotiateHeader("", rq.Version, rq.R.Header)
	}
	if f.atom {
		resp.Header = partHeader(f)
		resp.Header.Set("Content-Type", "application/xml")
		resp.Body = errorBodyWithIndex(e, rq.ID, rq.xmlErrorStyle(), index)
		if index < len(parts) {
			resp.ContentID = parts[index].ContentID
		}
	} else {
		h := http.Header{}
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("DataServiceVersion", "3.0;")
		h["Content-Type"] = jsonContentType[edm.MinimalMetadata]
		resp.Header = h
		resp.Body = errorBodyWithIndex(e, rq.ID, errorsJSON, index)
	}
	ct, out := batchwire.EncodeChangesetResponse([]batchwire.Response{resp})
	// Not sent by the real service on the 202, but harmless to other SDKs: the Go SDK (v1.4.1)
	// reads the failing operation's code only from this header, since the multipart body is
	// not JSON, and otherwise reports a failed transaction without a code.
	rq.W.Header().Set("x-ms-error-code", string(e.Code))
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
	if err := rq.grant.Authorize(auth.OpQueryEntities, auth.Target{Name: res.table, PartitionKey: res.partitionKey, RowKey: res.rowKey}); err != nil {
		return err
	}
	f := s.partFormat(rq, *p)
	resp := batchwire.Response{Header: partHeader(f), ContentID: p.ContentID}
	t, err := s.svc.Table(rq.ctx, rq.Account, res.table)
	var e edm.Entity
	if err == nil {
		e, err = s.svc.Entity(rq.ctx, t, res.partitionKey, res.rowKey)
	}
	switch {
	case err != nil:
		ae := azerr.As(err)
		if ae.Status >= 500 {
			return err
		}
		// The query is operation 0 of the batch: its failure carries the same "0:" prefix as
		// a failing change-set operation.
		resp.Status = ae.Status
		if f.atom {
			resp.Header.Set("Content-Type", "application/xml")
			resp.Body = errorBodyWithIndex(ae, rq.ID, rq.xmlErrorStyle(), 0)
		} else {
			resp.Header["Content-Type"] = jsonContentType[edm.MinimalMetadata]
			resp.Body = errorBodyWithIndex(ae, rq.ID, errorsJSON, 0)
		}
	case f.atom:
		d := newAtomDoc(rq)
		resp.Status, resp.Body = http.StatusOK, d.appendEntry(nil, d.entityEntry(t, &e, nil), true)
		resp.Header["Content-Type"] = atomContentType
		resp.Header.Set("ETag", edm.ETag(e.Timestamp))
	default:
		opts := entityOptions(rq, t, f.level)
		opts.MetadataURL = metadataURL(rq, f.level, t.Name+"/@Element")
		resp.Status, resp.Body = http.StatusOK, edm.AppendJSON(nil, &e, &opts)
		resp.Header["Content-Type"] = jsonContentType[f.level]
		resp.Header.Set("ETag", edm.ETag(e.Timestamp))
	}
	ct, out := batchwire.EncodeQueryResponse(resp)
	rq.writeBatch(ct, out)
	return nil
}

func (rq *request) writeBatch(contentType string, body []byte) {
	h := rq.W.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	rq.W.WriteHeader(http.StatusAccepted)
	_, _ = rq.W.Write(body)
}
