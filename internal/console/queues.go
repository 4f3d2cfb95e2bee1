package console

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/queue"
)

// The Queue service's part of the API (see api.go for the contract). Message calls take
// Azure's query parameters under Azure's names (numofmessages, visibilitytimeout, messagettl,
// popreceipt), so that the service's own refusals, which name them, read right.

type queuesAPI struct{ svc *queue.Service }

type apiQueue struct {
	Name                    string `json:"name"`
	ApproximateMessageCount int64  `json:"approximateMessageCount"`
}

func (a queuesAPI) listQueues(w http.ResponseWriter, r *http.Request, account string) {
	top, err := listTop(r, queue.MaxListResults)
	if err != nil {
		fail(w, err)
		return
	}
	q := r.URL.Query()
	page, err := a.svc.ListQueues(r.Context(), account, queue.QueueListing{Prefix: q.Get("prefix"), Marker: q.Get("next"), MaxResults: top})
	if err != nil {
		fail(w, err)
		return
	}
	out := struct {
		Queues []apiQueue `json:"queues"`
		Next   string     `json:"next,omitempty"`
	}{Queues: make([]apiQueue, 0, len(page.Queues)), Next: page.NextMarker}
	for _, qu := range page.Queues {
		n, err := a.svc.ApproximateMessageCount(r.Context(), qu)
		if e := (*azerr.Error)(nil); errors.As(err, &e) && e.Code == azerr.QueueNotFound {
			continue // deleted since it was listed
		}
		if err != nil {
			fail(w, err)
			return
		}
		out.Queues = append(out.Queues, apiQueue{Name: qu.Name, ApproximateMessageCount: n})
	}
	writeJSON(w, http.StatusOK, out)
}

// createQueue is Create Queue, without metadata. Azure answers 204 to the creation of a queue
// that exists with the same metadata; the console says the queue exists instead, as it does
// for tables and containers, rather than report a creation that did not happen.
func (a queuesAPI) createQueue(w http.ResponseWriter, r *http.Request, account string) {
	var body struct {
		Name string `json:"name"`
	}
	if err := decodeBody(r, &body); err != nil {
		fail(w, err)
		return
	}
	created, err := a.svc.CreateQueue(r.Context(), account, body.Name, nil)
	if err == nil && !created {
		err = azerr.Newf(azerr.QueueAlreadyExists, "The specified queue already exists: %s.", body.Name)
	}
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"name": body.Name})
}

func (a queuesAPI) deleteQueue(w http.ResponseWriter, r *http.Request, account string) {
	if err := a.svc.DeleteQueue(r.Context(), account, r.PathValue("queue")); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// apiMessage is a message as the API writes it. Peek leaves out popReceipt and
// timeNextVisible, Put leaves out dequeueCount and text. A message that never expires
// expires 9999-12-31T23:59:59Z, as Azure shows it.
type apiMessage struct {
	ID              string     `json:"id"`
	InsertionTime   time.Time  `json:"insertionTime"`
	ExpirationTime  time.Time  `json:"expirationTime"`
	TimeNextVisible *time.Time `json:"timeNextVisible,omitempty"`
	PopReceipt      string     `json:"popReceipt,omitempty"`
	DequeueCount    *int64     `json:"dequeueCount,omitempty"`
	Text            *string    `json:"text,omitempty"`
}

// messageOf writes m; received says whether it carries a pop receipt (Put, Get) and read
// whether its dequeue count and text (Peek, Get).
func messageOf(m queue.Message, received, read bool) apiMessage {
	out := apiMessage{ID: m.ID, InsertionTime: m.InsertionTime, ExpirationTime: m.ExpirationTime}
	if received {
		out.TimeNextVisible, out.PopReceipt = &m.TimeNextVisible, m.PopReceipt
	}
	if read {
		out.DequeueCount, out.Text = &m.DequeueCount, &m.Text
	}
	return out
}

func messagesOf(ms []queue.Message, received bool) []apiMessage {
	out := make([]apiMessage, len(ms))
	for i, m := range ms {
		out[i] = messageOf(m, received, true)
	}
	return out
}

// intParam reads an integer query parameter, def when absent, refusing what is not an
// integer as the Queue endpoint does.
func intParam(r *http.Request, name string, def int64) (int64, error) {
	q := r.URL.Query()
	if !q.Has(name) {
		return def, nil
	}
	v := q.Get(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		e := azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid: %s=%s: not an integer.", name, v)
		e.Details = []azerr.Detail{{Name: "QueryParameterName", Value: name}, {Name: "QueryParameterValue", Value: v}, {Name: "Reason", Value: "not an integer"}}
		return 0, e
	}
	return n, nil
}

// clampInt is n as an int, saturating where an int ends (only on 32-bit platforms): the
// service then refuses it as the out-of-range count it is.
func clampInt(n int64) int { return int(max(math.MinInt, min(n, math.MaxInt))) }

// seconds turns a count of seconds into a Duration, saturating where a Duration ends: no limit
// of the service lies near, so it still refuses what is out of range.
func seconds(n int64) time.Duration {
	const most = math.MaxInt64 / int64(time.Second)
	return time.Duration(max(-most, min(n, most))) * time.Second
}

// checkMessageText refuses text that no client of the Queue endpoint could send or read back:
// characters XML 1.0 cannot carry (most C0 controls, U+FFFE, U+FFFF). The endpoint refuses
// them in a request body as 400 InvalidXmlDocument; the console, which takes JSON, refuses
// them the same way, or it would store a message no SDK can receive.
func checkMessageText(text string) error {
	for i, c := range text {
		if c == '\t' || c == '\n' || c == '\r' || c >= 0x20 && c <= 0xD7FF || c >= 0xE000 && c <= 0xFFFD || c >= 0x10000 && c <= utf8.MaxRune {
			continue
		}
		return azerr.Newf(azerr.InvalidXMLDocument, "XML specified is not syntactically valid: the message text holds U+%04X at byte %d, a character XML 1.0 cannot carry, so no client of the Queue service could read it back.", c, i)
	}
	return nil
}

// messages answers Peek Messages (GET: numofmessages, 1 to 32, default 32, with the queue's
// approximate count), Put Message (POST: {"text"}, visibilitytimeout default 0, messagettl
// default 7 days, -1 never) and Clear Messages (DELETE).
func (a queuesAPI) messages(w http.ResponseWriter, r *http.Request, account string) {
	q, err := a.svc.Queue(r.Context(), account, r.PathValue("queue"))
	if err != nil {
		fail(w, err)
		return
	}
	switch r.Method {
	case http.MethodGet:
		n, err := intParam(r, "numofmessages", queue.MaxMessagesPerGet)
		if err != nil {
			fail(w, err)
			return
		}
		ms, err := a.svc.PeekMessages(r.Context(), q, clampInt(n))
		if err != nil {
			fail(w, err)
			return
		}
		count, err := a.svc.ApproximateMessageCount(r.Context(), q)
		if err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"messages": messagesOf(ms, false), "approximateMessageCount": count})
	case http.MethodPost:
		visibility, err := intParam(r, "visibilitytimeout", 0)
		if err != nil {
			fail(w, err)
			return
		}
		ttlSeconds, err := intParam(r, "messagettl", int64(queue.DefaultTimeToLive/time.Second))
		if err != nil {
			fail(w, err)
			return
		}
		ttl := seconds(ttlSeconds)
		switch {
		case ttlSeconds == -1:
			ttl = queue.NeverExpires
		case ttlSeconds < -1:
			ttl = 0 // refused by the service as the invalid value it is
		}
		var body struct {
			Text *string `json:"text"`
		}
		if err := decodeBody(r, &body); err != nil {
			fail(w, err)
			return
		}
		if body.Text == nil {
			fail(w, azerr.Newf(azerr.InvalidInput, `Put Message takes {"text": "..."}.`))
			return
		}
		if err := checkMessageText(*body.Text); err != nil {
			fail(w, err)
			return
		}
		m, err := a.svc.PutMessage(r.Context(), q, *body.Text, seconds(visibility), ttl)
		if err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, messageOf(m, true, false))
	case http.MethodDelete:
		if err := a.svc.ClearMessages(r.Context(), q); err != nil {
			fail(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// getMessages is Get Messages: numofmessages (1 to 32, default 1) messages, each invisible
// for visibilitytimeout seconds (default 30) and with a new pop receipt.
func (a queuesAPI) getMessages(w http.ResponseWriter, r *http.Request, account string) {
	q, err := a.svc.Queue(r.Context(), account, r.PathValue("queue"))
	if err != nil {
		fail(w, err)
		return
	}
	n, err := intParam(r, "numofmessages", 1)
	if err != nil {
		fail(w, err)
		return
	}
	visibility, err := intParam(r, "visibilitytimeout", int64(queue.DefaultGetVisibilityTimeout/time.Second))
	if err != nil {
		fail(w, err)
		return
	}
	ms, err := a.svc.GetMessages(r.Context(), q, clampInt(n), seconds(visibility))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": messagesOf(ms, true)})
}

// deleteMessage is Delete Message: the message's id and its latest pop receipt.
func (a queuesAPI) deleteMessage(w http.ResponseWriter, r *http.Request, account string) {
	q, err := a.svc.Queue(r.Context(), account, r.PathValue("queue"))
	if err != nil {
		fail(w, err)
		return
	}
	if !r.URL.Query().Has("popreceipt") {
		e := azerr.Newf(azerr.MissingRequiredQueryParameter, "A required query parameter was not specified for this request: popreceipt.")
		e.Details = []azerr.Detail{{Name: "QueryParameterName", Value: "popreceipt"}}
		fail(w, e)
		return
	}
	if err := a.svc.DeleteMessage(r.Context(), q, r.PathValue("id"), r.URL.Query().Get("popreceipt")); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
