package blob

import (
	"context"
	"encoding/base64"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// ListBlobsInclude selects what List Blobs shows besides committed blobs. Metadata, copy
// state and tags are always in the returned Blobs; the HTTP layer writes them when asked.
// Deleted adds soft-deleted blobs, and with Snapshots or Versions soft-deleted snapshots or
// previous versions. Versions adds previous versions (versions.go); DeletedWithVersions, a
// HasVersionsOnly entry for each deleted blob that has previous versions.
type ListBlobsInclude struct {
	Snapshots           bool
	UncommittedBlobs    bool
	Deleted             bool
	Versions            bool
	DeletedWithVersions bool
}

// ListBlobsOptions selects a page of List Blobs. Marker is a previous page's NextMarker;
// MaxResults 0 means the maximum, 5,000 (larger values are clamped). With a Delimiter, names
// whose remainder after Prefix contains it fold into one BlobPrefix entry.
type ListBlobsOptions struct {
	Prefix    string
	Delimiter string
	Marker    string
	// StartFrom (startFrom) is the name the listing starts at, inclusive. It is taken as a
	// whole blob name, not one relative to Prefix (which the real service's REST reference
	// leaves UNSURE; azblob's live tests give it without a prefix).
	StartFrom string
	// EndBefore (endBefore) is the name the listing stops before. Azure documents it for
	// listings in the Apache Arrow format, which clients ask for with XML as their fallback;
	// the XML listings here honour it too.
	EndBefore  string
	MaxResults int
	Include    ListBlobsInclude
}

// BlobEntry is one entry of a List Blobs page: a BlobPrefix (Prefix set) or a Blob.
type BlobEntry struct {
	Prefix string
	Blob   Blob
}

// BlobPage is one page of List Blobs. NextMarker is empty on the last page.
type BlobPage struct {
	Entries    []BlobEntry
	NextMarker string
}

// skipInScan is how many records of a folded prefix a listing reads past before it starts a
// new scan after the prefix instead: a few records cost less than a new scan, a folder of a
// million cost a million.
const skipInScan = 64

// ListBlobs lists a container's blobs in name order (bytewise), each blob's snapshots (with
// Include.Snapshots) just before it, oldest first. A page reads the records it returns, the
// records it skips on the way (snapshots and uncommitted blobs not asked for, at most
// skipInScan records of each folded prefix), and one more: its cost does not depend on how
// many blobs the container holds.
func (s *Service) ListBlobs(ctx context.Context, account, container string, o ListBlobsOptions) (BlobPage, error) {
	_, c, err := s.loadContainer(ctx, account, container)
	if err != nil {
		return BlobPage{}, err
	}
	limit := pageLimit(o.MaxResults)
	start := store.Key{Space: c.Space, Partition: max(o.Prefix, o.StartFrom)}
	if o.Marker != "" {
		k, err := decodeMarker(c.Space, o.Marker)
		if err != nil {
			return BlobPage{}, err
		}
		if k.Compare(start) > 0 {
			start = k
		}
	}
	r := store.Range{Space: c.Space, EndUnbounded: true}
	if end, ok := prefixEnd(o.Prefix); ok {
		r.End, r.EndUnbounded = store.Key{Space: c.Space, Partition: end}, false
	}
	if o.EndBefore != "" && (r.EndUnbounded || o.EndBefore < r.End.Partition) {
		r.End, r.EndUnbounded = store.Key{Space: c.Space, Partition: o.EndBefore}, false
	}
	now := s.Now()
	var page BlobPage
	seen := listState{premium: s.premium(account)}
	lastFolded := ""      // the last BlobPrefix emitted
	skipped := 0          // records read inside lastFolded since it was emitted
	var resume *store.Key // where the next scan starts; nil when the listing is done
	for {
		r.Start = start
		if !r.EndUnbounded && r.Start.Compare(r.End) >= 0 {
			break
		}
		resume = nil
		err := s.store.Scan(ctx, r, func(rec store.Record) (bool, error) {
			name := rec.Key.Partition
			if lastFolded != "" && strings.HasPrefix(name, lastFolded) {
				if skipped++; skipped < skipInScan {
					return true, nil
				}
				if end, ok := prefixEnd(lastFolded); ok {
					resume = &store.Key{Space: c.Space, Partition: end}
				}
				return false, nil
			}
			var entry BlobEntry
			if o.Delimiter != "" {
				if i := strings.Index(name[len(o.Prefix):], o.Delimiter); i >= 0 {
					entry.Prefix = name[:len(o.Prefix)+i+len(o.Delimiter)]
				}
			}
			if entry.Prefix == "" {
				ok, err := s.listedBlob(ctx, &rec, o.Include, &seen, now, &entry.Blob)
				if err != nil || !ok {
					return err == nil, err
				}
			}
			if len(page.Entries) == limit {
				page.NextMarker = encodeMarker(rec.Key)
				return false, nil
			}
			page.Entries = append(page.Entries, entry)
			if entry.Prefix != "" {
				lastFolded, skipped = entry.Prefix, 0
			}
			return true, nil
		})
		if err != nil {
			return BlobPage{}, err
		}
		if resume == nil || page.NextMarker != "" {
			break
		}
		start = *resume
	}
	return page, nil
}

// listState is what a listing remembers of the records before the one it looks at.
type listState struct {
	lastBase      string // the last name with a committed blob, whose staging row is not listed
	lastVersioned string // the last name whose previous versions were looked at for a HasVersionsOnly entry
	premium       bool   // the account is a premium one: page blobs' tiers are inferred (premium.go)
}

// listedBlob decodes the blob, snapshot or version a listing record holds into out, or
// reports false for a record the listing does not show.
func (s *Service) listedBlob(ctx context.Context, rec *store.Record, inc ListBlobsInclude, seen *listState, now time.Time, out *Blob) (bool, error) {
	name, row := rec.Key.Partition, rec.Key.Row
	lastBase := &seen.lastBase
	switch {
	case row == rowBase:
		*lastBase = name
	case isVersionRow(row):
		if !inc.Versions {
			if inc.DeletedWithVersions && seen.lastVersioned != name {
				seen.lastVersioned = name
				return s.versionsOnly(ctx, rec.Key, now, out)
			}
			return false, nil
		}
	case strings.HasPrefix(row, rowSnapshot):
		if !inc.Snapshots {
			return false, nil
		}
	case row == rowStaging:
		if !inc.UncommittedBlobs || *lastBase == name {
			return false, nil
		}
		st, err := decodeStaging(rec)
		if err != nil {
			return false, err
		}
		created := time.Unix(0, st.Created).UTC()
		*out = Blob{
			Name: name, Type: BlockBlob, Created: created, LastModified: created,
			ETag: etagOf(ticksOf(created)), Properties: ContentProperties{ContentType: defaultContentType},
			Lease: lease{}.info(now), AccessTier: "Hot", AccessTierInferred: true, Uncommitted: true,
		}
		return true, nil
	default:
		return false, nil
	}
	b, err := s.readRecord(rec, now)
	if err != nil {
		return false, err
	}
	switch {
	case b.Deleted == 0:
	case !inc.Deleted || !b.retained(now):
		if row == rowBase {
			*lastBase = "" // a soft-deleted blob's uncommitted blocks are an uncommitted blob
		}
		return false, nil
	case row == rowBase:
		*lastBase = ""
	}
	*out = b.publicAt(name, row, now)
	if seen.premium {
		inferTier(out)
	}
	return true, nil
}

// versionsOnly is the HasVersionsOnly entry of include=deletedwithversions for the blob
// whose first previous version is at k: the newest live previous version, when the blob
// itself is deleted.
func (s *Service) versionsOnly(ctx context.Context, k store.Key, now time.Time, out *Blob) (bool, error) {
	rec, err := s.get(ctx, baseKey(k.Space, k.Partition))
	if err != nil {
		return false, err
	}
	if rec != nil {
		b, err := decodeBlob(rec)
		if err != nil || b.Deleted == 0 {
			return false, err // a live blob is listed by its own row
		}
	}
	latest, ok, err := s.latestVersion(ctx, k.Space, k.Partition)
	if err != nil || !ok {
		return false, err
	}
	*out = latest.public(k.Partition, "", now)
	out.Lease, out.HasVersionsOnly = LeaseInfo{}, true
	return true, nil
}

// A marker is the key a listing resumes at, blob name and row, base64url-encoded: opaque to
// clients and safe in a URL.
func encodeMarker(k store.Key) string {
	return base64.RawURLEncoding.EncodeToString([]byte(k.Partition + "\x00" + k.Row))
}

func decodeMarker(space, marker string) (store.Key, error) {
	raw, err := base64.RawURLEncoding.DecodeString(marker)
	name, row, ok := strings.Cut(string(raw), "\x00")
	if err != nil || !ok {
		return store.Key{}, azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid. marker %q was not returned by a listing of this container.", marker)
	}
	return store.Key{Space: space, Partition: name, Row: row}, nil
}
