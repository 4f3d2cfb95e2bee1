package queuehttp

import (
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/server"
	"github.com/tabula-dev/tabula/internal/throttle"
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

// route dispatches an authenticated request to its operation.
func (s *Server) route(rq *request) error {
	res, err := parseResource(rq.Path)
	if err != nil {
		return err
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
		return server.SecondaryIsReadOnly(rq.Account)
	}
	switch res.kind {
	case resService:
		return s.routeService(rq, res, method, q.Get("restype"), comp)
	case resQueue:
		switch {
		case comp == "" && method == http.MethodPut:
			return s.authorized(rq, auth.OpCreateQueue, res.queue, s.createQueue)
		case comp == "" && method == http.MethodDelete:
			return s.authorized(rq, auth.OpDeleteQueue, res.queue, s.deleteQueue)
		case comp == "metadata" && readOnly:
			return s.authorized(rq, auth.OpGetQueueMetadata, res.queue, s.getQueueMetadata)
		case comp == "metadata" && method == http.MethodPut:
			return s.authorized(rq, auth.OpSetQueueMetadata, res.queue, s.setQueueMetadata)
		case comp == "acl" && readOnly:
			return s.authorized(rq, auth.OpGetQueueACL, res.queue, s.getQueueACL)
		case comp == "acl" && method == http.MethodPut:
			return s.authorized(rq, auth.OpSetQueueACL, res.queue, s.setQueueACL)
		case comp != "" && comp != "metadata" && comp != "acl":
			return badComp(comp, "a queue")
		case comp == "" && readOnly:
			return azerr.Newf(azerr.MissingRequiredQueryParameter, "A required query parameter was not specified for this request: reading a queue needs comp=metadata or comp=acl.")
		}
	case resMessages:
		if comp != "" {
			return badComp(comp, "a queue's messages")
		}
		switch method {
		case http.MethodPost:
			return s.authorized(rq, auth.OpPutMessage, res.queue, s.putMessage)
		case http.MethodGet:
			if isTrue(q.Get("peekonly")) {
				return s.authorized(rq, auth.OpPeekMessages, res.queue, s.peekMessages)
			}
			return s.authorized(rq, auth.OpGetMessages, res.queue, s.getMessages)
		case http.MethodDelete:
			return s.authorized(rq, auth.OpClearMessages, res.queue, s.clearMessages)
		}
	case resMessage:
		if comp != "" {
			return badComp(comp, "a message")
		}
		switch method {
		case http.MethodPut:
			return s.authorized(rq, auth.OpUpdateMessage, res.queue, func(rq *request, queueName string) error {
				return s.updateMessage(rq, queueName, res.messageID)
			})
		case http.MethodDelete:
			return s.authorized(rq, auth.OpDeleteMessage, res.queue, func(rq *request, queueName string) error {
				return s.deleteMessage(rq, queueName, res.messageID)
			})
		}
	}
	return unsupportedVerb(method, res)
}

func (s *Server) routeService(rq *request, res resource, method, restype, comp string) error {
	switch {
	case comp == "list" && restype == "":
		if method == http.MethodGet {
			return s.authorized(rq, auth.OpListQueues, "", func(rq *request, _ string) error { return s.listQueues(rq) })
		}
	case restype == "service" && comp == "properties":
		switch method {
		case http.MethodGet:
			return s.authorized(rq, auth.OpGetQueueServiceProperties, "", func(rq *request, _ string) error { return s.getServiceProperties(rq) })
		case http.MethodPut:
			return s.authorized(rq, auth.OpSetQueueServiceProperties, "", func(rq *request, _ string) error { return s.setServiceProperties(rq) })
		}
	case restype == "service" && comp == "stats":
		if method == http.MethodGet {
			return s.authorized(rq, auth.OpGetQueueServiceStats, "", func(rq *request, _ string) error { return s.getServiceStats(rq) })
		}
	case restype == "service" && comp == "userdelegationkey":
		if method == http.MethodPost {
			return s.getUserDelegationKey(rq)
		}
	case comp == "" && restype == "":
		return azerr.Newf(azerr.MissingRequiredQueryParameter, "A required query parameter was not specified for this request: the service root needs comp=list, or restype=service with comp=properties, comp=stats or comp=userdelegationkey.")
	default:
		return azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid: restype=%q, comp=%q is not an operation on the service.", restype, comp)
	}
	return unsupportedVerb(method, res)
}

func badComp(comp, on string) error {
	return azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid: comp=%q is not an operation on %s.", comp, on)
}

// isTrue reads a boolean query parameter as the real service does, ignoring case.
func isTrue(v string) bool { return strings.EqualFold(v, "true") }

// authorized runs handler on the queue (empty for service operations) if the request's grant
// allows op.
func (s *Server) authorized(rq *request, op *auth.Operation, queueName string, handler func(*request, string) error) error {
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
}

// admit lets the request run now, or refuses it with 503 ServerBusy as Azure does beyond its
// scalability targets (--throttle): a message operation counts its messages against its queue
// (a Get or Peek as many as it asks for), every request one against the account.
func (s *Server) admit(rq *request, op *auth.Operation, queueName string) error {
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
	err := s.Throttle.TakeQueue(rq.Account, queueName, messages)
	if err != nil {
		rq.NoteAttrs(slog.String("throttled", throttle.ScopeOf(err)))
	}
	return err
}
