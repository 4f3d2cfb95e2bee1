package blobhttp

import (
	"encoding/base64"
	"net/http"
	"strconv"

	"github.com/tabula-dev/tabula/internal/blob"
)

// listBlobs answers List Blobs (blob.md §15).
func (s *Server) listBlobs(rq *request) error {
	n, err := maxResults(rq)
	if err != nil {
		return err
	}
	inc, err := include(rq, "snapshots", "metadata", "uncommittedblobs", "copy", "deleted", "tags", "versions",
		"deletedwithversions", "immutabilitypolicy", "legalhold", "permissions")
	if err != nil {
		return err
	}
	q := rq.Query
	page, err := s.svc.ListBlobs(rq.ctx, rq.Account, rq.container, blob.ListBlobsOptions{
		Prefix: q.Get("prefix"), Delimiter: q.Get("delimiter"), Marker: q.Get("marker"), StartFrom: q.Get("startFrom"), EndBefore: q.Get("endBefore"), MaxResults: n,
		Include: blob.ListBlobsInclude{Snapshots: inc["snapshots"], UncommittedBlobs: inc["uncommittedblobs"], Deleted: inc["deleted"],
			Versions: inc["versions"], DeletedWithVersions: inc["deletedwithversions"]},
	})
	if err != nil {
		return err
	}
	w := newXML()
	w.WriteString("<EnumerationResults")
	w.attr("ServiceEndpoint", rq.BaseURL+"/")
	w.attr("ContainerName", rq.container)
	w.WriteString(">")
	for _, p := range []string{"prefix", "marker", "maxresults", "delimiter"} {
		if q.Has(p) {
			w.elem(map[string]string{"prefix": "Prefix", "marker": "Marker", "maxresults": "MaxResults", "delimiter": "Delimiter"}[p], q.Get(p))
		}
	}
	if len(page.Entries) == 0 {
		w.WriteString("<Blobs />")
	} else {
		w.open("Blobs")
		for _, e := range page.Entries {
			if e.Prefix != "" {
				w.open("BlobPrefix")
				w.name(e.Prefix)
				w.close("BlobPrefix")
				continue
			}
			writeListedBlob(w, &e.Blob, inc)
		}
		w.close("Blobs")
	}
	w.elem("NextMarker", page.NextMarker)
	w.close("EnumerationResults")
	return rq.writeXML(http.StatusOK, w.Bytes())
}

// writeUncommittedProperties writes the few properties a blob of uncommitted blocks alone has:
// no times, ETag or content properties (the REST reference's List Blobs; the JS SDK's live
// test sees no Content-MD5).
func writeUncommittedProperties(w *xmlWriter, b *blob.Blob) {
	w.elem("Content-Length", strconv.FormatInt(b.Size, 10))
	w.elem("BlobType", string(b.Type))
	w.elem("AccessTier", b.AccessTier)
	w.elem("AccessTierInferred", "true")
	w.elem("LeaseStatus", b.Lease.Status)
	w.elem("LeaseState", string(b.Lease.State))
	w.elem("ServerEncrypted", "true")
}

// writeListedBlob writes one <Blob> of a listing, its properties in the real order.
func writeListedBlob(w *xmlWriter, b *blob.Blob, inc map[string]bool) {
	w.open("Blob")
	w.name(b.Name)
	if b.Deleted {
		w.elem("Deleted", "true")
	}
	w.optional("Snapshot", b.Snapshot)
	w.optional("VersionId", b.VersionID)
	if b.IsCurrentVersion {
		w.elem("IsCurrentVersion", "true")
	}
	w.open("Properties")
	if b.Uncommitted {
		writeUncommittedProperties(w, b)
		w.close("Properties")
		w.WriteString("<OrMetadata />")
		w.close("Blob")
		return
	}
	w.elem("Creation-Time", b.Created.Format(http.TimeFormat))
	w.elem("Last-Modified", b.LastModified.Format(http.TimeFormat))
	w.elem("Etag", b.ETag.Unquoted())
	w.elem("Content-Length", strconv.FormatInt(b.Size, 10))
	p := b.Properties
	w.elem("Content-Type", p.ContentType)
	w.elem("Content-Encoding", p.ContentEncoding)
	w.elem("Content-Language", p.ContentLanguage)
	w.elem("Content-CRC64", "")
	md5 := ""
	if p.ContentMD5 != nil {
		md5 = base64.StdEncoding.EncodeToString(p.ContentMD5)
	}
	w.elem("Content-MD5", md5)
	w.elem("Cache-Control", p.CacheControl)
	w.elem("Content-Disposition", p.ContentDisposition)
	if b.Type == blob.PageBlob {
		w.elem("x-ms-blob-sequence-number", strconv.FormatInt(b.SequenceNumber, 10))
	}
	w.elem("BlobType", string(b.Type))
	if b.AccessTier != "" {
		w.elem("AccessTier", b.AccessTier)
		if b.AccessTierInferred {
			w.elem("AccessTierInferred", "true")
		}
		if b.ArchiveStatus != "" {
			w.elem("ArchiveStatus", b.ArchiveStatus)
			w.elem("RehydratePriority", b.RehydratePriority)
		}
		if !b.AccessTierChanged.IsZero() {
			w.elem("AccessTierChangeTime", b.AccessTierChanged.Format(http.TimeFormat))
		}
	}
	if b.EncryptionKeySHA256 != "" {
		w.elem("CustomerProvidedKeySha256", b.EncryptionKeySHA256)
	}
	w.optional("EncryptionScope", b.EncryptionScope)
	if b.Lease.State != "" {
		w.elem("LeaseStatus", b.Lease.Status)
		w.elem("LeaseState", string(b.Lease.State))
		w.optional("LeaseDuration", b.Lease.Duration)
	}
	if c := b.Copy; c != nil && inc["copy"] {
		w.elem("CopyId", c.ID)
		w.elem("CopyStatus", c.Status)
		w.elem("CopySource", c.Source)
		w.elem("CopyProgress", c.Progress)
		if !c.CompletionTime.IsZero() {
			w.elem("CopyCompletionTime", c.CompletionTime.Format(http.TimeFormat))
		}
		w.optional("CopyStatusDescription", c.Description)
	}

	w.elem("ServerEncrypted", "true")
	if b.IncrementalCopy {
		w.elem("IncrementalCopy", "true")
		w.elem("DestinationSnapshot", b.CopyDestinationSnapshot)
	}
	if b.Deleted {
		w.elem("DeletedTime", b.DeletedTime.Format(http.TimeFormat))
		w.elem("RemainingRetentionDays", strconv.Itoa(b.RemainingRetentionDays))
	}
	if len(b.Tags) > 0 {
		w.elem("TagCount", strconv.Itoa(len(b.Tags)))
	}
	if b.Type == blob.AppendBlob {
		w.elem("Sealed", strconv.FormatBool(b.Sealed))
	}
	writeProtection(w, b, inc)
	w.close("Properties")
	if inc["metadata"] {
		w.metadata(b.Metadata)
	}
	if inc["tags"] && len(b.Tags) > 0 {
		w.tags(b.Tags)
	}
	w.WriteString("<OrMetadata />")
	if b.HasVersionsOnly {
		w.elem("HasVersionsOnly", "true")
	}
	w.close("Blob")
}
