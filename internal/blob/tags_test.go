package blob

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// Tag expressions: which parse in which dialect, and what they match.
func TestTagExpressions(t *testing.T) {
	tags := Tags{"Status": "Done", "Priority": "05", "a b": "x:y", "empty": ""}
	cases := []struct {
		expr  string
		mode  tagExprMode
		match string // "yes", "no", or the parse error's start
	}{
		{`"Status" = 'Done'`, ifTagsCondition, "yes"},
		{`Status = 'Done'`, ifTagsCondition, "yes"},
		{`"Status"='Done'`, ifTagsCondition, "yes"},
		{`"Status" = 'done'`, ifTagsCondition, "no"},
		{`"Status" <> 'Done'`, ifTagsCondition, "no"},
		{`"Missing" <> 'Done'`, ifTagsCondition, "no"},
		{`"Priority" >= '05' and "Priority" < '10'`, ifTagsCondition, "yes"},
		{`"Priority" > '05'`, ifTagsCondition, "no"},
		{`"Priority" <= '05' AND "a b" = 'x:y'`, ifTagsCondition, "yes"},
		{`"Status" = 'No' OR "Priority" = '05'`, ifTagsCondition, "yes"},
		{`"Status" = 'No' OR "Priority" = '05' AND "Status" = 'No'`, ifTagsCondition, "no"},
		{`("Status" = 'No' OR "Priority" = '05') AND "Status" = 'Done'`, ifTagsCondition, "yes"},
		{`"empty" = ''`, ifTagsCondition, "yes"},
		{`"Status" == 'Done'`, ifTagsCondition, "== is not"},
		{`"Status" = Done`, ifTagsCondition, "expected a value"},
		{`"Status" = 'Done`, ifTagsCondition, "a quoted value"},
		{`"Sta!tus" = 'x'`, ifTagsCondition, `"Sta!tus" is not`},
		{`("Status" = 'Done'`, ifTagsCondition, "a parenthesis"},
		{`"Status" = 'Done' extra`, ifTagsCondition, "unexpected"},
		{`@container = 'c'`, ifTagsCondition, "@container is allowed"},
		{``, ifTagsCondition, "a tag key is missing"},
		{`"Status" = 'Done' AND @container = 'ctr'`, whereInAccount, "yes"},
		{`@container = 'other' AND "Status" = 'Done'`, whereInAccount, "no"},
		{`@container = 'ctr'`, whereInAccount, "no tag"},
		{`@container > 'ctr' AND "Status" = 'Done'`, whereInAccount, "@container takes"},
		{`"Status" = 'Done' AND @container = 'ctr'`, whereInContainer, "@container is allowed"},
		{`"Status" = 'Done' OR "Priority" = '05'`, whereInAccount, "OR is allowed"},
		{`"Status" <> 'Done'`, whereInAccount, "<> is allowed"},
		{`("Status" = 'Done')`, whereInAccount, "parentheses are allowed"},
		{`"Priority" > '01' AND "Priority" >= '02'`, whereInAccount, `"Priority" has two bounds`},
		{`"Priority" > '01' AND "Priority" <= '10'`, whereInAccount, "yes"},
	}
	for _, c := range cases {
		n, err := parseTagExpr(c.expr, c.mode)
		got := ""
		switch {
		case err != nil:
			got = err.Error()
			if !strings.HasPrefix(got, c.match) {
				t.Errorf("%q (mode %d): error %q, want %q", c.expr, c.mode, got, c.match)
			}
			continue
		case n.matches("ctr", tags):
			got = "yes"
		default:
			got = "no"
		}
		if got != c.match {
			t.Errorf("%q (mode %d): %s, want %s", c.expr, c.mode, got, c.match)
		}
	}
}

// The parser never panics, and what it accepts names only valid keys and values.
func FuzzTagExpression(f *testing.F) {
	for _, s := range []string{`"a" = 'b'`, `a>='1' AND b<'2'`, `("x" = '' OR y <> 'z')`, `@container = 'c' and "k" = 'v'`, `"k" =`, `((`, `'v'`} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(2))
	}
	f.Fuzz(func(t *testing.T, src string, mode uint8) {
		n, err := parseTagExpr(src, tagExprMode(mode%3))
		if err != nil {
			return
		}
		for _, c := range n.comparisons() {
			if c.key != containerKeyword && ValidateTags(Tags{c.key: c.value}) != nil {
				t.Fatalf("%q accepted with comparison %+v", src, c)
			}
		}
		n.matches("c", Tags{"a": "b"})
	})
}

func (e *env) tagBlob(container, name string, tags Tags) {
	e.Helper()
	p := Path{Account: "acct", Container: container, Name: name}
	if _, _, err := e.s.PutBlob(e.ctx, p, nil, 0, PutBlobOptions{Type: BlockBlob, Tags: tags}); err != nil {
		e.Fatal(err)
	}
}

// find lists what Find Blobs by Tags returns, page by page: "container/name{tags}".
func (e *env) find(container, where string, maxResults int) ([]string, error) {
	e.Helper()
	var pages []string
	marker := ""
	for {
		found, err := e.s.FindBlobsByTags(e.ctx, "acct", FindBlobsOptions{Where: where, Container: container, Marker: marker, MaxResults: maxResults})
		if err != nil {
			return nil, err
		}
		var page []string
		for _, b := range found.Blobs {
			keys := make([]string, 0, len(b.Tags))
			for k, v := range b.Tags {
				keys = append(keys, k+"="+v)
			}
			slices.Sort(keys)
			page = append(page, b.Container+"/"+b.Name+fmt.Sprint(keys))
		}
		pages = append(pages, strings.Join(page, " "))
		if marker = found.NextMarker; marker == "" {
			return pages, nil
		}
	}
}

// Find Blobs by Tags reads the index of one key of its expression, judges the rest on the
// tag sets, returns the tags the expression names, pages with markers, and follows every
// change of tags: Set Blob Tags, overwrites, deletions, and deleted containers.
func TestFindBlobsByTags(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		if _, err := e.s.CreateContainer(e.ctx, "acct", "two", nil, PrivateAccess); err != nil {
			t.Fatal(err)
		}
		e.tagBlob("ctr", "a", Tags{"Project": "Contoso", "Rank": "01", "Other": "x"})
		e.tagBlob("ctr", "b", Tags{"Project": "Contoso", "Rank": "05"})
		e.tagBlob("ctr", "c", Tags{"Project": "Fabrikam", "Rank": "07"})
		e.tagBlob("two", "d", Tags{"Project": "Contoso", "Rank": "09"})
		e.tagBlob("ctr", "untagged", nil)
		cases := []struct {
			container, where string
			max              int
			want             string
		}{
			{"", `"Project" = 'Contoso'`, 0, "[ctr/a[Project=Contoso] ctr/b[Project=Contoso] two/d[Project=Contoso]]"},
			{"", `"Project" = 'Contoso'`, 2, "[ctr/a[Project=Contoso] ctr/b[Project=Contoso] two/d[Project=Contoso]]"},
			{"", `"Project" = 'Contoso' AND "Rank" > '01'`, 0, "[ctr/b[Project=Contoso Rank=05] two/d[Project=Contoso Rank=09]]"},
			{"", `"Rank" >= '05' AND "Rank" < '09'`, 0, "[ctr/b[Rank=05] ctr/c[Rank=07]]"},
			{"", `"Rank" <= '05'`, 1, "[ctr/a[Rank=01] ctr/b[Rank=05] ]"},
			{"", `"Rank" > '5'`, 0, "[]"},
			{"", `"Rank" > '09' AND "Rank" < '01'`, 0, "[]"},
			{"", `@container = 'two' AND "Project" = 'Contoso'`, 0, "[two/d[Project=Contoso]]"},
			{"two", `"Project" = 'Contoso'`, 0, "[two/d[Project=Contoso]]"},
			{"", `"Nope" = 'x'`, 0, "[]"},
		}
		for _, c := range cases {
			got, err := e.find(c.container, c.where, c.max)
			if err != nil {
				t.Fatalf("%s: %v", c.where, err)
			}
			// A page may end right before nothing: the pages then end with an empty one.
			if s := fmt.Sprint(strings.Join(got, " ")); "["+strings.TrimSpace(s)+"]" != strings.ReplaceAll(c.want, " ]", "]") {
				t.Errorf("%s in %q (max %d): %q, want %s", c.where, c.container, c.max, got, c.want)
			}
		}
		_, err := e.find("", `"Project" = Contoso`, 0)
		wantCode(t, err, 400, azerr.InvalidQueryParameterValue)
		_, err = e.find("missing", `"Project" = 'Contoso'`, 0)
		wantCode(t, err, 404, azerr.ContainerNotFound)

		// Every change of tags reaches the index.
		if err := e.s.SetBlobTags(e.ctx, path("a"), Tags{"Project": "Fabrikam"}, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		e.tagBlob("ctr", "b", nil) // an overwrite without tags
		if err := e.s.DeleteBlob(e.ctx, path("c"), DeleteBlobOnly, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		if err := e.s.DeleteContainer(e.ctx, "acct", "two", "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		if got, _ := e.find("", `"Project" >= 'A'`, 0); fmt.Sprint(got) != "[ctr/a[Project=Fabrikam]]" {
			t.Fatalf("after the changes: %q", got)
		}
		// A container of the same name is a new one: the old one's rows stay invisible,
		// and the sweep removes them.
		if _, err := e.s.CreateContainer(e.ctx, "acct", "two", nil, PrivateAccess); err != nil {
			t.Fatal(err)
		}
		e.tagBlob("two", "d", Tags{"Project": "Contoso"})
		e.collect()
		if got, _ := e.find("", `"Project" >= 'A'`, 0); fmt.Sprint(got) != "[two/d[Project=Contoso] ctr/a[Project=Fabrikam]]" {
			t.Fatalf("after re-creating the container: %q", got)
		}
		rows := 0
		err = e.st.Scan(e.ctx, store.SpaceRange(tagIndexSpace), func(store.Record) (bool, error) {
			rows++
			return true, nil
		})
		if err != nil || rows != 2 {
			t.Fatalf("%d rows in the tag index (%v), want 2", rows, err)
		}
	})
}

// x-ms-if-tags conditions reads and writes on the blob's tags: 412 ConditionNotMet when false,
// 400 InvalidHeaderValue when it is not an expression, 412 on a blob that does not exist.
func TestIfTagsConditions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.tagBlob("ctr", "b", Tags{"Status": "Done"})
		_, err := e.s.GetBlobProperties(e.ctx, path("b"), "", Conditions{IfTags: `"Status" = 'Done'`})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.s.GetBlobProperties(e.ctx, path("b"), "", Conditions{IfTags: `"Status" <> 'Done'`})
		wantCode(t, err, 412, azerr.ConditionNotMet)
		_, err = e.s.SetBlobMetadata(e.ctx, path("b"), Metadata{"m": "1"}, "", Conditions{IfTags: `"Status" = 'Open'`})
		wantCode(t, err, 412, azerr.ConditionNotMet)
		_, err = e.s.SetBlobMetadata(e.ctx, path("b"), Metadata{"m": "1"}, "", Conditions{IfTags: `Status = Done`})
		wantCode(t, err, 400, azerr.InvalidHeaderValue)
		if _, err := e.s.SetBlobMetadata(e.ctx, path("b"), Metadata{"m": "1"}, "", Conditions{IfTags: `"Status" = 'Done' OR "x" = 'y'`}); err != nil {
			t.Fatal(err)
		}
		err = e.s.SetBlobTags(e.ctx, path("b"), Tags{}, "", Conditions{IfTags: `"Status" = 'Open'`})
		wantCode(t, err, 412, azerr.ConditionNotMet)
		_, _, err = e.s.PutBlob(e.ctx, path("new"), nil, 0, PutBlobOptions{Type: BlockBlob, Conditions: Conditions{IfTags: `"Status" <> 'x'`}})
		wantCode(t, err, 412, azerr.ConditionNotMet)
		err = e.s.DeleteBlob(e.ctx, path("b"), DeleteBlobOnly, "", Conditions{IfTags: `"Status" = 'Done'`})
		if err != nil {
			t.Fatal(err)
		}
	})
}
