package blobhttp_test

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Query Blob Contents over HTTP: the QueryRequest body, the Avro answer with the blob's
// headers, and Get Blob's conditions and lease check (the JS SDK's live query tests).
func TestRawQueryBlobContents(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		r := newRaw(e)
		e.container("ctr")
		csv := "100,200,300,400\n150,250,350,450\n"
		put := r.do("PUT", "/ctr/data.csv", map[string]string{"x-ms-blob-type": "BlockBlob"}, strings.NewReader(csv))
		if put.StatusCode != 201 {
			t.Fatalf("put: %d", put.StatusCode)
		}
		query := func(expr string, header map[string]string, serialization string) (*http.Response, []byte) {
			t.Helper()
			body := `<?xml version="1.0" encoding="UTF-8"?><QueryRequest><QueryType>SQL</QueryType><Expression>` + expr + `</Expression>` + serialization + `</QueryRequest>`
			resp := r.do("POST", "/ctr/data.csv?comp=query", header, strings.NewReader(body))
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp, got
		}
		resp, body := query("select _2 from BlobStorage where _1 &gt; 100", nil, "")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "avro/binary" || resp.Header.Get("ETag") != put.Header.Get("ETag") ||
			resp.Header.Get("x-ms-blob-type") != "BlockBlob" || !bytes.HasPrefix(body, []byte("Obj\x01")) {
			t.Fatalf("query: %d %v %q", resp.StatusCode, resp.Header, body)
		}
		if !bytes.Contains(body, []byte("250\n")) || bytes.Contains(body, []byte("200\n")) {
			t.Errorf("the answer does not hold just 250: %q", body)
		}
		csvOut := `<OutputSerialization><Format><Type>delimited</Type><DelimitedTextConfiguration><ColumnSeparator>;</ColumnSeparator><FieldQuote></FieldQuote><RecordSeparator>|</RecordSeparator><EscapeChar></EscapeChar><HasHeaders>false</HasHeaders></DelimitedTextConfiguration></Format></OutputSerialization>`
		if _, body := query("select _1, _4 from BlobStorage", nil, csvOut); !bytes.Contains(body, []byte("100;400|150;450|")) {
			t.Errorf("with an output serialization: %q", body)
		}
		// An empty record separator is a newline: the JS SDK's XML writer sends "\n" so.
		jsonOut := `<OutputSerialization><Format><Type>json</Type><JsonTextConfiguration><RecordSeparator></RecordSeparator></JsonTextConfiguration></Format></OutputSerialization>`
		if _, body := query("select _1 from BlobStorage", nil, jsonOut); !bytes.Contains(body, []byte(`{"_1":"100"}`+"\n"+`{"_1":"150"}`+"\n")) {
			t.Errorf("with an empty record separator: %q", body)
		}
		// Arrow output: the JS SDK's live test reads the real service's bytes for this request
		// (select * gives four columns, which no row of a one-field schema takes).
		arrowOut := `<OutputSerialization><Format><Type>arrow</Type><ArrowConfiguration><Schema><Field><Type>decimal</Type><Name>name</Name><Precision>4</Precision><Scale>2</Scale></Field></Schema></ArrowConfiguration></Format></OutputSerialization>`
		azure, _ := hex.DecodeString("ffffffff800000001000000000000a000c000600050008000a000000000104000c000000080008000000040008000000040000000100000014000000100014000800060007000c0000001000100000000000010710000000200000000400000000000000040000006e616d650000000008000c000400080008000000040000000200000000000000ffffffff700000001000000000000a000e000600050008000a000000000304001000000000000a000c000000040008000a0000003000000004000000020000000000000000000000000000000000000000000000000000000000000000000000000000000100000000000000000000000000000000000000")
		if resp, body := query("select * from BlobStorage", nil, arrowOut); resp.StatusCode != 200 || !bytes.Contains(body, azure) {
			t.Errorf("arrow output: %d %x", resp.StatusCode, body)
		}
		// Parquet input is taken (blobquery's tests read real files); a blob that is not
		// Parquet is a fatal ParseError in the answer.
		parquetIn := `<InputSerialization><Format><Type>parquet</Type><ParquetTextConfiguration></ParquetTextConfiguration></Format></InputSerialization>`
		if resp, body := query("select * from BlobStorage", nil, parquetIn); resp.StatusCode != 200 || !bytes.Contains(body, []byte("ParseError")) {
			t.Errorf("parquet input: %d %q", resp.StatusCode, body)
		}
		future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
		if resp, _ := query("select * from BlobStorage", map[string]string{"If-Modified-Since": future}, ""); resp.StatusCode != 304 {
			t.Errorf("If-Modified-Since later: %d", resp.StatusCode)
		}
		for _, c := range []struct {
			name, expr string
			header     map[string]string
			ser        string
			status     int
			code       string
		}{
			{"malformed lease id", "select * from BlobStorage", map[string]string{"x-ms-lease-id": "invalid"}, "", 400, "InvalidHeaderValue"},
			{"no such table", "select * from Elsewhere", nil, "", 400, "InvalidXmlNodeValue"},
			{"arrow output without a schema", "select * from BlobStorage", nil, `<OutputSerialization><Format><Type>arrow</Type></Format></OutputSerialization>`, 400, "InvalidXmlNodeValue"},
			{"arrow output of an unknown type", "select * from BlobStorage", nil, `<OutputSerialization><Format><Type>arrow</Type><ArrowConfiguration><Schema><Field><Type>date32</Type></Field></Schema></ArrowConfiguration></Format></OutputSerialization>`, 400, "InvalidXmlNodeValue"},
			{"arrow input", "select * from BlobStorage", nil, `<InputSerialization><Format><Type>arrow</Type></Format></InputSerialization>`, 501, "NotImplemented"},
			{"parquet output", "select * from BlobStorage", nil, `<OutputSerialization><Format><Type>parquet</Type></Format></OutputSerialization>`, 501, "NotImplemented"},
		} {
			if resp, _ := query(c.expr, c.header, c.ser); resp.StatusCode != c.status || resp.Header.Get("x-ms-error-code") != c.code {
				t.Errorf("%s: %d %s, want %d %s", c.name, resp.StatusCode, resp.Header.Get("x-ms-error-code"), c.status, c.code)
			}
		}
	})
}
