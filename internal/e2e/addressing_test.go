package e2e

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/table"
	"github.com/tabula-dev/tabula/internal/tablehttp"
)

// TestHostStyleURLs drives the SDK at https-less host-style URLs
// (http://devstoreaccount1.table.core.windows.net) with every connection routed to the local
// server, as a DNS entry or proxy would: the account comes from the Host header and the
// signatures cover host-style paths.
func TestHostStyleURLs(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			h := tablehttp.New(table.New(b.open(t)), auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()}), nil)
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			local := strings.TrimPrefix(srv.URL, "http://")
			transport := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, local)
			}}
			cred, _ := aztables.NewSharedKeyCredential("devstoreaccount1", devKey)
			svc, err := aztables.NewServiceClientWithSharedKey("http://devstoreaccount1.table.core.windows.net", cred, &aztables.ClientOptions{
				ClientOptions: policy.ClientOptions{Transport: &http.Client{Transport: transport}, Retry: policy.RetryOptions{MaxRetries: -1}},
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := svc.CreateTable(ctx, "hoststyle", nil); err != nil {
				t.Fatal(err)
			}
			c := svc.NewClient("hoststyle")
			if _, err := c.AddEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "O'Neil", "V": 1}), nil); err != nil {
				t.Fatal(err)
			}
			resp, err := c.GetEntity(ctx, "p", "O'Neil", nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(resp.Value), `"odata.metadata":"http://devstoreaccount1.table.core.windows.net/$metadata#hoststyle/@Element"`) {
				t.Fatalf("metadata URL does not follow the host-style address: %s", resp.Value)
			}
			// The same account is reachable path-style on the same server.
			pathStyle := startServerOver(t, h)
			if _, err := pathStyle.service.NewClient("hoststyle").GetEntity(ctx, "p", "O'Neil", nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}
