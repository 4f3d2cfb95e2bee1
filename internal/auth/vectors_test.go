package auth

import (
	"context"
	"net/http"
	"testing"
)

// The vectors of auth.md §4–6, verified there with openssl. Each is checked three ways: the
// literal string-to-sign against the signature (with crypto/hmac), the package's signing or
// string-to-sign code against the literal, and a request carrying the signature through
// Authenticate.

func TestSharedKeyVectors(t *testing.T) {
	for _, v := range []struct {
		name                             string
		lite                             bool
		account                          string
		method, contentType, rawPath, qs string
		stringToSign, signature          string
	}{
		{"SharedKey create table, path style", false, "devstoreaccount1", "POST", "application/json", "/devstoreaccount1/Tables", "",
			"POST\n\napplication/json\nMon, 02 Aug 2021 18:01:40 GMT\n/devstoreaccount1/devstoreaccount1/Tables",
			"jmS60LCZ7OCJqGgtFQUN3UqL4p6m8QiePS5qZdSRaGA="},
		{"SharedKeyLite create table", true, "devstoreaccount1", "POST", "application/json", "/devstoreaccount1/Tables", "",
			"Mon, 02 Aug 2021 18:01:40 GMT\n/devstoreaccount1/devstoreaccount1/Tables",
			"C34gQnQ/N612IP5frLN2xGODjztDO7WY/yzBvw6ZyKs="},
		{"SharedKey Get Table ACL", false, "devstoreaccount1", "GET", "", "/devstoreaccount1/mytable", "comp=acl",
			"GET\n\n\nMon, 02 Aug 2021 18:01:40 GMT\n/devstoreaccount1/devstoreaccount1/mytable?comp=acl",
			"wwlk3mXX+1zMjvP+Ea5SlVvj0Ons+hvEfx+0l3mW1Ao="},
		{"SharedKey host-style point query", false, "myaccount", "GET", "", "/mytable(PartitionKey='p1',RowKey='r1')", "$format=application%2Fjson",
			"GET\n\n\nMon, 02 Aug 2021 18:01:40 GMT\n/myaccount/mytable(PartitionKey='p1',RowKey='r1')",
			"sXExZ8yTa1lxRl4LZISpMjrtoqeAOrOjvIcespL+pQs="},
		{"SharedKeyLite $batch", true, "devstoreaccount1", "POST", "multipart/mixed; boundary=batch_1", "/devstoreaccount1/$batch", "",
			"Mon, 02 Aug 2021 18:01:40 GMT\n/devstoreaccount1/devstoreaccount1/$batch",
			"LCylcEYXNxpOo3Q89uXM3b8W7Cx9Mo0FuzcE1yNWUSw="},
	} {
		t.Run(v.name, func(t *testing.T) {
			key := devKey()
			if got := hmacBase64(key, v.stringToSign); got != v.signature {
				t.Fatalf("HMAC of the vector's string-to-sign = %s, want %s", got, v.signature)
			}
			resource := v.stringToSign[len(v.stringToSign)-len(canonicalResourceOf(v.stringToSign)):]
			var signed string
			if v.lite {
				signed = SignSharedKeyLite(key, vectorDate, resource)
			} else {
				signed = SignSharedKey(key, v.method, "", v.contentType, vectorDate, resource)
			}
			if signed != v.signature {
				t.Fatalf("package signature = %s, want %s", signed, v.signature)
			}

			h := http.Header{}
			h.Set("x-ms-date", vectorDate)
			h.Set("x-ms-version", "2019-02-02")
			if v.contentType != "" && !v.lite {
				h.Set("Content-Type", v.contentType)
			}
			scheme := "SharedKey "
			if v.lite {
				scheme = "SharedKeyLite "
			}
			h.Set("Authorization", scheme+v.account+":"+v.signature)
			r := &Request{Method: v.method, RawPath: v.rawPath, Query: mustQuery(t, v.qs), Header: h, Account: v.account}
			a := newAuthenticator(vectorTime, DevelopmentAccount(), Account{Name: v.account, Keys: [][]byte{key}})
			g, err := a.Authenticate(context.Background(), r)
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if g.Account() != v.account {
				t.Fatalf("grant is for %q, want %q", g.Account(), v.account)
			}
		})
	}
}

// canonicalResourceOf returns the last line of a string-to-sign.
func canonicalResourceOf(stringToSign string) string {
	for i := len(stringToSign) - 1; i >= 0; i-- {
		if stringToSign[i] == '\n' {
			return stringToSign[i+1:]
		}
	}
	return stringToSign
}

// TestSharedKeyFullRequestVector is the complete request of auth.md §4.
func TestSharedKeyFullRequestVector(t *testing.T) {
	h := http.Header{}
	h.Set("Host", "127.0.0.1:10002")
	h.Set("x-ms-version", "2019-02-02")
	h.Set("x-ms-date", vectorDate)
	h.Set("Date", vectorDate)
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json;odata=minimalmetadata")
	h.Set("DataServiceVersion", "3.0")
	h.Set("Authorization", "SharedKey devstoreaccount1:jmS60LCZ7OCJqGgtFQUN3UqL4p6m8QiePS5qZdSRaGA=")
	h.Set("Content-Length", "23")
	r := &Request{Method: "POST", RawPath: "/devstoreaccount1/Tables", Header: h, Account: "devstoreaccount1"}
	g, err := newAuthenticator(vectorTime).Authenticate(context.Background(), r)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if err := g.Authorize(OpCreateTable, Target{Name: "", PartitionKey: "", RowKey: ""}); err != nil {
		t.Fatalf("account key holder cannot create a table: %v", err)
	}
}

func TestSASVectors(t *testing.T) {
	for _, v := range []struct {
		name         string
		query        string // as in the URL
		stringToSign string
		signature    string
		op           *Operation // an operation the SAS allows
	}{
		{"account SAS sv 2019-02-02",
			"sv=2019-02-02&ss=t&srt=sco&sp=rwdlacu&se=2030-01-01T00%3A00%3A00Z&spr=https%2Chttp&sig=dKEa4zPUq%2FdWdOLrCYusn1Jnz45OJCCdBPi%2BhMWeijk%3D",
			"devstoreaccount1\nrwdlacu\nt\nsco\n\n2030-01-01T00:00:00Z\n\nhttps,http\n2019-02-02\n",
			"dKEa4zPUq/dWdOLrCYusn1Jnz45OJCCdBPi+hMWeijk=", OpCreateTable},
		{"account SAS sv 2020-12-06 (ses line)",
			"sv=2020-12-06&ss=t&srt=sco&sp=rwdlacu&se=2030-01-01T00%3A00%3A00Z&spr=https%2Chttp&sig=aQbb1uM9CNZPJhjuzMWpvrja5t6VW2FlvCUFVvjctAk%3D",
			"devstoreaccount1\nrwdlacu\nt\nsco\n\n2030-01-01T00:00:00Z\n\nhttps,http\n2020-12-06\n\n",
			"aQbb1uM9CNZPJhjuzMWpvrja5t6VW2FlvCUFVvjctAk=", OpQueryTables},
		{"table SAS raud",
			"sv=2019-07-07&tn=mytable&sp=raud&se=2030-01-01T00%3A00%3A00Z&sig=o6Qt4PLMUdoi6549xhHa0YySR3c3WLebsYPq4hkFA3c%3D",
			"raud\n\n2030-01-01T00:00:00Z\n/table/devstoreaccount1/mytable\n\n\n\n2019-07-07\n\n\n\n",
			"o6Qt4PLMUdoi6549xhHa0YySR3c3WLebsYPq4hkFA3c=", OpDeleteEntity},
		{"table SAS with spr",
			"sv=2019-07-07&tn=mytable&sp=raud&se=2030-01-01T00%3A00%3A00Z&spr=https%2Chttp&sig=HGAeutScuMTwiFgqS8EMdq55BWcfbUaeYpoyzH8VPD8%3D",
			"raud\n\n2030-01-01T00:00:00Z\n/table/devstoreaccount1/mytable\n\n\nhttps,http\n2019-07-07\n\n\n\n",
			"HGAeutScuMTwiFgqS8EMdq55BWcfbUaeYpoyzH8VPD8=", OpInsertOrMergeEntity},
		{"table SAS read-only, one partition",
			"sv=2019-07-07&tn=mytable&sp=r&st=2021-01-01T00%3A00%3A00Z&se=2030-01-01T00%3A00%3A00Z&spk=p1&epk=p1&sig=dimCnHrqC3Se1tGdVSncA2HpFvU3sTy0nhjC5%2BeQnXM%3D",
			"r\n2021-01-01T00:00:00Z\n2030-01-01T00:00:00Z\n/table/devstoreaccount1/mytable\n\n\n\n2019-07-07\np1\n\np1\n",
			"dimCnHrqC3Se1tGdVSncA2HpFvU3sTy0nhjC5+eQnXM=", OpQueryEntities},
	} {
		t.Run(v.name, func(t *testing.T) {
			if got := hmacBase64(devKey(), v.stringToSign); got != v.signature {
				t.Fatalf("HMAC of the vector's string-to-sign = %s, want %s", got, v.signature)
			}
			q := mustQuery(t, v.query)
			tok, err := parseSAS(q, Table, "/mytable()")
			if err != nil {
				t.Fatalf("parseSAS: %v", err)
			}
			if got := tok.stringsToSign("devstoreaccount1")[0]; got != v.stringToSign {
				t.Fatalf("string-to-sign\n got %q\nwant %q", got, v.stringToSign)
			}
			g, err := newAuthenticator(sasTime).Authenticate(context.Background(), sasRequest(q))
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if err := g.Authorize(v.op, Target{Name: "mytable", PartitionKey: "p1", RowKey: "r1"}); err != nil {
				t.Fatalf("Authorize(%v): %v", v.op, err)
			}
		})
	}
}
