package tablehttp

import (
	"encoding/json"
	"net/http"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/table"
)

// appendTableJSON writes one table entry at the given metadata level.
func appendTableJSON(b []byte, rq *request, level edm.Metadata, name, metadataURL string) []byte {
	b = appendObjectStart(b, metadataURL)
	if level == edm.FullMetadata {
		b = append(b, `"odata.type":`...)
		b = appendJSONString(b, rq.Account+".Tables")
		b = append(b, `,"odata.id":`...)
		b = appendJSONString(b, rq.BaseURL+"/Tables('"+name+"')")
		b = append(b, `,"odata.editLink":`...)
		b = appendJSONString(b, "Tables('"+name+"')")
		b = append(b, ',')
	}
	b = append(b, `"TableName":`...)
	b = appendJSONString(b, name)
	return append(b, '}')
}

// createTable serves Create Table. Without Prefer: return-no-content the answer is 201 with
// the table entry: the Python SDK reads a 204 here as "the table already existed".
func (s *Server) createTable(rq *request) error {
	f, err := negotiate(rq)
	if err != nil {
		return err
	}
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	name, err := tableNameOf(rq, body)
	if err != nil {
		return err
	}
	if err := rq.Note(auth.OpCreateTable.Name, name); err != nil {
		return err
	}
	t, err := s.svc.CreateTable(rq.ctx, rq.Account, name)
	if err != nil {
		return err
	}
	if rq.createdWithoutContent(rq.BaseURL + "/Tables('" + t.Name + "')") {
		return nil
	}
	s.writeTable(rq, http.StatusCreated, f, t.Name)
	return nil
}

// tableNameOf reads the TableName of a Create Table body, JSON or Atom.
func tableNameOf(rq *request, body []byte) (string, error) {
	atom, err := bodyIsAtom(rq.R.Header.Get("Content-Type"), rq.Version, rq.R.Header)
	if err != nil {
		return "", err
	}
	if atom {
		d, err := edm.DecodeAtom(body)
		if err != nil {
			return "", err
		}
		v, ok := d.Get("TableName")
		if !ok {
			return "", azerr.Newf(azerr.PropertiesNeedValue, "The values are not specified for all properties in the entity: TableName is missing.")
		}
		if v.Type != edm.String {
			return "", azerr.Newf(azerr.InvalidInput, "One of the request inputs is not valid: TableName must be an Edm.String, not %s.", v.Type.Name())
		}
		return v.Str, nil
	}
	var req struct {
		TableName *string `json:"TableName"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return "", azerr.Newf(azerr.InvalidInput, "One of the request inputs is not valid: the body must be a JSON object like {\"TableName\":\"mytable\"} (%v).", err)
	}
	if req.TableName == nil {
		return "", azerr.Newf(azerr.PropertiesNeedValue, "The values are not specified for all properties in the entity: TableName is missing.")
	}
	return *req.TableName, nil
}

// writeTable answers with one table's entry.
func (s *Server) writeTable(rq *request, status int, f format, name string) {
	if f.atom {
		d := newAtomDoc(rq)
		rq.writeAtom(status, d.appendEntry(nil, d.tableEntry(name), true))
		return
	}
	rq.writeJSON(status, f.level, appendTableJSON(nil, rq, f.level, name, metadataURL(rq, f.level, "Tables/@Element")))
}

// getTable serves GET /Tables('name'), which some legacy clients use as an existence check.
func (s *Server) getTable(rq *request, name string) error {
	f, err := negotiate(rq)
	if err != nil {
		return err
	}
	t, err := s.svc.Table(rq.ctx, rq.Account, name)
	if e, ok := err.(*azerr.Error); ok && e.Code == azerr.TableNotFound {
		return azerr.New(azerr.ResourceNotFound)
	}
	if err != nil {
		return err
	}
	s.writeTable(rq, http.StatusOK, f, t.Name)
	return nil
}

// deleteTable serves Delete Table.
func (s *Server) deleteTable(rq *request, name string) error {
	if err := s.svc.DeleteTable(rq.ctx, rq.Account, name); err != nil {
		return err
	}
	rq.writeEmpty(http.StatusNoContent)
	return nil
}

// queryTables serves Query Tables.
func (s *Server) queryTables(rq *request) error {
	f, err := negotiate(rq)
	if err != nil {
		return err
	}
	params := rq.Query
	var q table.TableQuery
	if q.Filter, q.Top, err = parseQueryOptions(params); err != nil {
		return err
	}
	if next := params.Get("NextTableName"); next != "" {
		if q.NextTableName, err = decodeContinuation("NextTableName", next); err != nil {
			return err
		}
	}
	page, err := s.svc.QueryTables(rq.ctx, rq.Account, q)
	if err != nil {
		return err
	}
	if page.NextTableName != "" {
		rq.W.Header()["x-ms-continuation-NextTableName"] = []string{encodeContinuation(page.NextTableName)}
	}
	if f.atom {
		d := newAtomDoc(rq)
		rq.writeAtom(http.StatusOK, d.appendFeed(nil, "Tables", len(page.Tables), func(i int) atomEntry {
			return d.tableEntry(page.Tables[i].Name)
		}))
		return nil
	}
	b := appendObjectStart(nil, metadataURL(rq, f.level, "Tables"))
	b = append(b, `"value":[`...)
	for i, t := range page.Tables {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTableJSON(b, rq, f.level, t.Name, "")
	}
	b = append(b, "]}"...)
	rq.writeJSON(http.StatusOK, f.level, b)
	return nil
}
