package blobhttp

import (
	"bytes"
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/blobquery"
)

// Query Blob Contents (POST ?comp=query): a QueryRequest body names a SQL expression and the
// blob's and the answer's serializations; the answer is an Avro stream (avro/binary) read as
// Get Blob reads the blob (conditions, lease, customer-provided key, snapshot).

// queryRequest is the request body. Elements of a serialization that are absent take the
// defaults of blobquery.DefaultFormat; present and empty, they mean none.
type queryRequest struct {
	QueryType  string              `xml:"QueryType"`
	Expression string              `xml:"Expression"`
	Input      *querySerialization `xml:"InputSerialization"`
	Output     *querySerialization `xml:"OutputSerialization"`
}

type querySerialization struct {
	Format struct {
		Type      string `xml:"Type"`
		Delimited *struct {
			ColumnSeparator *string `xml:"ColumnSeparator"`
			FieldQuote      *string `xml:"FieldQuote"`
			RecordSeparator *string `xml:"RecordSeparator"`
			EscapeChar      *string `xml:"EscapeChar"`
			HasHeaders      string  `xml:"HasHeaders"`
		} `xml:"DelimitedTextConfiguration"`
		JSON *struct {
			RecordSeparator *string `xml:"RecordSeparator"`
		} `xml:"JsonTextConfiguration"`
		Arrow *struct {
			Fields []struct {
				Type      string `xml:"Type"`
				Name      string `xml:"Name"`
				Precision string `xml:"Precision"`
				Scale     string `xml:"Scale"`
			} `xml:"Schema>Field"`
		} `xml:"ArrowConfiguration"`
	} `xml:"Format"`
}

// maxQueryBody bounds a QueryRequest.
const maxQueryBody = 256 << 10

func (s querySerialization) format() blobquery.Format {
	f := blobquery.DefaultFormat
	f.Kind = strings.ToLower(s.Format.Type)
	set := func(to *string, v *string) {
		if v != nil {
			*to = *v
		}
	}
	if d := s.Format.Delimited; d != nil {
		set(&f.ColumnSeparator, d.ColumnSeparator)
		set(&f.FieldQuote, d.FieldQuote)
		set(&f.RecordSeparator, d.RecordSeparator)
		set(&f.EscapeChar, d.EscapeChar)
		f.HasHeaders = strings.EqualFold(d.HasHeaders, "true")
	}
	if j := s.Format.JSON; j != nil {
		set(&f.RecordSeparator, j.RecordSeparator)
	}
	if a := s.Format.Arrow; a != nil {
		for _, field := range a.Fields {
			// A precision or scale that is no number is judged as none (CheckArrowSchema).
			precision, _ := strconv.Atoi(strings.TrimSpace(field.Precision))
			scale, _ := strconv.Atoi(strings.TrimSpace(field.Scale))
			f.Arrow = append(f.Arrow, blobquery.ArrowField{Type: field.Type, Name: field.Name, Precision: precision, Scale: scale})
		}
	}
	if f.RecordSeparator == "" {
		// The JS SDK's XML writer trims "\n" to nothing, and Azure reads it as the default.
		f.RecordSeparator = "\n"
	}
	return f
}

func (s *Server) queryBlob(rq *request) error {
	body, err := readXMLBody(rq, maxQueryBody)
	if err != nil {
		return err
	}
	var req queryRequest
	if err := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")))).Decode(&req); err != nil {
		return invalidXML(err)
	}
	if !strings.EqualFold(req.QueryType, "SQL") {
		return azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format. QueryType %q is not SQL.", req.QueryType)
	}
	q, err := blobquery.Parse(req.Expression)
	if err != nil {
		return azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format. Expression: %v.", err)
	}
	in := blobquery.DefaultFormat
	if req.Input != nil {
		in = req.Input.format()
	}
	out := in
	if in.Kind == "parquet" {
		out = blobquery.DefaultFormat // Azure answers a Parquet query in CSV
	}
	if req.Output != nil {
		out = req.Output.format()
	}
	for _, c := range []struct {
		side string
		f    blobquery.Format
	}{{"input", in}, {"output", out}} {
		if err := c.f.Check(c.side); err != nil {
			return azerr.Newf(azerr.NotImplemented, "The requested operation is not implemented on the specified resource: %v.", err)
		}
	}
	if out.Kind == "arrow" {
		if err := blobquery.CheckArrowSchema(out.Arrow); err != nil {
			return azerr.Newf(azerr.InvalidXMLNodeValue, "The value for one of the XML nodes is not in the correct format. ArrowConfiguration: %v.", err)
		}
	}
	h := rq.R.Header
	o := blob.GetBlobOptions{LeaseID: leaseID(h), Conditions: conditions(h, "")}
	if _, err := withCustomerKey(h, &o.Conditions, false); err != nil {
		return err
	}
	d, err := s.svc.GetBlob(rq.ctx, rq.path(), o)
	if err != nil {
		return err
	}
	defer d.Body.Close()
	w := rq.W.Header()
	setBlobHeaders(w, &d.Blob)
	// The body is the Avro stream, of a length known only at its end, not the blob.
	delete(w, "Content-Length")
	delete(w, "Content-Encoding")
	w["Content-Type"] = []string{"avro/binary"}
	rq.W.WriteHeader(http.StatusOK)
	if err := blobquery.Run(rq.W, d.Body, d.Count, q, in, out); err != nil {
		// The status is sent: the connection is cut, and the client sees a short stream.
		rq.log.Warn("blob query cut short", "request_id", rq.ID, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}
