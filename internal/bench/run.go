package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"
)

// Run runs the workload against herald and, if cfg.Vs is "river", against
// River on the same database, one after the other, and returns both rows.
func Run(ctx context.Context, db *Database, cfg *Config) (*Report, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	rep := &Report{}
	rc := &rep.Config
	rc.Intents, rc.RoutesPerIntent, rc.PayloadBytes, rc.Batch = c.Intents, c.RoutesPerIntent, c.PayloadBytes, c.Batch
	rc.Producers, rc.Latency, rc.FailShare, rc.Concurrency = c.Producers, c.Latency.String(), c.FailShare, c.Concurrency
	rc.Processes, rc.Durable, rc.Postgres, rc.CPUs = c.Processes, db.Durable, db.Version, runtime.NumCPU()

	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	newWork := func() *workload {
		return &workload{runID: runID, routes: c.RoutesPerIntent, content: payload(c.PayloadBytes), probe: probePayload(c.PayloadBytes), dest: "https://bench.example.com/hook"}
	}
	subjects := []func(*sink) subject{
		func(sk *sink) subject { return newHeraldSubject(&c, db, sk, newWork()) },
	}
	if c.Vs == "river" {
		subjects = append(subjects, func(sk *sink) subject { return newRiverSubject(&c, db, sk, newWork()) })
	}
	for _, mk := range subjects {
		sk := newSink(c.Latency, c.FailShare)
		row, err := runPhase(ctx, db, &c, mk(sk), sk)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", row.Engine, err)
		}
		rep.Rows = append(rep.Rows, row)
	}
	rep.Notes = append(rep.Notes,
		"both engines run on the same database in the same run, one after the other, each after a CHECKPOINT; Postgres figures are deltas over the workload only (idle probes excluded)",
		fmt.Sprintf("the bench channel takes %s per attempt and fails %.0f%% of attempts transiently; latency is accept (commit) to published, from the database's timestamps", c.Latency, 100*c.FailShare),
		"peak RSS of an in-process engine is this whole process's VmHWM over the phase (reset at its start), producers included",
	)
	if c.Vs == "river" {
		rep.Notes = append(rep.Notes,
			fmt.Sprintf("River gets the settings of its own benchmark (riverqueue/river cmd/river/riverbench): FetchCooldown %s, FetchPollInterval %s; the same concurrency as MaxWorkers, and one job per route with the same payload", riverFetchCooldown, riverFetchPollInterval),
			fmt.Sprintf("both engines' worker pools have %d connections; producers have their own pool of %d", engineConns(c.Concurrency), c.Producers+1),
		)
	}
	return rep, nil
}

func riverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/riverqueue/river" {
				return m.Version
			}
		}
	}
	return "(unknown version)"
}
