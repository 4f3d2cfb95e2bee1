package blobhttp

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/serviceprops"
)

// --- the service root ---

func (s *Server) getServiceProperties(rq *request) error {
	props, err := s.svc.ServiceProperties(rq.ctx, rq.Account)
	if err != nil {
		return err
	}
	return rq.writeXML(http.StatusOK, serviceprops.AppendXML([]byte(xmlDeclaration), props, auth.Blob))
}

// maxPropertiesBody bounds a Set Blob Service Properties body.
const maxPropertiesBody = 1 << 20

func (s *Server) setServiceProperties(rq *request) error {
	body, err := readXMLBody(rq, maxPropertiesBody)
	if err != nil {
		return err
	}
	update, err := serviceprops.ParseUpdate(body, auth.Blob)
	if err != nil {
		return err
	}
	if err := s.svc.SetServiceProperties(rq.ctx, rq.Account, update); err != nil {
		return err
	}
	return rq.done(http.StatusAccepted)
}

// getServiceStats answers for the secondary endpoint only, as Azure does: a replica that is
// always live, synced now.
func (s *Server) getServiceStats(rq *request) error {
	if !rq.Secondary {
		return azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid: Get Blob Service Stats is served by the secondary endpoint (%s-secondary).", rq.Account)
	}
	w := newXML()
	w.open("StorageServiceStats")
	w.open("GeoReplication")
	w.elem("Status", "live")
	w.elem("LastSyncTime", time.Now().UTC().Format(http.TimeFormat))
	w.close("GeoReplication")
	w.close("StorageServiceStats")
	return rq.writeXML(http.StatusOK, w.Bytes())
}

func (s *Server) getAccountInformation(rq *request) error {
	h := rq.W.Header()
	h["x-ms-sku-name"] = []string{s.svc.SKU(rq.Account)}
	h["x-ms-account-kind"] = []string{"StorageV2"}
	h["x-ms-is-hns-enabled"] = []string{"false"}
	return rq.done(http.StatusOK)
}

// maxResults reads maxresults: 1 or more (400 OutOfRangeQueryParameterValue), larger than
// 5,000 clamped; 0 when absent.
func maxResults(rq *request) (int, error) {
	v := rq.Query.Get("maxresults")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		e := azerr.Newf(azerr.OutOfRangeQueryParameterValue, "One of the query parameters specified in the request URI is outside the permissible range: maxresults %q.", v)
		e.Details = []azerr.Detail{{Name: "QueryParameterName", Value: "maxresults"}, {Name: "QueryParameterValue", Value: v}, {Name: "MinimumAllowed", Value: "1"}, {Name: "MaximumAllowed", Value: "5000"}}
		return 0, e
	}
	return min(n, blob.MaxListResults), nil
}

// include reads the include list, refusing values not in allowed.
func include(rq *request, allowed ...string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, v := range rq.Query["include"] {
		for _, item := range strings.Split(v, ",") {
			item = strings.ToLower(strings.TrimSpace(item))
			if item == "" {
				continue
			}
			if !slices.Contains(allowed, item) {
				e := azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid: include=%q.", item)
				e.Details = []azerr.Detail{{Name: "QueryParameterName", Value: "include"}, {Name: "QueryParameterValue", Value: v}}
				return nil, e
			}
			out[item] = true
		}
	}
	return out, nil
}

// listContainers answers List Containers (blob.md §7.3).
func (s *Server) listContainers(rq *request) error {
	n, err := maxResults(rq)
	if err != nil {
		return err
	}
	inc, err := include(rq, "metadata", "deleted", "system")
	if err != nil {
		return err
	}
	q := rq.Query
	page, err := s.svc.ListContainers(rq.ctx, rq.Account, blob.ListContainersOptions{Prefix: q.Get("prefix"), Marker: q.Get("marker"), MaxResults: n, Deleted: inc["deleted"], System: inc["system"]})
	if err != nil {
		return err
	}
	w := newXML()
	w.WriteString("<EnumerationResults")
	w.attr("ServiceEndpoint", rq.BaseURL+"/")
	w.WriteString(">")
	if q.Has("prefix") {
		w.elem("Prefix", q.Get("prefix"))
	}
	if q.Has("marker") {
		w.elem("Marker", q.Get("marker"))
	}
	if q.Has("maxresults") {
		w.elem("MaxResults", q.Get("maxresults"))
	}
	if len(page.Containers) == 0 {
		w.WriteString("<Containers />")
	} else {
		w.open("Containers")
		for _, c := range page.Containers {
			w.open("Container")
			w.elem("Name", c.Name)
			if c.Deleted {
				w.elem("Deleted", "true")
				w.elem("Version", c.Version)
			}
			w.open("Properties")
			w.elem("Last-Modified", c.LastModified.Format(http.TimeFormat))
			w.elem("Etag", string(c.ETag))
			if c.Lease.State != "" {
				w.elem("LeaseStatus", c.Lease.Status)
				w.elem("LeaseState", string(c.Lease.State))
				w.optional("LeaseDuration", c.Lease.Duration)
			}
			w.optional("PublicAccess", string(c.PublicAccess))
			w.elem("DefaultEncryptionScope", defaultScope(c.Scope))
			w.elem("DenyEncryptionScopeOverride", strconv.FormatBool(c.Scope.DenyOverride))
			w.elem("HasImmutabilityPolicy", "false")
			w.elem("HasLegalHold", "false")
			w.elem("ImmutableStorageWithVersioningEnabled", strconv.FormatBool(s.svc.ImmutableStorageWithVersioning(rq.Account, c.Name)))
			if c.Deleted {
				w.elem("DeletedTime", c.DeletedTime.Format(http.TimeFormat))
				w.elem("RemainingRetentionDays", strconv.Itoa(c.RemainingRetentionDays))
			}
			w.close("Properties")
			if inc["metadata"] {
				w.metadata(c.Metadata)
			}
			w.close("Container")
		}
		w.close("Containers")
	}
	w.elem("NextMarker", page.NextMarker)
	w.close("EnumerationResults")
	return rq.writeXML(http.StatusOK, w.Bytes())
}

// --- containers ---

func (s *Server) createContainer(rq *request) error {
	access, err := blob.ParsePublicAccess(rq.R.Header.Get("x-ms-blob-public-access"))
	if err != nil {
		return err
	}
	h := rq.R.Header
	scope := blob.ScopePolicy{Default: h.Get("x-ms-default-encryption-scope")}
	if v := h.Get("x-ms-deny-encryption-scope-override"); v != "" {
		if scope.DenyOverride, err = strconv.ParseBool(v); err != nil {
			return invalidHeader("x-ms-deny-encryption-scope-override", v, "not true or false")
		}
	}
	c, err := s.svc.CreateContainerWithScope(rq.ctx, rq.Account, rq.container, metadata(h), access, scope)
	if err != nil {
		return err
	}
	setETag(rq.W.Header(), c.ETag, c.LastModified)
	return rq.done(http.StatusCreated)
}

// defaultScope is a container's default encryption scope as Azure reports it: the
// account's key has a name too.
func defaultScope(p blob.ScopePolicy) string {
	if p.Default == "" {
		return "$account-encryption-key"
	}
	return p.Default
}

// getContainerProperties answers Get Container Properties and Get Container Metadata.
func (s *Server) getContainerProperties(rq *request) error {
	c, err := s.svc.GetContainer(rq.ctx, rq.Account, rq.container, leaseID(rq.R.Header))
	if err != nil {
		return err
	}
	h := rq.W.Header()
	setETag(h, c.ETag, c.LastModified)
	setMetadata(h, c.Metadata)
	if rq.Query.Get("comp") == "" {
		setLease(h, c.Lease)
		if c.PublicAccess != blob.PrivateAccess {
			h["x-ms-blob-public-access"] = []string{string(c.PublicAccess)}
		}
		h["x-ms-has-immutability-policy"] = []string{"false"}
		h["x-ms-has-legal-hold"] = []string{"false"}
		h["x-ms-immutable-storage-with-versioning-enabled"] = []string{strconv.FormatBool(s.svc.ImmutableStorageWithVersioning(rq.Account, rq.container))}
		h["x-ms-default-encryption-scope"] = []string{defaultScope(c.Scope)}
		h["x-ms-deny-encryption-scope-override"] = []string{strconv.FormatBool(c.Scope.DenyOverride)}
	}
	return rq.done(http.StatusOK)
}

// containerConditions reads a container operation's conditions: only the dates apply to
// containers; an ETag condition is 400 UnsupportedHeader (blob.md §3).
func containerConditions(h http.Header) (blob.Conditions, error) {
	for _, name := range []string{"If-Match", "If-None-Match"} {
		if h.Get(name) != "" {
			return blob.Conditions{}, azerr.Newf(azerr.UnsupportedHeader, "One of the headers specified in the request is not supported: %s does not apply to containers.", name)
		}
	}
	return conditions(h, ""), nil
}

func (s *Server) setContainerMetadata(rq *request) error {
	cond, err := containerConditions(rq.R.Header)
	if err != nil {
		return err
	}
	c, err := s.svc.SetContainerMetadata(rq.ctx, rq.Account, rq.container, metadata(rq.R.Header), leaseID(rq.R.Header), cond)
	if err != nil {
		return err
	}
	setETag(rq.W.Header(), c.ETag, c.LastModified)
	return rq.done(http.StatusOK)
}

func (s *Server) deleteContainer(rq *request) error {
	cond, err := containerConditions(rq.R.Header)
	if err != nil {
		return err
	}
	if err := s.svc.DeleteContainer(rq.ctx, rq.Account, rq.container, leaseID(rq.R.Header), cond); err != nil {
		return err
	}
	return rq.done(http.StatusAccepted)
}

func (s *Server) getContainerACL(rq *request) error {
	c, err := s.svc.GetContainer(rq.ctx, rq.Account, rq.container, leaseID(rq.R.Header))
	if err != nil {
		return err
	}
	h := rq.W.Header()
	setETag(h, c.ETag, c.LastModified)
	if c.PublicAccess != blob.PrivateAccess {
		h["x-ms-blob-public-access"] = []string{string(c.PublicAccess)}
	}
	return rq.writeXML(http.StatusOK, auth.AppendSignedIdentifiers([]byte(xmlDeclaration), c.Policies))
}

// containerPermissions are the letters a container's stored policies may hold (blob.md §6.3).
const containerPermissions = "racwdxyltfmeopi"

// maxACLBody bounds a Set Container ACL body.
const maxACLBody = 64 << 10

func (s *Server) setContainerACL(rq *request) error {
	cond, err := containerConditions(rq.R.Header)
	if err != nil {
		return err
	}
	access, err := blob.ParsePublicAccess(rq.R.Header.Get("x-ms-blob-public-access"))
	if err != nil {
		return err
	}
	body, err := readXMLBody(rq, maxACLBody)
	if err != nil {
		return err
	}
	policies, err := auth.ParseSignedIdentifiers(body, containerPermissions)
	if err != nil {
		return err
	}
	c, err := s.svc.SetContainerACL(rq.ctx, rq.Account, rq.container, access, policies, leaseID(rq.R.Header), cond)
	if err != nil {
		return err
	}
	setETag(rq.W.Header(), c.ETag, c.LastModified)
	return rq.done(http.StatusOK)
}

// leaseRequest reads a Lease Container or Lease Blob request.
func leaseRequest(h http.Header) (blob.LeaseRequest, error) {
	req := blob.LeaseRequest{
		Action:     blob.LeaseAction(strings.ToLower(h.Get("x-ms-lease-action"))),
		ID:         h.Get("x-ms-lease-id"),
		ProposedID: h.Get("x-ms-proposed-lease-id"),
	}
	if req.Action == "" {
		return req, missingHeader("x-ms-lease-action")
	}
	var err error
	if req.Duration, err = intHeader(h, "x-ms-lease-duration"); err != nil {
		return req, err
	}
	req.BreakPeriod, err = intHeader(h, "x-ms-lease-break-period")
	return req, err
}

// answerLease writes a lease operation's response.
func answerLease(rq *request, action blob.LeaseAction, r blob.LeaseResult) error {
	h := rq.W.Header()
	setETag(h, r.ETag, r.LastModified)
	switch action {
	case blob.AcquireLease:
		h["x-ms-lease-id"] = []string{r.ID}
		return rq.done(http.StatusCreated)
	case blob.BreakLease:
		h["x-ms-lease-time"] = []string{strconv.Itoa(r.Time)}
		return rq.done(http.StatusAccepted)
	case blob.RenewLease, blob.ChangeLease:
		h["x-ms-lease-id"] = []string{r.ID}
	}
	return rq.done(http.StatusOK)
}

func (s *Server) leaseContainer(rq *request) error {
	req, err := leaseRequest(rq.R.Header)
	if err != nil {
		return err
	}
	cond, err := containerConditions(rq.R.Header)
	if err != nil {
		return err
	}
	r, err := s.svc.LeaseContainer(rq.ctx, rq.Account, rq.container, req, cond)
	if err != nil {
		return err
	}
	return answerLease(rq, req.Action, r)
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// restoreContainer answers Restore Container (blob.md §8.8): the soft-deleted container
// x-ms-deleted-container-name of x-ms-deleted-container-version comes back as the container
// the URL names. Containers are soft-deleted only on an account with container soft delete
// (--container-soft-delete); elsewhere there is nothing to restore (404 ContainerNotFound).
func (s *Server) restoreContainer(rq *request) error {
	h := rq.R.Header
	for _, name := range []string{"x-ms-deleted-container-name", "x-ms-deleted-container-version"} {
		if h.Get(name) == "" {
			return missingHeader(name)
		}
	}
	if rq.container == "" {
		return missingHeader("x-ms-deleted-container-name") // as the real service answers, above
	}
	c, err := s.svc.RestoreContainer(rq.ctx, rq.Account, rq.container, h.Get("x-ms-deleted-container-name"), h.Get("x-ms-deleted-container-version"))
	if err != nil {
		return err
	}
	setETag(rq.W.Header(), c.ETag, c.LastModified)
	return rq.done(http.StatusCreated)
}
