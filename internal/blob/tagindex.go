package blob

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// The tag index. Every live base blob with index tags has one record per tag,
// Key{tagIndexSpace, account, key \x00 value \x00 container \x00 blob name \x00 container
// space}, whose value is the blob's whole tag set (JSON). The records are written in the same
// commit as the blob record (put, remove), so the index is exact, where Azure's is eventually
// consistent: Find Blobs by Tags scans the rows of one key of its expression, in value order,
// and judges the whole expression on the tag sets, reading no blob. Neither tag keys and values
// nor container and blob names hold \x00. Rows of a deleted container stay until its space is
// swept (gc.go); a query skips rows whose space is not its container's current one.

func tagIndexKey(account, container, name, space, key, value string) store.Key {
	return store.Key{Space: tagIndexSpace, Partition: account, Row: key + "\x00" + value + "\x00" + container + "\x00" + name + "\x00" + space}
}

// tagIndexChanges returns the mutations bringing the tag index from what it holds for st's
// base blob as read (st.readTags) to next (nil: the blob is gone or soft-deleted).
func (st *blobState) tagIndexChanges(next Tags) []store.Mutation {
	if maps.Equal(st.readTags, next) {
		return nil
	}
	name := st.key.Partition
	var m []store.Mutation
	for k, v := range st.readTags {
		if nv, ok := next[k]; !ok || nv != v {
			m = append(m, store.Mutation{Key: tagIndexKey(st.account, st.container, name, st.space, k, v), Delete: true})
		}
	}
	if len(next) > 0 {
		value, _ := json.Marshal(next) // a map of strings always encodes
		for k, v := range next {
			m = append(m, store.Mutation{Key: tagIndexKey(st.account, st.container, name, st.space, k, v), Value: value, Version: 1})
		}
	}
	return m
}

// tagIndexRemovals returns the mutations removing the index rows of a live base blob name
// with tags in the container space space (the sweep of a deleted container).
func tagIndexRemovals(space, name string, tags Tags) []store.Mutation {
	// Spaces are "b/<account>/<container>/<id>" (containers.go); neither name holds '/'.
	parts := strings.SplitN(space, "/", 4)
	if len(parts) != 4 {
		return nil
	}
	var m []store.Mutation
	for k, v := range tags {
		m = append(m, store.Mutation{Key: tagIndexKey(parts[1], parts[2], name, space, k, v), Delete: true})
	}
	return m
}

// FindBlobsOptions is one Find Blobs by Tags request: Where is the expression; Container, when
// set, scopes it to one container (the container form of the operation). Marker is a previous
// page's NextMarker; MaxResults 0 means 5,000 (larger values are clamped).
type FindBlobsOptions struct {
	Where      string
	Container  string
	Marker     string
	MaxResults int
}

// TaggedBlob is one blob Find Blobs by Tags returns, with the tags its expression names.
type TaggedBlob struct {
	Container, Name string
	Tags            Tags
}

// FoundBlobs is one page of Find Blobs by Tags. NextMarker is empty on the last page.
type FoundBlobs struct {
	Blobs      []TaggedBlob
	NextMarker string
}

// findScanLimit bounds the index rows one page reads beyond what it returns: an expression
// whose driving comparison matches many rows that the rest of it refuses answers a short
// page with a marker rather than reading them all, as Azure may.
const findScanLimit = 10000

// FindBlobsByTags returns the live base blobs of the account (or of o.Container: 404
// ContainerNotFound if it does not exist) whose tags satisfy o.Where (400
// InvalidQueryParameterValue when it is not an expression of the operation), each with the
// tags the expression names. A page reads the index rows of one comparison of the expression
// from where the marker says, so its cost does not depend on how many blobs are tagged.
func (s *Service) FindBlobsByTags(ctx context.Context, account string, o FindBlobsOptions) (FoundBlobs, error) {
	mode := whereInAccount
	if o.Container != "" {
		mode = whereInContainer
	}
	expr, err := parseTagExpr(o.Where, mode)
	if err != nil {
		e := azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid. where: %v.", err)
		e.Details = []azerr.Detail{{Name: "QueryParameterName", Value: "where"}, {Name: "QueryParameterValue", Value: o.Where}}
		return FoundBlobs{}, e
	}
	spaces := map[string]string{} // container name → current space ("" when it does not exist)
	if o.Container != "" {
		_, c, err := s.loadContainer(ctx, account, o.Container)
		if err != nil {
			return FoundBlobs{}, err
		}
		spaces[o.Container] = c.Space
	}
	r := tagScanRange(account, expr)
	if o.Marker != "" {
		raw, err := base64.RawURLEncoding.DecodeString(o.Marker)
		if err != nil || strings.Count(string(raw), "\x00") != 4 {
			return FoundBlobs{}, azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid. marker %q was not returned by Find Blobs by Tags.", o.Marker)
		}
		if m := (store.Key{Space: tagIndexSpace, Partition: account, Row: string(raw)}); m.Compare(r.Start) > 0 {
			r.Start = m
		}
	}
	if r.Start.Compare(r.End) >= 0 {
		return FoundBlobs{}, nil // bounds that exclude every value, or a marker past them
	}
	names := map[string]bool{}
	for _, c := range expr.comparisons() {
		names[c.key] = true
	}
	limit := pageLimit(o.MaxResults)
	var page FoundBlobs
	scanned := 0
	err = s.store.Scan(ctx, r, func(rec store.Record) (bool, error) {
		if len(page.Blobs) == limit || scanned == limit+findScanLimit {
			page.NextMarker = base64.RawURLEncoding.EncodeToString([]byte(rec.Key.Row))
			return false, nil
		}
		scanned++
		parts := strings.Split(rec.Key.Row, "\x00")
		if len(parts) != 5 {
			return false, fmt.Errorf("tag index row %q is corrupt", rec.Key.Row)
		}
		container, name, space := parts[2], parts[3], parts[4]
		if o.Container != "" && container != o.Container {
			return true, nil
		}
		current, known := spaces[container]
		if !known {
			crec, err := s.get(ctx, containerKey(account, container))
			if err != nil {
				return false, err
			}
			if crec != nil {
				c, err := decodeContainer(crec)
				if err != nil {
					return false, err
				}
				current = c.Space
			}
			spaces[container] = current
		}
		if space != current {
			return true, nil // a row of a deleted container, not swept yet
		}
		var tags Tags
		if err := json.Unmarshal(rec.Value, &tags); err != nil {
			return false, fmt.Errorf("tag index row %q is corrupt: %w", rec.Key.Row, err)
		}
		if !expr.matches(container, tags) {
			return true, nil
		}
		named := Tags{}
		for k, v := range tags {
			if names[k] {
				named[k] = v
			}
		}
		page.Blobs = append(page.Blobs, TaggedBlob{Container: container, Name: name, Tags: named})
		return true, nil
	})
	return page, err
}

// tagScanRange is the range of index rows the scan of a where reads: those of one tag key
// it compares, the first it compares with =, else the first it bounds, within the bounds the
// where gives that key.
func tagScanRange(account string, expr *tagNode) store.Range {
	var key string
	var cmps []*tagComparison
	for _, c := range expr.comparisons() {
		if c.key == containerKeyword {
			continue
		}
		if c.op == "=" {
			key, cmps = c.key, []*tagComparison{c}
			break
		}
		if key == "" {
			key = c.key
		}
		if c.key == key {
			cmps = append(cmps, c)
		}
	}
	row := func(s string) store.Key { return store.Key{Space: tagIndexSpace, Partition: account, Row: s} }
	prefix := key + "\x00"
	start, end := row(prefix), row(key+"\x01")
	// Rows of one value v are prefix+v+"\x00"+…; every greater value sorts at or after
	// prefix+v+"\x01", since no value holds a byte below ' '.
	for _, c := range cmps {
		switch c.op {
		case "=":
			start, end = row(prefix+c.value+"\x00"), row(prefix+c.value+"\x01")
		case ">":
			start = row(prefix + c.value + "\x01")
		case ">=":
			start = row(prefix + c.value + "\x00")
		case "<":
			end = row(prefix + c.value + "\x00")
		case "<=":
			end = row(prefix + c.value + "\x01")
		}
	}
	return store.Range{Space: tagIndexSpace, Start: start, End: end}
}

// ifTagsError is the 400 of an x-ms-if-tags (or x-ms-source-if-tags) that is not a condition.
func ifTagsError(v string, err error) *azerr.Error {
	e := azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-if-tags: %v.", err)
	e.Details = []azerr.Detail{{Name: "HeaderName", Value: "x-ms-if-tags"}, {Name: "HeaderValue", Value: v}}
	return e
}
