package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// heldByAnother reports whether err, from opening or locking the embedded store's directory,
// means another process (or this one) holds it. Pebble takes a POSIX lock on DIR/LOCK, which
// fails with EAGAIN or EACCES when held elsewhere, and says so in words when held here.
func heldByAnother(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) ||
		strings.Contains(err.Error(), "lock held by current process")
}

// dataDirError explains a failure to open the embedded store in dir.
func dataDirError(dir string, err error) error {
	if heldByAnother(err) {
		return fmt.Errorf("another Tabula is using %s: one data directory serves one Tabula at a time "+
			"(stop the other, or give this one --data DIR or --in-memory)", dir)
	}
	return fmt.Errorf("opening the store in %s: %w", dir, err)
}

// keptByReset are the entries of a data directory tabula reset leaves: the local CA, which
// clients may have been told to trust, and the lock it holds while it works.
var keptByReset = map[string]bool{"tls": true, "LOCK": true}

const resetUsage = `usage: tabula reset [--yes] [--data DIR]

Deletes everything the embedded store keeps in the data directory (--data, else $TABULA_DATA,
else the default one shared by every Tabula started without --data), after asking. The local
CA of --tls (DIR/tls) is kept. Refuses while a Tabula is using the directory.

Flags:
`

// resetVerb runs tabula reset: it empties a data directory, after asking on stderr for a yes
// on stdin unless --yes.
func resetVerb(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reset", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var yes bool
	dir := envOr("TABULA_DATA", defaultDataDir())
	fs.BoolVar(&yes, "yes", false, "do not ask (for scripts)")
	fs.BoolVar(&yes, "y", false, "short for --yes")
	fs.StringVar(&dir, "data", dir, "the data `DIR` to empty (env TABULA_DATA)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, resetUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return err
		}
		return fmt.Errorf("%w (see tabula reset --help)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("tabula reset takes no arguments (see tabula reset --help)")
	}
	if dir == "" {
		return errors.New("tabula reset: --data (TABULA_DATA) is empty")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stdout, "%s does not exist: nothing to reset\n", dir)
		return nil
	}
	if err != nil {
		return err
	}
	if !looksLikeTabulaData(entries) {
		return fmt.Errorf("%s does not look like a Tabula data directory (no store files in it): not touching it", dir)
	}
	lock, err := vfs.Default.Lock(filepath.Join(dir, "LOCK"))
	if err != nil {
		if heldByAnother(err) {
			return fmt.Errorf("another Tabula is using %s: stop it first", dir)
		}
		return err
	}
	defer lock.Close()
	size := duSize(dir, entries)
	if !yes {
		fmt.Fprintf(stderr, "This deletes every table and entity Tabula keeps in %s (%s; the local CA in tls/ stays).\nType yes to go on: ", dir, mebibytes(size))
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "yes" && a != "y" {
			return errors.New("tabula reset: not confirmed, nothing deleted")
		}
	}
	for _, e := range entries {
		if keptByReset[e.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("emptying %s: %w (the store there is now incomplete: run tabula reset again)", dir, err)
		}
	}
	fmt.Fprintf(stdout, "emptied %s\n", dir)
	return nil
}

// looksLikeTabulaData reports whether a directory's entries are those of a Tabula data
// directory: a Pebble store (its MANIFEST), or nothing but what reset keeps. It keeps reset
// from emptying a directory given by mistake.
func looksLikeTabulaData(entries []os.DirEntry) bool {
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "MANIFEST-") {
			return true
		}
	}
	for _, e := range entries {
		if !keptByReset[e.Name()] {
			return false
		}
	}
	return true
}

// duSize adds up the sizes of the files under dir's entries that reset deletes.
func duSize(dir string, entries []os.DirEntry) int64 {
	var n int64
	for _, e := range entries {
		if keptByReset[e.Name()] {
			continue
		}
		_ = filepath.WalkDir(filepath.Join(dir, e.Name()), func(_ string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					n += fi.Size()
				}
			}
			return nil
		})
	}
	return n
}

func mebibytes(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
