package batchwire

import (
	"fmt"
	"net/http"
	"testing"
)

// BenchmarkDecode100 decodes the largest change set an SDK sends: 100 inserts of ~1 KiB
// entities.
func BenchmarkDecode100(b *testing.B) {
	ct, body := changesetBody("\r\n", entities(100, 1024))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, err := Decode(ct, body, 0)
		if err != nil || len(req.Changeset) != 100 {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode100 encodes the success response to that change set.
func BenchmarkEncode100(b *testing.B) {
	responses := make([]Response, 100)
	for i := range responses {
		loc := fmt.Sprintf("https://acct.table.core.windows.net/t(PartitionKey='p',RowKey='%04d')", i)
		responses[i] = Response{Status: http.StatusNoContent, Header: http.Header{
			"X-Content-Type-Options": {"nosniff"},
			"Cache-Control":          {"no-cache"},
			"Preference-Applied":     {"return-no-content"},
			"Dataserviceversion":     {"3.0;"},
			"Location":               {loc},
			"Dataserviceid":          {loc},
			"Etag":                   {`W/"datetime'2021-09-08T18%3A58%3A49.7704959Z'"`},
		}}
	}
	b.ReportAllocs()
	for b.Loop() {
		_, body := EncodeChangesetResponse(responses)
		b.SetBytes(int64(len(body)))
	}
}
