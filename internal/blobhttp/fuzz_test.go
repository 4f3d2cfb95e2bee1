package blobhttp

import (
	"bytes"
	"encoding/base64"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/blob"
)

// FuzzParseBlockList holds Put Block List's body reader to two promises: whatever the bytes,
// it answers an Azure error rather than panicking, and a list it accepts, written again as a
// client would, reads back the same.
func FuzzParseBlockList(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0" encoding="utf-8"?><BlockList><Latest>AAAA</Latest><Committed>AQID</Committed><Uncommitted>YmxvY2s=</Uncommitted></BlockList>`))
	f.Add([]byte("\xef\xbb\xbf<BlockList>\n  <Latest> AAAA </Latest>\n</BlockList>"))
	f.Add([]byte(`<BlockList><Latest><x/></Latest></BlockList>`))
	f.Add([]byte(`<BlockList><Other>AAAA</Other></BlockList>`))
	f.Add([]byte(`<BlockList><Latest>not base64</Latest></BlockList>`))
	f.Add([]byte(`<Blocks/>`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, body []byte) {
		list, err := parseBlockList(body)
		if err != nil {
			var ae *azerr.Error
			if !errors.As(err, &ae) {
				t.Fatalf("error %v (%T) is not an Azure error", err, err)
			}
			return
		}
		var again bytes.Buffer
		again.WriteString("<BlockList>")
		for _, e := range list {
			name := [...]string{blob.Latest: "Latest", blob.Committed: "Committed", blob.Uncommitted: "Uncommitted"}[e.Kind]
			again.WriteString("<" + name + ">" + base64.StdEncoding.EncodeToString(e.ID) + "</" + name + ">")
		}
		again.WriteString("</BlockList>")
		back, err := parseBlockList(again.Bytes())
		if err != nil {
			t.Fatalf("the list %v, written again, is refused: %v", list, err)
		}
		if !slices.EqualFunc(list, back, func(a, b blob.BlockListEntry) bool {
			return a.Kind == b.Kind && bytes.Equal(a.ID, b.ID)
		}) {
			t.Fatalf("read %v, then %v from it written again", list, back)
		}
	})
}

// FuzzParseTags holds Set Blob Tags' body reader to the same promises, writing accepted tags
// again as Get Blob Tags does.
func FuzzParseTags(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0" encoding="utf-8"?><Tags><TagSet><Tag><Key>project</Key><Value>tabula</Value></Tag><Tag><Key>a b</Key><Value></Value></Tag></TagSet></Tags>`))
	f.Add([]byte(`<Tags><TagSet><Tag><Key>k</Key><Value>1</Value></Tag><Tag><Key>k</Key><Value>2</Value></Tag></TagSet></Tags>`))
	f.Add([]byte(`<Tags><TagSet><Tag><Key>&#xD;&amp;</Key><Value>&lt;</Value></Tag></TagSet></Tags>`))
	f.Add([]byte(`<Tags/>`))
	f.Add([]byte("  \xef\xbb\xbf"))
	f.Add([]byte(`<Tag>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		tags, err := parseTags(body)
		if err != nil {
			var ae *azerr.Error
			if !errors.As(err, &ae) {
				t.Fatalf("error %v (%T) is not an Azure error", err, err)
			}
			return
		}
		w := newXML()
		w.tags(tags)
		back, err := parseTags(w.Bytes())
		if err != nil {
			t.Fatalf("the tags %q, written again, are refused: %v", tags, err)
		}
		if !maps.Equal(tags, back) {
			t.Fatalf("read %q, then %q from them written again", tags, back)
		}
	})
}
