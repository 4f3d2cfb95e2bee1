package blobhttp

import (
	"encoding/base64"
	"net/http"
	"strconv"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/blob"
)

// blockID reads the blockid query parameter: base64 (400 InvalidQueryParameterValue
// otherwise, as Azurite answers; the REST reference names InvalidBlockId).
func blockID(rq *request) ([]byte, error) {
	v := rq.Query.Get("blockid")
	if v == "" {
		e := azerr.Newf(azerr.MissingRequiredQueryParameter, "A required query parameter was not specified for this request: blockid.")
		e.Details = []azerr.Detail{{Name: "QueryParameterName", Value: "blockid"}}
		return nil, e
	}
	id, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		e := azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid: blockid %q is not base64.", v)
		e.Details = []azerr.Detail{{Name: "QueryParameterName", Value: "blockid"}, {Name: "QueryParameterValue", Value: v}}
		return nil, e
	}
	return id, nil
}

func (s *Server) putBlock(rq *request) error {
	h := rq.R.Header
	id, err := blockID(rq)
	if err != nil {
		return err
	}
	body, err := uploadContent(rq)
	if err != nil {
		return err
	}
	if err := bodyLimit(rq, "Put Block", body.size); err != nil {
		return err
	}
	sent, err := checksums(h)
	if err != nil {
		return err
	}
	// A block takes the key of the Put Block List that commits it; it is only checked here.
	key, err := customerKey(h, "x-ms-", true)
	if err != nil {
		return err
	}
	if err := s.refuseOverwrite(rq); err != nil {
		return err
	}
	sums, err := s.svc.PutBlock(rq.ctx, rq.path(), id, body, body.size, leaseID(h), sent)
	if err != nil {
		return err
	}
	wrote(body.size)
	out := rq.W.Header()
	body.answer(out)
	answerCustomerKey(out, key)
	setChecksums(out, sums, sent.MD5 != nil)
	answerScope(out, requestScope(rq))
	out["x-ms-request-server-encrypted"] = []string{"true"}
	return rq.done(http.StatusCreated)
}

// sourceRange reads x-ms-source-range (nil when absent).
func sourceRange(h http.Header) (*blob.ByteRange, error) {
	v := h.Get("x-ms-source-range")
	if v == "" {
		return nil, nil
	}
	r, ok := blob.ParseRange(v)
	if !ok {
		return nil, invalidHeader("x-ms-source-range", v, "not bytes=start-end")
	}
	return &r, nil
}

func (s *Server) putBlockFromURL(rq *request) error {
	h := rq.R.Header
	id, err := blockID(rq)
	if err != nil {
		return err
	}
	src, fetch, err := s.copySource(rq, true)
	if err != nil {
		return err
	}
	r, err := sourceRange(h)
	if err != nil {
		return err
	}
	// As Put Block: the destination's key is checked here, taken by Put Block List.
	key, err := customerKey(h, "x-ms-", true)
	if err != nil {
		return err
	}
	if err := s.refuseOverwrite(rq); err != nil {
		return err
	}
	o := blob.BlockFromURLOptions{LeaseID: leaseID(h)}
	if o.Source, err = s.fetchedSource(h); err != nil {
		return err
	}
	o.Source.Fetch = fetch
	if o.SourceMD5, err = base64Header(h, "x-ms-source-content-md5", azerr.InvalidMD5); err != nil {
		return err
	}
	n, err := s.svc.PutBlockFromURL(rq.ctx, rq.path(), id, src, r, o)
	if err != nil {
		return err
	}
	wrote(n)
	// The checksums the source range was checked against, as the real service answers
	// them (azblob's TestStageBlockFromURLWithMD5 and TestStageBlockFromURLWithCRC64).
	setChecksums(rq.W.Header(), blob.Checksums{MD5: o.SourceMD5, CRC64: o.Source.CRC64}, true)
	answerCustomerKey(rq.W.Header(), key)
	answerScope(rq.W.Header(), requestScope(rq))
	rq.W.Header()["x-ms-request-server-encrypted"] = []string{"true"}
	return rq.done(http.StatusCreated)
}

// maxBlockListBody bounds a Put Block List body: 50,000 entries of 64-byte ids, base64, in
// their elements, with room to spare.
const maxBlockListBody = 16 << 20

func (s *Server) putBlockList(rq *request) error {
	h := rq.R.Header
	body, err := readXMLBody(rq, maxBlockListBody)
	if err != nil {
		return err
	}
	sent, err := checksums(h)
	if err != nil {
		return err
	}
	sums := blob.ChecksumsOf(body)
	if err := sums.Verify(sent); err != nil {
		return err
	}
	list, err := parseBlockList(body)
	if err != nil {
		return err
	}
	o := blob.CommitBlockListOptions{Metadata: metadata(h), Tier: h.Get("x-ms-access-tier"), LeaseID: leaseID(h), Conditions: conditions(h, ""), EncryptionScope: requestScope(rq)}
	key, err := withCustomerKey(h, &o.Conditions, true)
	if err != nil {
		return err
	}
	o.Conditions.NoOverwrite = rq.createOnly()
	if o.Properties, _, err = blobProperties(h, false); err != nil {
		return err
	}
	if o.Tags, err = tags(h); err != nil {
		return err
	}
	if o.Protection, err = protection(h); err != nil {
		return err
	}
	b, err := s.svc.PutBlockList(rq.ctx, rq.path(), list, o)
	if err != nil {
		return err
	}
	out := rq.W.Header()
	setETag(out, b.ETag, b.LastModified)
	setVersionID(out, &b)
	setChecksums(out, sums, sent.MD5 != nil)
	answerCustomerKey(out, key)
	answerScope(out, b.EncryptionScope)
	out["x-ms-request-server-encrypted"] = []string{"true"}
	return rq.done(http.StatusCreated)
}

func (s *Server) getBlockList(rq *request) error {
	which := blob.BlockListType(rq.Query.Get("blocklisttype"))
	if which == "" {
		which = blob.CommittedBlocks
	}
	l, err := s.svc.GetBlockList(rq.ctx, rq.path(), which, leaseID(rq.R.Header), rq.R.Header.Get("x-ms-if-tags"))
	if err != nil {
		return err
	}
	out := rq.W.Header()
	// A blob of uncommitted blocks alone has no ETag, date or length yet: the answer leaves
	// them out (azure-storage-blob-go's live TestStageGetBlocks, and azblob's copy of it).
	if l.Blob != nil {
		setETag(out, l.Blob.ETag, l.Blob.LastModified)
		out["x-ms-blob-content-length"] = []string{strconv.FormatInt(l.Blob.Size, 10)}
	}
	w := newXML()
	w.open("BlockList")
	list := func(name string, blocks []blob.Block) {
		if blocks == nil {
			return
		}
		if len(blocks) == 0 {
			w.WriteString("<" + name + " />")
			return
		}
		w.open(name)
		for _, b := range blocks {
			w.open("Block")
			w.elem("Name", base64.StdEncoding.EncodeToString(b.ID))
			w.elem("Size", strconv.FormatInt(b.Size, 10))
			w.close("Block")
		}
		w.close(name)
	}
	list("CommittedBlocks", l.Committed)
	list("UncommittedBlocks", l.Uncommitted)
	w.close("BlockList")
	return rq.writeXML(http.StatusOK, w.Bytes())
}
