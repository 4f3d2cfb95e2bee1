package batchwire

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// FuzzDecode checks that Decode never panics and keeps its contract on any input: either a
// request with exactly one of a change set (1 to maxOperations parts) or a query, or an error
// that is an *azerr.Error (400 InvalidInput or 413 RequestBodyTooLarge) possibly wrapped in a
// *ChangesetError. Every transcript case seeds the corpus.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/decode/*.txt")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		err = parseTranscript(string(data), func(string) {}, func(c transcriptCase) {
			if in, err := c.decodeInput(); err == nil {
				f.Add(in.contentType, in.body, uint8(in.maxOperations))
			}
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	ct, body := changesetBody("\r\n", entities(3, 50))
	f.Add(ct, body, uint8(2))

	f.Fuzz(func(t *testing.T, contentType string, body []byte, maxOps uint8) {
		limit := int(maxOps)
		req, err := Decode(contentType, body, limit)
		if limit == 0 {
			limit = MaxOperations
		}
		if err != nil {
			if req != nil {
				t.Fatalf("both a request and an error: %v", err)
			}
			var ce *ChangesetError
			if errors.As(err, &ce) && ce.Index != 0 {
				t.Fatalf("change set error at index %d", ce.Index)
			}
			var e *azerr.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not an *azerr.Error: %v", err, err)
			}
			if e.Code != azerr.InvalidInput && e.Code != azerr.RequestBodyTooLarge {
				t.Fatalf("unexpected code: %v", e)
			}
			return
		}
		if (req.Query == nil) == (req.Changeset == nil) {
			t.Fatalf("want exactly one of query and change set: %+v", req)
		}
		if len(req.Changeset) > limit {
			t.Fatalf("%d operations returned with a limit of %d", len(req.Changeset), limit)
		}
		if req.Changeset != nil && req.ChangesetBoundary == "" {
			t.Fatal("change set without boundary")
		}
		parts := req.Changeset
		if req.Query != nil {
			parts = []Part{*req.Query}
			if req.Query.Method != http.MethodGet {
				t.Fatalf("query with method %q", req.Query.Method)
			}
		}
		for _, p := range parts {
			if p.Method == "" || p.RawTarget == "" || p.URL == nil || p.Header == nil {
				t.Fatalf("incomplete part: %+v", p)
			}
			if req.Query == nil && p.Method == http.MethodGet {
				t.Fatal("GET inside a change set")
			}
		}
	})
}
