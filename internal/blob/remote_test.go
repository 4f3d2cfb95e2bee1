package blob

import (
	"bytes"
	"context"
	"crypto/md5"
	"io"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// remote is a copy source on another server, as the HTTP layer's fetch would deliver it.
type remote struct {
	body  []byte
	src   RemoteSource
	calls int
	asked []*ByteRange
	// cut, when above zero, makes the body fail after that many bytes.
	cut int
	// unsized hides the size, as a chunked answer does.
	unsized bool
}

func (r *remote) fetch(_ context.Context, br *ByteRange) (*RemoteSource, error) {
	r.calls++
	r.asked = append(r.asked, br)
	b := r.body
	if br != nil {
		end := int64(len(b))
		if br.End >= 0 {
			end = min(end, br.End+1)
		}
		b = b[br.Start:end]
	}
	src := r.src
	src.Size = int64(len(b))
	if r.unsized {
		src.Size = -1
	}
	var body io.Reader = bytes.NewReader(b)
	if r.cut > 0 {
		body = io.MultiReader(bytes.NewReader(b[:r.cut]), failing{})
	}
	src.Body = io.NopCloser(body)
	return &src, nil
}

type failing struct{}

func (failing) Read([]byte) (int, error) {
	e := azerr.Newf(azerr.CannotVerifyCopySource, "the source broke off")
	e.Status = 500
	return 0, e
}

// notFetched is a Fetch that must not be called: the destination refuses first.
func notFetched(t *testing.T) Fetch {
	return func(context.Context, *ByteRange) (*RemoteSource, error) {
		t.Helper()
		t.Fatal("the source was fetched although the destination refuses the copy")
		return nil, nil
	}
}

// A copy from another server takes the source's bytes, content properties and metadata, and
// the copy properties of any copy; a Put Blob From URL takes its bytes and properties, not its
// metadata.
func TestCopyFromAnotherServer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		for _, n := range []int{0, 10, inlineLimit + 1000} {
			body := data(n, uint64(n))
			r := &remote{body: body, src: RemoteSource{
				Properties: ContentProperties{ContentType: "text/plain", ContentEncoding: "gzip", ContentLanguage: "fr", ContentDisposition: "inline", CacheControl: "no-cache"},
				Metadata:   Metadata{"origin": "elsewhere"},
			}}
			b, err := e.s.CopyBlob(e.ctx, path("dst"), Path{}, CopyOptions{SourceURL: "http://elsewhere/x", Source: SourceOptions{Fetch: r.fetch}})
			if err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
			sum := md5.Sum(body)
			p := b.Properties
			if b.Type != BlockBlob || b.Size != int64(n) || p.ContentType != "text/plain" || p.ContentEncoding != "gzip" || p.ContentLanguage != "fr" ||
				p.ContentDisposition != "inline" || p.CacheControl != "no-cache" || !bytes.Equal(p.ContentMD5, sum[:]) || b.Metadata["origin"] != "elsewhere" {
				t.Fatalf("%d bytes: copy %+v", n, b)
			}
			if b.Copy == nil || b.Copy.Status != "success" || b.Copy.Source != "http://elsewhere/x" || b.Copy.Progress != itoa(int64(n))+"/"+itoa(int64(n)) {
				t.Fatalf("%d bytes: copy state %+v", n, b.Copy)
			}
			if got := e.read(path("dst")); !bytes.Equal(got, body) {
				t.Fatalf("%d bytes: read back %d bytes", n, len(got))
			}

			b, err = e.s.PutBlobFromURL(e.ctx, path("put"), Path{}, PutBlobFromURLOptions{Source: SourceOptions{Fetch: r.fetch}, Metadata: Metadata{"own": "1"}})
			if err != nil {
				t.Fatal(err)
			}
			if b.Properties.ContentType != "text/plain" || b.Metadata["origin"] != "" || b.Metadata["own"] != "1" || b.Copy != nil || !bytes.Equal(e.read(path("put")), body) {
				t.Fatalf("%d bytes: put from URL %+v", n, b)
			}
		}
	})
}

// An Azure page or append blob on another server is copied as one: the source says its type.
func TestCopyFromAnotherServerKeepsPageAndAppendBlobs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		pages := data(3*PageSize, 1)
		r := &remote{body: pages, src: RemoteSource{Type: PageBlob}}
		b, err := e.s.CopyBlob(e.ctx, path("pages"), Path{}, CopyOptions{Source: SourceOptions{Fetch: r.fetch}})
		if err != nil || b.Type != PageBlob || b.Size != 3*PageSize {
			t.Fatalf("page blob copy: %+v, %v", b, err)
		}
		e.writePages("pages", 1, 1, 'x')
		want := append(append(append([]byte(nil), pages[:PageSize]...), bytes.Repeat([]byte{'x'}, PageSize)...), pages[2*PageSize:]...)
		if !bytes.Equal(e.read(path("pages")), want) {
			t.Fatal("page blob copy does not take a page write")
		}

		r = &remote{body: []byte("appended"), src: RemoteSource{Type: AppendBlob, Blocks: 3}}
		b, err = e.s.CopyBlob(e.ctx, path("log"), Path{}, CopyOptions{Source: SourceOptions{Fetch: r.fetch}})
		if err != nil || b.Type != AppendBlob || b.CommittedBlockCount != 3 {
			t.Fatalf("append blob copy: %+v, %v", b, err)
		}
		if _, err := e.appendBlock("log", " more", AppendBlockOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := string(e.read(path("log"))); got != "appended more" {
			t.Fatalf("append blob copy reads %q", got)
		}

		// A page blob that is not whole pages is no page blob: a block blob copy.
		r = &remote{body: []byte("odd"), src: RemoteSource{Type: PageBlob}}
		if b, err = e.s.CopyBlob(e.ctx, path("odd"), Path{}, CopyOptions{Source: SourceOptions{Fetch: r.fetch}}); err != nil || b.Type != BlockBlob {
			t.Fatalf("misaligned page blob copy: %+v, %v", b, err)
		}
	})
}

// A fetch that breaks off, or bytes that do not match the sums sent, leave the destination as
// it was.
func TestCopyFromAnotherServerFailingLeavesTheDestination(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.putBlob("dst", []byte("before"))
		body := data(inlineLimit+5000, 2)
		for name, o := range map[string]CopyOptions{
			"cut short":    {Source: SourceOptions{Fetch: (&remote{body: body, cut: inlineLimit + 10}).fetch}},
			"cut small":    {Source: SourceOptions{Fetch: (&remote{body: body[:100], cut: 50}).fetch}},
			"md5 mismatch": {Source: SourceOptions{Fetch: (&remote{body: body}).fetch}, SourceMD5: make([]byte, 16)},
		} {
			_, err := e.s.CopyBlob(e.ctx, path("dst"), Path{}, o)
			if err == nil {
				t.Fatalf("%s: copied", name)
			}
			if got := string(e.read(path("dst"))); got != "before" {
				t.Fatalf("%s: the destination holds %q", name, got)
			}
		}
		_, err := e.s.PutBlobFromURL(e.ctx, path("dst"), Path{}, PutBlobFromURLOptions{Source: SourceOptions{Fetch: (&remote{body: body}).fetch, CRC64: make([]byte, 8)}})
		wantCode(t, err, 400, azerr.CRC64Mismatch)
		_, err = e.s.PutBlobFromURL(e.ctx, path("dst"), Path{}, PutBlobFromURLOptions{Source: SourceOptions{Fetch: (&remote{body: body, cut: 10}).fetch}})
		wantCode(t, err, 500, azerr.CannotVerifyCopySource)
		e.collect()
		if objs := e.objects(); len(objs) != 0 {
			t.Errorf("objects left by failed copies: %v", objs)
		}
	})
}

// The destination's lease and conditions are judged before the source is fetched.
func TestCopyFromAnotherServerJudgesTheDestinationFirst(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.putBlob("dst", []byte("before"))
		_, err := e.s.CopyBlob(e.ctx, path("dst"), Path{}, CopyOptions{Source: SourceOptions{Fetch: notFetched(t)}, Conditions: Conditions{IfMatch: []ETag{`"0x1"`}}})
		wantCode(t, err, 412, azerr.ConditionNotMet)
		_, err = e.s.PutBlobFromURL(e.ctx, path("dst"), Path{}, PutBlobFromURLOptions{Source: SourceOptions{Fetch: notFetched(t)}, LeaseID: "8b2a7c0e-2a52-4b8a-9c1f-0d9e9d1b5a77"})
		wantCode(t, err, 412, azerr.LeaseNotPresentWithBlobOperation)
		_, err = e.s.CopyBlob(e.ctx, Path{Account: "acct", Container: "none", Name: "x"}, Path{}, CopyOptions{Source: SourceOptions{Fetch: notFetched(t)}})
		wantCode(t, err, 404, azerr.ContainerNotFound)
		_, err = e.s.AppendBlockFromURL(e.ctx, path("dst"), Path{}, nil, SourceOptions{Fetch: notFetched(t)}, nil, AppendBlockOptions{})
		wantCode(t, err, 409, azerr.InvalidBlobType)
		_, err = e.s.PutPagesFromURL(e.ctx, path("dst"), ByteRange{End: PageSize - 1}, Path{}, ByteRange{End: PageSize - 1}, SourceOptions{Fetch: notFetched(t)}, nil, PageWriteOptions{})
		wantCode(t, err, 409, azerr.InvalidBlobType)
		e.createAppend("log")
		_, err = e.s.PutBlockFromURL(e.ctx, path("log"), []byte("b1"), Path{}, nil, BlockFromURLOptions{Source: SourceOptions{Fetch: notFetched(t)}})
		wantCode(t, err, 409, azerr.InvalidBlobType)
	})
}

// Limits hold whether or not the source says its size: a synchronous copy takes at most
// 256 MiB (409 CannotVerifyCopySource, refused before any byte is read when the size is
// known), an appended block 100 MiB.
func TestCopyFromAnotherServerLimits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		huge := func(context.Context, *ByteRange) (*RemoteSource, error) {
			return &RemoteSource{Size: MaxSyncCopySize + 1, Body: io.NopCloser(failing{})}, nil
		}
		_, err := e.s.CopyBlob(e.ctx, path("dst"), Path{}, CopyOptions{Sync: true, Source: SourceOptions{Fetch: huge}})
		wantCode(t, err, 409, azerr.CannotVerifyCopySource)

		e.createAppend("log")
		endless := func(context.Context, *ByteRange) (*RemoteSource, error) {
			return &RemoteSource{Size: -1, Body: io.NopCloser(io.LimitReader(zeros{}, MaxAppendBlockSize+1))}, nil
		}
		_, err = e.s.AppendBlockFromURL(e.ctx, path("log"), Path{}, nil, SourceOptions{Fetch: endless}, nil, AppendBlockOptions{})
		wantCode(t, err, 400, azerr.InvalidHeaderValue)
		if got := e.read(path("log")); len(got) != 0 {
			t.Fatalf("the append blob has %d bytes after a refused append", len(got))
		}
		r := &remote{body: []byte("chunked"), unsized: true}
		res, err := e.s.AppendBlockFromURL(e.ctx, path("log"), Path{}, nil, SourceOptions{Fetch: r.fetch}, nil, AppendBlockOptions{})
		if err != nil || res.Blob.Size != 7 {
			t.Fatalf("append of a source of unknown size: %+v, %v", res, err)
		}
	})
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Put Block, Append Block and Put Page From URL send the source range to the fetch, and write
// what it returns as their body.
func TestRangesFromAnotherServer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		body := data(4*PageSize, 3)
		r := &remote{body: body}
		if _, err := e.s.PutBlockFromURL(e.ctx, path("blocks"), []byte("b1"), Path{}, &ByteRange{Start: 10, End: 19}, BlockFromURLOptions{Source: SourceOptions{Fetch: r.fetch}}); err != nil {
			t.Fatal(err)
		}
		e.commit("blocks", latest("b1")...)
		if got := e.read(path("blocks")); !bytes.Equal(got, body[10:20]) {
			t.Fatalf("block from URL: %d bytes", len(got))
		}
		e.createPageBlob("pages", 4*PageSize)
		sr := ByteRange{Start: PageSize, End: 3*PageSize - 1}
		if _, err := e.s.PutPagesFromURL(e.ctx, path("pages"), ByteRange{Start: 0, End: 2*PageSize - 1}, Path{}, sr, SourceOptions{Fetch: r.fetch}, nil, PageWriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := e.read(path("pages")); !bytes.Equal(got[:2*PageSize], body[PageSize:3*PageSize]) {
			t.Fatal("pages from URL hold other bytes")
		}
		if last := r.asked[len(r.asked)-1]; last == nil || *last != sr {
			t.Fatalf("the fetch was asked %v, want %v", last, sr)
		}
		// A source range shorter than the pages: nothing written.
		short := &remote{body: body[:PageSize]}
		_, err := e.s.PutPagesFromURL(e.ctx, path("pages"), ByteRange{Start: 2 * PageSize, End: 4*PageSize - 1}, Path{}, ByteRange{Start: 0, End: 2*PageSize - 1}, SourceOptions{Fetch: short.fetch}, nil, PageWriteOptions{})
		wantCode(t, err, 400, azerr.InvalidHeaderValue)
		if got := e.read(path("pages")); !bytes.Equal(got[2*PageSize:], make([]byte, 2*PageSize)) {
			t.Fatal("a refused page write from URL changed the pages")
		}
	})
}
