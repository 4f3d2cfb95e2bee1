package tablehttp

import (
	"net/http"
	"strconv"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/serviceprops"
)

// The service-level and ACL operations speak plain XML, not OData.

const xmlHeader = `<?xml version="1.0" encoding="utf-8"?>`

func (rq *request) writeXML(status int, body string) {
	h := rq.W.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	rq.W.WriteHeader(status)
	if rq.R.Method != http.MethodHead {
		_, _ = rq.W.Write([]byte(body))
	}
}

// routeXML finds the operations selected by restype/comp: service properties and stats on
// the service root, ACLs on a table.
func (s *Server) routeXML(rq *request, res resource, method string) (call, error) {
	q := rq.Query
	restype, comp := q.Get("restype"), q.Get("comp")
	switch {
	case res.kind == resService && restype == "service" && comp == "properties":
		switch method {
		case http.MethodGet:
			return s.authorized(auth.OpGetServiceProperties, "", "", "", s.getServiceProperties), nil
		case http.MethodPut:
			return s.authorized(auth.OpSetServiceProperties, "", "", "", s.setServiceProperties), nil
		}
		return call{}, unsupportedVerb(method)
	case res.kind == resService && restype == "service" && comp == "stats":
		if method == http.MethodGet {
			return s.authorized(auth.OpGetServiceStats, "", "", "", s.getServiceStats), nil
		}
		return call{}, unsupportedVerb(method)
	case res.kind == resService && restype == "service" && comp == "userdelegationkey":
		if method == http.MethodPost {
			return call{op: auth.OpGetTableUserDelegationKey, serve: s.getUserDelegationKey}, nil
		}
		return call{}, unsupportedVerb(method)
	case res.kind == resEntities && comp == "acl" && restype == "":
		switch method {
		case http.MethodGet, http.MethodHead:
			return s.authorized(auth.OpGetTableACL, res.table, "", "", func(rq *request) error { return s.getTableACL(rq, res.table) }), nil
		case http.MethodPut:
			return s.authorized(auth.OpSetTableACL, res.table, "", "", func(rq *request) error { return s.setTableACL(rq, res.table) }), nil
		}
		return call{}, unsupportedVerb(method)
	case res.kind == resService && restype == "":
		return call{}, azerr.Newf(azerr.MissingRequiredQueryParameter, "A required query parameter was not specified for this request: the service root needs restype=service&comp=properties, comp=stats or comp=userdelegationkey.")
	}
	return call{}, azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid: restype=%q, comp=%q is not an operation on %s.", restype, comp, rq.Path)
}

func unsupportedVerb(method string) error {
	return azerr.Newf(azerr.UnsupportedHTTPVerb, "The resource doesn't support the specified HTTP verb %s.", method)
}

// getUserDelegationKey serves Get User Delegation Key on the Table service (from 2025-07-05):
// a bearer token's holder gets a key to sign table user delegation SASes with
// (auth.IssueDelegationKey).
func (s *Server) getUserDelegationKey(rq *request) error {
	if err := rq.Note(auth.OpGetTableUserDelegationKey.Name, ""); err != nil {
		return err
	}
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	version := rq.Version
	if version == "" {
		version = defaultVersion
	}
	answer, err := s.auth.IssueDelegationKey(rq.grant, rq.Account, auth.Table, version, body, time.Now())
	if err != nil {
		return err
	}
	rq.writeXML(http.StatusOK, string(answer))
	return nil
}

// --- service properties ---

func (s *Server) setServiceProperties(rq *request) error {
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	update, err := serviceprops.ParseUpdate(body, auth.Table)
	if err != nil {
		return err
	}
	if err := s.svc.SetServiceProperties(rq.ctx, rq.Account, update); err != nil {
		return err
	}
	rq.W.Header().Set("Content-Length", "0")
	rq.W.WriteHeader(http.StatusAccepted)
	return nil
}

func (s *Server) getServiceProperties(rq *request) error {
	p, err := s.svc.ServiceProperties(rq.ctx, rq.Account)
	if err != nil {
		return err
	}
	rq.writeXML(http.StatusOK, string(serviceprops.AppendXML([]byte(xmlHeader), p, auth.Table)))
	return nil
}

// getServiceStats reports geo-replication. Tabula has one copy of the data, which its
// secondary endpoint serves too, so replication is always live and current.
//
// As on Azure, only the secondary endpoint answers: on the primary the operation is refused
// with 400 InvalidQueryParameterValue and exactly Azure's text (a real response is quoted in
// Azure/azure-cosmos-table-dotnet#26, and the storage emulator refuses comp=stats on a
// primary address the same way).
func (s *Server) getServiceStats(rq *request) error {
	if !rq.Secondary {
		rq.log.Info("service stats asked of the primary endpoint", "request_id", rq.ID, "account", rq.Account)
		return azerr.New(azerr.InvalidQueryParameterValue)
	}
	rq.writeXML(http.StatusOK, xmlHeader+"<StorageServiceStats><GeoReplication><Status>live</Status><LastSyncTime>"+
		time.Now().UTC().Format(http.TimeFormat)+"</LastSyncTime></GeoReplication></StorageServiceStats>")
	return nil
}

// --- table ACL ---

// tableSASLetters are the permissions a table's stored access policy may grant.
const tableSASLetters = "raud"

func (s *Server) setTableACL(rq *request, tableName string) error {
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	policies, err := auth.ParseSignedIdentifiers(body, tableSASLetters)
	if err != nil {
		return err
	}
	if err := s.svc.SetTablePolicies(rq.ctx, rq.Account, tableName, policies); err != nil {
		return err
	}
	rq.W.Header().Set("Content-Length", "0")
	rq.W.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getTableACL(rq *request, tableName string) error {
	t, err := s.svc.Table(rq.ctx, rq.Account, tableName)
	if err != nil {
		return err
	}
	rq.writeXML(http.StatusOK, string(auth.AppendSignedIdentifiers([]byte(xmlHeader), t.Policies)))
	return nil
}
