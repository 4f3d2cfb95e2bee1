package blob

import (
	"net/http"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// A container deleted and created again is a new, empty container to blob requests, even
// right after they found its blobs (the container cache forgets it on every change).
func TestBlobRequestsSeeAContainerDeletedAndCreatedAgain(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.putBlob("a", []byte("first"))
		if _, err := e.s.GetBlobProperties(e.ctx, path("a"), "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		if err := e.s.DeleteContainer(e.ctx, "acct", "ctr", "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		_, err := e.s.GetBlobProperties(e.ctx, path("a"), "", Conditions{})
		wantCode(t, err, http.StatusNotFound, azerr.ContainerNotFound)
		_, _, err = e.s.PutBlob(e.ctx, path("b"), nil, 0, PutBlobOptions{Type: BlockBlob})
		wantCode(t, err, http.StatusNotFound, azerr.ContainerNotFound)

		if _, err := e.s.CreateContainer(e.ctx, "acct", "ctr", nil, PrivateAccess); err != nil {
			t.Fatal(err)
		}
		_, err = e.s.GetBlobProperties(e.ctx, path("a"), "", Conditions{})
		wantCode(t, err, http.StatusNotFound, azerr.BlobNotFound)
		e.putBlob("a", []byte("second"))
		if b, err := e.s.GetBlobProperties(e.ctx, path("a"), "", Conditions{}); err != nil || b.Size != int64(len("second")) {
			t.Fatalf("after re-creation: %+v, %v", b, err)
		}
	})
}
