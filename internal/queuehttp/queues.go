package queuehttp

import (
	"bytes"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/queue"
	"github.com/tabula-dev/tabula/internal/server"
	"github.com/tabula-dev/tabula/internal/serviceprops"
	"github.com/tabula-dev/tabula/internal/xmltext"
)

// --- metadata headers ---

// requestMetadata reads the x-ms-meta-* headers, names in the case the client wrote them
// where the server could recover it (server.MetaName). A header sent twice is one value,
// joined with commas as HTTP joins repeated headers.
func requestMetadata(h http.Header) queue.Metadata {
	var md queue.Metadata
	for k, v := range h {
		if name, ok := server.MetaName(k); ok {
			md = append(md, queue.MetadataPair{Name: name, Value: strings.Join(v, ",")})
		}
	}
	slices.SortFunc(md, func(a, b queue.MetadataPair) int {
		if c := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return md
}

func writeMetadataHeaders(h http.Header, md queue.Metadata) {
	for _, p := range md {
		h["x-ms-meta-"+p.Name] = []string{p.Value}
	}
}

// --- queues ---

func (s *Server) createQueue(rq *request, name string) error {
	created, err := s.svc.CreateQueue(rq.ctx, rq.Account, name, requestMetadata(rq.R.Header))
	if err != nil {
		return err
	}
	if created {
		rq.writeEmpty(http.StatusCreated)
	} else {
		rq.writeEmpty(http.StatusNoContent) // existed with the same metadata (queue.md §4.2)
	}
	return nil
}

func (s *Server) deleteQueue(rq *request, name string) error {
	if err := s.svc.DeleteQueue(rq.ctx, rq.Account, name); err != nil {
		return err
	}
	rq.writeEmpty(http.StatusNoContent)
	return nil
}

func (s *Server) getQueueMetadata(rq *request, name string) error {
	q, err := s.svc.Queue(rq.ctx, rq.Account, name)
	if err != nil {
		return err
	}
	n, err := s.svc.ApproximateMessageCount(rq.ctx, q)
	if err != nil {
		return err
	}
	h := rq.W.Header()
	h["x-ms-approximate-messages-count"] = []string{strconv.FormatInt(n, 10)}
	writeMetadataHeaders(h, q.Metadata)
	h["Cache-Control"] = noCacheValue
	rq.writeEmpty(http.StatusOK)
	return nil
}

func (s *Server) setQueueMetadata(rq *request, name string) error {
	if err := s.svc.SetQueueMetadata(rq.ctx, rq.Account, name, requestMetadata(rq.R.Header)); err != nil {
		return err
	}
	rq.writeEmpty(http.StatusNoContent)
	return nil
}

// queueSASLetters are the permissions a queue's stored access policy may grant.
const queueSASLetters = "raup"

func (s *Server) getQueueACL(rq *request, name string) error {
	q, err := s.svc.Queue(rq.ctx, rq.Account, name)
	if err != nil {
		return err
	}
	// Cache-Control: no-cache, as the real service sends (Python SDK recordings).
	rq.writeXML(http.StatusOK, auth.AppendSignedIdentifiers([]byte(xmlHeader), q.Policies), true)
	return nil
}

func (s *Server) setQueueACL(rq *request, name string) error {
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	policies, err := auth.ParseSignedIdentifiers(body, queueSASLetters)
	if err != nil {
		return err
	}
	if err := s.svc.SetQueuePolicies(rq.ctx, rq.Account, name, policies); err != nil {
		return err
	}
	rq.writeEmpty(http.StatusNoContent)
	return nil
}

// --- the service ---

func (s *Server) getServiceProperties(rq *request) error {
	p, err := s.svc.ServiceProperties(rq.ctx, rq.Account)
	if err != nil {
		return err
	}
	rq.writeXML(http.StatusOK, serviceprops.AppendXML([]byte(xmlHeader), p, auth.Queue), true)
	return nil
}

func (s *Server) setServiceProperties(rq *request) error {
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	update, err := serviceprops.ParseUpdate(body, auth.Queue)
	if err != nil {
		return err
	}
	if err := s.svc.SetServiceProperties(rq.ctx, rq.Account, update); err != nil {
		return err
	}
	rq.writeEmpty(http.StatusAccepted)
	return nil
}

// getUserDelegationKey serves Get User Delegation Key on the Queue service (from 2025-07-05):
// a bearer token's holder gets a key to sign queue user delegation SASes with
// (auth.IssueDelegationKey).
func (s *Server) getUserDelegationKey(rq *request) error {
	if err := rq.Note(auth.OpGetQueueUserDelegationKey.Name, ""); err != nil {
		return err
	}
	body, err := readBody(rq)
	if err != nil {
		return err
	}
	version := rq.Version
	if version == "" {
		version = defaultVersion
	}
	answer, err := s.auth.IssueDelegationKey(rq.grant, rq.Account, auth.Queue, version, body, time.Now())
	if err != nil {
		return err
	}
	rq.writeXML(http.StatusOK, answer, false)
	return nil
}

// getServiceStats reports geo-replication. Tabula has one copy of the data, which its
// secondary endpoint serves too, so replication is always live and current. As on Azure (and
// as the Table endpoint does), only the secondary endpoint answers: the primary refuses with
// 400 InvalidQueryParameterValue.
func (s *Server) getServiceStats(rq *request) error {
	if !rq.Secondary {
		return azerr.New(azerr.InvalidQueryParameterValue)
	}
	body := xmlHeader + "<StorageServiceStats><GeoReplication><Status>live</Status><LastSyncTime>" +
		time.Now().UTC().Format(http.TimeFormat) + "</LastSyncTime></GeoReplication></StorageServiceStats>"
	rq.writeXML(http.StatusOK, []byte(body), false)
	return nil
}

// listQueues answers List Queues (queue.md §3): Prefix, Marker and MaxResults echoed only when
// sent, NextMarker always present, the marker being /{account}/{next queue name} as the real
// service writes it.
func (s *Server) listQueues(rq *request) error {
	q := rq.Query
	l := queue.QueueListing{Prefix: q.Get("prefix")}
	if q.Has("maxresults") {
		n, err := intParam(q, "maxresults")
		if err != nil {
			return err
		}
		if n < 1 {
			return outOfRange("maxresults", n, 1, queue.MaxListResults)
		}
		l.MaxResults = int(min(n, queue.MaxListResults))
	}
	if marker := q.Get("marker"); marker != "" {
		name, ok := strings.CutPrefix(marker, "/"+rq.Account+"/")
		if !ok && strings.HasPrefix(marker, "/") {
			return azerr.Newf(azerr.InvalidMarker, "The specified marker is invalid: %q is not a marker this service gave for account %s.", marker, rq.Account)
		}
		l.Marker = name
	}
	withMetadata := false
	for _, inc := range strings.Split(q.Get("include"), ",") {
		switch strings.ToLower(strings.TrimSpace(inc)) {
		case "":
		case "metadata":
			withMetadata = true
		default:
			return invalidParam("include", q.Get("include"), "include takes metadata only")
		}
	}
	page, err := s.svc.ListQueues(rq.ctx, rq.Account, l)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString(xmlHeader + `<EnumerationResults ServiceEndpoint="`)
	b.Write(xmltext.AppendAttr(nil, rq.BaseURL+"/"))
	b.WriteString(`">`)
	if q.Has("prefix") {
		elem(&b, "Prefix", q.Get("prefix"))
	}
	if q.Has("marker") {
		elem(&b, "Marker", q.Get("marker"))
	}
	if q.Has("maxresults") {
		elem(&b, "MaxResults", q.Get("maxresults"))
	}
	if len(page.Queues) == 0 {
		b.WriteString("<Queues />")
	} else {
		b.WriteString("<Queues>")
		for _, qu := range page.Queues {
			b.WriteString("<Queue>")
			elem(&b, "Name", qu.Name)
			if withMetadata {
				if len(qu.Metadata) == 0 {
					b.WriteString("<Metadata />")
				} else {
					b.WriteString("<Metadata>")
					for _, p := range qu.Metadata {
						elem(&b, p.Name, p.Value)
					}
					b.WriteString("</Metadata>")
				}
			}
			b.WriteString("</Queue>")
		}
		b.WriteString("</Queues>")
	}
	if page.NextMarker == "" {
		b.WriteString("<NextMarker />")
	} else {
		elem(&b, "NextMarker", "/"+rq.Account+"/"+page.NextMarker)
	}
	b.WriteString("</EnumerationResults>")
	rq.writeXML(http.StatusOK, b.Bytes(), true)
	return nil
}
