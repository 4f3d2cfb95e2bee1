package pebble

import "sync"

// A commit runs on a goroutine other than its caller's, so that the caller can walk away
// from a stalled or failed disk (Store.write). Starting a goroutine per commit was not free:
// each new one grew its stack to the depth of Pebble's read and commit paths
// (runtime.copystack was 4% of the server's CPU under single-entity inserts). Workers run
// commit after commit on stacks already grown, and wait for the next one parked.

// workers hands functions to long-lived goroutines.
type workers struct {
	// idle holds the workers waiting for a function; its capacity bounds how many are kept.
	idle chan *worker

	mu     sync.Mutex // orders workers going idle with stop
	closed bool
}

type worker struct{ fn chan func() }

// maxIdleWorkers bounds the workers kept between bursts: more than a busy server has commits
// in flight at once; a burst beyond it starts goroutines that end afterwards.
const maxIdleWorkers = 256

func newWorkers() *workers { return &workers{idle: make(chan *worker, maxIdleWorkers)} }

// run calls fn on an idle worker, or on a new goroutine when none is idle, and returns at
// once. A worker stuck in fn (on a disk that never answers) is never handed another.
func (ws *workers) run(fn func()) {
	select {
	case w := <-ws.idle:
		w.fn <- fn
	default:
		w := &worker{fn: make(chan func())}
		go w.loop(ws, fn)
	}
}

func (w *worker) loop(ws *workers, fn func()) {
	for {
		fn()
		if !ws.park(w) {
			return
		}
		var ok bool
		if fn, ok = <-w.fn; !ok {
			return
		}
	}
}

// park makes w idle, unless enough workers are or stop was called.
func (ws *workers) park(w *worker) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return false
	}
	select {
	case ws.idle <- w:
		return true
	default:
		return false
	}
}

// stop ends the idle workers, and the busy ones once they are done. A function run after it
// (by a call still in flight when Close gave up waiting) gets a goroutine of its own.
func (ws *workers) stop() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.closed = true
	for {
		select {
		case w := <-ws.idle:
			close(w.fn)
		default:
			return
		}
	}
}
