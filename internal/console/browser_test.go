package console

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/faults"
)

// The console in a real browser: Debian's chromium, headless, driven through the DevTools
// protocol. Each step leaves a screenshot in artifactsDir.

const chromiumInstall = "install Debian's chromium (apt-get install chromium) or set TABULA_CHROMIUM to a Chromium binary"

// chromium finds the browser: $TABULA_CHROMIUM, else chromium on the PATH. Without one the
// test is skipped, loudly, except under CI=true, where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("TABULA_CHROMIUM")
	if path == "" {
		var err error
		if path, err = exec.LookPath("chromium"); err != nil {
			path = "/usr/bin/chromium"
		}
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the console's browser test cannot run: no Chromium at %s: %s.", path, chromiumInstall)
		}
		t.Skipf("*** console browser test SKIPPED: no Chromium at %s: %s to run it (with CI=true this is a failure). ***", path, chromiumInstall)
	}
	return path
}

// artifactsDir is where the screenshots go: $TABULA_ARTIFACTS/console, else
// tabula-artifacts/console in the system's temporary directory. A run replaces the last one's.
func artifactsDir(t *testing.T) string {
	base := os.Getenv("TABULA_ARTIFACTS")
	if base == "" {
		base = filepath.Join(os.TempDir(), "tabula-artifacts")
	}
	dir := filepath.Join(base, "console")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots of each step: %s", dir)
	return dir
}

// browser is one tab, with the test's helpers.
type browser struct {
	t     *testing.T
	ctx   context.Context
	dir   string
	shots int

	mu         sync.Mutex
	exceptions []string // uncaught JavaScript errors of the page
}

func newBrowser(t *testing.T, path string) *browser {
	userData := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		// The machine has no network: nothing may try to reach one.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(userData),
		chromedp.WindowSize(1280, 800),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, dir: artifactsDir(t)}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	// The page confirms deletions; the test says yes.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() {
				b.mu.Lock()
				b.exceptions = append(b.exceptions, m.String())
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// stepTimeout bounds one step; the whole test takes a few seconds.
const stepTimeout = 15 * time.Second

// do runs actions, failing the test (with a screenshot of the page as it was) when one fails.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.shot("failed")
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// wait polls a JavaScript expression until it is true. (chromedp.Poll compiles its predicate
// with new Function, which the page's Content-Security-Policy rightly forbids.)
func (b *browser) wait(what, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		ok, err := eval[bool](b, "!!("+expr+")")
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.shot("failed")
			body, _ := eval[string](b, "document.querySelector('main').innerText")
			b.t.Fatalf("waiting for %s (%s): %v; the page shows:\n%s", what, expr, err, body)
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// text returns the text of the first element matching a CSS selector.
func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := eval[string](b, fmt.Sprintf("(document.querySelector(%q) || {}).textContent || ''", sel))
	if err != nil {
		b.t.Fatal(err)
	}
	return s
}

// shot keeps a screenshot of the viewport, numbered in the order taken.
func (b *browser) shot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	b.shots++
	path := filepath.Join(b.dir, fmt.Sprintf("%02d-%s.png", b.shots, name))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Error(err)
	}
	return path
}

func (b *browser) noExceptions() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.exceptions) > 0 {
		b.t.Errorf("the page threw:\n%s", strings.Join(b.exceptions, "\n"))
	}
}

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

func TestTheConsoleInChromium(t *testing.T) {
	path := chromium(t)
	f := newAPI(t)
	seed(t, f)
	// The design guide has seen a costly query and a hot partition on orders.
	for i := 0; i < 300; i++ {
		f.insights.Write("devstoreaccount1", "orders", "p1", 1, false, 100, 3)
		if i%3 == 0 {
			f.insights.Write("devstoreaccount1", "orders", fmt.Sprint("p", i), 1, false, 100, 3)
		}
	}
	f.insights.Query("devstoreaccount1", "orders", "Units eq 7", "table-scan", 3000, 1)
	f.insights.Judge()
	if len(f.insights.Findings()) < 2 {
		t.Fatalf("the fixture made no findings: %+v", f.insights.Findings())
	}

	start := time.Now()
	b := newBrowser(t, path)
	defer b.noExceptions()

	// Signing in: the development account's public key is offered; a wrong key is refused.
	b.do("loading the console", chromedp.Navigate(f.url+"/"))
	b.wait("the sign-in form", `!document.querySelector('#login').hidden && document.querySelector('#login-key').value !== ''`)
	if got := b.text("#login-hint"); !strings.Contains(got, "devstoreaccount1") {
		t.Errorf("hint %q", got)
	}
	b.shot("sign-in")
	b.do("a wrong key", chromedp.SetValue(css("#login-key"), "d3Jvbmcga2V5"), chromedp.Click(css("#login-submit")))
	b.wait("the refusal", `document.querySelector('#login-error .error')`)
	if got := b.text("#login-error"); !strings.Contains(got, "401 AuthenticationFailed") {
		t.Errorf("refusal %q", got)
	}
	b.shot("wrong-key")
	b.do("the right key", chromedp.SetValue(css("#login-key"), auth.DevelopmentAccountKey), chromedp.Click(css("#login-submit")))

	// Tables, then browsing one page by page.
	b.wait("the tables", `document.querySelector('#tables a.item-link')`)
	if got := b.text("#tables"); !strings.Contains(got, "orders") {
		t.Errorf("tables %q", got)
	}
	b.shot("tables")
	b.do("opening orders", chromedp.Click(css(`#tables a.item-link`)))
	b.wait("the first page", `document.querySelectorAll('#entities tr.entity-row').length === 20`)
	if got := b.text(".pager-info"); got != "Page 1 · entities 1–20" {
		t.Errorf("pager says %q", got)
	}
	b.do("the next page", chromedp.Click(css(".pager-next")))
	b.wait("the second page", `document.querySelector('.pager-info').textContent === 'Page 2 · entities 21–30 · last page'`)
	b.shot("browse")

	// A query, its plan and what it read.
	b.do("a query", chromedp.SetValue(css("#q-filter"), "PartitionKey eq 'p1' and Units ge 18"), chromedp.Click(css("#q-run")))
	b.wait("the query's answer", `document.querySelector('#q-stats .plan') && document.querySelectorAll('#entities tr.entity-row').length === 2`)
	if plan, scanned, returned := b.text("#q-stats .plan"), b.text("#q-scanned"), b.text("#q-returned"); plan != "partition-range" || scanned != "10" || returned != "2" {
		t.Errorf("plan %q scanned %q returned %q", plan, scanned, returned)
	}
	b.shot("query")

	// An entity: a bad value is refused as the service refuses it; a change of type, a new
	// property and a removed one are stored.
	b.do("opening (p1, 18)", chromedp.Click(css(`#entities tr[data-rk="18"] td.key a`)))
	b.wait("the entity", `document.querySelectorAll('#props tr.prop').length === 2`)
	if name := b.text("#e-etag"); !strings.HasPrefix(name, `W/"datetime'`) {
		t.Errorf("etag %q", name)
	}
	b.do("a bad Int32", chromedp.SetValue(css("#props tr:nth-child(2) .p-value"), "eighteen"), chromedp.Click(css("#e-save")))
	b.wait("the refusal", `document.querySelector('#entity-feedback .error')`)
	if got := b.text("#entity-feedback"); !strings.Contains(got, "400 InvalidInput") || !strings.Contains(got, "'Units' (Edm.Int32)") {
		t.Errorf("refusal %q", got)
	}
	b.shot("entity-refused")
	b.do("editing",
		chromedp.SetValue(css("#props tr:nth-child(2) .p-type"), "Edm.Int64"),
		chromedp.SetValue(css("#props tr:nth-child(2) .p-value"), "3000000000"),
		chromedp.Click(css("#e-add")),
		chromedp.SendKeys(css("#props tr:nth-child(3) .p-name"), "Note"),
		chromedp.SendKeys(css("#props tr:nth-child(3) .p-value"), "rush <b>now</b>"),
		chromedp.Click(css("#props tr:nth-child(1) .p-remove")),
		chromedp.Click(css("#e-save")))
	b.wait("the saved entity", `document.querySelector('#entity-feedback .notice')`)
	b.shot("entity-saved")
	tb, _ := f.tables.Table(b.ctx, "devstoreaccount1", "orders")
	stored, err := f.tables.Entity(b.ctx, tb, "p1", "18")
	if err != nil || fmt.Sprint(stored.Properties) != fmt.Sprint([]edm.Property{
		{Name: "Units", Value: edm.Value{Type: edm.Int64, Int: 3000000000}},
		{Name: "Note", Value: edm.Value{Type: edm.String, Str: "rush <b>now</b>"}},
	}) {
		t.Fatalf("stored %+v %v", stored.Properties, err)
	}
	if got := b.text("#e-etag"); got != edm.ETag(stored.Timestamp) {
		t.Errorf("the page shows etag %q, the store has %q", got, edm.ETag(stored.Timestamp))
	}

	// A new entity, inserted through the page.
	b.do("back to orders", chromedp.Click(css(`.crumbs a[href="#/tables/orders"]`)))
	b.do("a new entity", chromedp.Click(css("#new-entity")))
	b.wait("the empty form", `document.querySelector('#e-pk') && !document.querySelector('#e-pk').readOnly`)
	b.do("filling it",
		chromedp.SendKeys(css("#e-pk"), "p9"),
		chromedp.SendKeys(css("#e-rk"), "new"),
		chromedp.SendKeys(css("#props tr:nth-child(1) .p-name"), "When"),
		chromedp.SetValue(css("#props tr:nth-child(1) .p-type"), "Edm.DateTime"),
		chromedp.SendKeys(css("#props tr:nth-child(1) .p-value"), "2024-05-01T10:00:00Z"),
		chromedp.Click(css("#e-save")))
	b.wait("the inserted entity", `document.querySelector('#e-etag')`)
	inserted, err := f.tables.Entity(b.ctx, tb, "p9", "new")
	if err != nil || len(inserted.Properties) != 1 || inserted.Properties[0].Value.Type != edm.DateTime || edm.Ticks(inserted.Properties[0].Value.Int).String() != "2024-05-01T10:00:00Z" {
		t.Fatalf("inserted %+v %v", inserted, err)
	}

	// Blobs: a file uploaded through the page, found in a folder, downloaded and deleted.
	ctx := context.Background()
	if _, err := f.blobs.CreateContainer(ctx, "devstoreaccount1", "docs", nil, blob.PrivateAccess); err != nil {
		t.Fatal(err)
	}
	upload := filepath.Join(t.TempDir(), "report.txt")
	if err := os.WriteFile(upload, []byte("quarterly figures\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	downloads := t.TempDir()
	if _, err := chromedp.CallBrowser(b.ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads,
	}); err != nil {
		t.Fatal(err)
	}
	b.do("the containers", chromedp.Click(css(`#side a[href="#/containers"]`)))
	b.wait("the containers", `document.querySelector('#containers a.item-link')`)
	b.do("opening docs", chromedp.Click(css(`#containers a.item-link`)))
	b.wait("an empty container", `document.querySelector('#blobs td.muted')`)
	b.do("uploading", chromedp.SetUploadFiles(css("#b-files"), []string{upload}), chromedp.Click(css("#b-upload")))
	b.wait("the uploaded blob", `document.querySelector('#blobs tr.blob[data-name="report.txt"]')`)
	d, err := f.blobs.GetBlob(ctx, blob.Path{Account: "devstoreaccount1", Container: "docs", Name: "report.txt"}, blob.GetBlobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(d.Body)
	d.Body.Close()
	if string(got) != "quarterly figures\n" || d.Blob.Properties.ContentType != "text/plain" {
		t.Fatalf("stored %q as %s", got, d.Blob.Properties.ContentType)
	}
	if _, _, err := f.blobs.PutBlob(ctx, blob.Path{Account: "devstoreaccount1", Container: "docs", Name: "2024/q1.csv"}, strings.NewReader("a,b\n"), 4,
		blob.PutBlobOptions{Type: blob.BlockBlob, Properties: blob.ContentProperties{ContentType: "text/csv"}}); err != nil {
		t.Fatal(err)
	}
	b.do("listing again", chromedp.Click(css(`.crumbs a[href="#/containers"]`)), chromedp.Click(css(`#containers a.item-link`)))
	b.wait("the folder", `document.querySelector('#blobs tr.folder a')`)
	b.shot("blobs")
	b.do("downloading", chromedp.Click(css(`#blobs tr.blob[data-name="report.txt"] .b-download`)))
	deadline := time.Now().Add(stepTimeout)
	for {
		if got, err := os.ReadFile(filepath.Join(downloads, "report.txt")); err == nil && string(got) == "quarterly figures\n" {
			break
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(downloads)
			t.Fatalf("no download of report.txt in %s: %v", downloads, entries)
		}
		time.Sleep(40 * time.Millisecond)
	}
	b.do("deleting", chromedp.Click(css(`#blobs tr.blob[data-name="report.txt"] .b-delete`)))
	b.wait("the blob gone", `!document.querySelector('#blobs tr.blob[data-name="report.txt"]') && document.querySelector('#blob-feedback .notice')`)
	if _, err := f.blobs.GetBlobProperties(ctx, blob.Path{Account: "devstoreaccount1", Container: "docs", Name: "report.txt"}, "", blob.Conditions{}); err == nil {
		t.Error("report.txt is still stored")
	}
	b.do("into the folder", chromedp.Click(css(`#blobs tr.folder a`)))
	b.wait("the folder's blob", `document.querySelector('#blobs tr.blob[data-name="2024/q1.csv"]')`)

	// Queues: one created on the page, a message put, peeked, received with a pop receipt
	// and deleted with it; two more put, and the queue cleared.
	b.do("the queues", chromedp.Click(css(`#side a[href="#/queues"]`)))
	b.wait("no queue yet", `document.querySelector('#queues td.muted')`)
	b.do("a new queue", chromedp.SendKeys(css("#new-queue"), "jobs"), chromedp.Click(css(`.pane-head form button[type="submit"]`)))
	b.wait("the new queue", `document.querySelector('#queues a.item-link')?.textContent === 'jobs' && document.querySelector('#queues td.count')?.textContent === '0'`)
	jobs, err := f.queues.Queue(ctx, "devstoreaccount1", "jobs")
	if err != nil {
		t.Fatalf("the queue the page created: %v", err)
	}
	b.do("opening jobs", chromedp.Click(css(`#queues a.item-link`)))
	b.wait("the empty queue", `document.querySelector('#peeked td.muted')`)
	b.do("a visibility timeout past 7 days", chromedp.SetValue(css("#m-text"), "too late"), chromedp.SetValue(css("#m-visibility"), "604801"), chromedp.Click(css("#m-put")))
	b.wait("the refusal", `document.querySelector('#queue-feedback .error')`)
	if got := b.text("#queue-feedback"); !strings.Contains(got, "400 OutOfRangeQueryParameterValue") || !strings.Contains(got, "visibilitytimeout=604801") {
		t.Errorf("refusal %q", got)
	}
	b.do("visible at once", chromedp.SetValue(css("#m-visibility"), "0"))
	b.do("a message", chromedp.SetValue(css("#m-text"), "build #7 <main>\nthen deploy"), chromedp.Click(css("#m-put")))
	b.wait("the message, peeked", `document.querySelector('#peeked tr.message td.text')?.textContent === 'build #7 <main>\nthen deploy' && document.querySelector('#q-count').textContent.startsWith('≈ 1 message,')`)
	if ms, err := f.queues.PeekMessages(ctx, jobs, 32); err != nil || len(ms) != 1 || ms[0].Text != "build #7 <main>\nthen deploy" {
		t.Fatalf("stored %+v %v", ms, err)
	}
	b.shot("queue-peek")
	b.do("receiving it", chromedp.SetValue(css("#r-visibility"), "60"), chromedp.Click(css("#r-get")))
	b.wait("the received message", `document.querySelector('#received tr.received .receipt')?.textContent.length === 27 && !document.querySelector('#peeked tr.message')`)
	if got := b.text("#received tr.received td.num"); got != "1" {
		t.Errorf("the received message's dequeue count shows %q", got)
	}
	if ms, err := f.queues.PeekMessages(ctx, jobs, 32); err != nil || len(ms) != 0 {
		t.Fatalf("a received message is still visible: %+v %v", ms, err)
	}
	b.shot("queue-received")
	b.do("deleting it", chromedp.Click(css("#received tr.received .m-delete")))
	b.wait("the message gone", `!document.querySelector('#received tr.received') && document.querySelector('#queue-feedback .notice')?.textContent.includes('is deleted') && document.querySelector('#q-count').textContent.startsWith('≈ 0 messages')`)
	if n, err := f.queues.ApproximateMessageCount(ctx, jobs); err != nil || n != 0 {
		t.Fatalf("after the deletion the queue holds %d messages (%v)", n, err)
	}
	for i, text := range []string{"first", "second"} {
		b.do("another message", chromedp.SetValue(css("#m-text"), text), chromedp.Click(css("#m-put")))
		b.wait("it peeked", fmt.Sprintf(`document.querySelectorAll('#peeked tr.message').length === %d`, i+1))
	}
	b.do("clearing", chromedp.Click(css("#q-clear")))
	b.wait("the queue cleared", `!document.querySelector('#peeked tr.message') && document.querySelector('#queue-feedback .notice')?.textContent.includes('cleared') && document.querySelector('#q-count').textContent.startsWith('≈ 0 messages')`)
	if n, err := f.queues.ApproximateMessageCount(ctx, jobs); err != nil || n != 0 {
		t.Fatalf("after Clear the queue holds %d messages (%v)", n, err)
	}
	b.shot("queue-cleared")

	// The design guide's findings, with their advice.
	b.do("the design guide", chromedp.Click(css(`#side a[href="#/insights"]`)))
	b.wait("the findings", `document.querySelector('#findings article[data-kind="costly-query"]') && document.querySelector('#findings article[data-kind="hot-partition"]')`)
	if got := b.text(`#findings article[data-kind="costly-query"]`); !strings.Contains(got, "Units eq ?") || !strings.Contains(got, "PartitionKey eq condition") {
		t.Errorf("costly query %q", got)
	}
	b.shot("insights")

	// A fault rule added, hit, and removed.
	b.do("the fault rules", chromedp.Click(css(`#side a[href="#/faults"]`)))
	b.wait("the rules", `document.querySelector('#rules td')?.textContent.startsWith('No rules')`)
	b.wait("every service's operations suggested", `document.querySelector('#ops option[value="Put Blob"]') && document.querySelector('#ops option[value="Put Message"]')`)
	b.do("a rule that could never match",
		chromedp.SetValue(css("#f-id"), "typo"),
		chromedp.SetValue(css("#f-operation"), "InsertEntity"),
		chromedp.Click(css("#f-add")))
	b.wait("its refusal", `document.querySelector('.feedback .error')?.textContent.includes('did you mean "Insert Entity"?')`)
	b.do("a rule",
		chromedp.SetValue(css("#f-id"), "flaky-inserts"),
		chromedp.SetValue(css("#f-service"), "table"),
		chromedp.SetValue(css("#f-operation"), "Insert Entity"),
		chromedp.SetValue(css("#f-probability"), "0.5"),
		chromedp.SetValue(css("#f-status"), "503"),
		chromedp.SetValue(css("#f-code"), "ServerBusy"),
		chromedp.Click(css("#f-add")))
	b.wait("the new rule", `document.querySelector('#rules tr.rule[data-id="flaky-inserts"]')`)
	rules := f.faults.Rules()
	if len(rules) != 1 || rules[0].Operation != "Insert Entity" || rules[0].Status != 503 || rules[0].Code != "ServerBusy" || rules[0].Probability != 0.5 {
		t.Fatalf("rules %+v", rules)
	}
	hits := 0
	for hits < 3 {
		if _, ok := f.faults.Match(faults.Request{Service: "table", Operation: "Insert Entity"}, false); ok {
			hits++
		}
	}
	b.do("the rules again", chromedp.Click(css(`#side a[href="#/faults"]`)))
	b.wait("the hits", `document.querySelector('#rules tr.rule[data-id="flaky-inserts"] .hits')?.textContent === '3'`)
	b.shot("faults")
	b.do("removing it", chromedp.Click(css(`#rules tr.rule[data-id="flaky-inserts"] button`)))
	b.wait("no rule", `!document.querySelector('#rules tr.rule')`)
	if !f.faults.Empty() {
		t.Errorf("the rule is still active: %+v", f.faults.Rules())
	}
	t.Logf("the browser steps took %v", time.Since(start).Round(time.Millisecond))
}
