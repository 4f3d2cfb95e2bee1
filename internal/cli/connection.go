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
	devAccount = "devstoreaccount1"
	devKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// service is one of the account's three services as connection strings name them.
type service struct {
	name    string // as in its host name: table, blob, queue
	setting string // its endpoint's setting, lower-cased
	devPort string // the emulator's port
}

var (
	tableService = service{"table", "tableendpoint", "10002"}
	blobService  = service{"blob", "blobendpoint", "10000"}
	queueService = service{"queue", "queueendpoint", "10001"}
)

// connectionString is what a storage connection string says about the services' endpoints
// (each the service root, e.g. http://127.0.0.1:10002/devstoreaccount1; "" when the string
// names none) and the credential.
type connectionString struct {
	table, blob, queue string
	account            string
	key                string // base64; empty with a SAS or anonymous access
	sas                string // without the leading "?"
}

// endpoint is s's root, or an error saying the connection string names none.
func (cs connectionString) endpoint(s service) (string, error) {
	var e string
	switch s {
	case tableService:
		e = cs.table
	case blobService:
		e = cs.blob
	case queueService:
		e = cs.queue
	}
	if e == "" {
		return "", fmt.Errorf("connection string: it names no %s endpoint (%sEndpoint, or AccountName)", s.name, strings.ToUpper(s.name[:1])+s.name[1:])
	}
	return e, nil
}

// parseConnectionString reads a storage connection string: NAME=VALUE pairs separated by ";",
// names in any case. UseDevelopmentStorage=true is expanded here, with the emulator's address
// (or DevelopmentStorageProxyUri's host) and account, because the Go SDKs (aztables v1.4.1)
// refuse that shortcut. A service's endpoint is its own setting (TableEndpoint, ...), else
// made from AccountName, DefaultEndpointsProtocol and EndpointSuffix, as the SDKs make it.
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
		at := func(s service) string { return root + ":" + s.devPort + "/" + devAccount }
		return connectionString{table: at(tableService), blob: at(blobService), queue: at(queueService), account: devAccount, key: devKey}, nil
	}
	cs := connectionString{
		account: settings["accountname"],
		key:     settings["accountkey"],
		sas:     strings.TrimPrefix(settings["sharedaccesssignature"], "?"),
	}
	protocol := settings["defaultendpointsprotocol"]
	if protocol == "" {
		protocol = "https"
	}
	suffix := settings["endpointsuffix"]
	if suffix == "" {
		suffix = "core.windows.net"
	}
	for _, s := range []struct {
		service
		to *string
	}{{tableService, &cs.table}, {blobService, &cs.blob}, {queueService, &cs.queue}} {
		e := strings.TrimRight(settings[s.setting], "/")
		if e == "" && cs.account != "" {
			e = protocol + "://" + cs.account + "." + s.name + "." + suffix
		}
		if e == "" {
			continue
		}
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return connectionString{}, fmt.Errorf("connection string: the %s endpoint %q is not an http(s) URL", s.name, e)
		}
		*s.to = e
	}
	if cs.table == "" && cs.blob == "" && cs.queue == "" {
		return connectionString{}, fmt.Errorf("connection string: needs AccountName, or TableEndpoint, BlobEndpoint or QueueEndpoint")
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

// clientOptions are the SDKs' options for the CLI's clients.
func clientOptions(env Env) policy.ClientOptions {
	o := policy.ClientOptions{
		Telemetry:       policy.TelemetryOptions{ApplicationID: "tabula-cli"},
		PerCallPolicies: []policy.Policy{captureResponse{}},
	}
	if env.Transport != nil {
		o.Transport = env.Transport
	}
	return o
}

// connect makes the Table service client for the connection string resolveConnectionString
// finds.
func connect(flagValue string, env Env) (*aztables.ServiceClient, error) {
	cs, endpoint, err := resolveEndpoint(flagValue, env, tableService)
	if err != nil {
		return nil, err
	}
	opts := &aztables.ClientOptions{ClientOptions: clientOptions(env)}
	switch {
	case cs.key != "":
		cred, err := aztables.NewSharedKeyCredential(cs.account, cs.key)
		if err != nil {
			return nil, fmt.Errorf("connection string: AccountKey: %w", err)
		}
		return aztables.NewServiceClientWithSharedKey(endpoint, cred, opts)
	case cs.sas != "":
		return aztables.NewServiceClientWithNoCredential(endpoint+"?"+cs.sas, opts)
	default:
		return aztables.NewServiceClientWithNoCredential(endpoint, opts)
	}
}

// resolveEndpoint is resolveConnectionString's connection string and its endpoint of s.
func resolveEndpoint(flagValue string, env Env, s service) (connectionString, string, error) {
	cs, err := resolveConnectionString(flagValue, env)
	if err != nil {
		return cs, "", err
	}
	endpoint, err := cs.endpoint(s)
	return cs, endpoint, err
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
