package tablehttp

import (
	"encoding/json"
	"net/http"

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
	level, err := negotiate(rq)
	if err != nil {
		return err
	}
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	var req struct {
		TableName *string `json:"TableName"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return azerr.Newf(azerr.InvalidInput, "One of the request inputs is not valid: the body must be a JSON object like {\"TableName\":\"mytable\"} (%v).", err)
	}
	if req.TableName == nil {
		return azerr.Newf(azerr.PropertiesNeedValue, "The values are not specified for all properties in the entity: TableName is missing.")
	}
	t, err := s.svc.CreateTable(rq.ctx, rq.Account, *req.TableName)
	if err != nil {
		return err
	}
	if rq.createdWithoutContent(rq.BaseURL + "/Tables('" + t.Name + "')") {
		return nil
	}
	rq.writeJSON(http.StatusCreated, level, appendTableJSON(nil, rq, level, t.Name, metadataURL(rq, level, "Tables/@Element")))
	return nil
}

// getTable serves GET /Tables('name'), which some legacy clients use as an existence check.
func (s *Server) getTable(rq *request, name string) error {
	level, err := negotiate(rq)
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
	rq.writeJSON(http.StatusOK, level, appendTableJSON(nil, rq, level, t.Name, metadataURL(rq, level, "Tables/@Element")))
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
	level, err := negotiate(rq)
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
	b := appendObjectStart(nil, metadataURL(rq, level, "Tables"))
	b = append(b, `"value":[`...)
	for i, t := range page.Tables {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTableJSON(b, rq, level, t.Name, "")
	}
	b = append(b, "]}"...)
	rq.writeJSON(http.StatusOK, level, b)
	return nil
}
