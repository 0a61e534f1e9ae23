package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/store"
)

// DefaultHeartbeat is how often a process records its readiness in
// herald.serve_processes when Process.Heartbeat is zero.
const DefaultHeartbeat = 5 * time.Second

// maxReason is the most bytes of a reason the row keeps (its column's
// check allows 2000 characters).
const maxReason = 2000

// Process makes the engine keep the row of the process it runs in
// herald.serve_processes, where the console and `herald status` list every
// serve: inserted when Run starts, updated every Heartbeat with what
// /readyz would answer (the same check, metrics.NewReadinessCheck), and
// marked stopped when Run returns. A process that dies leaves the row's
// heartbeat to go stale. The heartbeat runs on its own goroutine, one
// UPDATE a beat on the engine's pool, apart from deliveries.
type Process struct {
	// Heartbeat is how often the row is updated. Default DefaultHeartbeat.
	Heartbeat time.Duration
	// Version is the binary's version as the row shows it.
	Version string
	// Console is the address of the operator console served beside the
	// engine, if any: the engine records it among the parts, it does not
	// serve it.
	Console string
	// Host and PID name the process. Defaults: os.Hostname and os.Getpid.
	Host string
	PID  int
}

// heartbeat keeps one process's row.
type heartbeat struct {
	q     *store.Queries
	e     *Engine
	every time.Duration
	check func(context.Context) metrics.Check
	log   *slog.Logger
	row   store.ServeProcessRegisterParams

	cancel context.CancelFunc
	done   chan struct{}
	// registered says the row was inserted; failing that the last write
	// failed (logged once, until one succeeds). Only the beating goroutine
	// touches them until stop has waited for it.
	registered, failing bool
}

// addHeartbeat builds the heartbeat of p; the parts it records are
// those New has built so far, so it is called last.
func (e *Engine) addHeartbeat(p Process, cfg *Config) error {
	check, err := metrics.NewReadinessCheck(&metrics.HandlerConfig{Pool: e.pool, ProgressFunc: e.disp.CheckProgress})
	if err != nil {
		return err
	}
	if p.Host == "" {
		if p.Host, err = os.Hostname(); err != nil {
			p.Host = "unknown"
		}
	}
	parts := operator.ServeParts{Channels: e.channels, Intake: cfg.Intake != nil, Maintenance: cfg.Maintenance != nil,
		Receipts: addrString(e.receiptsAddr), API: addrString(e.apiAddr), Metrics: addrString(e.metricsAddr), Console: p.Console}
	b, err := json.Marshal(parts)
	if err != nil {
		return fmt.Errorf("new engine: process parts: %w", err)
	}
	every := cmp.Or(p.Heartbeat, DefaultHeartbeat)
	e.beat = &heartbeat{q: store.New(), e: e, every: every, check: check, log: e.component("heartbeat"),
		row: store.ServeProcessRegisterParams{Host: p.Host, Pid: int32(cmp.Or(p.PID, os.Getpid())), Version: p.Version,
			IntervalSeconds: every.Seconds(), Parts: b}}
	return nil
}

// addrString is a's address, "" for none.
func addrString(a interface{ String() string }) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// start sets the row's id and start time and begins beating: the first
// beat inserts the row. running is Run's context: once it is done, the
// beats say the process is stopping while its parts finish.
func (h *heartbeat) start(running context.Context) {
	started := time.Now().UTC().Truncate(time.Microsecond)
	h.row.StartedAt = started
	h.row.ID = fmt.Sprintf("%s:%d:%s", h.row.Host, h.row.Pid, started.Format("20060102T150405.000000Z"))
	ctx, cancel := context.WithCancel(context.WithoutCancel(running))
	h.cancel, h.done = cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		t := time.NewTicker(h.every)
		defer t.Stop()
		for {
			h.beat(ctx, running.Err() != nil)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// beat records what the readiness check says now (the check bounds
// itself, as for a probe); a row that is gone (deleted by maintenance
// while the process was paused) is inserted again.
func (h *heartbeat) beat(parent context.Context, stopping bool) {
	ctx, cancel := context.WithTimeout(parent, max(h.every, metrics.DefaultCheckTimeout))
	defer cancel()
	chk := h.check(ctx)
	ready, reason := chk.OK, chk.Error
	if stopping {
		ready, reason = false, "stopping: deliveries in flight are finishing"
	}
	if parent.Err() != nil {
		return // stopped while checking: stop writes the row
	}
	err := h.write(ctx, ready, truncate(reason))
	switch {
	case err != nil && !h.failing && parent.Err() == nil:
		h.failing = true
		h.log.Warn("could not record this process's readiness in herald.serve_processes", "id", h.row.ID, "err", err)
	case err == nil && h.failing:
		h.failing = false
		h.log.Info("recording this process's readiness again", "id", h.row.ID)
	}
}

func (h *heartbeat) write(ctx context.Context, ready bool, reason string) error {
	if h.registered {
		n, err := h.q.ServeProcessBeat(ctx, h.e.pool, store.ServeProcessBeatParams{ID: h.row.ID, Ready: ready, NotReadyReason: reason})
		if err != nil || n == 1 {
			return err
		}
	}
	row := h.row
	row.Ready, row.NotReadyReason = ready, reason
	if err := h.q.ServeProcessRegister(ctx, h.e.pool, row); err != nil {
		return err
	}
	if !h.registered {
		h.log.Info("process recorded in herald.serve_processes", "id", h.row.ID, "heartbeat", h.every)
	}
	h.registered = true
	return nil
}

// stop ends the beats and marks the row stopped, with runErr (Run's
// error) as the reason when a part failed.
func (h *heartbeat) stop(runErr error) {
	h.cancel()
	<-h.done
	reason := ""
	if runErr != nil {
		reason = truncate("stopped on error: " + runErr.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(h.every, 5*time.Second))
	defer cancel()
	// Marked whether or not a beat saw its insert succeed: one cut short
	// by the stop may have committed all the same. A process that never
	// reached the database has no row, and nothing to warn of.
	err := h.q.ServeProcessStop(ctx, h.e.pool, store.ServeProcessStopParams{ID: h.row.ID, Reason: reason})
	if err != nil && h.registered {
		h.log.Warn("could not mark this process stopped in herald.serve_processes: its row goes stale instead", "id", h.row.ID, "err", err)
	}
}

// truncate cuts s to maxReason bytes, on a character boundary.
func truncate(s string) string {
	if len(s) <= maxReason {
		return s
	}
	return strings.ToValidUTF8(s[:maxReason], "")
}
