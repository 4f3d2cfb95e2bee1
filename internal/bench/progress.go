package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress draws one status line, rewritten in place with \r, while a workload or the preload
// runs. With a nil writer it draws nothing.
type progress struct {
	w     io.Writer
	every time.Duration
}

// isTerminal reports whether w is a character device (a terminal), without a dependency on
// x/term: all that matters is whether a \r-rewritten line will be seen or pollute a log.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// start begins drawing the line for label until stop is called; stop erases it. planned is the
// workload's duration, zero when unknown (preload).
func (p *progress) start(label string, planned time.Duration, workers []*worker) (stop func()) {
	if p == nil || p.w == nil {
		return func() {}
	}
	begin := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	width := 0
	draw := func() {
		var n, failed int64
		for _, w := range workers {
			n += w.done.Load()
			failed += w.failed.Load()
		}
		el := time.Since(begin)
		var line string
		if planned > 0 {
			line = fmt.Sprintf("%s: %.1fs/%s, %s ops, %s/s, %d errors", label, el.Seconds(), planned, Thousands(float64(n)), Thousands(float64(n)/el.Seconds()), failed)
		} else {
			line = fmt.Sprintf("%s: %s done, %.1fs, %s/s", label, Thousands(float64(n)), el.Seconds(), Thousands(float64(n)/el.Seconds()))
		}
		fmt.Fprintf(p.w, "\r%-*s", width, line)
		width = max(width, len(line))
	}
	wg.Go(func() {
		t := time.NewTicker(p.every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				draw()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		if width > 0 {
			fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", width))
		}
	}
}
