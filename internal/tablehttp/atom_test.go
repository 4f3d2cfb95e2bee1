package tablehttp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// atomEntity writes an Atom entry body as the legacy libraries did, from (name, type, text)
// triples; an empty type leaves the property untyped (Edm.String).
func atomEntity(props ...[3]string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8" standalone="yes"?><entry xmlns="http://www.w3.org/2005/Atom" xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata" xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices"><title/><author><name/></author><id/><content type="application/xml"><m:properties>`)
	for _, p := range props {
		b.WriteString("<d:" + p[0])
		if p[1] != "" {
			b.WriteString(` m:type="` + p[1] + `"`)
		}
		b.WriteString(">" + p[2] + "</d:" + p[0] + ">")
	}
	b.WriteString(`</m:properties></content></entry>`)
	return b.String()
}

// jsonEntity writes the same properties as a JSON body with odata.type annotations.
func jsonEntity(props ...[3]string) string {
	m := map[string]any{}
	for _, p := range props {
		m[p[0]] = p[2]
		if p[1] != "" {
			m[p[0]+"@odata.type"] = p[1]
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// TestAtomLimitsAreTheJSONOnes sends the same over-limit and ill-typed entities as Atom and as
// JSON: the service's limits and typing rules do not depend on the format (data-model.md), so
// both must draw the same status and error code, and the Atom one an XML error body.
func TestAtomLimitsAreTheJSONOnes(t *testing.T) {
	s := newRawServer(t)
	s.createTable("limits")
	keys := func(rk string, more ...[3]string) [][3]string {
		return append([][3]string{{"PartitionKey", "", "p"}, {"RowKey", "", rk}}, more...)
	}
	many := keys("many")
	for i := range 253 {
		many = append(many, [3]string{fmt.Sprintf("P%d", i), "Edm.Int32", "1"})
	}
	cases := []struct {
		name  string
		props [][3]string
		code  string
	}{
		{"string over 32K characters", keys("long", [3]string{"S", "", strings.Repeat("x", 32*1024+1)}), "PropertyValueTooLarge"},
		{"binary over 64KiB", keys("bin", [3]string{"B", "Edm.Binary", strings.Repeat("AAAA", 64*1024/3+1)}), "PropertyValueTooLarge"},
		{"too many properties", many, "TooManyProperties"},
		{"name too long", keys("name", [3]string{strings.Repeat("n", 256), "", "v"}), "PropertyNameTooLong"},
		{"key too long", keys(strings.Repeat("k", 1025)), "PropertyValueTooLarge"},
		{"Int32 out of range", keys("i32", [3]string{"N", "Edm.Int32", "2147483648"}), "InvalidInput"},
		{"DateTime before 1601", keys("dt", [3]string{"D", "Edm.DateTime", "1600-12-31T23:59:59Z"}), "OutOfRangeInput"},
		{"unknown type", keys("ty", [3]string{"X", "Edm.Decimal", "1"}), "InvalidInput"},
		{"missing RowKey", [][3]string{{"PartitionKey", "", "p"}}, "PropertiesNeedValue"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jsonResp := s.do("POST", "/limits", nil, jsonEntity(c.props...))
			jsonCode := errorCode(t, jsonResp)
			atomResp := s.do("POST", "/limits", map[string]string{
				"x-ms-version": "2013-08-15", "Content-Type": "application/atom+xml",
				"Accept": "application/atom+xml,application/xml", "MaxDataServiceVersion": "3.0;NetFx",
			}, atomEntity(c.props...))
			body, _ := io.ReadAll(atomResp.Body)
			atomCode := atomResp.Header.Get("x-ms-error-code")
			if jsonResp.StatusCode != atomResp.StatusCode || jsonCode != atomCode || atomCode != c.code {
				t.Fatalf("JSON %d %s, Atom %d %s; want %s", jsonResp.StatusCode, jsonCode, atomResp.StatusCode, atomCode, c.code)
			}
			if atomResp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "<m:code>"+c.code+"</m:code>") {
				t.Fatalf("Atom answer %d %s", atomResp.StatusCode, body)
			}
		})
	}
}
