package blobhttp

import (
	"net/http"

	"github.com/tabula-dev/tabula/internal/blob"
)

// findBlobsByTags answers Find Blobs by Tags, of the account or of one container (blob.md
// §9.9).
func (s *Server) findBlobsByTags(rq *request) error {
	n, err := maxResults(rq)
	if err != nil {
		return err
	}
	q := rq.Query
	page, err := s.svc.FindBlobsByTags(rq.ctx, rq.Account, blob.FindBlobsOptions{
		Where: q.Get("where"), Container: rq.container, Marker: q.Get("marker"), MaxResults: n,
	})
	if err != nil {
		return err
	}
	w := newXML()
	w.WriteString("<EnumerationResults")
	w.attr("ServiceEndpoint", rq.BaseURL+"/")
	w.WriteString(">")
	w.elem("Where", q.Get("where"))
	if len(page.Blobs) == 0 {
		w.WriteString("<Blobs />")
	} else {
		w.open("Blobs")
		for _, b := range page.Blobs {
			w.open("Blob")
			w.name(b.Name)
			w.elem("ContainerName", b.Container)
			w.tags(b.Tags)
			w.close("Blob")
		}
		w.close("Blobs")
	}
	w.elem("NextMarker", page.NextMarker)
	w.close("EnumerationResults")
	return rq.writeXML(http.StatusOK, w.Bytes())
}
