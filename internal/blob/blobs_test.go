package blob

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// Put Blob round-trips bytes of every size class: empty, inline in the record, and streamed
// into an object; Get Blob streams them back with the properties Azure reports.
func TestPutBlobRoundTripsEverySize(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		for _, n := range []int{0, 1, 4 << 10, inlineLimit, inlineLimit + 1, 3<<20 + 17} {
			body := data(n, uint64(n))
			name := strings.Repeat("x", 3) + "/" + string(rune('a'+n%26))
			b, sums, err := e.s.PutBlob(e.ctx, path(name), bytes.NewReader(body), int64(n), PutBlobOptions{
				Type:     BlockBlob,
				Metadata: Metadata{"Owner": "me"},
			})
			if err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
			want := md5.Sum(body)
			if !bytes.Equal(sums.MD5, want[:]) || !bytes.Equal(b.Properties.ContentMD5, want[:]) {
				t.Errorf("%d bytes: MD5 returned %x, stored %x, want %x", n, sums.MD5, b.Properties.ContentMD5, want)
			}
			if got := e.read(path(name)); !bytes.Equal(got, body) {
				t.Fatalf("%d bytes: read back %d bytes, differing", n, len(got))
			}
			props, err := e.s.GetBlobProperties(e.ctx, path(name), "", Conditions{})
			if err != nil {
				t.Fatal(err)
			}
			if props.Size != int64(n) || props.Type != BlockBlob || props.Properties.ContentType != "application/octet-stream" ||
				props.Metadata["Owner"] != "me" || props.ETag != b.ETag || props.Lease.State != LeaseAvailable ||
				props.Lease.Status != "unlocked" || props.AccessTier != "Hot" || !props.AccessTierInferred {
				t.Errorf("%d bytes: properties %+v", n, props)
			}
		}
		if objs := e.objects(); len(objs) != 2 {
			t.Errorf("%d objects stored, want 2 (the bodies above the inline limit)", len(objs))
		}
	})
}

// The CRC-64 is Azure's: the vectors are from real responses (shared/spec/blob.md §4.2).
func TestChecksumsAreAzures(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		for body, want := range map[string]string{"hello world": "vo7q9sPVKY0=", "GoBlockBlobData": "+JGsS7CR5kg="} {
			_, sums, err := e.s.PutBlob(e.ctx, path("b"), strings.NewReader(body), int64(len(body)), PutBlobOptions{Type: BlockBlob})
			if err != nil {
				t.Fatal(err)
			}
			if got := base64.StdEncoding.EncodeToString(sums.CRC64); got != want {
				t.Errorf("CRC-64 of %q = %s, want %s", body, got, want)
			}
		}
	})
}

// A body whose checksum does not match is refused and leaves nothing behind.
func TestUploadChecksumMismatchIsRefused(t *testing.T) {
	big := data(inlineLimit+100, 1)
	bigMD5 := md5.Sum(big)
	wrongMD5 := md5.Sum([]byte("other"))
	cases := []struct {
		name   string
		body   []byte
		sums   Checksums
		props  ContentProperties
		status int
		code   azerr.Code
	}{
		{"wrong Content-MD5", []byte("hello world"), Checksums{MD5: wrongMD5[:]}, ContentProperties{}, 400, azerr.MD5Mismatch},
		{"wrong Content-MD5 of a large body", big, Checksums{MD5: wrongMD5[:]}, ContentProperties{}, 400, azerr.MD5Mismatch},
		{"wrong CRC-64", []byte("hello world"), Checksums{CRC64: []byte("12345678")}, ContentProperties{}, 400, azerr.CRC64Mismatch},
		{"CRC-64 of 16 bytes", []byte("hello world"), Checksums{CRC64: []byte("1234567812345678")}, ContentProperties{}, 400, azerr.CRC64Mismatch},
		{"MD5 of 15 bytes", []byte("hello world"), Checksums{MD5: wrongMD5[:15]}, ContentProperties{}, 400, azerr.InvalidMD5},
		{"both checksums", []byte("hello world"), Checksums{MD5: wrongMD5[:], CRC64: []byte("12345678")}, ContentProperties{}, 400, azerr.InvalidHeaderValue},
		{"wrong x-ms-blob-content-md5", big, Checksums{MD5: bigMD5[:]}, ContentProperties{ContentMD5: wrongMD5[:]}, 400, azerr.MD5Mismatch},
	}
	forEachBackend(t, func(t *testing.T, e *env) {
		for _, c := range cases {
			_, _, err := e.s.PutBlob(e.ctx, path("b"), bytes.NewReader(c.body), int64(len(c.body)), PutBlobOptions{Type: BlockBlob, Checksums: c.sums, Properties: c.props})
			wantCode(t, err, c.status, c.code)
		}
		if _, err := e.s.GetBlobProperties(e.ctx, path("b"), "", Conditions{}); err == nil {
			t.Error("a refused upload created the blob")
		}
		if objs := e.objects(); len(objs) != 0 {
			t.Errorf("refused uploads left objects %v", objs)
		}
	})
}

// Ranges: a 206 for any range starting inside the blob (clipped at its end), a 416 with
// Content-Range: bytes */size for one starting at or beyond it — including any range of an
// empty blob, which downloaders rely on.
func TestGetBlobRanges(t *testing.T) {
	body := data(inlineLimit+5000, 7)
	size := int64(len(body))
	forEachBackend(t, func(t *testing.T, e *env) {
		e.putBlob("big", body)
		e.putBlob("small", body[:100])
		e.putBlob("empty", nil)
		cases := []struct {
			blob      string
			r         ByteRange
			off, n    int64
			wantRange string // Content-Range of a 416
		}{
			{"big", ByteRange{0, 0}, 0, 1, ""},
			{"big", ByteRange{10, 99}, 10, 90, ""},
			{"big", ByteRange{size - 10, -1}, size - 10, 10, ""},
			{"big", ByteRange{size - 10, size + 1000}, size - 10, 10, ""},
			{"big", ByteRange{size, -1}, 0, 0, "bytes */" + itoa(size)},
			{"small", ByteRange{50, 1 << 40}, 50, 50, ""},
			{"empty", ByteRange{0, -1}, 0, 0, "bytes */0"},
			{"empty", ByteRange{0, 33554431}, 0, 0, "bytes */0"},
		}
		for _, c := range cases {
			d, err := e.s.GetBlob(e.ctx, path(c.blob), GetBlobOptions{Range: &c.r})
			if c.wantRange != "" {
				wantCode(t, err, 416, azerr.InvalidRange)
				if got := err.(*azerr.Error).Header.Get("Content-Range"); got != c.wantRange {
					t.Errorf("%s %v: Content-Range %q, want %q", c.blob, c.r, got, c.wantRange)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s %v: %v", c.blob, c.r, err)
			}
			got, err := io.ReadAll(d.Body)
			d.Body.Close()
			src := body
			if c.blob == "small" {
				src = body[:100]
			}
			if err != nil || !d.Partial || d.Offset != c.off || d.Count != c.n || !bytes.Equal(got, src[c.off:c.off+c.n]) {
				t.Errorf("%s %v: offset %d count %d partial %v, %d bytes (err %v); want offset %d count %d", c.blob, c.r, d.Offset, d.Count, d.Partial, len(got), err, c.off, c.n)
			}
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A range checksum is the MD5 or CRC-64 of the bytes returned, for ranges up to 4 MiB only.
func TestRangeChecksums(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.putBlob("b", []byte("hello world, and more"))
		d, err := e.s.GetBlob(e.ctx, path("b"), GetBlobOptions{Range: &ByteRange{0, 10}, RangeCRC64: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := base64.StdEncoding.EncodeToString(d.RangeCRC64); got != "vo7q9sPVKY0=" {
			t.Errorf("range CRC-64 %s, want that of \"hello world\"", got)
		}
		_, err = e.s.GetBlob(e.ctx, path("b"), GetBlobOptions{RangeMD5: true})
		wantCode(t, err, 400, azerr.InvalidHeaderValue)
		_, err = e.s.GetBlob(e.ctx, path("b"), GetBlobOptions{Range: &ByteRange{0, 4 << 20}, RangeMD5: true})
		wantCode(t, err, 400, azerr.InvalidHeaderValue)
	})
}
