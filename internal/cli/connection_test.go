package cli

import (
	"strings"
	"testing"
)

func TestConnectionStringsNameTheTableEndpoint(t *testing.T) {
	dev := connectionString{endpoint: "http://127.0.0.1:10002/devstoreaccount1", account: devAccount, key: devKey}
	for _, tc := range []struct {
		in   string
		want connectionString
	}{
		{"UseDevelopmentStorage=true", dev},
		{"usedevelopmentstorage=TRUE;", dev},
		{"UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://devbox", connectionString{endpoint: "http://devbox:10002/devstoreaccount1", account: devAccount, key: devKey}},
		{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net",
			connectionString{endpoint: "https://acct.table.core.windows.net", account: "acct", key: "a2V5"}},
		{"AccountName=acct;AccountKey=a2V5", connectionString{endpoint: "https://acct.table.core.windows.net", account: "acct", key: "a2V5"}},
		{"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5==;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1/;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1",
			connectionString{endpoint: "http://127.0.0.1:10002/devstoreaccount1", account: "devstoreaccount1", key: "a2V5=="}},
		{"TableEndpoint=https://acct.table.core.windows.net;SharedAccessSignature=?sv=2019-02-02&sig=x%3D",
			connectionString{endpoint: "https://acct.table.core.windows.net", sas: "sv=2019-02-02&sig=x%3D"}},
		{"AccountName=acct;SharedAccessSignature=sv=1&sig=y", connectionString{endpoint: "https://acct.table.core.windows.net", account: "acct", sas: "sv=1&sig=y"}},
	} {
		got, err := parseConnectionString(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestBadConnectionStringsSayWhy(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{"UseDevelopmentStorage=false", "only true"},
		{"AccountKey=a2V5", "needs TableEndpoint or AccountName"},
		{"TableEndpoint=ftp://x;AccountName=a;AccountKey=a2V5", "not an http(s) URL"},
		{"AccountName=a;AccountKeyIsMissingItsEquals", "is not NAME=VALUE"},
		{"TableEndpoint=http://x;AccountKey=a2V5", "AccountKey needs AccountName"},
	} {
		_, err := parseConnectionString(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

// Without --connection-string or AZURE_STORAGE_CONNECTION_STRING, the verbs go to the
// emulator's address, as the SDKs that know UseDevelopmentStorage=true would.
func TestTheDefaultEndpointIsTheEmulators(t *testing.T) {
	env := func(v string) Env { return Env{Getenv: func(string) string { return v }} }
	for _, tc := range []struct {
		flag, env, want string
	}{
		{"", "", "http://127.0.0.1:10002/devstoreaccount1"},
		{"", "AccountName=fromenv;AccountKey=a2V5", "https://fromenv.table.core.windows.net"},
		{"AccountName=fromflag;AccountKey=a2V5", "AccountName=fromenv;AccountKey=a2V5", "https://fromflag.table.core.windows.net"},
	} {
		cs, err := resolveConnectionString(tc.flag, env(tc.env))
		if err != nil || cs.endpoint != tc.want {
			t.Errorf("flag %q, env %q: %s, %v; want %s", tc.flag, tc.env, cs.endpoint, err, tc.want)
		}
	}
}
