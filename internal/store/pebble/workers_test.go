package pebble

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestWorkersRunEveryFunctionAndEndWhenStopped(t *testing.T) {
	before := runtime.NumGoroutine()
	ws := newWorkers()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ran := 0
	for range 1000 {
		wg.Add(1)
		ws.run(func() {
			defer wg.Done()
			mu.Lock()
			ran++
			mu.Unlock()
		})
	}
	wg.Wait()
	if ran != 1000 {
		t.Fatalf("ran %d functions of 1000", ran)
	}
	if n := len(ws.idle); n == 0 || n > maxIdleWorkers {
		t.Errorf("%d idle workers after the burst, want 1 to %d", n, maxIdleWorkers)
	}

	// A worker stuck in its function is not handed another; stop ends the idle ones at once
	// and the stuck one when it is done.
	release := make(chan struct{})
	stuck := make(chan struct{})
	ws.run(func() { close(stuck); <-release })
	<-stuck
	done := make(chan struct{})
	ws.run(func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a function waited behind a stuck worker")
	}
	ws.stop()
	close(release)
	after := make(chan struct{})
	ws.run(func() { close(after) }) // a call still in flight after stop
	<-after
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines left after stop, %d before the workers", n, before)
	}
}
