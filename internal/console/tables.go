package console

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/odata"
	"github.com/tabula-dev/tabula/internal/table"
)

// The Table service's part of the API (see api.go for the contract).

// pageSize is a page when the caller gives no top: a screenful.
const pageSize = 20

// apiEntity is an entity as the API writes and reads it: every value as text, every type
// named, so that the page never has to guess an EDM type from a JSON value.
type apiEntity struct {
	PartitionKey string        `json:"PartitionKey"`
	RowKey       string        `json:"RowKey"`
	Timestamp    string        `json:"Timestamp,omitempty"`
	ETag         string        `json:"etag,omitempty"`
	Properties   []apiProperty `json:"properties"`
}

type apiProperty struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

func entityOf(e *edm.Entity) apiEntity {
	out := apiEntity{
		PartitionKey: e.PartitionKey,
		RowKey:       e.RowKey,
		Timestamp:    e.Timestamp.String(),
		ETag:         edm.ETag(e.Timestamp),
		Properties:   make([]apiProperty, len(e.Properties)),
	}
	for i, p := range e.Properties {
		out.Properties[i] = apiProperty{Name: p.Name, Type: p.Value.Type.Name(), Value: valueText(p.Value)}
	}
	return out
}

// valueText is a value's text in the form the service writes it and its decoder reads back
// under the type's annotation.
func valueText(v edm.Value) string {
	switch v.Type {
	case edm.String, edm.Guid:
		return v.Str
	case edm.Boolean:
		return strconv.FormatBool(v.Int != 0)
	case edm.Int32, edm.Int64:
		return strconv.FormatInt(v.Int, 10)
	case edm.Double:
		switch {
		case math.IsNaN(v.Float):
			return "NaN"
		case math.IsInf(v.Float, 1):
			return "Infinity"
		case math.IsInf(v.Float, -1):
			return "-Infinity"
		}
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	case edm.DateTime:
		return edm.Ticks(v.Int).String()
	case edm.Binary:
		return base64.StdEncoding.EncodeToString(v.Bin)
	}
	return ""
}

// decodeEntity turns the API's properties into an entity through the service's own JSON
// decoder: each property is sent as its text annotated with its type, which the decoder
// reads as the real service does (a bad Int32 is the InvalidInput an SDK would get, a name
// given twice DuplicatePropertiesSpecified). Limits are checked later, by the write.
func decodeEntity(pk, rk string, props []apiProperty) (edm.Entity, error) {
	b := []byte(`{"PartitionKey":`)
	b = appendJSONString(b, pk)
	b = append(b, `,"RowKey":`...)
	b = appendJSONString(b, rk)
	for _, p := range props {
		b = append(b, ',')
		b = appendJSONString(b, p.Name+"@odata.type")
		b = append(b, ':')
		b = appendJSONString(b, p.Type)
		b = append(b, ',')
		b = appendJSONString(b, p.Name)
		b = append(b, ':')
		b = appendJSONString(b, p.Value)
	}
	d, err := edm.DecodeJSON(append(b, '}'))
	return d.Entity, err
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// resume is the API's paging token for entities: the key the next page starts at.
func encodeResume(k *table.ResumeKey) string {
	if k == nil {
		return ""
	}
	b, _ := json.Marshal([2]string{k.PartitionKey, k.RowKey})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeResume(token string) (*table.ResumeKey, error) {
	if token == "" {
		return nil, nil
	}
	var k [2]string
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err == nil {
		err = json.Unmarshal(b, &k)
	}
	if err != nil {
		return nil, azerr.Newf(azerr.InvalidQueryParameterValue, "The next token %q was not issued by this console.", token)
	}
	return &table.ResumeKey{PartitionKey: k[0], RowKey: k[1]}, nil
}

// topOf reads a top parameter as the service does ($top: 1 to 1000), defaulting to pageSize.
func topOf(r *http.Request) (int, error) {
	s := r.URL.Query().Get("top")
	if s == "" {
		return pageSize, nil
	}
	return odata.ParseTop(s)
}

type tablesAPI struct{ svc *table.Service }

func (a tablesAPI) list(w http.ResponseWriter, r *http.Request, account string) {
	top, err := topOf(r)
	if err != nil {
		fail(w, err)
		return
	}
	page, err := a.svc.QueryTables(r.Context(), account, table.TableQuery{Top: top, NextTableName: r.URL.Query().Get("next")})
	if err != nil {
		fail(w, err)
		return
	}
	type apiTable struct {
		Name string `json:"name"`
	}
	out := struct {
		Tables []apiTable `json:"tables"`
		Next   string     `json:"next,omitempty"`
	}{Tables: make([]apiTable, len(page.Tables)), Next: page.NextTableName}
	for i, t := range page.Tables {
		out.Tables[i].Name = t.Name
	}
	writeJSON(w, http.StatusOK, out)
}

func (a tablesAPI) create(w http.ResponseWriter, r *http.Request, account string) {
	var body struct {
		Name string `json:"name"`
	}
	if err := decodeBody(r, &body); err != nil {
		fail(w, err)
		return
	}
	if err := table.ValidateTableName(body.Name); err != nil {
		fail(w, err)
		return
	}
	t, err := a.svc.CreateTable(r.Context(), account, body.Name)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"name": t.Name})
}

func (a tablesAPI) delete(w http.ResponseWriter, r *http.Request, account string) {
	if err := a.svc.DeleteTable(r.Context(), account, r.PathValue("table")); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// query is Query Entities: one page, with the plan and the entities read to make it.
func (a tablesAPI) query(w http.ResponseWriter, r *http.Request, account string) {
	params := r.URL.Query()
	var q table.Query
	var err error
	if f := params.Get("filter"); f != "" {
		if q.Filter, err = odata.ParseFilter(f); err != nil {
			fail(w, err)
			return
		}
	}
	sel, err := odata.ParseSelect(params.Get("select"))
	if err != nil {
		fail(w, err)
		return
	}
	if q.Top, err = topOf(r); err != nil {
		fail(w, err)
		return
	}
	if q.Resume, err = decodeResume(params.Get("next")); err != nil {
		fail(w, err)
		return
	}
	t, err := a.svc.Table(r.Context(), account, r.PathValue("table"))
	if err != nil {
		fail(w, err)
		return
	}
	page, err := a.svc.QueryEntities(r.Context(), t, q)
	if err != nil {
		fail(w, err)
		return
	}
	out := struct {
		Entities []apiEntity `json:"entities"`
		Plan     table.Plan  `json:"plan"`
		Scanned  int         `json:"scanned"`
		Returned int         `json:"returned"`
		Next     string      `json:"next,omitempty"`
	}{Entities: make([]apiEntity, len(page.Entities)), Plan: page.Plan, Scanned: page.Scanned, Returned: len(page.Entities), Next: encodeResume(page.Next)}
	for i := range page.Entities {
		out.Entities[i] = entityOf(selected(&page.Entities[i], sel))
	}
	writeJSON(w, http.StatusOK, out)
}

// selected keeps the properties a $select names (all for nil). The keys and Timestamp stay
// whatever it names: the page needs them to open the entity.
func selected(e *edm.Entity, sel []string) *edm.Entity {
	if sel == nil {
		return e
	}
	out := *e
	out.Properties = nil
	for _, name := range sel {
		if v, ok := e.Get(name); ok {
			out.Properties = append(out.Properties, edm.Property{Name: name, Value: v})
		}
	}
	return &out
}

// entity answers GET, PUT and DELETE of one entity, addressed by ?pk=&rk= (keys may hold
// characters a path cannot, and may be empty).
func (a tablesAPI) entity(w http.ResponseWriter, r *http.Request, account string) {
	params := r.URL.Query()
	pk, rk := params.Get("pk"), params.Get("rk")
	if !params.Has("pk") || !params.Has("rk") {
		fail(w, azerr.Newf(azerr.InvalidQueryParameterValue, "An entity is addressed by both pk and rk (either may be empty)."))
		return
	}
	t, err := a.svc.Table(r.Context(), account, r.PathValue("table"))
	if err != nil {
		fail(w, err)
		return
	}
	switch r.Method {
	case http.MethodGet:
		e, err := a.svc.Entity(r.Context(), t, pk, rk)
		if err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, entityOf(&e))
	case http.MethodPut:
		var body apiEntity
		if err := decodeBody(r, &body); err != nil {
			fail(w, err)
			return
		}
		wr := table.Write{Kind: table.Replace}
		if wr.IfMatch, err = ifMatch(body.ETag); err != nil {
			fail(w, err)
			return
		}
		if wr.Entity, err = decodeEntity(pk, rk, body.Properties); err != nil {
			fail(w, err)
			return
		}
		stored, err := a.svc.Write(r.Context(), t, wr)
		if err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, entityOf(&stored))
	case http.MethodDelete:
		wr := table.Write{Kind: table.Delete, Entity: edm.Entity{PartitionKey: pk, RowKey: rk}}
		if wr.IfMatch, err = ifMatch(params.Get("etag")); err != nil {
			fail(w, err)
			return
		}
		if _, err := a.svc.Write(r.Context(), t, wr); err != nil {
			fail(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// ifMatch reads the etag of a change: the version the page showed, so that a change made
// meanwhile by someone else is 412 UpdateConditionNotSatisfied rather than overwritten, or
// "*" to overwrite whatever is there.
func ifMatch(etag string) (table.ETagCondition, error) {
	if etag == "" {
		return table.ETagCondition{}, azerr.Newf(azerr.InvalidInput, "A change to an entity needs the etag it was read with (or * to change any version).")
	}
	return table.ParseIfMatch(etag)
}

// insert is Insert Entity: the keys come from the body, and an entity already there is 409
// EntityAlreadyExists.
func (a tablesAPI) insert(w http.ResponseWriter, r *http.Request, account string) {
	var body apiEntity
	if err := decodeBody(r, &body); err != nil {
		fail(w, err)
		return
	}
	t, err := a.svc.Table(r.Context(), account, r.PathValue("table"))
	if err != nil {
		fail(w, err)
		return
	}
	e, err := decodeEntity(body.PartitionKey, body.RowKey, body.Properties)
	if err != nil {
		fail(w, err)
		return
	}
	stored, err := a.svc.Write(r.Context(), t, table.Write{Kind: table.Insert, Entity: e})
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, entityOf(&stored))
}
