package cli

import (
	"strings"
	"testing"
)

func TestConnectionStringsNameTheEndpoints(t *testing.T) {
	dev := connectionString{table: "http://127.0.0.1:10002/devstoreaccount1", blob: "http://127.0.0.1:10000/devstoreaccount1", queue: "http://127.0.0.1:10001/devstoreaccount1", account: devAccount, key: devKey}
	cloud := func(account string) connectionString {
		return connectionString{table: "https://" + account + ".table.core.windows.net", blob: "https://" + account + ".blob.core.windows.net", queue: "https://" + account + ".queue.core.windows.net", account: account}
	}
	withKey := func(cs connectionString, key string) connectionString { cs.key = key; return cs }
	for _, tc := range []struct {
		in   string
		want connectionString
	}{
		{"UseDevelopmentStorage=true", dev},
		{"usedevelopmentstorage=TRUE;", dev},
		{"UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://devbox", connectionString{table: "http://devbox:10002/devstoreaccount1", blob: "http://devbox:10000/devstoreaccount1", queue: "http://devbox:10001/devstoreaccount1", account: devAccount, key: devKey}},
		{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net", withKey(cloud("acct"), "a2V5")},
		{"AccountName=acct;AccountKey=a2V5", withKey(cloud("acct"), "a2V5")},
		{"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5==;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1/;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1",
			connectionString{table: "http://127.0.0.1:10002/devstoreaccount1", blob: "http://127.0.0.1:10000/devstoreaccount1", queue: "http://devstoreaccount1.queue.core.windows.net", account: "devstoreaccount1", key: "a2V5=="}},
		{"TableEndpoint=https://acct.table.core.windows.net;SharedAccessSignature=?sv=2019-02-02&sig=x%3D",
			connectionString{table: "https://acct.table.core.windows.net", sas: "sv=2019-02-02&sig=x%3D"}},
		{"QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;SharedAccessSignature=sv=1&sig=y",
			connectionString{queue: "http://127.0.0.1:10001/devstoreaccount1", sas: "sv=1&sig=y"}},
		{"AccountName=acct;SharedAccessSignature=sv=1&sig=y", func() connectionString { cs := cloud("acct"); cs.sas = "sv=1&sig=y"; return cs }()},
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
		{"AccountKey=a2V5", "needs AccountName, or TableEndpoint"},
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
		_, endpoint, err := resolveEndpoint(tc.flag, env(tc.env), tableService)
		if err != nil || endpoint != tc.want {
			t.Errorf("flag %q, env %q: %s, %v; want %s", tc.flag, tc.env, endpoint, err, tc.want)
		}
	}
}

// A verb for a service the connection string names no endpoint of says so.
func TestAMissingEndpointIsNamed(t *testing.T) {
	cs, err := parseConnectionString("TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;SharedAccessSignature=sv=1&sig=y")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.endpoint(blobService); err == nil || !strings.Contains(err.Error(), "no blob endpoint (BlobEndpoint, or AccountName)") {
		t.Fatalf("blob endpoint of a table-only connection string: %v", err)
	}
}
