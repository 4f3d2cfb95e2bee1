package blobhttp_test

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/tabula-dev/tabula/internal/auth"
)

// raw sends hand-built requests, authorized by an account SAS for everything, for what the
// SDKs never send and for the exact shape of responses.
type raw struct {
	e   *env
	sas string
}

func newRaw(e *env) *raw {
	dev := auth.DevelopmentAccount()
	cred, err := azblob.NewSharedKeyCredential(dev.Name, base64.StdEncoding.EncodeToString(dev.Keys[0]))
	if err != nil {
		e.Fatal(err)
	}
	q, err := sas.AccountSignatureValues{
		Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
		Permissions: (&sas.AccountPermissions{Read: true, Write: true, Delete: true, DeletePreviousVersion: true, PermanentDelete: true,
			List: true, Add: true, Create: true, Tag: true, FilterByTags: true}).String(),
		ResourceTypes: (&sas.AccountResourceTypes{Service: true, Container: true, Object: true}).String(),
	}.SignWithSharedKey(cred)
	if err != nil {
		e.Fatal(err)
	}
	return &raw{e: e, sas: q.Encode()}
}

func (r *raw) do(method, path string, header map[string]string, body io.Reader) *http.Response {
	r.e.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	req, err := http.NewRequest(method, r.e.url+path+sep+r.sas, body)
	if err != nil {
		r.e.Fatal(err)
	}
	req.Header.Set("x-ms-version", "2025-01-05")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.e.Fatal(err)
	}
	r.e.Cleanup(func() { resp.Body.Close() })
	return resp
}

// errorDocument is the Blob service's XML error body.
type errorDocument struct {
	Code, Message, HeaderName, QueryParameterName string
}

func TestRawErrorResponses(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		r := newRaw(e)
		e.container("ctr")
		cases := []struct {
			name    string
			method  string
			path    string
			header  map[string]string
			body    io.Reader
			status  int
			code    string
			details string // HeaderName or QueryParameterName
		}{
			{"missing blob", "GET", "/ctr/nope", nil, nil, 404, "BlobNotFound", ""},
			{"missing container", "GET", "/none?restype=container", nil, nil, 404, "ContainerNotFound", ""},
			{"unknown comp", "GET", "/ctr/b?comp=frobnicate", nil, nil, 400, "InvalidQueryParameterValue", "comp"},
			{"verb a blob does not take", "POST", "/ctr/b", nil, nil, 405, "UnsupportedHttpVerb", ""},
			{"Put Blob without a type", "PUT", "/ctr/b", nil, strings.NewReader("x"), 400, "MissingRequiredHeader", "x-ms-blob-type"},
			{"Put Blob of an unknown type", "PUT", "/ctr/b", map[string]string{"x-ms-blob-type": "TapeBlob"}, strings.NewReader("x"), 400, "InvalidHeaderValue", "x-ms-blob-type"},
			{"chunked body", "PUT", "/ctr/b", map[string]string{"x-ms-blob-type": "BlockBlob"}, io.MultiReader(strings.NewReader("x")), 411, "MissingContentLengthHeader", ""},
			{"bad metadata name", "PUT", "/ctr/b", map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-meta-9lives": "x"}, strings.NewReader("x"), 400, "InvalidMetadata", ""},
			{"block id not base64", "PUT", "/ctr/b?comp=block&blockid=%25%25", nil, strings.NewReader("x"), 400, "InvalidQueryParameterValue", "blockid"},
			{"maxresults 0", "GET", "/ctr?restype=container&comp=list&maxresults=0", nil, nil, 400, "OutOfRangeQueryParameterValue", "maxresults"},
			{"unknown include", "GET", "/ctr?restype=container&comp=list&include=everything", nil, nil, 400, "InvalidQueryParameterValue", "include"},
			{"malformed block list", "PUT", "/ctr/b?comp=blocklist", nil, strings.NewReader("<BlockList><Latest>"), 400, "InvalidXmlDocument", ""},
			{"ETag condition on a container", "DELETE", "/ctr?restype=container", map[string]string{"If-Match": "*"}, nil, 400, "UnsupportedHeader", ""},
			{"lease without an action", "PUT", "/ctr/b?comp=lease", nil, nil, 400, "MissingRequiredHeader", "x-ms-lease-action"},
			{"bad version", "GET", "/ctr/nope", map[string]string{"x-ms-version": "yesterday"}, nil, 400, "InvalidHeaderValue", ""},
			{"deletetype other than permanent", "DELETE", "/ctr/b?deletetype=soft", nil, nil, 400, "InvalidQueryParameterValue", "deletetype"},
			{"permanent delete on an account that does not allow it", "DELETE", "/ctr/b?snapshot=2024-01-01T00:00:00.0000000Z&deletetype=permanent", nil, nil, 409, "PermanentDeleteNotAllowed", ""},
			{"where that is no expression", "GET", "/?comp=blobs&where=" + url.QueryEscape(`"k" = v`), nil, nil, 400, "InvalidQueryParameterValue", "where"},
			{"x-ms-if-tags that is no expression", "PUT", "/ctr/b", map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-if-tags": "k = = 'v'"}, strings.NewReader("x"), 400, "InvalidHeaderValue", "x-ms-if-tags"},
			{"restore without the deleted name", "PUT", "/ctr?restype=container&comp=undelete", nil, nil, 400, "MissingRequiredHeader", "x-ms-deleted-container-name"},
			{"restore without any container", "PUT", "/?restype=container&comp=undelete", nil, nil, 400, "MissingRequiredHeader", "x-ms-deleted-container-name"},
			{"premium tier on a standard account", "PUT", "/ctr/pb", map[string]string{"x-ms-blob-type": "PageBlob", "x-ms-blob-content-length": "512", "x-ms-access-tier": "P20"}, nil, 400, "AccessTierNotSupportedForBlobType", ""},
			{"no tier at all", "PUT", "/ctr/pb", map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-access-tier": "Lukewarm"}, strings.NewReader("x"), 400, "InvalidHeaderValue", "x-ms-access-tier"},
			{"snapshot and version together", "GET", "/ctr/b?snapshot=2024-01-01T00:00:00.0000000Z&versionid=2024-01-01T00:00:00.0000000Z", nil, nil, 400, "MutuallyExclusiveQueryParameters", ""},
			{"version with x-ms-delete-snapshots", "DELETE", "/ctr/b?versionid=2024-01-01T00:00:00.0000000Z", map[string]string{"x-ms-delete-snapshots": "include"}, nil, 400, "InvalidQueryParameterValue", "versionid"},
			{"delete retention without days", "PUT", "/?restype=service&comp=properties", nil, strings.NewReader("<StorageServiceProperties><DeleteRetentionPolicy><Enabled>true</Enabled></DeleteRetentionPolicy></StorageServiceProperties>"), 400, "InvalidXmlDocument", ""},
		}
		for _, c := range cases {
			resp := r.do(c.method, c.path, c.header, c.body)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status || resp.Header.Get("x-ms-error-code") != c.code {
				t.Errorf("%s: %d %s, want %d %s\n%s", c.name, resp.StatusCode, resp.Header.Get("x-ms-error-code"), c.status, c.code, body)
				continue
			}
			if !bytes.HasPrefix(body, []byte("\ufeff<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>")) {
				t.Errorf("%s: body %q", c.name, body)
				continue
			}
			var doc errorDocument
			if err := xml.Unmarshal(bytes.TrimPrefix(body, []byte("\ufeff")), &doc); err != nil {
				t.Errorf("%s: %v", c.name, err)
				continue
			}
			if doc.Code != c.code || !strings.Contains(doc.Message, "\nRequestId:"+resp.Header.Get("x-ms-request-id")+"\nTime:") {
				t.Errorf("%s: error document %+v", c.name, doc)
			}
			if c.details != "" && doc.HeaderName != c.details && doc.QueryParameterName != c.details {
				t.Errorf("%s: details %+v, want %s", c.name, doc, c.details)
			}
		}
	})
}

// HEAD and 304 answers carry no body: the code is in x-ms-error-code only.
func TestRawBodilessAnswers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		r := newRaw(e)
		e.container("ctr")
		resp := r.do("HEAD", "/ctr/nope", nil, nil)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 404 || resp.Header.Get("x-ms-error-code") != "BlobNotFound" || len(body) != 0 {
			t.Fatalf("HEAD of a missing blob: %d %v %q", resp.StatusCode, resp.Header, body)
		}
		put := r.do("PUT", "/ctr/b", map[string]string{"x-ms-blob-type": "BlockBlob"}, strings.NewReader("hello world"))
		if put.StatusCode != 201 || put.Header.Get("Content-MD5") != "XrY7u+Ae7tCTyyK7j1rNww==" || put.Header.Get("x-ms-content-crc64") != "vo7q9sPVKY0=" {
			t.Fatalf("Put Blob: %d %v", put.StatusCode, put.Header)
		}
		resp = r.do("GET", "/ctr/b", map[string]string{"If-None-Match": put.Header.Get("ETag")}, nil)
		body, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != 304 || len(body) != 0 || resp.Header.Get("ETag") != put.Header.Get("ETag") || resp.Header.Get("x-ms-error-code") != "ConditionNotMet" {
			t.Fatalf("304: %d %v %q", resp.StatusCode, resp.Header, body)
		}
		resp = r.do("GET", "/ctr/b", nil, nil)
		for _, name := range []string{"x-ms-request-id", "x-ms-version", "x-ms-creation-time", "x-ms-blob-type", "x-ms-lease-state"} {
			if resp.Header.Get(name) == "" {
				t.Errorf("response lacks %s: %v", name, resp.Header)
			}
		}
		if resp.Header.Get("x-ms-version") != "2025-01-05" || resp.Header.Get("Accept-Ranges") != "bytes" {
			t.Errorf("headers %v", resp.Header)
		}
	})
}

// The listing document as the real service writes it (blob.md §15.3).
func TestRawListBlobsDocument(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		r := newRaw(e)
		e.container("ctr")
		put := r.do("PUT", "/ctr/dir/a%2Bb", map[string]string{"x-ms-blob-type": "BlockBlob", "Content-Type": "text/plain"}, strings.NewReader("x"))
		if put.StatusCode != 201 {
			t.Fatalf("put: %d", put.StatusCode)
		}
		resp := r.do("GET", "/ctr?restype=container&comp=list&delimiter=/&prefix=", nil, nil)
		body, _ := io.ReadAll(resp.Body)
		want := "\ufeff<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ServiceEndpoint=\"" + e.url + "/\" ContainerName=\"ctr\">" +
			"<Prefix /><Delimiter>/</Delimiter><Blobs><BlobPrefix><Name>dir/</Name></BlobPrefix></Blobs><NextMarker /></EnumerationResults>"
		if resp.StatusCode != 200 || string(body) != want || resp.Header.Get("Content-Type") != "application/xml" {
			t.Fatalf("listing: %d\n%s\nwant\n%s", resp.StatusCode, body, want)
		}
		resp = r.do("GET", "/ctr?restype=container&comp=list&prefix=dir/", nil, nil)
		body, _ = io.ReadAll(resp.Body)
		etag := strings.Trim(put.Header.Get("ETag"), `"`)
		for _, part := range []string{"<Name>dir/a+b</Name>", "<Etag>" + etag + "</Etag>", "<Content-Type>text/plain</Content-Type>",
			"<BlobType>BlockBlob</BlobType>", "<LeaseStatus>unlocked</LeaseStatus>", "<Content-MD5>ndTkYSaMgDT1yFZOFVxnpg==</Content-MD5>"} {
			if !strings.Contains(string(body), part) {
				t.Errorf("listing lacks %s:\n%s", part, body)
			}
		}

		// A soft-deleted blob: <Deleted> after the name, no lease, the deletion at the end
		// of the properties (a real recording's order).
		if resp := r.do("PUT", "/?restype=service&comp=properties", nil, strings.NewReader(
			"<StorageServiceProperties><DeleteRetentionPolicy><Enabled>true</Enabled><Days>7</Days></DeleteRetentionPolicy></StorageServiceProperties>")); resp.StatusCode != 202 {
			t.Fatalf("set properties: %d", resp.StatusCode)
		}
		if resp := r.do("DELETE", "/ctr/dir/a%2Bb", nil, nil); resp.StatusCode != 202 {
			t.Fatalf("delete: %d", resp.StatusCode)
		}
		resp = r.do("GET", "/ctr?restype=container&comp=list&include=deleted", nil, nil)
		body, _ = io.ReadAll(resp.Body)
		doc := string(body)
		for _, part := range []string{"<Blob><Name>dir/a+b</Name><Deleted>true</Deleted><Properties>", "<ServerEncrypted>true</ServerEncrypted><DeletedTime>", "<RemainingRetentionDays>6</RemainingRetentionDays></Properties>"} {
			if !strings.Contains(doc, part) {
				t.Errorf("listing of a deleted blob lacks %s:\n%s", part, doc)
			}
		}
		if strings.Contains(doc, "<LeaseStatus>") {
			t.Errorf("a deleted blob has a lease status:\n%s", doc)
		}

		// A blob of uncommitted blocks alone: no times, ETag or content properties.
		if resp := r.do("PUT", "/ctr/staged?comp=block&blockid=AAAA", nil, strings.NewReader("12345")); resp.StatusCode != 201 {
			t.Fatalf("put block: %d", resp.StatusCode)
		}
		resp = r.do("GET", "/ctr?restype=container&comp=list&include=uncommittedblobs&prefix=staged", nil, nil)
		body, _ = io.ReadAll(resp.Body)
		want = "<Blob><Name>staged</Name><Properties><Content-Length>0</Content-Length><BlobType>BlockBlob</BlobType><AccessTier>Hot</AccessTier>" +
			"<AccessTierInferred>true</AccessTierInferred><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState>" +
			"<ServerEncrypted>true</ServerEncrypted></Properties><OrMetadata /></Blob>"
		if !strings.Contains(string(body), want) {
			t.Errorf("uncommitted blob listed as\n%s\nwant\n%s", body, want)
		}
	})
}
