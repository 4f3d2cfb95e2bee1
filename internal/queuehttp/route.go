package queuehttp

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/server"
)

// resource is what a request's path addresses (shared/spec/queue.md §1): after the account,
// segment 1 is the queue, segment 2 the literal "messages", segment 3 a message id.
type resource struct {
	kind      resourceKind
	queue     string
	messageID string
}

type resourceKind uint8

const (
	resService  resourceKind = iota // /
	resQueue                        // /q
	resMessages                     // /q/messages
	resMessage                      // /q/messages/{id}
)

// parseResource reads the path after the account, still percent-encoded. A trailing slash
// is ignored.
func parseResource(escaped string) (resource, error) {
	p := strings.TrimPrefix(escaped, "/")
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return resource{kind: resService}, nil
	}
	raw := strings.Split(p, "/")
	segs := make([]string, len(raw))
	for i, seg := range raw {
		s, err := url.PathUnescape(seg)
		if err != nil || s == "" {
			return resource{}, invalidURI(escaped)
		}
		segs[i] = s
	}
	switch {
	case len(segs) == 1:
		return resource{kind: resQueue, queue: segs[0]}, nil
	case segs[1] != "messages" || len(segs) > 3:
		return resource{}, invalidURI(escaped)
	case len(segs) == 2:
		return resource{kind: resMessages, queue: segs[0]}, nil
	}
	return resource{kind: resMessage, queue: segs[0], messageID: segs[2]}, nil
}

func invalidURI(p string) error {
	return azerr.Newf(azerr.InvalidURI, "The requested URI does not represent any resource on the server: %s is not a queue, its messages or one message.", p)
}

func unsupportedVerb(method string, res resource) error {
	what := map[resourceKind]string{resService: "the service", resQueue: "a queue", resMessages: "a queue's messages", resMessage: "a message"}[res.kind]
	return azerr.Newf(azerr.UnsupportedHTTPVerb, "The resource doesn't support the specified HTTP verb %s on %s.", method, what)
}

// call is what a request asks for, as route finds it from the URL, the method and the
// headers before the request is authenticated: the operation and queue it names, under which
// the request is logged and counted even when authentication refuses it, and serve, which
// serves it once it is authenticated (noting it for the fault rules, authorizing it, applying
// it).
type call struct {
	op    *auth.Operation
	queue string
	serve func(*request) error
}

// route finds what the request asks for. Its error is answered only once the request is
// authenticated: authentication is judged first, as Azure judges it.
func (s *Server) route(rq *request) (call, error) {
	res, err := parseResource(rq.Path)
	if err != nil {
		return call{}, err
	}
	method := rq.R.Method
	q := rq.Query
	comp := q.Get("comp")
	// The secondary endpoint is a read-only replica; dequeuing changes messages even though it
	// is a GET.
	readOnly := method == http.MethodGet || method == http.MethodHead
	if res.kind == resMessages && method == http.MethodGet && !isTrue(q.Get("peekonly")) {
		readOnly = false
	}
	if rq.Secondary && !readOnly {
		return call{}, server.SecondaryIsReadOnly(rq.Account)
	}
	switch res.kind {
	case resService:
		return s.routeService(rq, res, method, q.Get("restype"), comp)
	case resQueue:
		switch {
		case comp == "" && method == http.MethodPut:
			return s.authorized(auth.OpCreateQueue, res.queue, s.createQueue), nil
		case comp == "" && method == http.MethodDelete:
			return s.authorized(auth.OpDeleteQueue, res.queue, s.deleteQueue), nil
		case comp == "metadata" && readOnly:
			return s.authorized(auth.OpGetQueueMetadata, res.queue, s.getQueueMetadata), nil
		case comp == "metadata" && method == http.MethodPut:
			return s.authorized(auth.OpSetQueueMetadata, res.queue, s.setQueueMetadata), nil
		case comp == "acl" && readOnly:
			return s.authorized(auth.OpGetQueueACL, res.queue, s.getQueueACL), nil
		case comp == "acl" && method == http.MethodPut:
			return s.authorized(auth.OpSetQueueACL, res.queue, s.setQueueACL), nil
		case comp != "" && comp != "metadata" && comp != "acl":
			return call{}, badComp(comp, "a queue")
		case comp == "" && readOnly:
			return call{}, azerr.Newf(azerr.MissingRequiredQueryParameter, "A required query parameter was not specified for this request: reading a queue needs comp=metadata or comp=acl.")
		}
	case resMessages:
		if comp != "" {
			return call{}, badComp(comp, "a queue's messages")
		}
		switch method {
		case http.MethodPost:
			return s.authorized(auth.OpPutMessage, res.queue, s.putMessage), nil
		case http.MethodGet:
			if isTrue(q.Get("peekonly")) {
				return s.authorized(auth.OpPeekMessages, res.queue, s.peekMessages), nil
			}
			return s.authorized(auth.OpGetMessages, res.queue, s.getMessages), nil
		case http.MethodDelete:
			return s.authorized(auth.OpClearMessages, res.queue, s.clearMessages), nil
		}
	case resMessage:
		if comp != "" {
			return call{}, badComp(comp, "a message")
		}
		switch method {
		case http.MethodPut:
			return s.authorized(auth.OpUpdateMessage, res.queue, func(rq *request, queueName string) error {
				return s.updateMessage(rq, queueName, res.messageID)
			}), nil
		case http.MethodDelete:
			return s.authorized(auth.OpDeleteMessage, res.queue, func(rq *request, queueName string) error {
				return s.deleteMessage(rq, queueName, res.messageID)
			}), nil
		}
	}
	return call{}, unsupportedVerb(method, res)
}

func (s *Server) routeService(rq *request, res resource, method, restype, comp string) (call, error) {
	switch {
	case comp == "list" && restype == "":
		if method == http.MethodGet {
			return s.authorized(auth.OpListQueues, "", func(rq *request, _ string) error { return s.listQueues(rq) }), nil
		}
	case restype == "service" && comp == "properties":
		switch method {
		case http.MethodGet:
			return s.authorized(auth.OpGetQueueServiceProperties, "", func(rq *request, _ string) error { return s.getServiceProperties(rq) }), nil
		case http.MethodPut:
			return s.authorized(auth.OpSetQueueServiceProperties, "", func(rq *request, _ string) error { return s.setServiceProperties(rq) }), nil
		}
	case restype == "service" && comp == "stats":
		if method == http.MethodGet {
			return s.authorized(auth.OpGetQueueServiceStats, "", func(rq *request, _ string) error { return s.getServiceStats(rq) }), nil
		}
	case restype == "service" && comp == "userdelegationkey":
		if method == http.MethodPost {
			return call{op: auth.OpGetQueueUserDelegationKey, serve: s.getUserDelegationKey}, nil
		}
	case comp == "" && restype == "":
		return call{}, azerr.Newf(azerr.MissingRequiredQueryParameter, "A required query parameter was not specified for this request: the service root needs comp=list, or restype=service with comp=properties, comp=stats or comp=userdelegationkey.")
	default:
		return call{}, azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid: restype=%q, comp=%q is not an operation on the service.", restype, comp)
	}
	return call{}, unsupportedVerb(method, res)
}

func badComp(comp, on string) error {
	return azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid: comp=%q is not an operation on %s.", comp, on)
}

// isTrue reads a boolean query parameter as the real service does, ignoring case.
func isTrue(v string) bool { return strings.EqualFold(v, "true") }

// authorized is the call of op on the queue (empty for service operations), served by
// handler once the request's grant allows it and the throttle admits it.
func (s *Server) authorized(op *auth.Operation, queueName string, handler func(*request, string) error) call {
	return call{op: op, queue: queueName, serve: func(rq *request) error {
		if err := rq.Note(op.Name, queueName); err != nil {
			return err
		}
		if err := rq.grant.Authorize(op, auth.Target{Name: queueName}); err != nil {
			return err
		}
		if err := s.admit(rq, op, queueName); err != nil {
			return err
		}
		return handler(rq, queueName)
	}}
}

// admit lets the request run now, or refuses it with 503 ServerBusy as Azure does beyond its
// scalability targets (--throttle): a message operation counts its messages against its queue
// (a Get or Peek as many as it asks for), every request one against the account.
func (s *Server) admit(rq *request, op *auth.Operation, queueName string) error {
	if s.Throttle == nil {
		return nil
	}
	messages := 1
	switch op {
	case auth.OpGetMessages, auth.OpPeekMessages:
		if n, err := strconv.Atoi(rq.Query.Get("numofmessages")); err == nil && n >= 1 && n <= 32 {
			messages = n
		}
	case auth.OpPutMessage, auth.OpUpdateMessage, auth.OpDeleteMessage, auth.OpClearMessages:
	default:
		queueName = "" // the queue's settings, not its messages
	}
	return s.Throttle.TakeQueue(rq.Account, queueName, messages)
}
