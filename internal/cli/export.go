package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

const exportUsage = `export TABLE [FILE]

Writes every entity of TABLE (or those --filter selects) to FILE, or to stdout when FILE is
absent or "-", one JSON object a line, in PartitionKey and RowKey order:

  {"PartitionKey":"p","RowKey":"r","Timestamp@odata.type":"Edm.DateTime","Timestamp":"...",
   "Name":"x","Big@odata.type":"Edm.Int64","Big":"12","Ratio@odata.type":"Edm.Double","Ratio":5.0}

Every type JSON does not tell (Int64, Double, DateTime, Guid, Binary) is annotated, so that
tabula import puts back exactly what was exported (Timestamp is the service's and is not put
back). A FILE appears only once the export is complete. A progress line is drawn on stderr
when it is a terminal.
`

func exportVerb(ctx context.Context, args []string, env Env) error {
	fs, connFlag := newFlags(env, "export", exportUsage)
	filter := fs.String("filter", "", "export only the entities this OData `FILTER` selects")
	progress := fs.Bool("progress", false, "draw the progress line on stderr even when it is not a terminal")
	args, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(fs, args, 1, 2, "wants TABLE [FILE]"); err != nil {
		return err
	}
	svc, err := connect(*connFlag, env)
	if err != nil {
		return err
	}
	tableName := args[0]
	out, finish := env.Stdout, func(ok bool) error { return nil }
	if len(args) == 2 && args[1] != "-" {
		if out, finish, err = createAtomically(args[1]); err != nil {
			return err
		}
	}
	var progressW io.Writer
	if *progress || isTerminal(env.Stderr) {
		progressW = env.Stderr
	}
	var entities, bytes atomic.Int64
	start := time.Now()
	stop := startProgress(progressW, func() string {
		n := entities.Load()
		return fmt.Sprintf("export %s: %s entities, %s, %s/s", tableName, thousands(n), megabytes(bytes.Load()), rate(n, time.Since(start)))
	})
	bw := bufio.NewWriterSize(out, 1<<20)
	var line []byte
	_, err = query(ctx, svc.NewClient(tableName), *filter, "", 0, func(rows []row) error {
		for i := range rows {
			line = appendEntityJSON(line[:0], &rows[i], jsonOptions{timestamp: true})
			line = append(line, '\n')
			if _, err := bw.Write(line); err != nil {
				return err
			}
			bytes.Add(int64(len(line)))
		}
		entities.Add(int64(len(rows)))
		return nil
	})
	if err == nil {
		err = bw.Flush()
	}
	stop()
	if err := finish(err == nil); err != nil {
		return err
	}
	if err != nil {
		return fmt.Errorf("exporting %s: %w", tableName, err)
	}
	if progressW != nil {
		fmt.Fprintf(env.Stderr, "exported %s entities of %s (%s) in %.1fs\n", thousands(entities.Load()), tableName, megabytes(bytes.Load()), time.Since(start).Seconds())
	}
	return nil
}

// createAtomically creates a temporary file beside name; finish(true) syncs it and renames it
// to name, finish(false) removes it, so that name never holds half an export.
func createAtomically(name string) (io.Writer, func(ok bool) error, error) {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*.partial")
	if err != nil {
		return nil, nil, err
	}
	finish := func(ok bool) error {
		if !ok {
			f.Close()
			os.Remove(f.Name())
			return nil
		}
		err := f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), name)
		}
		if err != nil {
			os.Remove(f.Name())
		}
		return err
	}
	return f, finish, nil
}
