package tablehttp

import (
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/odata"
	"github.com/tabula-dev/tabula/internal/table"
)

// decodeWrite turns one entity write request — stand-alone or inside a $batch — into a
// table.Write and the permission it needs. res is the addressed resource (the table for an
// insert, the entity otherwise); method is after X-HTTP-Method tunnelling; the body is JSON or
// Atom as h's Content-Type says, under the request's service version.
func decodeWrite(method string, h http.Header, body []byte, res resource, version string) (table.Write, *auth.Operation, error) {
	w, op, err := writeKind(method, h, res)
	if err != nil {
		return w, op, err
	}
	if w, err = withEntity(w, h, body, res, version); err != nil {
		return w, nil, err
	}
	return w, op, nil
}

// withEntity completes w, a write as writeKind found it, with the entity its body holds (a
// delete has none).
func withEntity(w table.Write, h http.Header, body []byte, res resource, version string) (table.Write, error) {
	if w.Kind == table.Delete {
		return w, nil
	}
	d, err := decodeEntity(h, body, version)
	if err != nil {
		return w, err
	}
	w.Entity = d.Entity
	if w.Kind == table.Insert {
		if d.KeyErr != nil {
			return w, d.KeyErr
		}
		if !d.HasPartitionKey || !d.HasRowKey {
			return w, azerr.Newf(azerr.PropertiesNeedValue, "The values are not specified for all properties in the entity: an inserted entity needs PartitionKey and RowKey.")
		}
	} else {
		// The URL names the entity; keys repeated in the body are ignored, whatever their type
		// (the real service stored upserts whose body keys were annotated Edm.DateTime or
		// Edm.Binary, edm.Decoded.KeyErr), as Azurite ignores them too.
		w.Entity.PartitionKey, w.Entity.RowKey = res.partitionKey, res.rowKey
	}
	return w, nil
}

// writeKind finds which write a request is, and the operation it is, from the method and the
// conditional headers alone: the Write has its Kind and IfMatch (and, for a delete, the
// entity's keys) but no entity yet.
func writeKind(method string, h http.Header, res resource) (table.Write, *auth.Operation, error) {
	var w table.Write
	ifMatch, hasIfMatch := headerValue(h, "If-Match")
	_, hasIfNoneMatch := headerValue(h, "If-None-Match")
	if hasIfMatch && hasIfNoneMatch {
		return w, nil, azerr.Newf(azerr.InvalidInput, "Both If-Match and If-None-Match HTTP headers cannot be specified at the same time. Please specify either one of the headers or none of them.")
	}
	if hasIfNoneMatch {
		return w, nil, azerr.Newf(azerr.InvalidInput, "If-None-Match HTTP header cannot be specified for %s operations.", method)
	}
	if hasIfMatch {
		cond, err := table.ParseIfMatch(ifMatch)
		if err != nil {
			return w, nil, err
		}
		w.IfMatch = cond
	}
	var op *auth.Operation
	switch {
	case res.kind == resEntities && method == http.MethodPost:
		w.Kind, op = table.Insert, auth.OpInsertEntity
	case res.kind != resEntity:
		return w, nil, azerr.Newf(azerr.MethodNotAllowed, "The requested method is not allowed on the specified resource: %s needs an entity address Table(PartitionKey='...',RowKey='...').", method)
	case method == http.MethodPut && hasIfMatch:
		w.Kind, op = table.Replace, auth.OpUpdateEntity
	case method == http.MethodPut:
		w.Kind, op = table.InsertOrReplace, auth.OpInsertOrReplaceEntity
	case (method == http.MethodPatch || method == "MERGE") && hasIfMatch:
		w.Kind, op = table.Merge, auth.OpMergeEntity
	case method == http.MethodPatch || method == "MERGE":
		w.Kind, op = table.InsertOrMerge, auth.OpInsertOrMergeEntity
	case method == http.MethodDelete && !hasIfMatch:
		return w, nil, azerr.Newf(azerr.MissingRequiredHeader, "A required HTTP header was not specified: Delete Entity needs If-Match (an ETag, or * to delete unconditionally).")
	case method == http.MethodDelete:
		w.Kind, op = table.Delete, auth.OpDeleteEntity
		w.Entity.PartitionKey, w.Entity.RowKey = res.partitionKey, res.rowKey
	default:
		return w, nil, azerr.Newf(azerr.MethodNotAllowed, "The requested method is not allowed on the specified resource: %s on an entity.", method)
	}
	return w, op, nil
}

// headerValue returns a header's value and whether it was sent at all (even empty).
func headerValue(h http.Header, name string) (string, bool) {
	v, ok := h[http.CanonicalHeaderKey(name)]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// preferReturn reads the Prefer header: "return-content", "return-no-content" or "".
func preferReturn(h http.Header) string {
	for _, v := range h.Values("Prefer") {
		for _, p := range strings.Split(v, ",") {
			switch p = strings.TrimSpace(strings.ToLower(p)); p {
			case "return-content", "return-no-content":
				return p
			}
		}
	}
	return ""
}

// readBody reads the request body up to Azure's 4 MiB cap.
func readBody(rq *request) ([]byte, error) {
	if rq.R.ContentLength > MaxBodyBytes {
		return nil, azerr.New(azerr.RequestBodyTooLarge)
	}
	var body []byte
	var err error
	if n := rq.R.ContentLength; n > 0 {
		// A sized body (what the SDKs send) is read into one buffer of its size rather than
		// one grown by doubling. net/http hands over its last bytes with io.EOF, which the
		// body stall guard (internal/server) waits for; a body cut short is an error.
		body = make([]byte, n)
		_, err = io.ReadFull(rq.R.Body, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(rq.R.Body, MaxBodyBytes+1))
	}
	if e := (*azerr.Error)(nil); errors.As(err, &e) {
		return nil, e // the body stalled (internal/server)
	}
	if err != nil {
		return nil, azerr.Newf(azerr.InvalidInput, "One of the request inputs is not valid: the request body could not be read (%v).", err)
	}
	if len(body) > MaxBodyBytes {
		return nil, azerr.New(azerr.RequestBodyTooLarge)
	}
	return body, nil
}

// createdWithoutContent sets the headers of a successful Create Table or Insert Entity —
// Location and, when Prefer asked for one, Preference-Applied — and answers 204 with
// DataServiceId if the client preferred no content. It reports whether it answered; if not,
// the caller sends 201 with the created resource.
func (rq *request) createdWithoutContent(location string) bool {
	h := rq.W.Header()
	h.Set("Location", location)
	prefer := preferReturn(rq.R.Header)
	if prefer != "" {
		h.Set("Preference-Applied", prefer)
	}
	if prefer != "return-no-content" {
		return false
	}
	h.Set("DataServiceId", location)
	rq.writeEmpty(http.StatusNoContent)
	return true
}

// writeEntity serves Insert, Update, Merge, Insert Or Replace, Insert Or Merge and Delete:
// w, op and kindErr are what writeKind found of the request, whose error is answered after
// those of the format and the body.
func (s *Server) writeEntity(rq *request, res resource, w table.Write, op *auth.Operation, kindErr error) error {
	f, err := negotiate(rq)
	if err != nil {
		return err
	}
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	if kindErr != nil {
		return kindErr
	}
	if w, err = withEntity(w, rq.R.Header, body, res, rq.Version); err != nil {
		return err
	}
	if err := rq.Note(op.Name, res.table); err != nil {
		return err
	}
	if err := rq.NotePartition(w.Entity.PartitionKey); err != nil {
		return err
	}
	if err := rq.grant.Authorize(op, auth.Target{Name: res.table, PartitionKey: w.Entity.PartitionKey, RowKey: w.Entity.RowKey}); err != nil {
		return err
	}
	if err := s.admit(rq, res.table, w.Entity.PartitionKey, 1); err != nil {
		return err
	}
	t, err := s.svc.Table(rq.ctx, rq.Account, res.table)
	if err != nil {
		return err
	}
	stored, err := s.svc.Write(rq.ctx, t, w)
	if err != nil {
		return err
	}
	s.observeWrites(rq, res.table, []table.Write{w})
	h := rq.W.Header()
	if w.Kind == table.Delete {
		rq.writeEmpty(http.StatusNoContent)
		return nil
	}
	h["Etag"] = []string{edm.ETag(stored.Timestamp)}
	if w.Kind != table.Insert {
		rq.writeEmpty(http.StatusNoContent)
		return nil
	}
	if rq.createdWithoutContent(rq.BaseURL + "/" + entityPath(res.table, stored.PartitionKey, stored.RowKey)) {
		return nil
	}
	if f.atom {
		d := newAtomDoc(rq)
		rq.writeAtom(http.StatusCreated, d.appendEntry(nil, d.entityEntry(t, &stored, nil), true))
		return nil
	}
	opts := entityOptions(rq, t, f.level)
	opts.MetadataURL = metadataURL(rq, f.level, t.Name+"/@Element")
	rq.writeBuiltJSON(http.StatusCreated, f.level, func(b []byte) []byte { return edm.AppendJSON(b, &stored, &opts) })
	return nil
}

func entityOptions(rq *request, t table.Table, level edm.Metadata) edm.EncodeOptions {
	return edm.EncodeOptions{Metadata: level, BaseURL: rq.BaseURL, Account: rq.Account, Table: t.Name}
}

// appendObjectStart opens a JSON response object with its odata.metadata member, if any; the
// caller appends the other members.
func appendObjectStart(b []byte, metadataURL string) []byte {
	b = append(b, '{')
	if metadataURL != "" {
		b = append(b, `"odata.metadata":`...)
		b = appendJSONString(b, metadataURL)
		b = append(b, ',')
	}
	return b
}

// metadataURL is the odata.metadata value for a response, empty under nometadata.
func metadataURL(rq *request, level edm.Metadata, fragment string) string {
	if level == edm.NoMetadata {
		return ""
	}
	return rq.BaseURL + "/$metadata#" + fragment
}

// selectSuffix is the projection part of an odata.metadata URL: "&$select=A,B" for a $select
// naming A and B, as the real service writes it after the entity set
// ("...$metadata#mytable&$select=age,sex" in the Python SDK's recording of
// test_query_entities_with_select; "...#mytable/@Element&$select=baz,PartitionKey,RowKey" for a
// point query in the JS SDK's recordings). The names are those of the $select, trimmed, in
// order, without repeats; no suffix when everything is selected.
func selectSuffix(sel []string) string {
	if sel == nil {
		return ""
	}
	return "&$select=" + strings.Join(sel, ",")
}

// notePlan tells the answer's headers and log line how a query read the table: its plan and
// the entities it read and returned. Not Azure headers: they make the design guide's cost
// ladder visible to whoever looks at the traffic.
func notePlan(rq *request, plan table.Plan, scanned, returned int) {
	h := rq.W.Header()
	h["x-tabula-query-plan"] = []string{string(plan)}
	h["x-tabula-entities-scanned"] = []string{strconv.Itoa(scanned)}
	rq.NoteAttrs(slog.String("plan", string(plan)), slog.Int("scanned", scanned), slog.Int("returned", returned))
}

// getEntity serves the point query (Query Entities addressed to one entity's key).
func (s *Server) getEntity(rq *request, tableName, pk, rk string) error {
	f, err := negotiate(rq)
	if err != nil {
		return err
	}
	sel, err := odata.ParseSelect(rq.Query.Get("$select"))
	if err != nil {
		return err
	}
	if err := s.admit(rq, tableName, pk, 1); err != nil {
		return err
	}
	t, err := s.svc.Table(rq.ctx, rq.Account, tableName)
	if err != nil {
		return err
	}
	e, err := s.svc.Entity(rq.ctx, t, pk, rk)
	scanned := 1
	if err != nil {
		scanned = 0
	}
	notePlan(rq, table.PlanPoint, scanned, scanned)
	if err != nil {
		return err
	}
	s.Insights.Read(rq.Account, tableName, pk, 1)
	rq.W.Header()["Etag"] = []string{edm.ETag(e.Timestamp)}
	if f.atom {
		d := newAtomDoc(rq)
		rq.writeAtom(http.StatusOK, d.appendEntry(nil, d.entityEntry(t, &e, sel), true))
		return nil
	}
	opts := entityOptions(rq, t, f.level)
	opts.Select = sel
	opts.MetadataURL = metadataURL(rq, f.level, t.Name+"/@Element"+selectSuffix(sel))
	rq.writeBuiltJSON(http.StatusOK, f.level, func(b []byte) []byte { return edm.AppendJSON(b, &e, &opts) })
	return nil
}

// queryEntities serves Query Entities: one page, with continuation headers when more may
// remain.
func (s *Server) queryEntities(rq *request, tableName string) error {
	f, err := negotiate(rq)
	if err != nil {
		return err
	}
	params := rq.Query
	var q table.Query
	if q.Filter, q.Top, err = parseQueryOptions(params); err != nil {
		return err
	}
	sel, err := odata.ParseSelect(params.Get("$select"))
	if err != nil {
		return err
	}
	if npk, ok := params["NextPartitionKey"]; ok {
		pk, err := decodeContinuation("NextPartitionKey", npk[0])
		if err != nil {
			return err
		}
		rk := ""
		if nrk := params.Get("NextRowKey"); nrk != "" {
			if rk, err = decodeContinuation("NextRowKey", nrk); err != nil {
				return err
			}
		}
		q.Resume = &table.ResumeKey{PartitionKey: pk, RowKey: rk}
	}
	if spk, srk, epk, erk, ok := rq.grant.KeyRange(); ok {
		q.Limit = &table.KeyLimit{StartPK: spk, StartRK: srk, EndPK: epk, EndRK: erk}
	}
	if err := s.admit(rq, tableName, singlePartition(q.Filter), 1); err != nil {
		return err
	}
	t, err := s.svc.Table(rq.ctx, rq.Account, tableName)
	if err != nil {
		return err
	}
	page, err := s.svc.QueryEntities(rq.ctx, t, q)
	if err != nil {
		return err
	}
	s.observeQuery(rq, tableName, params.Get("$filter"), q.Filter, page)
	notePlan(rq, page.Plan, page.Scanned, len(page.Entities))
	h := rq.W.Header()
	if page.Next != nil {
		h["x-ms-continuation-NextPartitionKey"] = []string{encodeContinuation(page.Next.PartitionKey)}
		h["x-ms-continuation-NextRowKey"] = []string{encodeContinuation(page.Next.RowKey)}
	}
	if f.atom {
		d := newAtomDoc(rq)
		rq.writeAtom(http.StatusOK, d.appendFeed(nil, t.Name, len(page.Entities), func(i int) atomEntry {
			return d.entityEntry(t, &page.Entities[i], sel)
		}))
		return nil
	}
	opts := entityOptions(rq, t, f.level)
	opts.Select = sel
	rq.writeBuiltJSON(http.StatusOK, f.level, func(b []byte) []byte {
		b = appendObjectStart(b, metadataURL(rq, f.level, t.Name+selectSuffix(sel)))
		b = append(b, `"value":[`...)
		for i := range page.Entities {
			if i > 0 {
				b = append(b, ',')
			}
			b = edm.AppendJSON(b, &page.Entities[i], &opts)
		}
		return append(b, "]}"...)
	})
	return nil
}

// parseQueryOptions reads the $filter and $top shared by Query Entities and Query Tables
// (top is 0 when absent), refusing the OData options the Table service does not support.
func parseQueryOptions(params url.Values) (filter *odata.Filter, top int, err error) {
	if err := rejectUnsupportedOptions(params); err != nil {
		return nil, 0, err
	}
	if f := params.Get("$filter"); f != "" {
		if filter, err = odata.ParseFilter(f); err != nil {
			return nil, 0, err
		}
	}
	if t := params.Get("$top"); t != "" {
		if top, err = odata.ParseTop(t); err != nil {
			return nil, 0, err
		}
	}
	return filter, top, nil
}

// rejectUnsupportedOptions refuses OData system query options the Table service does not
// support, rather than silently ignoring them and returning something the client did not ask
// for.
func rejectUnsupportedOptions(params url.Values) error {
	for name := range params {
		switch name {
		case "$filter", "$select", "$top", "$format":
		default:
			if strings.HasPrefix(name, "$") {
				return azerr.Newf(azerr.InvalidInput, "The query option %s is not supported by the Table service; only $filter, $select, $top and $format are.", name)
			}
		}
	}
	return nil
}

// Continuation tokens have the real service's shape, 1!{length}!{base64 of the key with '='
// written as '-'}: opaque to clients, URL-safe, and able to carry any key.
var b64 = base64.StdEncoding

func encodeContinuation(key string) string {
	enc := strings.ReplaceAll(b64.EncodeToString([]byte(key)), "=", "-")
	return "1!" + strconv.Itoa(len(enc)) + "!" + enc
}

func decodeContinuation(param, token string) (string, error) {
	bad := azerr.Newf(azerr.InvalidInput, "One of the request inputs is not valid: the continuation token %s=%q was not issued by this service.", param, token)
	rest, ok := strings.CutPrefix(token, "1!")
	if !ok {
		return "", bad
	}
	n, enc, ok := strings.Cut(rest, "!")
	if !ok || n != strconv.Itoa(len(enc)) {
		return "", bad
	}
	key, err := b64.DecodeString(strings.ReplaceAll(enc, "-", "="))
	if err != nil {
		return "", bad
	}
	return string(key), nil
}
