package auth

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryOperationIsListedUnderItsService keeps TableOperations, BlobOperations and
// QueueOperations whole: fault rules are checked against them, so an operation declared
// here but left out of its list could be served and logged yet refused in a rule. Only the
// operations asked of a grant in the middle of another (never a request's own) stay out.
func TestEveryOperationIsListedUnderItsService(t *testing.T) {
	notRequests := map[string]bool{"OpOverwriteBlob": true, "OpReadCopySourceBlob": true}
	lists := map[string]Service{"TableOperations": Table, "BlobOperations": Blob, "QueueOperations": Queue}

	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	listed := map[string]string{} // operation → list
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				v := spec.(*ast.ValueSpec)
				for i, name := range v.Names {
					if strings.HasPrefix(name.Name, "Op") && ast.IsExported(name.Name) {
						declared[name.Name] = true
					}
					if _, isList := lists[name.Name]; isList {
						for _, elt := range v.Values[i].(*ast.CompositeLit).Elts {
							listed[elt.(*ast.Ident).Name] = name.Name
						}
					}
				}
			}
		}
	}
	if len(declared) < 60 {
		t.Fatalf("found %d operations: the test no longer reads their declarations", len(declared))
	}
	for op := range declared {
		if _, ok := listed[op]; !ok && !notRequests[op] {
			t.Errorf("%s is in no service's list of operations", op)
		}
		if _, ok := listed[op]; ok && notRequests[op] {
			t.Errorf("%s is listed, but no request is served as it", op)
		}
	}
	for name, want := range map[string][]*Operation{"TableOperations": TableOperations, "BlobOperations": BlobOperations, "QueueOperations": QueueOperations} {
		for _, op := range want {
			if op.Service != lists[name] {
				t.Errorf("%s lists %q, an operation of the %v service", name, op.Name, op.Service)
			}
		}
	}
}
