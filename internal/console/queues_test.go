package console

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/queue"
)

const devQueues = "/api/accounts/devstoreaccount1/queues"

// clock is the Queue service's clock in the API tests: the real time, moved ahead when told,
// so that a visibility timeout can end without waiting for it.
type clock struct {
	mu    sync.Mutex
	ahead time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.ahead)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.ahead += d
	c.mu.Unlock()
}

// createQueue makes a queue of devstoreaccount1 through the service.
func (f *apiFixture) createQueue(t *testing.T, name string) queue.Queue {
	t.Helper()
	ctx := context.Background()
	if _, err := f.queues.CreateQueue(ctx, "devstoreaccount1", name, nil); err != nil {
		t.Fatal(err)
	}
	q, err := f.queues.Queue(ctx, "devstoreaccount1", name)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// message is the Azure message of a failure's body.
func (a answer) message() string {
	var v struct{ Error apiError }
	_ = json.Unmarshal([]byte(a.body), &v)
	return v.Error.Message
}

type messageList struct {
	Messages                []apiMessage
	ApproximateMessageCount int64
}

func TestQueuesAreCreatedListedWithTheirCountsAndDeleted(t *testing.T) {
	f := newAPI(t)
	for _, name := range []string{"orders", "emails", "audit"} {
		if a := f.dev(t, "POST", devQueues, map[string]string{"name": name}); a.status != 201 || a.body != "{\n  \"name\": \""+name+"\"\n}\n" {
			t.Fatalf("create %s: %d %s", name, a.status, a.body)
		}
	}
	q, err := f.queues.Queue(context.Background(), "devstoreaccount1", "emails")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := f.queues.PutMessage(context.Background(), q, "hi", 0, queue.DefaultTimeToLive); err != nil {
			t.Fatal(err)
		}
	}
	var page struct {
		Queues []apiQueue
		Next   string
	}
	f.dev(t, "GET", devQueues+"?top=2", nil).decode(t, &page)
	if len(page.Queues) != 2 || page.Queues[0] != (apiQueue{"audit", 0}) || page.Queues[1] != (apiQueue{"emails", 3}) || page.Next != "orders" {
		t.Fatalf("first page %+v", page)
	}
	next := page.Next
	page.Next = ""
	f.dev(t, "GET", devQueues+"?top=2&next="+url.QueryEscape(next), nil).decode(t, &page)
	if len(page.Queues) != 1 || page.Queues[0] != (apiQueue{"orders", 0}) || page.Next != "" {
		t.Fatalf("second page %+v", page)
	}
	f.dev(t, "GET", devQueues+"?prefix=em", nil).decode(t, &page)
	if len(page.Queues) != 1 || page.Queues[0].Name != "emails" {
		t.Fatalf("prefix em: %+v", page)
	}
	if a := f.dev(t, "DELETE", devQueues+"/emails", nil); a.status != 204 || a.body != "" {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	f.dev(t, "GET", devQueues, nil).decode(t, &page)
	if len(page.Queues) != 2 || page.Queues[0].Name != "audit" || page.Queues[1].Name != "orders" {
		t.Fatalf("after the deletion: %+v", page)
	}
	if a := f.as(t, "other", otherKey, "GET", "/api/accounts/other/queues", nil); a.status != 200 || a.body != "{\n  \"queues\": []\n}\n" {
		t.Fatalf("the other account's queues: %d %s", a.status, a.body)
	}

	for _, c := range []struct {
		name, method, path string
		body               any
		status             int
		code, says         string
	}{
		{"an existing queue", "POST", devQueues, map[string]string{"name": "orders"}, 409, "QueueAlreadyExists", "already exists: orders"},
		{"a bad name", "POST", devQueues, map[string]string{"name": "Orders_1"}, 400, "InvalidResourceName", `"Orders_1"`},
		{"a short name", "POST", devQueues, map[string]string{"name": "ab"}, 400, "OutOfRangeInput", `"ab" has 2`},
		{"a body with more", "POST", devQueues, map[string]any{"name": "x1x", "metadata": 1}, 400, "InvalidInput", "unknown field"},
		{"a missing queue", "DELETE", devQueues + "/emails", nil, 404, "QueueNotFound", "does not exist"},
		{"a page of none", "GET", devQueues + "?top=0", nil, 400, "InvalidQueryParameterValue", "1 to 5000"},
		{"another's queues", "GET", "/api/accounts/other/queues", nil, 403, "AuthorizationFailure", "sign in as other"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := f.dev(t, c.method, c.path, c.body)
			expect(t, a, c.status, c.code)
			if !strings.Contains(a.message(), c.says) {
				t.Errorf("%s does not say %q", a.body, c.says)
			}
		})
	}
	expect(t, f.as(t, "", "", "GET", devQueues, nil), 401, "AuthenticationFailed")
}

func TestAMessageIsPutPeekedReceivedAndDeletedWithItsPopReceipt(t *testing.T) {
	f := newAPI(t)
	f.createQueue(t, "work")
	base := devQueues + "/work/messages"

	a := f.dev(t, "POST", base, map[string]string{"text": "ship <order> 7 & 8"})
	var put apiMessage
	a.decode(t, &put)
	if a.status != 201 || put.ID == "" || put.PopReceipt == "" || put.TimeNextVisible == nil || put.Text != nil || put.DequeueCount != nil ||
		put.ExpirationTime.Sub(put.InsertionTime.Truncate(time.Second)) != queue.DefaultTimeToLive {
		t.Fatalf("put: %d %s", a.status, a.body)
	}
	// One more, never expiring, and one invisible for a minute.
	f.dev(t, "POST", base+"?messagettl=-1", map[string]string{"text": "forever"}).decode(t, &put)
	if put.ExpirationTime != time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC) {
		t.Errorf("a message that never expires expires %v", put.ExpirationTime)
	}
	if a := f.dev(t, "POST", base+"?visibilitytimeout=60&messagettl=120", map[string]string{"text": "later"}); a.status != 201 {
		t.Fatalf("put later: %d %s", a.status, a.body)
	}

	var peeked messageList
	f.dev(t, "GET", base, nil).decode(t, &peeked)
	if len(peeked.Messages) != 2 || peeked.ApproximateMessageCount != 3 {
		t.Fatalf("peek: %+v", peeked)
	}
	if m := peeked.Messages[0]; *m.Text != "ship <order> 7 & 8" || *m.DequeueCount != 0 || m.PopReceipt != "" || m.TimeNextVisible != nil {
		t.Fatalf("peeked %+v", m)
	}
	f.dev(t, "GET", base+"?numofmessages=1", nil).decode(t, &peeked)
	if len(peeked.Messages) != 1 {
		t.Fatalf("peek 1: %+v", peeked)
	}

	var got messageList
	a = f.dev(t, "POST", base+"/get?visibilitytimeout=10", nil)
	a.decode(t, &got)
	if a.status != 200 || len(got.Messages) != 1 {
		t.Fatalf("get: %d %s", a.status, a.body)
	}
	m := got.Messages[0]
	if *m.Text != "ship <order> 7 & 8" || *m.DequeueCount != 1 || m.PopReceipt == "" || m.TimeNextVisible.Sub(f.clock.Now()) > 10*time.Second || m.TimeNextVisible.Sub(f.clock.Now()) < 9*time.Second {
		t.Fatalf("got %+v", m)
	}
	// Received, it is invisible to a peek.
	f.dev(t, "GET", base, nil).decode(t, &peeked)
	if len(peeked.Messages) != 1 || *peeked.Messages[0].Text != "forever" {
		t.Fatalf("peek after the get: %+v", peeked)
	}

	// The receipt the put gave is stale once the message was received.
	stale := base + "/" + m.ID + "?popreceipt=" + url.QueryEscape(put.PopReceipt)
	expect(t, f.dev(t, "DELETE", stale, nil), 404, "MessageNotFound")
	expect(t, f.dev(t, "DELETE", base+"/"+m.ID, nil), 400, "MissingRequiredQueryParameter")
	expect(t, f.dev(t, "DELETE", base+"/"+m.ID+"?popreceipt=nonsense", nil), 400, "InvalidQueryParameterValue")
	del := base + "/" + m.ID + "?popreceipt=" + url.QueryEscape(m.PopReceipt)
	if a := f.dev(t, "DELETE", del, nil); a.status != 204 || a.body != "" {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	expect(t, f.dev(t, "DELETE", del, nil), 404, "MessageNotFound")

	// A message received and not deleted comes back when its window ends, counted.
	f.dev(t, "POST", base+"/get?numofmessages=32&visibilitytimeout=5", nil).decode(t, &got)
	if len(got.Messages) != 1 || *got.Messages[0].Text != "forever" {
		t.Fatalf("get all: %+v", got)
	}
	f.clock.Advance(61 * time.Second)
	f.dev(t, "GET", base, nil).decode(t, &peeked)
	if len(peeked.Messages) != 2 || *peeked.Messages[0].Text != "forever" || *peeked.Messages[0].DequeueCount != 1 || *peeked.Messages[1].Text != "later" ||
		peeked.ApproximateMessageCount != 2 {
		t.Fatalf("peek after the windows: %+v", peeked)
	}

	// Clear takes them all.
	if a := f.dev(t, "DELETE", base, nil); a.status != 204 || a.body != "" {
		t.Fatalf("clear: %d %s", a.status, a.body)
	}
	if a := f.dev(t, "GET", base, nil); a.status != 200 || a.body != "{\n  \"approximateMessageCount\": 0,\n  \"messages\": []\n}\n" {
		t.Fatalf("peek after clear: %d %s", a.status, a.body)
	}
	if a := f.dev(t, "POST", base+"/get", nil); a.status != 200 || a.body != "{\n  \"messages\": []\n}\n" {
		t.Fatalf("get after clear: %d %s", a.status, a.body)
	}
}

// Bad input gets the Queue service's own answer, as an SDK would get it from the endpoint.
func TestBadMessageCallsGetTheQueueServicesAnswers(t *testing.T) {
	f := newAPI(t)
	f.createQueue(t, "work")
	base := devQueues + "/work/messages"
	text := func(s string) map[string]string { return map[string]string{"text": s} }
	for _, c := range []struct {
		name, method, path string
		body               any
		status             int
		code, says         string
	}{
		{"a text of 64 KiB and a byte", "POST", base, text(strings.Repeat("é", 32768) + "!"), 413, "RequestBodyTooLarge", "65537 bytes of UTF-8, at most 65536"},
		{"a character XML cannot carry", "POST", base, text("bell \a"), 400, "InvalidXmlDocument", "U+0007 at byte 5"},
		{"U+FFFF", "POST", base, text("\uffff"), 400, "InvalidXmlDocument", "U+FFFF"},
		{"no text", "POST", base, map[string]string{}, 400, "InvalidInput", `{"text": "..."}`},
		{"an unknown member", "POST", base, map[string]string{"text": "a", "ttl": "5"}, 400, "InvalidInput", "unknown field"},
		{"two JSON values", "POST", base, nil, 400, "InvalidInput", "more than one"},
		{"a visibility timeout past 7 days", "POST", base + "?visibilitytimeout=604801", text("a"), 400, "OutOfRangeQueryParameterValue", "visibilitytimeout=604801 is not within 0 to 604800"},
		{"a visibility timeout not a number", "POST", base + "?visibilitytimeout=soon", text("a"), 400, "InvalidQueryParameterValue", "visibilitytimeout=soon: not an integer"},
		{"a time to live of 0", "POST", base + "?messagettl=0", text("a"), 400, "InvalidQueryParameterValue", "messagettl must be -1 (never expires) or at least 1"},
		{"a time to live below -1", "POST", base + "?messagettl=-2", text("a"), 400, "InvalidQueryParameterValue", "messagettl=0"},
		{"a time to live within the visibility timeout", "POST", base + "?messagettl=5&visibilitytimeout=5", text("a"), 400, "InvalidQueryParameterValue", "greater than visibilitytimeout"},
		{"a peek of 33", "GET", base + "?numofmessages=33", nil, 400, "OutOfRangeQueryParameterValue", "numofmessages=33 is not within 1 to 32"},
		{"a peek of 0", "GET", base + "?numofmessages=0", nil, 400, "OutOfRangeQueryParameterValue", "numofmessages=0"},
		{"a get of 33", "POST", base + "/get?numofmessages=33", nil, 400, "OutOfRangeQueryParameterValue", "numofmessages=33"},
		{"a get of a huge count", "POST", base + "/get?numofmessages=99999999999", nil, 400, "OutOfRangeQueryParameterValue", "numofmessages=99999999999"},
		{"a get without visibility", "POST", base + "/get?visibilitytimeout=0", nil, 400, "OutOfRangeQueryParameterValue", "visibilitytimeout=0 is not within 1 to 604800"},
		{"a peek of a missing queue", "GET", devQueues + "/gone/messages", nil, 404, "QueueNotFound", "does not exist"},
		{"a put to a missing queue", "POST", devQueues + "/gone/messages", text("a"), 404, "QueueNotFound", "does not exist"},
		{"a get of a missing queue", "POST", devQueues + "/gone/messages/get", nil, 404, "QueueNotFound", "does not exist"},
		{"a clear of a missing queue", "DELETE", devQueues + "/gone/messages", nil, 404, "QueueNotFound", "does not exist"},
		{"a delete in a missing queue", "DELETE", devQueues + "/gone/messages/x?popreceipt=y", nil, 404, "QueueNotFound", "does not exist"},
		{"a queue name out of rules", "GET", devQueues + "/No--Way/messages", nil, 400, "InvalidResourceName", `"No--Way"`},
		{"a message id out of nowhere", "DELETE", base + "/nothing?popreceipt=AAAAAAAAAAAAAAAAAAAAAQAAAAA", nil, 404, "MessageNotFound", "no message nothing"},
		{"another's queue", "GET", "/api/accounts/other/queues/work/messages", nil, 403, "AuthorizationFailure", "sign in as other"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var a answer
			if c.name == "two JSON values" {
				a = f.raw(t, c.method, c.path, "application/json", `{"text":"a"} {"text":"b"}`)
			} else {
				a = f.dev(t, c.method, c.path, c.body)
			}
			expect(t, a, c.status, c.code)
			if !strings.Contains(a.message(), c.says) {
				t.Errorf("%s does not say %q", a.body, c.says)
			}
		})
	}
	// None of it stored anything; what Azure takes is taken: 64 KiB exactly, a \r.
	var peeked messageList
	f.dev(t, "GET", base, nil).decode(t, &peeked)
	if len(peeked.Messages) != 0 || peeked.ApproximateMessageCount != 0 {
		t.Fatalf("refused calls stored %+v", peeked)
	}
	for _, s := range []string{strings.Repeat("é", 32768), "line\r\nend\ttab \U0001F600"} {
		if a := f.dev(t, "POST", base, text(s)); a.status != 201 {
			t.Fatalf("put %.20q: %d %s", s, a.status, a.body)
		}
	}
	f.dev(t, "GET", base, nil).decode(t, &peeked)
	if len(peeked.Messages) != 2 || len(*peeked.Messages[0].Text) != 65536 || *peeked.Messages[1].Text != "line\r\nend\ttab \U0001F600" {
		t.Fatalf("stored %d messages", len(peeked.Messages))
	}
}
