package auth

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// storageRequest is a Blob or Queue request as Go's azblob/azqueue sign it: x-ms-date only,
// path style on the development account. path is the part after the account.
func storageRequest(service Service, method, path, rawQuery string, header map[string]string, contentLength int64) *Request {
	q, _ := url.ParseQuery(rawQuery)
	h := http.Header{}
	h.Set("x-ms-date", vectorDate)
	for k, v := range header {
		h.Set(k, v)
	}
	decoded, _ := url.PathUnescape(path)
	return &Request{Service: service, Method: method, RawPath: "/devstoreaccount1" + path, Query: q, Header: h,
		ContentLength: contentLength, Account: "devstoreaccount1", Path: decoded, Secure: true}
}

// The vectors of blob.md §6.1 and queue.md §2.2, produced by the Go SDKs' signers.
func TestBlobAndQueueSharedKeyVectors(t *testing.T) {
	for _, v := range []struct {
		name         string
		r            *Request
		stringToSign string
		signature    string
	}{
		{"put blob",
			storageRequest(Blob, "PUT", "/mycontainer/hello.txt", "", map[string]string{"Content-Type": "application/octet-stream",
				"x-ms-blob-type": "BlockBlob", "x-ms-meta-m1": "v1", "x-ms-version": "2026-12-06"}, 11),
			"PUT\n\n\n11\n\napplication/octet-stream\n\n\n\n\n\n\nx-ms-blob-type:BlockBlob\nx-ms-date:Mon, 02 Aug 2021 18:01:40 GMT\nx-ms-meta-m1:v1\nx-ms-version:2026-12-06\n/devstoreaccount1/devstoreaccount1/mycontainer/hello.txt",
			"dKi7xNpkWB6bKH6ebj6xdwzpnDNs128E6uPwSbnrETA="},
		{"get blob",
			storageRequest(Blob, "GET", "/mycontainer/myblob", "", map[string]string{"x-ms-version": "2026-12-06"}, 0),
			"GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Mon, 02 Aug 2021 18:01:40 GMT\nx-ms-version:2026-12-06\n/devstoreaccount1/devstoreaccount1/mycontainer/myblob",
			"AfCZaH3PKAf8AW6q2p9tB1DcvJU/1nJ+gRwycRMSXqA="},
		{"lease acquire",
			storageRequest(Blob, "PUT", "/azure-webjobs-hosts/locks/myhostid/host", "comp=lease", map[string]string{"x-ms-version": "2026-12-06",
				"x-ms-lease-action": "acquire", "x-ms-lease-duration": "15", "x-ms-proposed-lease-id": "0f8b7c2a-1111-4222-8333-444455556666"}, 0),
			"PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Mon, 02 Aug 2021 18:01:40 GMT\nx-ms-lease-action:acquire\nx-ms-lease-duration:15\nx-ms-proposed-lease-id:0f8b7c2a-1111-4222-8333-444455556666\nx-ms-version:2026-12-06\n/devstoreaccount1/devstoreaccount1/azure-webjobs-hosts/locks/myhostid/host\ncomp:lease",
			"abd4jtkUnsVUWGucapxYDGbdnJGAxPuA2Ng3TGS0q0M="},
		{"list blobs",
			storageRequest(Blob, "GET", "/mycontainer", "comp=list&include=metadata%2Csnapshots&restype=container", map[string]string{"x-ms-version": "2026-12-06"}, 0),
			"GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Mon, 02 Aug 2021 18:01:40 GMT\nx-ms-version:2026-12-06\n/devstoreaccount1/devstoreaccount1/mycontainer\ncomp:list\ninclude:metadata,snapshots\nrestype:container",
			"EtGmJMNueagDTiSz8LI2NT/rw4aSFELmMZZK2xxD5Oc="},
		{"get messages",
			storageRequest(Queue, "GET", "/myqueue/messages", "numofmessages=16&visibilitytimeout=600", map[string]string{"x-ms-version": "2024-08-04"}, 0),
			"GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Mon, 02 Aug 2021 18:01:40 GMT\nx-ms-version:2024-08-04\n/devstoreaccount1/devstoreaccount1/myqueue/messages\nnumofmessages:16\nvisibilitytimeout:600",
			"Fcx3Y254C5V4dwfOM2waWxJf5gfzccOlSxmLVCZxBM4="},
		{"put message",
			storageRequest(Queue, "POST", "/myqueue/messages", "", map[string]string{"x-ms-version": "2024-08-04", "Content-Type": "application/xml"}, 100),
			"POST\n\n\n100\n\napplication/xml\n\n\n\n\n\n\nx-ms-date:Mon, 02 Aug 2021 18:01:40 GMT\nx-ms-version:2024-08-04\n/devstoreaccount1/devstoreaccount1/myqueue/messages",
			"Ni/HBXIf/m4MBQUmq+Qgy1hZ2cD+y/CTx3z3VoNyNd0="},
	} {
		t.Run(v.name, func(t *testing.T) {
			if got := hmacBase64(devKey(), v.stringToSign); got != v.signature {
				t.Fatalf("HMAC of the vector's string-to-sign = %s, want %s", got, v.signature)
			}
			if got := storageStringsToSign(v.r, "devstoreaccount1", v.r.RawPath, false)[0]; got != v.stringToSign {
				t.Fatalf("string-to-sign\n got %q\nwant %q", got, v.stringToSign)
			}
			v.r.Header.Set("Authorization", "SharedKey devstoreaccount1:"+v.signature)
			g, err := newAuthenticator(vectorTime).Authenticate(context.Background(), v.r)
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if g.Account() != "devstoreaccount1" || g.Anonymous() {
				t.Fatalf("grant for %q, anonymous %v", g.Account(), g.Anonymous())
			}
			// The same signature does not verify a request that differs in what is signed.
			v.r.Query.Set("extra", "1")
			wantError(t, authenticate(v.r), 403, azerr.AuthenticationFailed)
		})
	}
}

func authenticate(r *Request) error {
	_, err := newAuthenticator(vectorTime).Authenticate(context.Background(), r)
	return err
}

// A client sending Date beside x-ms-date may sign either; one sorting x-ms- headers by code
// point (Python) rather than with '-' ignored (.NET, Go) signs another order.
func TestBlobSharedKeyAcceptsEitherDateLineAndHeaderOrder(t *testing.T) {
	base := func() *Request {
		return storageRequest(Blob, "GET", "/c/b", "", map[string]string{"x-ms-version": "2021-08-06",
			"Date": vectorDate, "x-ms-meta-b": "1", "x-ms-metaa": "2"}, 0)
	}
	strings := storageStringsToSign(base(), "devstoreaccount1", "/devstoreaccount1/c/b", false)
	if len(strings) != 4 {
		t.Fatalf("got %d candidate strings, want 4 (2 date lines × 2 header orders): %q", len(strings), strings)
	}
	for _, s := range strings {
		r := base()
		r.Header.Set("Authorization", "SharedKey devstoreaccount1:"+hmacBase64(devKey(), s))
		if err := authenticate(r); err != nil {
			t.Errorf("signature over %q refused: %v", s, err)
		}
	}
}

func TestBlobSharedKeyLite(t *testing.T) {
	r := storageRequest(Blob, "GET", "/mycontainer", "restype=container&comp=list", map[string]string{"x-ms-version": "2021-08-06"}, 0)
	s := "GET\n\n\n\nx-ms-date:" + vectorDate + "\nx-ms-version:2021-08-06\n/devstoreaccount1/devstoreaccount1/mycontainer?comp=list"
	r.Header.Set("Authorization", "SharedKeyLite devstoreaccount1:"+hmacBase64(devKey(), s))
	if err := authenticate(r); err != nil {
		t.Fatal(err)
	}
}

// sasFor authenticates a request to service carrying the SAS query q at path, at sasTime.
func sasFor(t *testing.T, service Service, path string, q url.Values) (*Grant, error) {
	t.Helper()
	h := http.Header{}
	h.Set("x-ms-version", "2021-08-06")
	return newAuthenticator(sasTime).Authenticate(context.Background(), &Request{Service: service, Method: "GET",
		RawPath: "/devstoreaccount1" + path, Query: q, Header: h, Account: "devstoreaccount1", Path: path, Secure: true})
}

// The vectors of blob.md §6.2–6.3 and queue.md §2.4, produced by the Go SDKs' signers.
func TestBlobAndQueueSASVectors(t *testing.T) {
	for _, v := range []struct {
		name         string
		service      Service
		path         string
		query        string
		stringToSign string
		op           *Operation
		target       Target
	}{
		{"account SAS ss=b", Blob, "/mycontainer/myblob",
			"sv=2020-12-06&ss=b&srt=sco&sp=rwdlacup&se=2030-01-01T00%3A00%3A00Z&spr=https%2Chttp&sig=OIBOCnmO2m5VaI%2FvMeEO5w3elcjYxOKl7AiDGhuJ6Ys%3D",
			"devstoreaccount1\nrwdlacup\nb\nsco\n\n2030-01-01T00:00:00Z\n\nhttps,http\n2020-12-06\n\n",
			OpPutBlob, Target{Name: "mycontainer", Blob: "myblob"}},
		{"blob SAS sr=b", Blob, "/mycontainer/myblob",
			"sv=2020-12-06&sr=b&sp=r&se=2030-01-01T00%3A00%3A00Z&spr=https%2Chttp&sig=Y2QynitrDH1I%2BD2QRXjaxTfFBnmjDbwK0cUQUIjXE6A%3D",
			"r\n\n2030-01-01T00:00:00Z\n/blob/devstoreaccount1/mycontainer/myblob\n\n\nhttps,http\n2020-12-06\nb\n\n\n\n\n\n\n",
			OpGetBlob, Target{Name: "mycontainer", Blob: "myblob"}},
		{"container SAS sr=c", Blob, "/mycontainer",
			"sv=2020-12-06&sr=c&sp=rl&se=2030-01-01T00%3A00%3A00Z&sig=VCACfoSzeBgtDCWgyKv%2F2XfzoYxjfWjI3modncIdKUQ%3D",
			"rl\n\n2030-01-01T00:00:00Z\n/blob/devstoreaccount1/mycontainer\n\n\n\n2020-12-06\nc\n\n\n\n\n\n\n",
			OpListBlobs, Target{Name: "mycontainer"}},
		{"queue SAS", Queue, "/myqueue/messages",
			"se=2030-01-01T00%3A00%3A00Z&sig=C21DfUsqpklgUq0ORW9Fo7uVhluEk0M5QO5RJt9FUlc%3D&sp=raup&sv=2018-03-28",
			"raup\n\n2030-01-01T00:00:00Z\n/queue/devstoreaccount1/myqueue\n\n\n\n2018-03-28",
			OpGetMessages, Target{Name: "myqueue"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			q := mustQuery(t, v.query)
			if got := hmacBase64(devKey(), v.stringToSign); got != q.Get("sig") {
				t.Fatalf("HMAC of the vector's string-to-sign = %s, want %s", got, q.Get("sig"))
			}
			g, err := sasFor(t, v.service, v.path, q)
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if err := g.Authorize(v.op, v.target); err != nil {
				t.Fatalf("Authorize(%v): %v", v.op, err)
			}
		})
	}
}

// signBlobSAS signs q for a blob service SAS (newest layout) on container/blob.
func signBlobSAS(q url.Values, container, blob string) url.Values {
	resource := "/blob/devstoreaccount1/" + container
	if q.Get("sr") != "c" {
		resource += "/" + blob
	}
	fields := []string{q.Get("sp"), q.Get("st"), q.Get("se"), resource, q.Get("si"), q.Get("sip"), q.Get("spr"), q.Get("sv"),
		q.Get("sr"), q.Get("snapshot"), q.Get("ses"), q.Get("rscc"), q.Get("rscd"), q.Get("rsce"), q.Get("rscl"), q.Get("rsct")}
	q.Set("sig", hmacBase64(devKey(), strings.Join(fields, "\n")))
	return q
}

func TestBlobSASReachesOnlyWhatItSigns(t *testing.T) {
	containerSAS := signBlobSAS(url.Values{"sv": {"2021-08-06"}, "sr": {"c"}, "sp": {"racwdl"}, "se": {"2030-01-01T00:00:00Z"}}, "box", "")
	g, err := sasFor(t, Blob, "/box/any/blob.txt", containerSAS)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []*Operation{OpGetBlob, OpPutBlob, OpDeleteBlob, OpListBlobs, OpAppendBlock} {
		if err := g.Authorize(op, Target{Name: "box", Blob: "any/blob.txt"}); err != nil {
			t.Errorf("container SAS refused %v: %v", op, err)
		}
	}
	// A service SAS never reaches the container's own properties, metadata, ACL or lifetime,
	// nor the service: the real service's generic refusal, whatever the letters (the Go
	// SDK's live tests: Create Container and Get Container Properties with a container SAS).
	for _, op := range []*Operation{OpGetContainerProperties, OpDeleteContainer, OpSetContainerMetadata, OpCreateContainer, OpGetContainerACL, OpListContainers} {
		wantError(t, g.Authorize(op, Target{Name: "box"}), 403, azerr.AuthorizationFailure)
	}
	// Signed for one container, it does not verify on another.
	if _, err := sasFor(t, Blob, "/other/any/blob.txt", containerSAS); err == nil {
		t.Fatal("container SAS verified on another container")
	}

	blobSAS := signBlobSAS(url.Values{"sv": {"2021-08-06"}, "sr": {"b"}, "sp": {"r"}, "se": {"2030-01-01T00:00:00Z"}}, "box", "a.txt")
	g, err = sasFor(t, Blob, "/box/a.txt", blobSAS)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Authorize(OpGetBlob, Target{Name: "box", Blob: "a.txt"}); err != nil {
		t.Fatal(err)
	}
	wantError(t, g.Authorize(OpPutBlob, Target{Name: "box", Blob: "a.txt"}), 403, azerr.AuthorizationPermissionMismatch)
	wantError(t, g.Authorize(OpListBlobs, Target{Name: "box"}), 403, azerr.AuthorizationFailure)
	if _, err := sasFor(t, Blob, "/box/b.txt", blobSAS); err == nil {
		t.Fatal("blob SAS verified on another blob")
	}
}

func TestAccountSASNeedsTheServiceLetter(t *testing.T) {
	q := signAccountSAS(url.Values{"sv": {"2021-08-06"}, "ss": {"t"}, "srt": {"sco"}, "sp": {"rwdlacup"}, "se": {"2030-01-01T00:00:00Z"}}, "devstoreaccount1", devKey())
	for _, service := range []Service{Blob, Queue} {
		_, err := sasFor(t, service, "/x/y", q)
		wantError(t, err, 403, azerr.AuthorizationServiceMismatch)
	}
	q = signAccountSAS(url.Values{"sv": {"2021-08-06"}, "ss": {"bq"}, "srt": {"sco"}, "sp": {"rwdlacup"}, "se": {"2030-01-01T00:00:00Z"}}, "devstoreaccount1", devKey())
	_, err := newAuthenticator(sasTime).Authenticate(context.Background(), sasRequest(q))
	wantError(t, err, 403, azerr.AuthorizationServiceMismatch)
	g, err := sasFor(t, Queue, "/q/messages", q)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Authorize(OpPutMessage, Target{Name: "q"}); err != nil {
		t.Fatal(err)
	}
}

func TestQueueSASCannotManageQueues(t *testing.T) {
	q := url.Values{"sv": {"2018-03-28"}, "sp": {"raup"}, "se": {"2030-01-01T00:00:00Z"}}
	q.Set("sig", hmacBase64(devKey(), "raup\n\n2030-01-01T00:00:00Z\n/queue/devstoreaccount1/jobs\n\n\n\n2018-03-28"))
	g, err := sasFor(t, Queue, "/jobs/messages", q)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []*Operation{OpPutMessage, OpGetMessages, OpPeekMessages, OpDeleteMessage, OpUpdateMessage, OpGetQueueMetadata} {
		if err := g.Authorize(op, Target{Name: "jobs"}); err != nil {
			t.Errorf("queue SAS refused %v: %v", op, err)
		}
	}
	for _, op := range []*Operation{OpCreateQueue, OpDeleteQueue, OpSetQueueMetadata, OpClearMessages, OpListQueues, OpSetQueueACL} {
		wantError(t, g.Authorize(op, Target{Name: "jobs"}), 403, azerr.AuthorizationFailure)
	}
}

func TestSASWithARepeatedFieldIsRefused(t *testing.T) {
	q := mustQuery(t, "sv=2019-07-07&tn=mytable&sp=raud&se=2030-01-01T00%3A00%3A00Z&sig=o6Qt4PLMUdoi6549xhHa0YySR3c3WLebsYPq4hkFA3c%3D")
	if _, err := newAuthenticator(sasTime).Authenticate(context.Background(), sasRequest(q)); err != nil {
		t.Fatalf("the vector itself: %v", err)
	}
	for _, field := range []string{"sig", "sp", "se", "tn", "sv"} {
		repeated := url.Values{}
		for k, v := range q {
			repeated[k] = append([]string(nil), v...)
		}
		repeated.Add(field, "x")
		_, err := newAuthenticator(sasTime).Authenticate(context.Background(), sasRequest(repeated))
		wantError(t, err, 403, azerr.AuthenticationFailed)
	}
}

func TestAnonymousRequests(t *testing.T) {
	anon := func(service Service, version string) (*Grant, error) {
		h := http.Header{}
		if version != "" {
			h.Set("x-ms-version", version)
		}
		return newAuthenticator(sasTime).Authenticate(context.Background(), &Request{Service: service, Method: "GET",
			RawPath: "/devstoreaccount1/c/b", Query: url.Values{}, Header: h, Account: "devstoreaccount1", Path: "/c/b"})
	}
	// Blob: a grant that reads what the container makes public, nothing else.
	g, err := anon(Blob, "2021-08-06")
	if err != nil || !g.Anonymous() {
		t.Fatalf("anonymous blob request: %v %v", g, err)
	}
	if err := g.Authorize(OpGetBlob, Target{Name: "c", Blob: "b", PublicAccess: "blob"}); err != nil {
		t.Fatal(err)
	}
	if err := g.Authorize(OpListBlobs, Target{Name: "c", PublicAccess: "container"}); err != nil {
		t.Fatal(err)
	}
	e := wantError(t, g.Authorize(OpListBlobs, Target{Name: "c", PublicAccess: "blob"}), 401, azerr.NoAuthenticationInformation)
	if !strings.HasPrefix(e.Header.Get("WWW-Authenticate"), "Bearer authorization_uri=") {
		t.Errorf("no bearer challenge: %v", e.Header)
	}
	wantError(t, g.Authorize(OpPutBlob, Target{Name: "c", Blob: "b", PublicAccess: "container"}), 401, azerr.NoAuthenticationInformation)
	wantError(t, g.Authorize(OpGetBlob, Target{Name: "c", Blob: "b"}), 401, azerr.NoAuthenticationInformation)
	old, _ := anon(Blob, "2019-07-07")
	wantError(t, old.Authorize(OpGetBlob, Target{Name: "c", Blob: "b"}), 404, azerr.ResourceNotFound)

	// Queue: no public access.
	_, err = anon(Queue, "2024-08-04")
	wantError(t, err, 401, azerr.NoAuthenticationInformation)
	_, err = anon(Queue, "2018-03-28")
	wantError(t, err, 403, azerr.AuthenticationFailed)
}

// The orders clients sign x-ms-* headers in, each as its SDK sorts these names: the Go and
// .NET SDKs (the service's culture order: punctuation, then '+', digits, letters, with '-'
// and an apostrophe only breaking ties, an ordinary character first), Python's (its
// ranking, '-' lightest).
func TestHeaderOrdersOfTheSDKs(t *testing.T) {
	for _, c := range []struct {
		name  string
		less  func(a, b string) bool
		order []string
	}{
		{"culture", cultureLess, []string{"x-ms-meta-_", "x-ms-meta-a", "x-ms-meta-a_", "x-ms-meta-a_b", "x-ms-meta-a0", "x-ms-meta-a1", "x-ms-meta-ab", "x-ms-meta-a-b", "x-ms-meta-b", "x-ms-version"}},
		{"culture, dashes", cultureLess, []string{"x-ms-a", "x-msa-b", "x-ms-ab-", "x-ms-a-b"}},
		{"python", pythonLess, []string{"x-ms-meta-a", "x-ms-meta-a-b", "x-ms-meta-a_", "x-ms-meta-a_b", "x-ms-meta-a0", "x-ms-meta-a1", "x-ms-meta-ab", "x-ms-meta-b", "x-ms-meta-b_", "x-ms-version"}},
	} {
		for i, a := range c.order {
			for j, b := range c.order {
				if got := c.less(a, b); got != (i < j) {
					t.Errorf("%s: less(%q, %q) = %v, want %v", c.name, a, b, got, i < j)
				}
			}
		}
	}
}
