package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// The yardsticks of the large-blob workloads (--disk-dir): what the disk under the data
// directory writes, synced, and what a plain Go file server sends from it. Both run in the
// bench process, on the same machine as the servers measured, in the same run.

// DiskRate is the synced sequential write rate of the filesystem of --disk-dir: --blob-size
// bytes, the bytes of the big blob, written in --block-size writes to a new file.
type DiskRate struct {
	Dir        string `json:"dir"`
	Bytes      int64  `json:"bytes"`
	ChunkBytes int64  `json:"chunk_bytes"`
	// SyncAtEndMBPerSec: every chunk written with write(2), then one fdatasync; the time
	// includes the sync. The disk's own streaming rate.
	SyncAtEndMBPerSec float64 `json:"sync_at_end_mb_per_sec"`
	// SyncPerChunkMBPerSec: fdatasync after every chunk, as a store that acknowledges each
	// block only once it is durable must do.
	SyncPerChunkMBPerSec float64 `json:"sync_per_chunk_mb_per_sec"`
}

// measureDisk writes the big blob's bytes to two new files in cfg.diskDir, one synced after
// every chunk and one synced at the end, and returns the rates and the second file's path
// (kept for the file server; the caller removes it).
func measureDisk(ctx context.Context, cfg *config, runID string) (*DiskRate, string, error) {
	d := &DiskRate{Dir: cfg.diskDir, Bytes: cfg.blobSize, ChunkBytes: cfg.blockSize}
	chunk := make([]byte, cfg.blockSize)
	write := func(path string, syncEach bool) (float64, error) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		start := time.Now()
		for block := range blocksOf(cfg) {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			off, n := blockRange(cfg, block)
			fillContent(chunk[:n], off, block > 0)
			if _, err := f.Write(chunk[:n]); err != nil {
				return 0, err
			}
			if syncEach || block == blocksOf(cfg)-1 {
				if err := fdatasync(f); err != nil {
					return 0, err
				}
			}
		}
		el := time.Since(start)
		return float64(cfg.blobSize) / el.Seconds() / 1e6, f.Close()
	}
	perChunk := filepath.Join(cfg.diskDir, "tabula-bench-"+runID+"-synced-each.dat")
	rate, err := write(perChunk, true)
	os.Remove(perChunk)
	if err != nil {
		return nil, "", fmt.Errorf("measuring the disk in %s: %w", cfg.diskDir, err)
	}
	d.SyncPerChunkMBPerSec = rate
	atEnd := filepath.Join(cfg.diskDir, "tabula-bench-"+runID+".dat")
	rate, err = write(atEnd, false)
	if err != nil {
		os.Remove(atEnd)
		return nil, "", fmt.Errorf("measuring the disk in %s: %w", cfg.diskDir, err)
	}
	d.SyncAtEndMBPerSec = rate
	return d, atEnd, nil
}

// serveFile serves path to every GET, whatever the URL, with net/http.ServeFile: ranges,
// and sendfile(2) from the file to the socket. It listens on a free loopback port until stop
// is called.
func serveFile(path string) (endpoint string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A type given spares ServeFile reading the start of the file to sniff one.
		w.Header().Set("Content-Type", "application/octet-stream")
		http.ServeFile(w, r, path)
	})}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/" + devAccount, func() { srv.Close() }, nil
}

// runDiskReference measures the disk and runs the selected download workloads against a file
// server sending the same bytes from it.
func runDiskReference(ctx context.Context, cfg *config, rep *Report, runID string, seed uint64, prog *progress, human io.Writer) error {
	d, path, err := measureDisk(ctx, cfg, runID)
	if err != nil {
		return err
	}
	defer os.Remove(path)
	rep.Disk = d
	var downloads []workload
	for _, wl := range cfg.workloads {
		if wl.blob != nil && wl.blob.container == bigContainer {
			downloads = append(downloads, wl)
		}
	}
	if len(downloads) > 0 {
		endpoint, stop, err := serveFile(path)
		if err != nil {
			return fmt.Errorf("starting the file server: %w", err)
		}
		defer stop()
		c, err := NewClient(endpoint, "", "", cfg.blobParallel, cfg.timeout)
		if err != nil {
			return err
		}
		defer c.Close()
		c.kind = blobService
		t := &target{label: "go-fileserver", client: c, blob: c}
		t.bigBlob = "/file/" + bigBlobName
		for _, wl := range downloads {
			r := runWorkload(ctx, cfg, wl, t, seed, prog)
			if err := ctx.Err(); err != nil {
				return err
			}
			rep.FileServer = append(rep.FileServer, r)
			rep.Errors += r.ErrorCount
		}
	}
	printDisk(human, rep)
	return nil
}
