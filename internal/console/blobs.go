package console

import (
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/blob"
)

// The Blob service's part of the API (see api.go for the contract). Blob names may hold '/'
// and other characters a path segment cannot, so a blob is addressed by ?name=.

type blobsAPI struct{ svc *blob.Service }

// listTop reads a listing's top parameter: 1 to most (the service's largest page), pageSize
// when absent.
func listTop(r *http.Request, most int) (int, error) {
	s := r.URL.Query().Get("top")
	if s == "" {
		return pageSize, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > most {
		return 0, azerr.Newf(azerr.InvalidQueryParameterValue, "top=%q: a page holds 1 to %d items.", s, most)
	}
	return n, nil
}

type apiContainer struct {
	Name         string    `json:"name"`
	LastModified time.Time `json:"lastModified"`
	PublicAccess string    `json:"publicAccess,omitempty"`
	Lease        string    `json:"lease"`
}

func (a blobsAPI) listContainers(w http.ResponseWriter, r *http.Request, account string) {
	top, err := listTop(r, blob.MaxListResults)
	if err != nil {
		fail(w, err)
		return
	}
	q := r.URL.Query()
	page, err := a.svc.ListContainers(r.Context(), account, blob.ListContainersOptions{Prefix: q.Get("prefix"), Marker: q.Get("next"), MaxResults: top})
	if err != nil {
		fail(w, err)
		return
	}
	out := struct {
		Containers []apiContainer `json:"containers"`
		Next       string         `json:"next,omitempty"`
	}{Containers: make([]apiContainer, len(page.Containers)), Next: page.NextMarker}
	for i, c := range page.Containers {
		out.Containers[i] = apiContainer{Name: c.Name, LastModified: c.LastModified, PublicAccess: string(c.PublicAccess), Lease: string(c.Lease.State)}
	}
	writeJSON(w, http.StatusOK, out)
}

func (a blobsAPI) createContainer(w http.ResponseWriter, r *http.Request, account string) {
	var body struct {
		Name string `json:"name"`
	}
	if err := decodeBody(r, &body); err != nil {
		fail(w, err)
		return
	}
	c, err := a.svc.CreateContainer(r.Context(), account, body.Name, nil, blob.PrivateAccess)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"name": c.Name})
}

func (a blobsAPI) deleteContainer(w http.ResponseWriter, r *http.Request, account string) {
	if err := a.svc.DeleteContainer(r.Context(), account, r.PathValue("container"), "", blob.Conditions{}); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type apiBlob struct {
	Name         string    `json:"name"`
	Type         string    `json:"type"`
	Size         int64     `json:"size"`
	ContentType  string    `json:"contentType"`
	LastModified time.Time `json:"lastModified"`
	ETag         string    `json:"etag"`
	Lease        string    `json:"lease"`
	AccessTier   string    `json:"accessTier,omitempty"`
	// ArchiveStatus (rehydrate-pending-to-…) and CopyStatus (pending, failed, aborted; not
	// a copy's success) say why a blob's bytes cannot be read yet, or never came.
	ArchiveStatus string `json:"archiveStatus,omitempty"`
	CopyStatus    string `json:"copyStatus,omitempty"`
}

func blobOf(b *blob.Blob) apiBlob {
	out := apiBlob{Name: b.Name, Type: string(b.Type), Size: b.Size, ContentType: b.Properties.ContentType,
		LastModified: b.LastModified, ETag: string(b.ETag), Lease: string(b.Lease.State), AccessTier: b.AccessTier,
		ArchiveStatus: b.ArchiveStatus}
	if c := b.Copy; c != nil && c.Status != "success" {
		out.CopyStatus = c.Status
	}
	return out
}

// listBlobs is List Blobs: with a delimiter, names whose rest after the prefix holds it fold
// into one prefix ("folder").
func (a blobsAPI) listBlobs(w http.ResponseWriter, r *http.Request, account string) {
	top, err := listTop(r, blob.MaxListResults)
	if err != nil {
		fail(w, err)
		return
	}
	q := r.URL.Query()
	page, err := a.svc.ListBlobs(r.Context(), account, r.PathValue("container"), blob.ListBlobsOptions{
		Prefix: q.Get("prefix"), Delimiter: q.Get("delimiter"), Marker: q.Get("next"), MaxResults: top,
	})
	if err != nil {
		fail(w, err)
		return
	}
	out := struct {
		Prefixes []string  `json:"prefixes"`
		Blobs    []apiBlob `json:"blobs"`
		Next     string    `json:"next,omitempty"`
	}{Prefixes: []string{}, Blobs: []apiBlob{}, Next: page.NextMarker}
	for i := range page.Entries {
		if e := &page.Entries[i]; e.Prefix != "" {
			out.Prefixes = append(out.Prefixes, e.Prefix)
		} else {
			out.Blobs = append(out.Blobs, blobOf(&e.Blob))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// blobPath reads the blob a call addresses.
func blobPath(r *http.Request, account string) (blob.Path, error) {
	name := r.URL.Query().Get("name")
	if name == "" {
		return blob.Path{}, azerr.Newf(azerr.InvalidQueryParameterValue, "A blob is addressed by ?name=.")
	}
	return blob.Path{Account: account, Container: r.PathValue("container"), Name: name}, nil
}

// blobCall answers GET (Get Blob: the bytes, as a download), PUT (Put Blob: the body becomes
// a block blob, its Content-Type the blob's; an existing blob is 409 BlobAlreadyExists unless
// ?overwrite=true) and DELETE (Delete Blob; ?snapshots=include deletes its snapshots too).
func (a blobsAPI) blobCall(w http.ResponseWriter, r *http.Request, account string) {
	p, err := blobPath(r, account)
	if err != nil {
		fail(w, err)
		return
	}
	q := r.URL.Query()
	switch r.Method {
	case http.MethodGet:
		d, err := a.svc.GetBlob(r.Context(), p, blob.GetBlobOptions{})
		if err != nil {
			fail(w, err)
			return
		}
		defer d.Body.Close()
		h := w.Header()
		h.Set("Content-Type", d.Blob.Properties.ContentType)
		h.Set("Content-Length", strconv.FormatInt(d.Count, 10))
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p.Name)}))
		h.Set("ETag", string(d.Blob.ETag))
		w.WriteHeader(http.StatusOK)
		_, _ = io.Copy(w, d.Body)
	case http.MethodPut:
		if r.ContentLength < 0 {
			fail(w, azerr.New(azerr.MissingContentLengthHeader))
			return
		}
		o := blob.PutBlobOptions{Type: blob.BlockBlob, Properties: blob.ContentProperties{ContentType: r.Header.Get("Content-Type")}}
		if q.Get("overwrite") != "true" {
			o.Conditions.IfNoneMatch = []blob.ETag{blob.AnyETag}
		}
		b, _, err := a.svc.PutBlob(r.Context(), p, r.Body, r.ContentLength, o)
		if err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, blobOf(&b))
	case http.MethodDelete:
		snapshots := blob.DeleteBlobOnly
		if q.Get("snapshots") == "include" {
			snapshots = blob.IncludeSnapshots
		}
		if err := a.svc.DeleteBlob(r.Context(), p, snapshots, "", blob.Conditions{}); err != nil {
			fail(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}
