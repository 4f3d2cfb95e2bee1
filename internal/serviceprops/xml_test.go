package serviceprops

import (
	"errors"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
)

// realBlobProperties is the real service's Get Blob Service Properties for an account that only
// set a delete retention policy (blob.md §7.1, recording with 2020-10-02), without declaration.
const realBlobProperties = `<StorageServiceProperties><Logging><Version>1.0</Version><Read>false</Read><Write>false</Write><Delete>false</Delete><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></Logging><HourMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></HourMetrics><MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></MinuteMetrics><Cors /><DeleteRetentionPolicy><Enabled>true</Enabled><Days>5</Days><AllowPermanentDelete>false</AllowPermanentDelete></DeleteRetentionPolicy><StaticWebsite><Enabled>false</Enabled></StaticWebsite><DefaultServiceVersion>2018-03-28</DefaultServiceVersion></StorageServiceProperties>`

func TestBlobPropertiesRoundTripAsTheRealServiceWritesThem(t *testing.T) {
	update, err := ParseUpdate([]byte(realBlobProperties), auth.Blob)
	if err != nil {
		t.Fatal(err)
	}
	p := Default()
	update(&p)
	if got := string(AppendXML(nil, p, auth.Blob)); got != realBlobProperties {
		t.Fatalf("got  %s\nwant %s", got, realBlobProperties)
	}
}

func TestTableAndQueuePropertiesHaveNoBlobExtras(t *testing.T) {
	for _, service := range []auth.Service{auth.Table, auth.Queue} {
		update, err := ParseUpdate([]byte(realBlobProperties), service)
		if err != nil {
			t.Fatal(err)
		}
		p := Default()
		update(&p)
		got := string(AppendXML(nil, p, service))
		if strings.Contains(got, "DeleteRetentionPolicy") || strings.Contains(got, "DefaultServiceVersion") || p.DeleteRetentionPolicy.Enabled {
			t.Fatalf("%v: %s", service, got)
		}
	}
}

func TestAnOmittedElementKeepsItsValue(t *testing.T) {
	p := Default()
	p.Logging.Read = true
	p.Cors = []CorsRule{{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET"}}}
	update, err := ParseUpdate([]byte(`<StorageServiceProperties><HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>false</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy></HourMetrics></StorageServiceProperties>`), auth.Queue)
	if err != nil {
		t.Fatal(err)
	}
	update(&p)
	if !p.Logging.Read || len(p.Cors) != 1 || !p.HourMetrics.Enabled || p.HourMetrics.Retention.Days != 7 {
		t.Fatalf("%+v", p)
	}
	update, _ = ParseUpdate([]byte(`<StorageServiceProperties><Cors/></StorageServiceProperties>`), auth.Queue)
	update(&p)
	if len(p.Cors) != 0 {
		t.Fatalf("<Cors/> kept %v", p.Cors)
	}
}

func TestInvalidPropertiesAreRefusedWithAzureCodes(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		code       azerr.Code
	}{
		{"malformed", "<StorageServiceProperties><Logging>", azerr.InvalidXMLDocument},
		{"retention of 366 days", `<StorageServiceProperties><DeleteRetentionPolicy><Enabled>true</Enabled><Days>366</Days></DeleteRetentionPolicy></StorageServiceProperties>`, azerr.InvalidXMLDocument},
		{"retention without days", `<StorageServiceProperties><DeleteRetentionPolicy><Enabled>true</Enabled></DeleteRetentionPolicy></StorageServiceProperties>`, azerr.InvalidXMLDocument},
		{"bad default version", `<StorageServiceProperties><DefaultServiceVersion>latest</DefaultServiceVersion></StorageServiceProperties>`, azerr.InvalidXMLNodeValue},
		{"six CORS rules", "<StorageServiceProperties><Cors>" + strings.Repeat("<CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods><AllowedHeaders/><ExposedHeaders/><MaxAgeInSeconds>1</MaxAgeInSeconds></CorsRule>", 6) + "</Cors></StorageServiceProperties>", azerr.InvalidXMLDocument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseUpdate([]byte(tc.body), auth.Blob)
			var e *azerr.Error
			if !errors.As(err, &e) || e.Code != tc.code || e.Status != 400 {
				t.Fatalf("got %v, want 400 %s", err, tc.code)
			}
		})
	}
}

func FuzzParseUpdate(f *testing.F) {
	f.Add([]byte(realBlobProperties))
	f.Add([]byte("<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET,PUT</AllowedMethods><AllowedHeaders>x-ms-*</AllowedHeaders><ExposedHeaders/><MaxAgeInSeconds>5</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>"))
	f.Add([]byte("\xef\xbb\xbf<StorageServiceProperties/>"))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, service := range []auth.Service{auth.Table, auth.Blob} {
			update, err := ParseUpdate(body, service)
			if err != nil {
				var e *azerr.Error
				if !errors.As(err, &e) || e.Status != 400 {
					t.Fatalf("ParseUpdate returned %v", err)
				}
				continue
			}
			// Whatever is accepted is written back as a document that reads as the same thing.
			p := Default()
			update(&p)
			out := AppendXML(nil, p, service)
			again, err := ParseUpdate(out, service)
			if err != nil {
				t.Fatalf("own output %s refused: %v", out, err)
			}
			q := Default()
			again(&q)
			if got := AppendXML(nil, q, service); string(got) != string(out) {
				t.Fatalf("not stable:\n%s\n%s", out, got)
			}
		}
	})
}

// A CORS rule's header lists come back exact names first, then prefixes, as the real service
// answered the Python SDK's test_set_cors.
func TestCorsHeaderListsNamesBeforePrefixes(t *testing.T) {
	set := `<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>www.xyz.com</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>500</MaxAgeInSeconds>` +
		`<ExposedHeaders>x-ms-meta-data*,x-ms-meta-source*,x-ms-meta-abc,x-ms-meta-bcd</ExposedHeaders><AllowedHeaders>x-ms-meta-data*,x-ms-meta-target*,x-ms-meta-xyz,x-ms-meta-foo</AllowedHeaders></CorsRule></Cors></StorageServiceProperties>`
	update, err := ParseUpdate([]byte(set), auth.Queue)
	if err != nil {
		t.Fatal(err)
	}
	p := Default()
	update(&p)
	got := string(AppendXML(nil, p, auth.Queue))
	for _, want := range []string{"<AllowedHeaders>x-ms-meta-xyz,x-ms-meta-foo,x-ms-meta-data*,x-ms-meta-target*</AllowedHeaders>", "<ExposedHeaders>x-ms-meta-abc,x-ms-meta-bcd,x-ms-meta-data*,x-ms-meta-source*</ExposedHeaders>"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %s", got, want)
		}
	}
}
