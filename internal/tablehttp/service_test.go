package tablehttp

import (
	"io"
	"regexp"
	"testing"
)

const corsProperties = `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors><CorsRule><AllowedOrigins>https://app.example</AllowedOrigins><AllowedMethods>GET,PUT</AllowedMethods><AllowedHeaders>x-ms-meta-*,content-type</AllowedHeaders><ExposedHeaders>x-ms-request-id</ExposedHeaders><MaxAgeInSeconds>300</MaxAgeInSeconds></CorsRule><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods><AllowedHeaders></AllowedHeaders><ExposedHeaders></ExposedHeaders><MaxAgeInSeconds>60</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>`

func TestCORSPreflightAndResponseHeaders(t *testing.T) {
	s := newRawServer(t)
	preflight := func(origin, method, headers string) (int, map[string]string) {
		h := map[string]string{"Authorization": "-", "Origin": origin, "Access-Control-Request-Method": method}
		if headers != "" {
			h["Access-Control-Request-Headers"] = headers
		}
		resp := s.do("OPTIONS", "/Tables", h, "")
		out := map[string]string{}
		for _, k := range []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Max-Age", "x-ms-error-code"} {
			out[k] = resp.Header.Get(k)
		}
		return resp.StatusCode, out
	}
	if status, h := preflight("https://app.example", "GET", ""); status != 403 || h["x-ms-error-code"] != "CorsPreflightFailure" {
		t.Fatalf("preflight with no CORS rules: %d %v", status, h)
	}
	if status, h := preflight("", "GET", ""); status != 400 || h["x-ms-error-code"] != "InvalidHeaderValue" {
		t.Fatalf("preflight without Origin: %d %v", status, h)
	}
	if resp := s.do("PUT", "/?restype=service&comp=properties", map[string]string{"Content-Type": "application/xml"}, corsProperties); resp.StatusCode != 202 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("set properties: %d %s", resp.StatusCode, b)
	}
	status, h := preflight("https://app.example", "PUT", "x-ms-meta-color,Content-Type")
	if status != 200 || h["Access-Control-Allow-Origin"] != "https://app.example" || h["Access-Control-Allow-Methods"] != "PUT" ||
		h["Access-Control-Max-Age"] != "300" || h["Access-Control-Allow-Headers"] != "x-ms-meta-color,Content-Type" {
		t.Fatalf("matching preflight: %d %v", status, h)
	}
	if status, _ := preflight("https://app.example", "PUT", "x-other"); status != 403 {
		t.Fatalf("preflight with a header no rule allows: %d", status)
	}
	if status, h := preflight("https://elsewhere.example", "GET", ""); status != 200 || h["Access-Control-Allow-Origin"] != "*" {
		t.Fatalf("wildcard rule: %d %v", status, h)
	}
	if status, _ := preflight("https://elsewhere.example", "DELETE", ""); status != 403 {
		t.Fatalf("method no rule allows: %d", status)
	}
	resp := s.do("GET", "/Tables", map[string]string{"Origin": "https://app.example"}, "")
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		resp.Header.Get("Access-Control-Expose-Headers") != "x-ms-request-id" || resp.Header.Get("Vary") != "Origin" {
		t.Fatalf("actual request: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestXMLOperationErrors(t *testing.T) {
	s := newRawServer(t)
	s.createTable("acltable")
	six := "<SignedIdentifiers>"
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		six += "<SignedIdentifier><Id>" + id + "</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier>"
	}
	six += "</SignedIdentifiers>"
	runRawCases(t, s, []rawCase{
		{"six stored policies", "PUT", "/acltable?comp=acl", map[string]string{"Content-Type": "application/xml"}, six, 400, "InvalidXmlDocument"},
		{"malformed ACL XML", "PUT", "/acltable?comp=acl", map[string]string{"Content-Type": "application/xml"}, "<SignedIdentifiers><oops>", 400, "InvalidXmlDocument"},
		{"bad permission letter", "PUT", "/acltable?comp=acl", map[string]string{"Content-Type": "application/xml"}, "<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Permission>rx</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>", 400, "InvalidXmlNodeValue"},
		{"ACL of a missing table", "GET", "/nosuchtable?comp=acl", nil, "", 404, "TableNotFound"},
		{"empty ACL body clears", "PUT", "/acltable?comp=acl", map[string]string{"Content-Type": "application/xml"}, "", 204, ""},
		{"malformed properties", "PUT", "/?restype=service&comp=properties", map[string]string{"Content-Type": "application/xml"}, "<StorageServiceProperties><Logging>", 400, "InvalidXmlDocument"},
		{"logging without retention", "PUT", "/?restype=service&comp=properties", map[string]string{"Content-Type": "application/xml"}, "<StorageServiceProperties><Logging><Version>1.0</Version><Read>true</Read><Write>true</Write><Delete>true</Delete></Logging></StorageServiceProperties>", 400, "MissingRequiredXmlNode"},
		{"unknown CORS method", "PUT", "/?restype=service&comp=properties", map[string]string{"Content-Type": "application/xml"}, "<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>FETCH</AllowedMethods><AllowedHeaders></AllowedHeaders><ExposedHeaders></ExposedHeaders><MaxAgeInSeconds>1</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>", 400, "InvalidXmlNodeValue"},
		{"DELETE on properties", "DELETE", "/?restype=service&comp=properties", nil, "", 405, "UnsupportedHttpVerb"},
		{"unknown comp", "GET", "/?restype=service&comp=frobnicate", nil, "", 400, "InvalidQueryParameterValue"},
		{"stats on the primary endpoint", "GET", "/?restype=service&comp=stats", nil, "", 400, "InvalidQueryParameterValue"},
	})
	resp := s.do("GET", "/acltable?comp=acl", nil, "")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != `<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers />` {
		t.Fatalf("empty ACL: %d %s", resp.StatusCode, body)
	}
}

// TestServiceStatsAnswerOnlyOnTheSecondary pins Azure's answer to Get Table Service Stats: the
// geo-replication status on the -secondary endpoint, and on the primary a 400
// InvalidQueryParameterValue in the XML error form with Azure's exact message (quoted in
// Azure/azure-cosmos-table-dotnet#26).
func TestServiceStatsAnswerOnlyOnTheSecondary(t *testing.T) {
	s := newRawServer(t)
	resp := s.doSecondary("GET", "/?restype=service&comp=stats", "")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/xml" ||
		!regexp.MustCompile(`^<\?xml version="1.0" encoding="utf-8"\?><StorageServiceStats><GeoReplication><Status>live</Status><LastSyncTime>[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT</LastSyncTime></GeoReplication></StorageServiceStats>$`).Match(body) {
		t.Fatalf("secondary: %d %s", resp.StatusCode, body)
	}
	resp = s.do("GET", "/?restype=service&comp=stats", nil, "")
	body, _ = io.ReadAll(resp.Body)
	want := regexp.MustCompile(`^<\?xml version="1.0" encoding="utf-8"\?><m:error xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><m:code>InvalidQueryParameterValue</m:code><m:message xml:lang="en-US">Value for one of the query parameters specified in the request URI is invalid.\nRequestId:[0-9a-f-]{36}\nTime:[0-9T:.-]+Z</m:message></m:error>$`)
	if resp.StatusCode != 400 || resp.Header.Get("x-ms-error-code") != "InvalidQueryParameterValue" || !want.Match(body) {
		t.Fatalf("primary: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

// TestTableACLLeavesOutEmptyPolicies pins what Azure answered the JS SDK's "should send a null
// AP" test (its recordings of 2021): identifiers set with an empty <AccessPolicy/> come back
// with no AccessPolicy element at all; the others as set, times with seven decimals.
func TestTableACLLeavesOutEmptyPolicies(t *testing.T) {
	s := newRawServer(t)
	s.createTable("AccessPolicy")
	set := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><SignedIdentifiers><SignedIdentifier><Id>null</Id><AccessPolicy/></SignedIdentifier><SignedIdentifier><Id>empty</Id><AccessPolicy/></SignedIdentifier><SignedIdentifier><Id>partial</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier><SignedIdentifier><Id>full</Id><AccessPolicy><Start>2021-07-08T09:10:09Z</Start><Expiry>2021-07-08T09:10:09Z</Expiry><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`
	if resp := s.do("PUT", "/AccessPolicy?comp=acl", map[string]string{"Content-Type": "application/xml"}, set); resp.StatusCode != 204 {
		t.Fatalf("Set Table ACL: %d", resp.StatusCode)
	}
	resp := s.do("GET", "/AccessPolicy?comp=acl", nil, "")
	body, _ := io.ReadAll(resp.Body)
	want := `<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier><Id>null</Id></SignedIdentifier><SignedIdentifier><Id>empty</Id></SignedIdentifier><SignedIdentifier><Id>partial</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier><SignedIdentifier><Id>full</Id><AccessPolicy><Start>2021-07-08T09:10:09.0000000Z</Start><Expiry>2021-07-08T09:10:09.0000000Z</Expiry><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`
	if resp.StatusCode != 200 || string(body) != want {
		t.Fatalf("Get Table ACL: %d\n%s\nwant\n%s", resp.StatusCode, body, want)
	}
}
