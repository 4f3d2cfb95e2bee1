package batchwire

import (
	"errors"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// TestDecodeParts reads flat batches in the forms the SDKs write them (blob.md §16).
func TestDecodeParts(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		targets                 []string // each part's method and target
		contentIDs              []string
		code                    azerr.Code // when it must fail
	}{
		{
			name:        "JS and .NET: one blank line after the headers",
			contentType: "multipart/mixed; boundary=batch_1",
			body: "--batch_1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\nContent-ID: 0\r\n\r\n" +
				"DELETE /devstoreaccount1/c/a%20b HTTP/1.1\r\nx-ms-date: d\r\nAuthorization: SharedKey a:s\r\n\r\n" +
				"--batch_1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\nContent-ID: 1\r\n\r\n" +
				"PUT /devstoreaccount1/c/b?comp=tier HTTP/1.1\r\nx-ms-access-tier: Cool\r\n\r\n" +
				"--batch_1--\r\n",
			targets:    []string{"DELETE /devstoreaccount1/c/a%20b", "PUT /devstoreaccount1/c/b?comp=tier"},
			contentIDs: []string{"0", "1"},
		},
		{
			name:        "Go: sorted part headers, an empty body line, quoted boundary",
			contentType: `multipart/mixed; boundary="batch_2"`,
			body: "--batch_2\r\nContent-Id: 0\r\nContent-Transfer-Encoding: binary\r\nContent-Type: application/http\r\n\r\n" +
				"DELETE /devstoreaccount1/c/dir%2Fx HTTP/1.1\r\nX-Ms-Date: d\r\n\r\n\r\n" +
				"--batch_2--\r\n",
			targets:    []string{"DELETE /devstoreaccount1/c/dir%2Fx"},
			contentIDs: []string{"0"},
		},
		{
			name:        "Python: relative target with an empty query, bare LF",
			contentType: "multipart/mixed; boundary================57797==",
			body: "--===============57797==\nContent-Type: application/http\nContent-ID: 0\n\n" +
				"DELETE /c/blob1? HTTP/1.1\nContent-Length: 0\n\n" +
				"--===============57797==--\n",
			targets:    []string{"DELETE /c/blob1?"},
			contentIDs: []string{"0"},
		},
		{
			name:        ".NET in path style: no leading slash",
			contentType: "multipart/mixed; boundary=b",
			body:        "--b\r\nContent-Type: application/http\r\n\r\nDELETE devstoreaccount1/c/x HTTP/1.1\r\n\r\n--b--",
			targets:     []string{"DELETE devstoreaccount1/c/x"},
			contentIDs:  []string{""},
		},
		{name: "empty batch", contentType: "multipart/mixed; boundary=b", body: "--b--\r\n"},
		{name: "empty body", contentType: "multipart/mixed; boundary=b", body: ""},
		{name: "no boundary", contentType: "multipart/mixed", body: "--b--", code: azerr.InvalidInput},
		{name: "not multipart", contentType: "application/xml", body: "<x/>", code: azerr.InvalidInput},
		{name: "cut off", contentType: "multipart/mixed; boundary=b", body: "--b\r\nContent-Type: application/http\r\n\r\nDELETE /c/x HTTP/1.1\r\n\r\n", code: azerr.InvalidInput},
		{name: "nested change set", contentType: "multipart/mixed; boundary=b", body: "--b\r\nContent-Type: multipart/mixed; boundary=cs\r\n\r\n--cs--\r\n--b--", code: azerr.InvalidInput},
		{name: "no request line", contentType: "multipart/mixed; boundary=b", body: "--b\r\nContent-Type: application/http\r\n\r\n\r\n--b--", code: azerr.InvalidInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts, err := DecodeParts(tc.contentType, []byte(tc.body))
			if tc.code != "" {
				var e *azerr.Error
				if !errors.As(err, &e) || e.Code != tc.code || parts != nil {
					t.Fatalf("got %v, %v; want %s", parts, err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != len(tc.targets) {
				t.Fatalf("%d parts, want %d", len(parts), len(tc.targets))
			}
			for i, p := range parts {
				if got := p.Method + " " + p.RawTarget; got != tc.targets[i] {
					t.Errorf("part %d: %q, want %q", i, got, tc.targets[i])
				}
				if p.ContentID != tc.contentIDs[i] {
					t.Errorf("part %d: Content-ID %q, want %q", i, p.ContentID, tc.contentIDs[i])
				}
			}
		})
	}
	if _, err := DecodeParts("multipart/mixed; boundary=b", make([]byte, MaxBodySize+1)); azerr.As(err).Code != azerr.RequestBodyTooLarge {
		t.Errorf("a body over the limit: %v", err)
	}
}

// TestEncodePartsResponse checks the layout byte for byte against the real service's
// (recorded): parts with Content-Type and Content-ID only, the status line with the given
// reason, headers in the given order and Azure's spelling, a blank line, the body and its CRLF, and nothing after
// the close delimiter.
func TestEncodePartsResponse(t *testing.T) {
	ct, body := encodePartsResponse([]PartResponse{
		{ContentID: "0", Status: 202, Reason: "Accepted", Header: []HeaderLine{{"X-Ms-Delete-Type-Permanent", "true"}, {"Etag", `"0x1"`}, {"x-ms-request-id", "r0"}, {"x-ms-version", "2025-01-05"}, {"Server", "Tabula"}}},
		{ContentID: "1", Status: 404, Reason: "The specified blob does not exist.\r\nInjected: x", Header: []HeaderLine{{"x-ms-error-code", "BlobNotFound"}, {"Content-Length", "5"}}, Body: []byte("<x/>!")},
		{Status: 400, Reason: "One of the request inputs is not valid."},
	}, "batchresponse_x")
	if ct != "multipart/mixed; boundary=batchresponse_x" {
		t.Errorf("Content-Type %q", ct)
	}
	want := "--batchresponse_x\r\nContent-Type: application/http\r\nContent-ID: 0\r\n\r\n" +
		"HTTP/1.1 202 Accepted\r\nx-ms-delete-type-permanent: true\r\nETag: \"0x1\"\r\nx-ms-request-id: r0\r\nx-ms-version: 2025-01-05\r\nServer: Tabula\r\n\r\n" +
		"--batchresponse_x\r\nContent-Type: application/http\r\nContent-ID: 1\r\n\r\n" +
		"HTTP/1.1 404 The specified blob does not exist.  Injected: x\r\nx-ms-error-code: BlobNotFound\r\nContent-Length: 5\r\n\r\n<x/>!\r\n" +
		"--batchresponse_x\r\nContent-Type: application/http\r\n\r\n" +
		"HTTP/1.1 400 One of the request inputs is not valid.\r\n\r\n" +
		"--batchresponse_x--"
	if string(body) != want {
		t.Errorf("body:\n%q\nwant:\n%q", body, want)
	}
}

// FuzzDecodeParts checks that DecodeParts never panics and returns parts or an *azerr.Error
// (400 InvalidInput or 413 RequestBodyTooLarge), never both.
func FuzzDecodeParts(f *testing.F) {
	f.Add("multipart/mixed; boundary=b", []byte("--b\r\nContent-Type: application/http\r\nContent-ID: 0\r\n\r\nDELETE /c/x HTTP/1.1\r\n\r\n--b--"))
	f.Add("multipart/mixed; boundary=b", []byte("--b\nContent-Type: application/http\n\nPUT c/x?comp=tier HTTP/1.1\nx-ms-access-tier: Hot\n\n\n--b--\n"))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		parts, err := DecodeParts(contentType, body)
		if err != nil {
			if parts != nil {
				t.Fatalf("both parts and an error: %v", err)
			}
			var e *azerr.Error
			if !errors.As(err, &e) || (e.Code != azerr.InvalidInput && e.Code != azerr.RequestBodyTooLarge) {
				t.Fatalf("unexpected error %T: %v", err, err)
			}
			return
		}
		for _, p := range parts {
			if p.Method == "" || p.URL == nil || strings.ContainsAny(p.Method, " \r\n") {
				t.Fatalf("malformed part: %+v", p)
			}
		}
	})
}
