package console

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
)

// The console's data API, for the page at / (and for curl). It calls the services in
// process: no Azure request signing, no CORS, and none of what the storage endpoints add to
// a request — throttle, fault rules, insight observation — so that what an operator looks at
// neither distorts the findings nor trips the faults the application is being tested with.
//
// The calls of a service are there when the console was given it (Options).
//
// Every call but GET /api/hello needs HTTP Basic with an account's name and one of its keys
// (base64, as in connection strings); the calls under /api/accounts/{account}/ act on that
// account only, and refuse the credentials of another. Bodies and answers are JSON.
//
//	GET    /api/hello                          {"services":["table","blob","queue"],"development":{"account","key"}}
//	                                           (no credentials; development only while
//	                                           devstoreaccount1 is hosted with its public key)
//	GET    /api/accounts                       {"account": yours, "accounts": every hosted name}
//	GET    /api/accounts/{a}/tables?top&next   {"tables":[{"name"}], "next"}
//	POST   /api/accounts/{a}/tables            {"name"} → 201 {"name"}
//	DELETE /api/accounts/{a}/tables/{t}        → 204
//	GET    /api/accounts/{a}/tables/{t}/entities?filter&select&top&next
//	                                           {"entities":[Entity], "plan", "scanned", "returned", "next"}
//	POST   /api/accounts/{a}/tables/{t}/entities   Entity → 201 Entity (Insert Entity)
//	GET    /api/accounts/{a}/tables/{t}/entity?pk&rk               → Entity
//	PUT    /api/accounts/{a}/tables/{t}/entity?pk&rk  {"etag","properties"} → Entity
//	                                           (Update Entity, If-Match etag; "*" for any version)
//	DELETE /api/accounts/{a}/tables/{t}/entity?pk&rk&etag          → 204
//	GET    /api/accounts/{a}/containers?prefix&top&next
//	                                           {"containers":[{"name","lastModified","publicAccess","lease"}], "next"}
//	POST   /api/accounts/{a}/containers        {"name"} → 201 {"name"}
//	DELETE /api/accounts/{a}/containers/{c}    → 204
//	GET    /api/accounts/{a}/containers/{c}/blobs?prefix&delimiter&top&next
//	                                           {"prefixes":[...], "blobs":[Blob], "next"}
//	PUT    /api/accounts/{a}/containers/{c}/blob?name[&overwrite=true]
//	                                           the body, as a block blob of the request's
//	                                           Content-Type → 201 Blob; 409 BlobAlreadyExists
//	                                           without overwrite
//	GET    /api/accounts/{a}/containers/{c}/blob?name   → the bytes, as an attachment
//	DELETE /api/accounts/{a}/containers/{c}/blob?name[&snapshots=include] → 204
//	GET    /api/accounts/{a}/queues?prefix&top&next
//	                                           {"queues":[{"name","approximateMessageCount"}], "next"}
//	POST   /api/accounts/{a}/queues            {"name"} → 201 {"name"}; 409 QueueAlreadyExists
//	                                           when it exists (where Create Queue answers 204)
//	DELETE /api/accounts/{a}/queues/{q}        → 204, with its messages
//	GET    /api/accounts/{a}/queues/{q}/messages?numofmessages
//	                                           Peek Messages (1-32, default 32):
//	                                           {"messages":[Message], "approximateMessageCount"}
//	POST   /api/accounts/{a}/queues/{q}/messages?visibilitytimeout&messagettl  {"text"}
//	                                           Put Message (seconds; defaults 0 and 7 days,
//	                                           messagettl=-1 never expires) → 201 Message
//	DELETE /api/accounts/{a}/queues/{q}/messages            Clear Messages → 204
//	POST   /api/accounts/{a}/queues/{q}/messages/get?numofmessages&visibilitytimeout
//	                                           Get Messages (1-32, default 1; seconds, default
//	                                           30) → {"messages":[Message]}, with pop receipts
//	DELETE /api/accounts/{a}/queues/{q}/messages/{id}?popreceipt  Delete Message → 204
//	GET|PUT|POST|DELETE /api/faults[/{id}]     the fault rules, as /admin/faults
//
// Blob is {"name", "type", "size", "contentType", "lastModified", "etag", "lease",
// "accessTier"}.
//
// Message is {"id", "insertionTime", "expirationTime", "timeNextVisible", "popReceipt",
// "dequeueCount", "text"}, times in RFC 3339: Peek leaves out timeNextVisible and popReceipt,
// Put leaves out dequeueCount and text. A message that never expires expires
// 9999-12-31T23:59:59Z, as Azure shows it. The message calls take the Queue service's query
// parameters under its names, and its limits and refusals are the service's (a text over 64
// KiB of UTF-8 is 413 RequestBodyTooLarge; a stale pop receipt 404 MessageNotFound). A text
// holding characters XML 1.0 cannot carry is 400 InvalidXmlDocument, as on the Queue endpoint:
// no SDK could send or receive it.
//
// Entity is {"PartitionKey", "RowKey", "Timestamp", "etag", "properties": [{"name", "type",
// "value"}]}: every value is text in the form the service writes it (Int64 and DateTime as
// in JSON, Double as digits, NaN or Infinity, Binary as base64) and every type an EDM name
// ("Edm.Int64"), so that no type is guessed either way. Writes go through the service's own
// decoder and validation, so a bad value gets the answer an SDK would get.
//
// "next" is an opaque token; pass it back to get the next page, absent on the last page.
// A failure is {"error":{"code","message"}} with the status Azure would answer, and the
// Azure code and message when the service refused.

// maxAPIBody bounds a JSON request body: an entity is at most 1 MiB as Azure counts it, and its
// JSON text at most 4 MiB, the Table service's own cap on a request.
const maxAPIBody = 4 << 20

// apiError is the JSON of a failure.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// fail answers err: an *azerr.Error with its status, code and message; anything else as
// azerr.As maps it (a store that cannot be reached is 503 ServerBusy, the rest 500).
func fail(w http.ResponseWriter, err error) {
	e := azerr.As(err)
	writeJSON(w, e.Status, map[string]apiError{"error": {Code: string(e.Code), Message: e.Message}})
}

// owners checks a request's HTTP Basic credentials against the hosted accounts.
type owners []auth.Account

// of returns the account whose name and key the request carries.
func (o owners) of(r *http.Request) (string, bool) {
	name, key, ok := r.BasicAuth()
	if !ok {
		return "", false
	}
	decoded, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		return "", false
	}
	for _, acct := range o {
		if acct.Name != name {
			continue
		}
		for _, k := range acct.Keys {
			if subtle.ConstantTimeCompare(k, decoded) == 1 {
				return name, true
			}
		}
	}
	return "", false
}

// errNoOwner answers a request without valid credentials. Its challenge is not Basic: a
// browser would answer a Basic challenge to the page's own calls with its login dialog,
// while the page asks for the key itself.
var errNoOwner = &azerr.Error{
	Status:  http.StatusUnauthorized,
	Code:    azerr.AuthenticationFailed,
	Message: "The console's API needs HTTP Basic with a hosted account's name and one of its keys (base64, as in a connection string).",
	Header:  http.Header{"Www-Authenticate": {`Console realm="tabula"`}},
}

// authenticated wraps h: it runs with the caller's account, and only for the account named
// in the path, if any.
func (o owners) authenticated(h func(w http.ResponseWriter, r *http.Request, account string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		account, ok := o.of(r)
		if !ok {
			for k, v := range errNoOwner.Header {
				w.Header()[k] = v
			}
			fail(w, errNoOwner)
			return
		}
		if named := r.PathValue("account"); named != "" && named != account {
			fail(w, azerr.Newf(azerr.AuthorizationFailure, "These credentials are %s's: sign in as %s to see its data.", account, named))
			return
		}
		h(w, r, account)
	}
}

// decodeBody reads a JSON request body into v, refusing unknown members and bodies over
// maxAPIBody.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxAPIBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return azerr.New(azerr.RequestBodyTooLarge)
		}
		return azerr.Newf(azerr.InvalidInput, "The request body is not the JSON this call takes: %v.", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return azerr.Newf(azerr.InvalidInput, "The request body holds more than one JSON value.")
	}
	return nil
}

// routeAPI adds the API's calls to mux.
func routeAPI(mux *http.ServeMux, o Options) {
	own := owners(o.Accounts)
	mux.HandleFunc("GET /api/hello", func(w http.ResponseWriter, r *http.Request) {
		hello := struct {
			Services    []string          `json:"services"`
			Development map[string]string `json:"development,omitempty"`
		}{Services: []string{}}
		if o.Tables != nil {
			hello.Services = append(hello.Services, "table")
		}
		if o.Blobs != nil {
			hello.Services = append(hello.Services, "blob")
		}
		if o.Queues != nil {
			hello.Services = append(hello.Services, "queue")
		}
		if own.hostsDevelopmentAccount() {
			hello.Development = map[string]string{"account": auth.DevelopmentAccountName, "key": auth.DevelopmentAccountKey}
		}
		writeJSON(w, http.StatusOK, hello)
	})
	mux.HandleFunc("GET /api/accounts", own.authenticated(func(w http.ResponseWriter, r *http.Request, account string) {
		names := make([]string, len(own))
		for i, a := range own {
			names[i] = a.Name
		}
		writeJSON(w, http.StatusOK, map[string]any{"account": account, "accounts": names})
	}))
	if o.Tables != nil {
		t := tablesAPI{o.Tables}
		mux.HandleFunc("GET /api/accounts/{account}/tables", own.authenticated(t.list))
		mux.HandleFunc("POST /api/accounts/{account}/tables", own.authenticated(t.create))
		mux.HandleFunc("DELETE /api/accounts/{account}/tables/{table}", own.authenticated(t.delete))
		mux.HandleFunc("GET /api/accounts/{account}/tables/{table}/entities", own.authenticated(t.query))
		mux.HandleFunc("POST /api/accounts/{account}/tables/{table}/entities", own.authenticated(t.insert))
		mux.HandleFunc("GET /api/accounts/{account}/tables/{table}/entity", own.authenticated(t.entity))
		mux.HandleFunc("PUT /api/accounts/{account}/tables/{table}/entity", own.authenticated(t.entity))
		mux.HandleFunc("DELETE /api/accounts/{account}/tables/{table}/entity", own.authenticated(t.entity))
	}
	if o.Blobs != nil {
		b := blobsAPI{o.Blobs}
		mux.HandleFunc("GET /api/accounts/{account}/containers", own.authenticated(b.listContainers))
		mux.HandleFunc("POST /api/accounts/{account}/containers", own.authenticated(b.createContainer))
		mux.HandleFunc("DELETE /api/accounts/{account}/containers/{container}", own.authenticated(b.deleteContainer))
		mux.HandleFunc("GET /api/accounts/{account}/containers/{container}/blobs", own.authenticated(b.listBlobs))
		mux.HandleFunc("GET /api/accounts/{account}/containers/{container}/blob", own.authenticated(b.blobCall))
		mux.HandleFunc("PUT /api/accounts/{account}/containers/{container}/blob", own.authenticated(b.blobCall))
		mux.HandleFunc("DELETE /api/accounts/{account}/containers/{container}/blob", own.authenticated(b.blobCall))
	}
	if o.Queues != nil {
		q := queuesAPI{o.Queues}
		mux.HandleFunc("GET /api/accounts/{account}/queues", own.authenticated(q.listQueues))
		mux.HandleFunc("POST /api/accounts/{account}/queues", own.authenticated(q.createQueue))
		mux.HandleFunc("DELETE /api/accounts/{account}/queues/{queue}", own.authenticated(q.deleteQueue))
		mux.HandleFunc("GET /api/accounts/{account}/queues/{queue}/messages", own.authenticated(q.messages))
		mux.HandleFunc("POST /api/accounts/{account}/queues/{queue}/messages", own.authenticated(q.messages))
		mux.HandleFunc("DELETE /api/accounts/{account}/queues/{queue}/messages", own.authenticated(q.messages))
		mux.HandleFunc("POST /api/accounts/{account}/queues/{queue}/messages/get", own.authenticated(q.getMessages))
		mux.HandleFunc("DELETE /api/accounts/{account}/queues/{queue}/messages/{id}", own.authenticated(q.deleteMessage))
	}
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, azerr.Newf(azerr.ResourceNotFound, "The console's API has no call %s %s.", r.Method, r.URL.Path))
	})
}

// hostsDevelopmentAccount reports whether devstoreaccount1 is hosted with its public key, the
// only case in which the page may offer that key: any other key is a secret.
func (o owners) hostsDevelopmentAccount() bool {
	dev := auth.DevelopmentAccount()
	for _, a := range o {
		if a.Name != dev.Name {
			continue
		}
		for _, k := range a.Keys {
			if subtle.ConstantTimeCompare(k, dev.Keys[0]) == 1 {
				return true
			}
		}
	}
	return false
}
