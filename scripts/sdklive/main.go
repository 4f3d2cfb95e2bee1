// Command sdklive runs the official Go SDKs' own test suites — aztables, azqueue and azblob,
// at the versions go.mod pins — live against a Tabula it starts, as though Tabula were Azure.
// Those suites were written against the real service, so where Tabula answers otherwise they
// fail: this is how the differences fixed on 2026-11-27 were found.
//
//	go run ./scripts/sdklive                      # all three suites, about 25 minutes
//	go run ./scripts/sdklive -suites azqueue      # one suite
//	go run ./scripts/sdklive -suites azblob -run 'Test/TestCopy'
//	go run ./scripts/sdklive -serve               # no suite: Tabula as Azure, for any client
//
// The suites address https://{account}.{service}.core.windows.net. sdklive makes that reach
// Tabula without touching the machine: it starts an HTTPS CONNECT proxy on loopback that
// sends every such host to Tabula's endpoint for the service, gives Tabula a certificate for
// those names signed by a CA of its own, and points the suites at both (HTTPS_PROXY,
// SSL_CERT_FILE). Tests that sign in with Entra ID reach a stand-in for
// login.microsoftonline.com through the same proxy, which issues tokens that Tabula's
// --oauth basic takes. Suites run with AZURE_RECORD_MODE=live and PROXY_MANUAL_START=true.
//
// Accounts: devstoreaccount1 (the suites' default), and secondacct, premiumacct, softdelacct
// and cosmosacct for the suites' other account kinds, all with the development key.
//
// Everything goes to -out (default $TMPDIR/tabula-sdklive): each suite's go test -v output in
// SUITE.log, Tabula's log in tabula.log, and summary.txt, which lists every failing test with
// its first error, marked "known" when known.txt (next to this file) says why it fails. The
// exit status is 1 when a test failed that known.txt does not list.
package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// suites are the SDK modules whose tests run, by the name -suites takes.
var suites = map[string]string{
	"aztables": "github.com/Azure/azure-sdk-for-go/sdk/data/aztables",
	"azqueue":  "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue",
	"azblob":   "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob",
}

func main() {
	names := flag.String("suites", "aztables,azqueue,azblob", "comma-separated suites to run")
	run := flag.String("run", "", "go test -run `REGEX` within each suite")
	out := flag.String("out", filepath.Join(os.TempDir(), "tabula-sdklive"), "`DIR` for logs, sources and certificates")
	timeout := flag.Duration("timeout", 50*time.Minute, "go test -timeout per suite")
	store := flag.String("store", "memory", "`memory`, disk (the embedded store in a fresh directory under -out), or a postgres:// URL of an empty database")
	serve := flag.Bool("serve", false, "run no suite: start Tabula, the proxy and the sign-in stand-in, write the environment a client needs to -out/env.sh, and wait for an interrupt")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("sdklive: ")

	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	repo := goOutput("", "list", "-m", "-f", "{{.Dir}}")
	pki, err := makePKI(*out)
	if err != nil {
		log.Fatal(err)
	}

	// Everything that can fail before the suites run does so before Tabula starts, so that a
	// failure never leaves it running.
	known := readKnown(filepath.Join(repo, "scripts", "sdklive", "known.txt"))
	storeFlags := storeArgs(*store, *out)
	dirs := map[string]string{}
	order := strings.Split(*names, ",")
	if *serve {
		order = nil
	}
	for _, name := range order {
		module, ok := suites[name]
		if !ok {
			log.Fatalf("no suite %q (aztables, azqueue, azblob)", name)
		}
		dirs[name] = copySuite(repo, *out, name, module)
	}
	ports := freePorts(3)
	tabula := startTabula(repo, *out, storeFlags, pki, ports)
	if err := configureSoftDelete(ports[1]); err != nil {
		_ = tabula.Process.Kill()
		log.Fatalf("configuring softdelacct: %v", err)
	}
	login := serveLogin(pki)
	proxy := serveProxy(map[string]string{
		".table.": ports[0], ".blob.": ports[1], ".queue.": ports[2], "login.": login,
	})

	if *serve {
		holdOpen(tabula, filepath.Join(*out, "env.sh"), suiteEnv(proxy, pki.bundle)[len(os.Environ()):])
		return
	}

	var summary strings.Builder
	unexpected := 0
	for _, name := range order {
		logPath := filepath.Join(*out, name+".log")
		log.Printf("running %s (%s); output in %s", name, dirs[name], logPath)
		runSuite(dirs[name], logPath, *run, *timeout, suiteEnv(proxy, pki.bundle))
		unexpected += summarize(&summary, name, logPath, known)
	}
	_ = tabula.Process.Signal(os.Interrupt)
	_ = tabula.Wait()
	fmt.Print(summary.String())
	if err := os.WriteFile(filepath.Join(*out, "summary.txt"), []byte(summary.String()), 0o644); err != nil {
		log.Print(err)
	}
	if unexpected > 0 {
		os.Exit(1)
	}
}

// holdOpen writes env as shell exports to path, so that any client (another SDK's tests, the
// az CLI, a script) can be pointed at Tabula as though it were Azure, and stops Tabula on an
// interrupt.
func holdOpen(tabula *exec.Cmd, path string, env []string) {
	var exports strings.Builder
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&exports, "export %s='%s'\n", name, value)
	}
	if err := os.WriteFile(path, []byte(exports.String()), 0o644); err != nil {
		log.Print(err)
	}
	log.Printf("serving; . %s to reach it, interrupt to stop", path)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	_ = tabula.Process.Signal(os.Interrupt)
	_ = tabula.Wait()
}

// pki is where the certificates sdklive made are.
type pki struct {
	storageCert, storageKey string // Tabula's: *.{table,blob,queue}.core.windows.net
	login                   tls.Certificate
	bundle                  string // the system's roots and sdklive's CA, for SSL_CERT_FILE
}

func makePKI(dir string) (pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return pki{}, err
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tabula sdklive CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(7 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return pki{}, err
	}
	leaf := func(serial int64, names ...string) ([]byte, []byte, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		t := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
			NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(7 * 24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, t, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
	}
	p := pki{storageCert: filepath.Join(dir, "storage.pem"), storageKey: filepath.Join(dir, "storage.key"), bundle: filepath.Join(dir, "roots.pem")}
	certPEM, keyPEM, err := leaf(2, "*.table.core.windows.net", "*.blob.core.windows.net", "*.queue.core.windows.net", "*.table.cosmos.azure.com", "localhost")
	if err != nil {
		return pki{}, err
	}
	if err := os.WriteFile(p.storageCert, certPEM, 0o644); err != nil {
		return pki{}, err
	}
	if err := os.WriteFile(p.storageKey, keyPEM, 0o600); err != nil {
		return pki{}, err
	}
	loginCert, loginKey, err := leaf(3, "login.microsoftonline.com")
	if err != nil {
		return pki{}, err
	}
	if p.login, err = tls.X509KeyPair(loginCert, loginKey); err != nil {
		return pki{}, err
	}
	roots := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	for _, f := range []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"} {
		if system, err := os.ReadFile(f); err == nil {
			roots = append(system, roots...)
			break
		}
	}
	return p, os.WriteFile(p.bundle, roots, 0o644)
}

func freePorts(n int) []string {
	var out []string
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// storeArgs are Tabula's flags for the store -store names. The suites share the one Tabula
// and name their tables, containers and queues at random, so a store need only start empty
// to be run again; a disk store starts from a fresh directory every time.
func storeArgs(store, out string) []string {
	switch {
	case store == "memory":
		return []string{"--in-memory"}
	case store == "disk":
		dir := filepath.Join(out, "data")
		if err := os.RemoveAll(dir); err != nil {
			log.Fatal(err)
		}
		return []string{"--data", dir}
	case strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://"):
		return []string{"--store", store, "--store-wait", "0"}
	}
	log.Fatalf("-store %q: want memory, disk or a postgres:// URL", store)
	return nil
}

// startTabula builds and starts Tabula on the given store, serving HTTPS with the storage
// certificate; ports are its table, blob and queue addresses.
func startTabula(repo, out string, store []string, p pki, ports []string) *exec.Cmd {
	bin := filepath.Join(out, "tabula")
	build := exec.Command("go", "build", "-o", bin, "./cmd/tabula")
	build.Dir, build.Stdout, build.Stderr = repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		log.Fatalf("building Tabula: %v", err)
	}
	var accounts []string
	for _, a := range []string{"devstoreaccount1", "secondacct", "premiumacct", "softdelacct", "cosmosacct"} {
		accounts = append(accounts, a+":"+devKey)
	}
	logFile, err := os.Create(filepath.Join(out, "tabula.log"))
	if err != nil {
		log.Fatal(err)
	}
	args := append(store, "--cert", p.storageCert, "--key", p.storageKey, "--oauth", "basic",
		"--accounts", strings.Join(accounts, ","), "--table-addr", ports[0], "--blob-addr", ports[1], "--queue-addr", ports[2],
		"--console-addr", "", "--request-log", "errors",
		// The suites' accounts keep blob versions, as their Azure test accounts do, the
		// soft-delete account keeps deleted containers, and the premium one is premium. A
		// container named "immutable" has immutable storage with versioning (the JS suite's
		// immutable container, which its test resources make with the management plane).
		"--blob-versioning", "all", "--container-soft-delete", "softdelacct:7", "--premium-accounts", "premiumacct",
		"--blob-immutability", "devstoreaccount1/immutable")
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	for range 100 {
		if c, err := net.Dial("tcp", ports[2]); err == nil {
			c.Close()
			return cmd
		}
		time.Sleep(100 * time.Millisecond)
	}
	log.Fatalf("Tabula did not start; see %s", logFile.Name())
	return nil
}

// configureSoftDelete gives softdelacct what the suites' soft-delete account has on Azure,
// set there with the management plane: blob soft delete, with permanent delete allowed. The
// request goes to Tabula's blob address over plain HTTP (it serves both on one port),
// signed with the development key.
func configureSoftDelete(blobAddr string) error {
	body := `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><DeleteRetentionPolicy>` +
		`<Enabled>true</Enabled><Days>1</Days><AllowPermanentDelete>true</AllowPermanentDelete></DeleteRetentionPolicy></StorageServiceProperties>`
	req, err := http.NewRequest(http.MethodPut, "http://"+blobAddr+"/softdelacct/?restype=service&comp=properties", strings.NewReader(body))
	if err != nil {
		return err
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2021-12-02")
	req.Header.Set("Content-Type", "application/xml")
	// SharedKey: the string to sign of a PUT with a body, its x-ms- headers and the
	// canonicalized resource (the account, the path, the query sorted).
	toSign := strings.Join([]string{http.MethodPut, "", "", fmt.Sprint(len(body)), "", "application/xml", "", "", "", "", "", "",
		"x-ms-date:" + date + "\nx-ms-version:2021-12-02",
		"/softdelacct/softdelacct/\ncomp:properties\nrestype:service"}, "\n")
	key, err := base64.StdEncoding.DecodeString(devKey)
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(toSign))
	req.Header.Set("Authorization", "SharedKey softdelacct:"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("Set Blob Service Properties: %s %s", resp.Status, msg)
	}
	return nil
}

// serveProxy answers CONNECT host:443 by joining the client to the address of the first
// routes key the host contains, and returns the proxy's address.
func serveProxy(routes map[string]string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		to := ""
		for part, addr := range routes {
			if strings.Contains(r.Host, part) {
				to = addr
			}
		}
		if to == "" {
			http.Error(w, "sdklive routes only storage and login hosts, not "+r.Host, http.StatusBadGateway)
			return
		}
		up, err := net.Dial("tcp", to)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			up.Close()
			return
		}
		_, _ = c.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
		go func() { _, _ = io.Copy(up, buf); _ = up.(*net.TCPConn).CloseWrite() }()
		_, _ = io.Copy(c, up)
		c.Close()
		up.Close()
	}))
	return l.Addr().String()
}

// serveLogin stands in for login.microsoftonline.com: instance and tenant discovery, and a
// token endpoint that grants any client credential a token for the scope asked, unsigned
// (what Tabula's --oauth basic takes: the claims are checked, not the signature).
func serveLogin(p pki) string {
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{p.login}})
	if err != nil {
		log.Fatal(err)
	}
	const host = "https://login.microsoftonline.com"
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		w.Header().Set("Content-Type", "application/json")
		var body any
		switch {
		case strings.HasSuffix(r.URL.Path, "/discovery/instance"):
			body = map[string]any{"tenant_discovery_endpoint": host + "/" + tenant + "/v2.0/.well-known/openid-configuration", "api-version": "1.1",
				"metadata": []any{map[string]any{"preferred_network": "login.microsoftonline.com", "preferred_cache": "login.windows.net",
					"aliases": []string{"login.microsoftonline.com", "login.windows.net", "login.microsoft.com", "sts.windows.net"}}}}
		case strings.HasSuffix(r.URL.Path, "/openid-configuration"):
			body = map[string]any{"issuer": host + "/" + tenant + "/v2.0", "token_endpoint": host + "/" + tenant + "/oauth2/v2.0/token",
				"authorization_endpoint": host + "/" + tenant + "/oauth2/v2.0/authorize", "jwks_uri": host + "/" + tenant + "/discovery/v2.0/keys"}
		case strings.HasSuffix(r.URL.Path, "/token"):
			_ = r.ParseForm()
			audience := strings.TrimSuffix(strings.Fields(r.Form.Get("scope") + " none")[0], "/.default")
			now := time.Now()
			part := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
			token := part(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + part(map[string]any{
				"aud": audience, "iss": "https://sts.windows.net/" + tenant + "/", "tid": tenant,
				"oid": "00000000-0000-0000-0000-00000000c0de", "nbf": now.Add(-time.Minute).Unix(), "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
			}) + "." + base64.RawURLEncoding.EncodeToString([]byte("unsigned"))
			body = map[string]any{"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": token}
		default:
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	return l.Addr().String()
}

// copySuite copies the module's source, at the version go.mod pins, where its tests can
// write, and fetches what its tests need.
func copySuite(repo, out, name, module string) string {
	var m struct{ Dir, Version string }
	raw := goOutput(repo, "mod", "download", "-json", module+"@"+goOutput(repo, "list", "-m", "-f", "{{.Version}}", module))
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m.Dir == "" {
		log.Fatalf("locating %s: %v %s", module, err, raw)
	}
	dst := filepath.Join(out, "src", name+"@"+m.Version)
	if err := os.RemoveAll(dst); err != nil {
		log.Fatal(err)
	}
	if err := os.CopyFS(dst, os.DirFS(m.Dir)); err != nil {
		log.Fatal(err)
	}
	_ = filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			mode := os.FileMode(0o644)
			if d.IsDir() {
				mode = 0o755
			}
			_ = os.Chmod(p, mode)
		}
		return nil
	})
	// Compile the tests without running them (their TestMain wants the live environment).
	prep := exec.Command("go", "test", "-count=1", "-exec", "true", "./...")
	prep.Dir, prep.Env = dst, append(os.Environ(), "GOFLAGS=-mod=mod")
	if b, err := prep.CombinedOutput(); err != nil {
		log.Fatalf("preparing %s: %v\n%s", name, err, b)
	}
	return dst
}

func suiteEnv(proxy, bundle string) []string {
	env := []string{
		"GOFLAGS=-mod=mod", "AZURE_RECORD_MODE=live", "PROXY_MANUAL_START=true",
		"HTTPS_PROXY=http://" + proxy, "NO_PROXY=proxy.golang.org,sum.golang.org,127.0.0.1,localhost", "SSL_CERT_FILE=" + bundle,
		// The same roots for clients in other languages (-serve): Python's requests, Node.
		"REQUESTS_CA_BUNDLE=" + bundle, "NODE_EXTRA_CA_CERTS=" + bundle,
		// Entra ID sign-in, answered by serveLogin.
		"AZURE_TENANT_ID=72f988bf-86f1-41af-91ab-2d7cd011db47", "AZURE_CLIENT_ID=00000000-0000-0000-0000-0000000000c1", "AZURE_CLIENT_SECRET=sdklive",
		"TABLES_STORAGE_ACCOUNT_NAME=devstoreaccount1", "TABLES_PRIMARY_STORAGE_ACCOUNT_KEY=" + devKey,
		"TABLES_COSMOS_ACCOUNT_NAME=cosmosacct", "TABLES_PRIMARY_COSMOS_ACCOUNT_KEY=" + devKey,
		// An encryption scope: Tabula takes any scope a request names.
		"AZURE_STORAGE_ENCRYPTION_SCOPE=sdklivescope",
	}
	for prefix, account := range map[string]string{"": "devstoreaccount1", "SECONDARY_": "secondacct", "PREMIUM_": "premiumacct", "SOFT_DELETE_": "softdelacct"} {
		env = append(env, prefix+"AZURE_STORAGE_ACCOUNT_NAME="+account, prefix+"AZURE_STORAGE_ACCOUNT_KEY="+devKey)
	}
	return append(os.Environ(), env...)
}

func runSuite(dir, logPath, run string, timeout time.Duration, env []string) {
	f, err := os.Create(logPath)
	if err != nil {
		log.Print(err)
		return
	}
	defer f.Close()
	args := []string{"test", "-count=1", "-v", "-timeout", timeout.String()}
	if run != "" {
		args = append(args, "-run", run)
	}
	cmd := exec.Command("go", append(args, "./...")...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, f, f
	_ = cmd.Run() // failures are read from the log
}

// knownFailure is a line of known.txt: SUITE TEST-GLOB reason.
type knownFailure struct{ suite, test, why string }

func readKnown(path string) []knownFailure {
	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	var out []knownFailure
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, " ", 3)
		if len(fields) < 3 {
			log.Fatalf("%s: %q is not SUITE TEST-GLOB reason", path, line)
		}
		out = append(out, knownFailure{fields[0], fields[1], strings.TrimSpace(fields[2])})
	}
	return out
}

func (k knownFailure) matches(suite, test string) bool {
	ok, _ := filepath.Match(k.test, test)
	return k.suite == suite && ok
}

var (
	runLine  = regexp.MustCompile(`^\s*=== (?:RUN|CONT)\s+(\S+)`)
	endLine  = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+)`)
	errLine  = regexp.MustCompile(`^\s*(?:Error:\s+|panic|.*test panicked)`)
	killed   = regexp.MustCompile(`^signal: (?:killed|terminated)`)
	moreLine = regexp.MustCompile(`^\s+\S`)
)

// summarize writes the suite's counts and failing tests (leaves only: a test whose subtests
// ran is counted by them) and returns how many failures known.txt does not explain.
func summarize(w *strings.Builder, suite, logPath string, known []knownFailure) int {
	data, err := os.ReadFile(logPath)
	if err != nil {
		fmt.Fprintf(w, "%s: no log: %v\n", suite, err)
		return 1
	}
	lines := strings.Split(string(data), "\n")
	firstErr := map[string]string{}
	results := map[string]string{}
	var order []string
	current := ""
	for i, line := range lines {
		if m := runLine.FindStringSubmatch(line); m != nil {
			current = m[1]
			continue
		}
		if m := endLine.FindStringSubmatch(line); m != nil {
			if _, seen := results[m[2]]; !seen {
				order = append(order, m[2])
			}
			results[m[2]] = m[1]
			continue
		}
		if current != "" && firstErr[current] == "" && errLine.MatchString(line) {
			msg := strings.TrimSpace(line)
			for j := i + 1; j < len(lines) && j < i+4 && moreLine.MatchString(lines[j]) && !runLine.MatchString(lines[j]); j++ {
				msg += " | " + strings.TrimSpace(lines[j])
			}
			firstErr[current] = msg
		}
	}
	isParent := func(name string) bool {
		for other := range results {
			if strings.HasPrefix(other, name+"/") {
				return true
			}
		}
		return false
	}
	counts := map[string]int{}
	var failing []string
	for _, name := range order {
		if isParent(name) {
			continue
		}
		counts[results[name]]++
		if results[name] == "FAIL" {
			failing = append(failing, name)
		}
	}
	fmt.Fprintf(w, "%s: %d passed, %d failed, %d skipped (log: %s)\n", suite, counts["PASS"], counts["FAIL"], counts["SKIP"], logPath)
	if !strings.Contains(string(data), "\nok ") && counts["FAIL"] == 0 {
		fmt.Fprintf(w, "  the suite did not report success: see its log\n")
	}
	unexpected := 0
	slices.Sort(failing)
	for _, name := range failing {
		why := ""
		for _, k := range known {
			if k.matches(suite, name) {
				why = k.why
				break
			}
		}
		msg := firstErr[name]
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		if why == "" {
			unexpected++
			fmt.Fprintf(w, "  FAIL %s\n       %s\n", name, msg)
		} else {
			fmt.Fprintf(w, "  known %s (%s)\n", name, why)
		}
	}
	// A test binary the kernel or a timeout killed leaves its remaining tests without
	// results: that is a failure no list explains.
	for _, line := range lines {
		if killed.MatchString(line) {
			unexpected++
			fmt.Fprintf(w, "  a test binary ended with %q: its tests after that have no results (see the log)\n", strings.TrimSpace(line))
		}
	}
	fmt.Fprintf(w, "  %d failures known.txt does not explain\n", unexpected)
	return unexpected
}

// goOutput runs the go command in dir and returns its trimmed standard output.
func goOutput(dir string, args ...string) string {
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	b, err := cmd.Output()
	if err != nil {
		log.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(b))
}
