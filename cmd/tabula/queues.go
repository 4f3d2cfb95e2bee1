package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/tabula-dev/tabula/internal/queue"
)

// expirySweepInterval is how often expired messages are removed from queues nobody reads
// (queue.Service.SweepExpiredMessages); they are never returned meanwhile, only stored.
const expirySweepInterval = time.Minute

// sweepQueues removes expired messages every expirySweepInterval, and the messages of deleted
// queues every sweepInterval once they were deleted sweepGrace ago (as for tables), until ctx
// is done.
func sweepQueues(ctx context.Context, svc *queue.Service, log *slog.Logger) {
	tick := time.NewTicker(expirySweepInterval)
	defer tick.Stop()
	lastDeletedSweep := time.Time{}
	for {
		n, err := svc.SweepExpiredMessages(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Error("sweeping expired messages", "err", err)
		case n > 0:
			log.Info("swept expired messages", "count", n)
		}
		if time.Since(lastDeletedSweep) >= sweepInterval {
			lastDeletedSweep = time.Now()
			n, err := svc.SweepDeletedQueues(ctx, sweepGrace)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				log.Error("sweeping deleted queues", "err", err)
			case n > 0:
				log.Info("swept deleted queues", "count", n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
