package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// progressEvery is how often a progress line is redrawn.
const progressEvery = 250 * time.Millisecond

// startProgress redraws the line status() returns on w every progressEvery, in place (\r),
// until the returned stop is called; stop erases it. With a nil w it draws nothing.
func startProgress(w io.Writer, status func() string) (stop func()) {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	width := 0
	wg.Go(func() {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				line := status()
				fmt.Fprintf(w, "\r%-*s", width, line)
				width = max(width, len(line))
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		if width > 0 {
			fmt.Fprintf(w, "\r%s\r", strings.Repeat(" ", width))
		}
	}
}

// bar draws done out of total as a 20-cell bar and a percentage: "[#########-----------]  45%".
func bar(done, total int64) string {
	const cells = 20
	done = min(max(done, 0), total)
	filled := int(done * cells / total)
	return fmt.Sprintf("[%s%s] %3d%%", strings.Repeat("#", filled), strings.Repeat("-", cells-filled), done*100/total)
}

// thousands writes n with thousands separators: 1234567 → 1,234,567.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// megabytes writes n bytes in MB with one decimal.
func megabytes(n int64) string { return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " MB" }

// rate is n per second over d.
func rate(n int64, d time.Duration) string {
	if d <= 0 {
		return "0"
	}
	return thousands(int64(float64(n) / d.Seconds()))
}
