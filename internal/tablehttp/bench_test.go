package tablehttp

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/store/pebble"
)

// These benchmarks drive the whole HTTP path (signing, routing, decoding, a durable Pebble
// store in a temporary directory, encoding) from an in-process client. Client and server share
// the machine's cores, so absolute figures understate a dedicated server.

// benchClient sends pre-signed-per-request requests without the test helpers' bookkeeping.
type benchClient struct {
	s      *rawServer
	client *http.Client
}

func newBench(b *testing.B) *benchClient {
	s := newRawServerOn(b, b.TempDir(), pebble.Options{})
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	return &benchClient{s: s, client: &http.Client{Transport: tr}}
}

func (c *benchClient) send(b *testing.B, method, path, contentType, body string, want int) {
	req, _ := http.NewRequest(method, c.s.srv.URL+"/devstoreaccount1"+path, strings.NewReader(body))
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2019-02-02")
	req.Header.Set("Accept", "application/json;odata=nometadata")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Prefer", "return-no-content")
	req.Header.Set("Authorization", "SharedKeyLite devstoreaccount1:"+auth.SignSharedKeyLite(c.s.key, date, "/devstoreaccount1"+req.URL.EscapedPath()))
	resp, err := c.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Fatalf("%s %s: %d", method, path, resp.StatusCode)
	}
}

func entityJSON(pk, rk string) string {
	return fmt.Sprintf(`{"PartitionKey":"%s","RowKey":"%s","Name":"%s","Count":42,"Price":19.99,"Big@odata.type":"Edm.Int64","Big":"9007199254740993","Active":true,"When@odata.type":"Edm.DateTime","When":"2024-01-02T03:04:05.1234567Z","Id@odata.type":"Edm.Guid","Id":"c9da6455-213d-42c9-9a79-3e9149a57833","Blob@odata.type":"Edm.Binary","Blob":"%s","Note":"%s"}`,
		pk, rk, strings.Repeat("n", 64), strings.Repeat("AAAA", 64), strings.Repeat("x", 500))
}

func BenchmarkBatchInsert100(b *testing.B) {
	c := newBench(b)
	c.send(b, "POST", "/Tables", "application/json", `{"TableName":"batches"}`, 204)
	var n atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			batch := n.Add(1)
			var ops []batchOp
			for i := range 100 {
				ops = append(ops, batchOp{"POST", "/devstoreaccount1/batches", []string{"Content-Type: application/json", "Prefer: return-no-content"},
					entityJSON(fmt.Sprintf("p%d", batch), fmt.Sprintf("r%03d", i))})
			}
			ct, body := buildBatch(ops, "\r\n")
			c.send(b, "POST", "/$batch", ct, body, 202)
		}
	})
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "entities/s")
}

func BenchmarkInsert(b *testing.B) {
	c := newBench(b)
	c.send(b, "POST", "/Tables", "application/json", `{"TableName":"inserts"}`, 204)
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			c.send(b, "POST", "/inserts", "application/json", entityJSON(fmt.Sprintf("p%d", i%10), fmt.Sprintf("r%09d", i)), 204)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entities/s")
}

func BenchmarkPointGet(b *testing.B) {
	c := newBench(b)
	c.send(b, "POST", "/Tables", "application/json", `{"TableName":"gets"}`, 204)
	for i := range 1000 {
		c.send(b, "POST", "/gets", "application/json", entityJSON("p", fmt.Sprintf("r%04d", i)), 204)
	}
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1) % 1000
			c.send(b, "GET", fmt.Sprintf("/gets(PartitionKey='p',RowKey='r%04d')", i), "", "", 200)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
}
