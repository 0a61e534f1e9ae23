package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// What a serve process's row says of it (ServeProcess.State), the first
// that applies: stopped, stale, not ready, ready.
const (
	// ProcessStopped: the process stopped cleanly (stopped_at is set).
	ProcessStopped = "stopped"
	// ProcessStale: no heartbeat for more than StaleHeartbeats intervals;
	// the process died, hangs, or cannot reach the database. What its row
	// says of its readiness is as old as the heartbeat.
	ProcessStale = "stale"
	// ProcessNotReady: its last heartbeat said what /readyz said, 503.
	ProcessNotReady = "not_ready"
	// ProcessReady: its last heartbeat found it ready.
	ProcessReady = "ready"
)

// StaleHeartbeats is how many heartbeat intervals a running process's row
// may go without a heartbeat before it reads as stale: one late heartbeat
// (a busy database, a pause) is not news, three are.
const StaleHeartbeats = 3

// ServeParts are the parts a serve process runs, as its row records them:
// the channels it delivers and, for each part beside the dispatcher,
// whether it runs it or the address it listens on.
type ServeParts struct {
	Channels    []string `json:"channels,omitempty"`
	Intake      bool     `json:"intake,omitempty"`
	Maintenance bool     `json:"maintenance,omitempty"`
	Receipts    string   `json:"receipts,omitempty"`
	API         string   `json:"api,omitempty"`
	Metrics     string   `json:"metrics,omitempty"`
	Console     string   `json:"console,omitempty"`
}

// ServeProcess is one herald serve process as its row in
// herald.serve_processes says, ages by the database's clock.
type ServeProcess struct {
	ID      string `json:"id"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Version string `json:"version"`
	// State is ProcessReady, ProcessNotReady, ProcessStale or
	// ProcessStopped.
	State     string    `json:"state"`
	StartedAt time.Time `json:"started_at"`
	// HeartbeatAt is its last heartbeat, HeartbeatAgeSeconds how long ago
	// that was, and HeartbeatIntervalSeconds how often it beats.
	HeartbeatAt              time.Time `json:"heartbeat_at"`
	HeartbeatAgeSeconds      float64   `json:"heartbeat_age_seconds"`
	HeartbeatIntervalSeconds float64   `json:"heartbeat_interval_seconds"`
	// Ready and Reason are what its last heartbeat found: /readyz's
	// answer and, when not ready, its error (for a stopped process, why
	// it stopped when it did not stop for a signal).
	Ready     bool       `json:"ready"`
	Reason    string     `json:"reason,omitempty"`
	StoppedAt *time.Time `json:"stopped_at,omitempty"`
	Parts     ServeParts `json:"parts"`
}

// ServeProcessList is every serve process with a row, as of At (the
// database's clock): running ones first, by host and start.
type ServeProcessList struct {
	At        time.Time      `json:"at"`
	Processes []ServeProcess `json:"processes"`
}

// ServeProcesses returns the serve processes' rows: those running, and
// those stopped or stale until maintenance deletes them.
func (o *Operator) ServeProcesses(ctx context.Context) (*ServeProcessList, error) {
	now, err := o.q.DatabaseNow(ctx, o.pool)
	if err != nil {
		return nil, fmt.Errorf("read database clock: %w", err)
	}
	ps, err := o.serveProcesses(ctx)
	if err != nil {
		return nil, err
	}
	return &ServeProcessList{At: now, Processes: ps}, nil
}

func (o *Operator) serveProcesses(ctx context.Context) ([]ServeProcess, error) {
	rows, err := o.q.ServeProcessList(ctx, o.pool, StaleHeartbeats)
	if err != nil {
		return nil, fmt.Errorf("read serve processes: %w", err)
	}
	out := make([]ServeProcess, len(rows))
	for i, r := range rows {
		p := ServeProcess{ID: r.ID, Host: r.Host, PID: int(r.Pid), Version: r.Version, StartedAt: r.StartedAt,
			HeartbeatAt: r.HeartbeatAt, HeartbeatAgeSeconds: r.HeartbeatAgeSeconds,
			HeartbeatIntervalSeconds: r.IntervalSeconds, Ready: r.Ready, Reason: r.NotReadyReason, StoppedAt: r.StoppedAt}
		p.State = processState(r)
		// A row the engine wrote holds ServeParts; anything else shows
		// no parts rather than failing the list.
		_ = json.Unmarshal(r.Parts, &p.Parts)
		out[i] = p
	}
	return out, nil
}

func processState(r store.ServeProcessListRow) string {
	switch {
	case r.StoppedAt != nil:
		return ProcessStopped
	case r.Stale:
		return ProcessStale
	case !r.Ready:
		return ProcessNotReady
	}
	return ProcessReady
}

// Summary says State in words, as the console and `herald status` show
// it: "ready", "not ready: <reason>", "stale: no heartbeat for 3 intervals
// of 5s", "stopped" (with why, when it stopped on an error).
func (p ServeProcess) Summary() string {
	switch p.State {
	case ProcessNotReady:
		return "not ready: " + p.Reason
	case ProcessStale:
		iv := time.Duration(p.HeartbeatIntervalSeconds * float64(time.Second)).Round(time.Millisecond)
		return fmt.Sprintf("stale: no heartbeat for over %d intervals of %s", StaleHeartbeats, iv)
	case ProcessStopped:
		if p.Reason != "" {
			return "stopped: " + p.Reason
		}
	}
	return p.State
}

// PartsSummary lists p's parts in one line: "channels callback,sms;
// intake; maintenance; metrics :9090; api :8080".
func (p ServeProcess) PartsSummary() string {
	var out []string
	if len(p.Parts.Channels) > 0 {
		out = append(out, "channels "+strings.Join(p.Parts.Channels, ","))
	}
	if p.Parts.Intake {
		out = append(out, "intake")
	}
	if p.Parts.Maintenance {
		out = append(out, "maintenance")
	}
	for _, l := range []struct{ name, addr string }{{"receipts", p.Parts.Receipts}, {"api", p.Parts.API},
		{"metrics", p.Parts.Metrics}, {"console", p.Parts.Console}} {
		if l.addr != "" {
			out = append(out, l.name+" "+l.addr)
		}
	}
	return strings.Join(out, "; ")
}
