package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/blob"
)

// A pending copy that ends after its request was answered gets a line of its own: INFO with
// the bytes when it succeeded, WARN with the reason when it failed.
func TestAPendingCopysEndIsLogged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	dst := blob.Path{Account: "devstoreaccount1", Container: "c", Name: "b"}
	logCopyEnd(log, blob.CopyEnd{Path: dst, ID: "id1", Status: "success", Bytes: 42})
	logCopyEnd(log, blob.CopyEnd{Path: dst, ID: "id2", Status: "failed", Description: `500 InternalError "broke off"`})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 ||
		!strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "resource=c/b") || !strings.Contains(lines[0], "copy_id=id1") || !strings.Contains(lines[0], "bytes=42") ||
		!strings.Contains(lines[1], "level=WARN") || !strings.Contains(lines[1], "copy_status=failed") || !strings.Contains(lines[1], "broke off") {
		t.Fatalf("log lines:\n%s", buf.String())
	}
}
