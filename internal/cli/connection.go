package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// The storage emulator's well-known account, which UseDevelopmentStorage=true stands for.
const (
	devAccount   = "devstoreaccount1"
	devKey       = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	devTablePort = "10002"
)

// connectionString is what a storage connection string says about the Table endpoint.
type connectionString struct {
	endpoint string // the service root, e.g. http://127.0.0.1:10002/devstoreaccount1
	account  string
	key      string // base64; empty with a SAS or anonymous access
	sas      string // without the leading "?"
}

// parseConnectionString reads a storage connection string: NAME=VALUE pairs separated by ";",
// names in any case. UseDevelopmentStorage=true is expanded here, with the emulator's address
// (or DevelopmentStorageProxyUri's host) and account, because the Go SDK (aztables v1.4.1)
// refuses that shortcut. Settings for other services (BlobEndpoint, ...) are ignored.
func parseConnectionString(s string) (connectionString, error) {
	settings := map[string]string{}
	for _, part := range strings.Split(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			return connectionString{}, fmt.Errorf("connection string: %q is not NAME=VALUE", redact(part))
		}
		settings[strings.ToLower(strings.TrimSpace(name))] = strings.TrimSpace(value)
	}
	if len(settings) == 0 {
		return connectionString{}, fmt.Errorf("connection string: empty")
	}
	if dev, ok := settings["usedevelopmentstorage"]; ok {
		if !strings.EqualFold(dev, "true") {
			return connectionString{}, fmt.Errorf("connection string: UseDevelopmentStorage=%s: only true is meaningful", dev)
		}
		root := "http://127.0.0.1"
		if proxy := settings["developmentstorageproxyuri"]; proxy != "" {
			u, err := url.Parse(proxy)
			if err != nil || u.Scheme == "" || u.Hostname() == "" {
				return connectionString{}, fmt.Errorf("connection string: DevelopmentStorageProxyUri %q is not a URL", proxy)
			}
			root = u.Scheme + "://" + u.Hostname()
		}
		return connectionString{endpoint: root + ":" + devTablePort + "/" + devAccount, account: devAccount, key: devKey}, nil
	}
	cs := connectionString{
		account:  settings["accountname"],
		key:      settings["accountkey"],
		sas:      strings.TrimPrefix(settings["sharedaccesssignature"], "?"),
		endpoint: strings.TrimRight(settings["tableendpoint"], "/"),
	}
	if cs.endpoint == "" {
		if cs.account == "" {
			return connectionString{}, fmt.Errorf("connection string: needs TableEndpoint or AccountName")
		}
		protocol := settings["defaultendpointsprotocol"]
		if protocol == "" {
			protocol = "https"
		}
		suffix := settings["endpointsuffix"]
		if suffix == "" {
			suffix = "core.windows.net"
		}
		cs.endpoint = protocol + "://" + cs.account + ".table." + suffix
	}
	if u, err := url.Parse(cs.endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return connectionString{}, fmt.Errorf("connection string: the table endpoint %q is not an http(s) URL", cs.endpoint)
	}
	if cs.key != "" && cs.account == "" {
		return connectionString{}, fmt.Errorf("connection string: AccountKey needs AccountName")
	}
	return cs, nil
}

// redact hides the value of a setting that may hold a secret, for error messages.
func redact(part string) string {
	if len(part) > 12 {
		return part[:12] + "…"
	}
	return part
}

// resolveConnectionString returns the connection string a verb uses: --connection-string's
// (flagValue), else $AZURE_STORAGE_CONNECTION_STRING's, else UseDevelopmentStorage=true's.
func resolveConnectionString(flagValue string, env Env) (connectionString, error) {
	s := flagValue
	if s == "" {
		s = env.getenv("AZURE_STORAGE_CONNECTION_STRING")
	}
	if s == "" {
		s = "UseDevelopmentStorage=true"
	}
	return parseConnectionString(s)
}

// connect makes the service client for the connection string resolveConnectionString finds.
func connect(flagValue string, env Env) (*aztables.ServiceClient, error) {
	cs, err := resolveConnectionString(flagValue, env)
	if err != nil {
		return nil, err
	}
	opts := &aztables.ClientOptions{ClientOptions: policy.ClientOptions{
		Telemetry:       policy.TelemetryOptions{ApplicationID: "tabula-cli"},
		PerCallPolicies: []policy.Policy{captureResponse{}},
	}}
	if env.Transport != nil {
		opts.Transport = env.Transport
	}
	switch {
	case cs.key != "":
		cred, err := aztables.NewSharedKeyCredential(cs.account, cs.key)
		if err != nil {
			return nil, fmt.Errorf("connection string: AccountKey: %w", err)
		}
		return aztables.NewServiceClientWithSharedKey(cs.endpoint, cred, opts)
	case cs.sas != "":
		return aztables.NewServiceClientWithNoCredential(cs.endpoint+"?"+cs.sas, opts)
	default:
		return aztables.NewServiceClientWithNoCredential(cs.endpoint, opts)
	}
}

// captured is a response as the service sent it. The SDK hands entities back re-encoded from
// a map[string]any, which turns a Double 5.0 into 5 (an Int32 to any reader) and drops the
// query plan headers; the verbs read the body and headers from here instead.
type captured struct {
	header http.Header
	body   []byte
}

type captureKey struct{}

// withCapture returns a context whose requests record their final response in c.
func withCapture(ctx context.Context, c *captured) context.Context {
	return context.WithValue(ctx, captureKey{}, c)
}

// captureResponse is a per-call policy (it sees the response after the SDK's retries) that
// records the response in the request's captured, if it has one.
type captureResponse struct{}

func (captureResponse) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	c, _ := req.Raw().Context().Value(captureKey{}).(*captured)
	if err != nil || c == nil {
		return resp, err
	}
	body, err := runtime.Payload(resp) // cached: the SDK reads the same bytes after us
	if err != nil {
		return resp, err
	}
	c.header, c.body = resp.Header, body
	return resp, nil
}
