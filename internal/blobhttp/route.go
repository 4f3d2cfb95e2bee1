package blobhttp

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/server"
)

// parsePath splits the resource path into container and blob (blob.md §1.1): the first
// segment is the container, everything after the next '/' the blob name, slashes included,
// percent-decoded with path rules ('+' stays '+'), never collapsed or resolved.
func parsePath(rq *request) error {
	p := strings.TrimPrefix(rq.Path, "/")
	if p == "" {
		return nil
	}
	container, name, _ := strings.Cut(p, "/")
	var err error
	if rq.container, err = url.PathUnescape(container); err != nil {
		return azerr.Newf(azerr.InvalidURI, "The requested URI does not represent any resource on the server: %q is not a valid path.", rq.Path)
	}
	if rq.blob, err = url.PathUnescape(name); err != nil {
		return azerr.Newf(azerr.InvalidURI, "The requested URI does not represent any resource on the server: %q is not a valid path.", rq.Path)
	}
	rq.blob = blobName(rq.blob)
	return nil
}

// blobName is the name a blob path's decoded segments give: Azure turns a backslash, escaped
// or not, into a slash (the JS SDK's special naming tests list such a blob by its name with
// slashes, and sign its SAS over that name), and drops the dots that end a segment: "x." is
// blob "x", "dir./x" is "dir/x", and a SAS for either is signed over the trimmed name
// (azure-storage-ruby#191, azure-sdk-for-java#36674; Storage Explorer's team was told it is
// by design). A segment of dots alone is left as it is.
func blobName(decoded string) string {
	name := strings.ReplaceAll(decoded, `\`, "/")
	if !strings.Contains(name, "./") && !strings.HasSuffix(name, ".") {
		return name
	}
	segments := strings.Split(name, "/")
	for i, seg := range segments {
		if trimmed := strings.TrimRight(seg, "."); trimmed != "" {
			segments[i] = trimmed
		}
	}
	return strings.Join(segments, "/")
}

// rootContainer is the container a path of one segment addresses, when it is not a
// container request.
const rootContainer = "$root"

// handler serves one operation.
type handler func(rq *request) error

// call is what a request asks for, as route finds it from the URL, the method and the
// headers before the request is authenticated: the operation and container it names, under
// which the request is logged and counted even when authentication refuses it, and serve,
// which serves it once it is authenticated (noting it for the fault rules, authorizing it,
// applying it).
type call struct {
	op        *auth.Operation
	container string
	serve     func(*request) error
}

// route finds what the request asks for (blob.md §1.2). Its error is answered only once the
// request is authenticated: authentication is judged first, as Azure judges it.
func (s *Server) route(rq *request) (call, error) {
	q, method := rq.Query, rq.R.Method
	restype, comp := q.Get("restype"), q.Get("comp")
	if restype == "account" && comp == "properties" && (method == http.MethodGet || method == http.MethodHead) {
		return s.run(rq, auth.OpGetAccountInformation, s.getAccountInformation), nil
	}
	if rq.Secondary && method != http.MethodGet && method != http.MethodHead {
		return call{}, server.SecondaryIsReadOnly(rq.Account)
	}
	switch {
	case rq.container == "":
		return s.routeService(rq, restype, comp, method)
	case rq.blob == "" && restype == "container":
		return s.routeContainer(rq, comp, method)
	case rq.blob == "":
		// One segment without restype=container names a blob of the root container
		// (blob.md §1.1): /name is /$root/name.
		rq.container, rq.blob = rootContainer, rq.container
	}
	return s.routeBlob(rq, comp, method)
}

func (s *Server) routeService(rq *request, restype, comp, method string) (call, error) {
	switch {
	case restype == "service" && comp == "properties":
		switch method {
		case http.MethodGet:
			return s.run(rq, auth.OpGetBlobServiceProperties, s.getServiceProperties), nil
		case http.MethodPut:
			return s.run(rq, auth.OpSetBlobServiceProperties, s.setServiceProperties), nil
		}
	case restype == "service" && comp == "stats":
		if method == http.MethodGet {
			return s.run(rq, auth.OpGetBlobServiceStats, s.getServiceStats), nil
		}
	case comp == "list" && restype == "":
		if method == http.MethodGet {
			return s.run(rq, auth.OpListContainers, s.listContainers), nil
		}
	case restype == "service" && comp == "userdelegationkey":
		if method == http.MethodPost {
			return call{op: auth.OpGetUserDelegationKey, serve: s.getUserDelegationKey}, nil
		}
	case comp == "blobs" && restype == "":
		if method == http.MethodGet {
			return s.run(rq, auth.OpFindBlobsByTags, s.findBlobsByTags), nil
		}
	case comp == "undelete" && restype == "container":
		// Restore Container without a container name: what it lacks is the header naming
		// the deleted container (azblob's recorded TestContainerRestoreFailures).
		if method == http.MethodPut {
			return s.run(rq, auth.OpRestoreContainer, s.restoreContainer), nil
		}
	case comp == "batch" && (restype == "" || restype == "container"):
		// restype=container without a container is the JS SDK's account batch in path
		// style: its client takes the account's path for a container's.
		if method == http.MethodPost {
			return s.run(rq, auth.OpSubmitBatch, func(rq *request) error { return s.submitBatch(rq, "") }), nil
		}
	default:
		return call{}, unknownOperation(rq, restype, comp)
	}
	return call{}, unsupportedVerb(method)
}

func (s *Server) routeContainer(rq *request, comp, method string) (call, error) {
	switch comp {
	case "":
		switch method {
		case http.MethodPut:
			return s.run(rq, auth.OpCreateContainer, s.createContainer), nil
		case http.MethodGet, http.MethodHead:
			return s.run(rq, auth.OpGetContainerProperties, s.getContainerProperties), nil
		case http.MethodDelete:
			return s.run(rq, auth.OpDeleteContainer, s.deleteContainer), nil
		}
	case "metadata":
		switch method {
		case http.MethodGet, http.MethodHead:
			return s.run(rq, auth.OpGetContainerMetadata, s.getContainerProperties), nil
		case http.MethodPut:
			return s.run(rq, auth.OpSetContainerMetadata, s.setContainerMetadata), nil
		}
	case "acl":
		switch method {
		case http.MethodGet, http.MethodHead:
			return s.run(rq, auth.OpGetContainerACL, s.getContainerACL), nil
		case http.MethodPut:
			return s.run(rq, auth.OpSetContainerACL, s.setContainerACL), nil
		}
	case "lease":
		if method == http.MethodPut {
			op := auth.OpLeaseContainer
			if strings.EqualFold(rq.R.Header.Get("x-ms-lease-action"), "break") {
				op = auth.OpBreakContainerLease
			}
			return s.run(rq, op, s.leaseContainer), nil
		}
	case "list":
		if method == http.MethodGet {
			return s.run(rq, auth.OpListBlobs, s.listBlobs), nil
		}
	case "blobs":
		if !rq.atLeast(versionFindInContainer) {
			return call{}, unknownOperation(rq, "container", comp)
		}
		if method == http.MethodGet {
			return s.run(rq, auth.OpFindBlobsInContainer, s.findBlobsByTags), nil
		}
	case "undelete":
		if method == http.MethodPut {
			return s.run(rq, auth.OpRestoreContainer, s.restoreContainer), nil
		}
	case "batch":
		if !rq.atLeast(versionContainerBatch) {
			return call{}, unknownOperation(rq, "container", comp)
		}
		if method == http.MethodPost {
			return s.run(rq, auth.OpSubmitBatch, func(rq *request) error { return s.submitBatch(rq, rq.container) }), nil
		}
	default:
		return call{}, unknownOperation(rq, "container", comp)
	}
	return call{}, unsupportedVerb(method)
}

func (s *Server) routeBlob(rq *request, comp, method string) (call, error) {
	h := rq.R.Header
	if rq.Query.Has("snapshot") && rq.Query.Has("versionid") {
		// One blob at a time: a snapshot or a version (the JS SDK's recorded versioning test).
		return call{}, azerr.Newf(azerr.MutuallyExclusiveQueryParameters, "The query parameters specified in the request URI are mutually exclusive: snapshot and versionid name two different blobs.")
	}
	copySource := h.Get("x-ms-copy-source") != ""
	switch comp {
	case "":
		switch method {
		case http.MethodPut:
			switch {
			case !copySource:
				return s.run(rq, auth.OpPutBlob, s.putBlob), nil
			case strings.EqualFold(h.Get("x-ms-blob-type"), "BlockBlob"):
				return s.run(rq, auth.OpPutBlob, s.putBlobFromURL), nil
			default:
				return s.run(rq, auth.OpCopyBlob, s.copyBlob), nil
			}
		case http.MethodGet:
			return s.run(rq, auth.OpGetBlob, s.getBlob), nil
		case http.MethodHead:
			return s.run(rq, auth.OpGetBlobProperties, s.getBlobProperties), nil
		case http.MethodDelete:
			switch {
			case rq.Query.Has("deletetype"):
				return s.run(rq, auth.OpPermanentDelete, s.deleteBlob), nil
			case rq.Query.Has("versionid"):
				return s.run(rq, auth.OpDeleteBlobVersion, s.deleteBlob), nil
			}
			return s.run(rq, auth.OpDeleteBlob, s.deleteBlob), nil
		}
	case "properties":
		if method == http.MethodPut {
			return s.run(rq, auth.OpSetBlobProperties, s.setBlobProperties), nil
		}
	case "metadata":
		switch method {
		case http.MethodGet, http.MethodHead:
			return s.run(rq, auth.OpGetBlobMetadata, s.getBlobMetadata), nil
		case http.MethodPut:
			return s.run(rq, auth.OpSetBlobMetadata, s.setBlobMetadata), nil
		}
	case "lease":
		if method == http.MethodPut {
			op := auth.OpLeaseBlob
			if strings.EqualFold(h.Get("x-ms-lease-action"), "break") {
				op = auth.OpBreakBlobLease
			}
			return s.run(rq, op, s.leaseBlob), nil
		}
	case "snapshot":
		if method == http.MethodPut {
			return s.run(rq, auth.OpSnapshotBlob, s.snapshotBlob), nil
		}
	case "copy":
		if method == http.MethodPut {
			return s.run(rq, auth.OpAbortCopyBlob, s.abortCopy), nil
		}
	case "incrementalcopy":
		if method == http.MethodPut {
			return s.run(rq, auth.OpIncrementalCopy, s.incrementalCopy), nil
		}
	case "tier":
		if method == http.MethodPut {
			return s.run(rq, auth.OpSetBlobTier, s.setBlobTier), nil
		}
	case "query":
		if method == http.MethodPost {
			return s.run(rq, auth.OpQueryBlob, s.queryBlob), nil
		}
	case "immutabilityPolicies":
		switch method {
		case http.MethodPut:
			return s.run(rq, auth.OpSetImmutabilityPolicy, s.setImmutabilityPolicy), nil
		case http.MethodDelete:
			return s.run(rq, auth.OpDeleteImmutabilityPolicy, s.deleteImmutabilityPolicy), nil
		}
	case "legalhold":
		if method == http.MethodPut {
			return s.run(rq, auth.OpSetLegalHold, s.setLegalHold), nil
		}
	case "tags":
		switch method {
		case http.MethodGet:
			return s.run(rq, auth.OpGetBlobTags, s.getBlobTags), nil
		case http.MethodPut:
			return s.run(rq, auth.OpSetBlobTags, s.setBlobTags), nil
		}
	case "block":
		if method == http.MethodPut {
			if copySource {
				return s.run(rq, auth.OpPutBlock, s.putBlockFromURL), nil
			}
			return s.run(rq, auth.OpPutBlock, s.putBlock), nil
		}
	case "blocklist":
		switch method {
		case http.MethodPut:
			return s.run(rq, auth.OpPutBlockList, s.putBlockList), nil
		case http.MethodGet:
			return s.run(rq, auth.OpGetBlockList, s.getBlockList), nil
		}
	case "page":
		if method == http.MethodPut {
			return s.run(rq, auth.OpPutPage, s.putPage), nil
		}
	case "pagelist":
		if method == http.MethodGet {
			return s.run(rq, auth.OpGetPageRanges, s.getPageRanges), nil
		}
	case "appendblock":
		if method == http.MethodPut {
			return s.run(rq, auth.OpAppendBlock, s.appendBlock), nil
		}
	case "expiry":
		// Set Blob Expiry is for accounts with a hierarchical namespace, which no account
		// here has (azblob's recorded TestBlockBlobSetExpiryOnHnsDisabledAccount; the
		// status is UNSURE, the code recorded).
		if method == http.MethodPut {
			return s.run(rq, auth.OpSetBlobProperties, func(*request) error { return azerr.New(azerr.HierarchicalNamespaceNotEnabled) }), nil
		}
	case "seal":
		if method == http.MethodPut {
			return s.run(rq, auth.OpSealBlob, s.sealBlob), nil
		}
	case "undelete":
		if method == http.MethodPut {
			return s.run(rq, auth.OpUndeleteBlob, s.undeleteBlob), nil
		}
	default:
		return call{}, unknownOperation(rq, "", comp)
	}
	return call{}, unsupportedVerb(method)
}

// run is the call of op on the request's container and blob, served by h once the grant
// allows it. An anonymous request is judged against the container's public access level,
// which only then is looked up.
func (s *Server) run(rq *request, op *auth.Operation, h handler) call {
	return call{op: op, container: rq.container, serve: func(rq *request) error {
		if err := rq.Note(op.Name, rq.container); err != nil {
			return err
		}
		if rq.blob != "" {
			// A blob is its own partition in Azure: fault rules name it as one, and the
			// log line names it beside its container.
			rq.NoteAttrs(slog.String("blob", rq.blob))
			if err := rq.NotePartition(rq.blob); err != nil {
				return err
			}
		}
		t := auth.Target{Name: rq.container, Blob: rq.blob}
		if rq.grant.Anonymous() && rq.container != "" {
			if c, err := s.svc.GetContainer(rq.ctx, rq.Account, rq.container, ""); err == nil {
				t.PublicAccess = string(c.PublicAccess)
			}
		}
		if err := rq.grant.Authorize(op, t); err != nil {
			return err
		}
		// Beyond a scalability target (--throttle): 503 ServerBusy, as Azure answers.
		if err := s.Throttle.TakeBlob(rq.Account, rq.container, rq.blob); err != nil {
			return err
		}
		defer rq.noteFetch()
		return h(rq)
	}}
}

// createOnly reports whether the request's credential may create the blob it names but not
// replace it (a SAS with c and not w): the write must then find no blob there.
func (rq *request) createOnly() bool {
	return rq.grant.Authorize(auth.OpOverwriteBlob, auth.Target{Name: rq.container, Blob: rq.blob}) != nil
}

// refuseOverwrite answers a create-only request for a blob that exists (Put Block, which
// the store does not judge): 403 UnauthorizedBlobOverwrite.
func (s *Server) refuseOverwrite(rq *request) error {
	if !rq.createOnly() {
		return nil
	}
	if _, err := s.svc.GetBlobProperties(rq.ctx, rq.path(), "", blob.Conditions{}); err == nil {
		return azerr.New(azerr.UnauthorizedBlobOverwrite)
	}
	return nil
}

func unknownOperation(rq *request, restype, comp string) error {
	e := azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid: restype=%q, comp=%q is not an operation on %s.", restype, comp, rq.Path)
	e.Details = []azerr.Detail{{Name: "QueryParameterName", Value: "comp"}, {Name: "QueryParameterValue", Value: comp}}
	return e
}

func unsupportedVerb(method string) error {
	return azerr.Newf(azerr.UnsupportedHTTPVerb, "The resource doesn't support the specified HTTP verb %s.", method)
}
