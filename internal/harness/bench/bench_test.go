package bench

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/intake"
)

func TestMain(m *testing.M) {
	if os.Getenv(riverWorkerEnv) != "" {
		// A River worker process a test's River phase started (this test
		// binary stands in for herald's, whose bench command does this).
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		err := RunRiverWorker(ctx, os.Getenv, slog.Default())
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	pgtemp.TestMain(m)
}

type testBundle struct {
	db  *Database
	cfg *Config
}

// setup returns a Database on a fresh test database and a small Config
// wired to herald's intake (the test cannot import the module root's
// client, so it accepts through intake as the client does).
func setup(t *testing.T) *testBundle {
	t.Helper()
	db := &Database{URL: pgtemp.NewDatabase(t), Version: "test"}
	var err error
	db.Pool, err = pgxpool.New(context.Background(), db.URL)
	require.NoError(t, err)
	t.Cleanup(db.Pool.Close)
	cfg := &Config{
		Intents:     2_000,
		Batch:       500,
		Concurrency: 20,
		IdleSamples: 3,
		SubmitterFunc: func(pool *pgxpool.Pool) (SubmitFunc, error) {
			return func(ctx context.Context, batch []intake.Intent) error {
				vs := make([]*intake.Validated, len(batch))
				for i := range batch {
					v, err := intake.Validate(&batch[i], intake.Limits{}.WithDefaults(), time.Now())
					if err != nil {
						return err
					}
					vs[i] = v
				}
				hint := "webhook"
				_, err := accept.Accept(ctx, pool, vs, accept.Params{Notify: &hint})
				return err
			}, nil
		},
	}
	return &testBundle{db: db, cfg: cfg}
}

func TestRun_MeasuresHeraldAndRiver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Vs = "river"

	rep, err := Run(context.Background(), b.db, b.cfg)
	require.NoError(t, err)
	require.Len(t, rep.Rows, 2)
	// In memory, herald's engine calls the bench channel: so does River's
	// worker, and nothing goes over HTTP.
	require.Equal(t, riverWorkerNoop, rep.Config.RiverWorker)
	for _, r := range rep.Rows {
		require.Nil(t, r.HTTPRequests, r.Engine)
		require.Equal(t, int64(2_000), r.Published, r.Engine)
		require.Positive(t, r.DeliveredPerSec, r.Engine)
		require.Positive(t, r.AcceptedPerSec, r.Engine)
		// The phase splits at the last submit: what the channel had taken
		// by then, never more than was published in all.
		require.NotNil(t, r.DeliveredWhileAccepting, r.Engine)
		require.GreaterOrEqual(t, *r.DeliveredWhileAccepting, int64(0), r.Engine)
		require.LessOrEqual(t, *r.DeliveredWhileAccepting, r.Published, r.Engine)
		require.Positive(t, r.Cost.WALBytes, r.Engine)
		require.Positive(t, r.Cost.Rows(), r.Engine)
		require.NotEmpty(t, r.PeakRSS, r.Engine)
		require.Positive(t, r.ClientCPUSeconds, r.Engine)
		// The harness's cluster runs on this machine, so its processes
		// can be read.
		require.Positive(t, r.PostgresCPUSeconds, r.Engine)
		// Each engine's phase leaves dead tuples (River two per job, herald
		// the completions' old versions), which the VACUUM after removes.
		require.Positive(t, r.Cleanup.DeadBefore, r.Engine)
		require.Zero(t, r.Cleanup.DeadAfter, r.Engine)
		require.Positive(t, r.Cleanup.WALBytes, r.Engine)
	}
	var out bytes.Buffer
	require.NoError(t, WriteTable(&out, rep))
	require.Contains(t, out.String(), "herald/river")
	require.Contains(t, out.String(), "routes delivered/s after accepting")
	require.Contains(t, out.String(), "FetchCooldown 2ms")
	t.Log("\n" + out.String())
}

func TestProcStat_ReadsSelfRefusesMissing(t *testing.T) {
	t.Parallel()
	// Burn a little CPU so the tick counters are not all zero.
	x := 0
	for i := range 50_000_000 {
		x ^= i
	}
	st, ok := procStat(os.Getpid())
	require.True(t, ok)
	require.Equal(t, os.Getppid(), st.ppid)
	require.Positive(t, st.utime+st.stime, "x=%d", x)
	_, ok = procStat(1 << 30) // above pid_max: no such process
	require.False(t, ok)
}

func TestPayload_IsTheRequestedSize(t *testing.T) {
	t.Parallel()
	for _, n := range []int{16, 100, 256, 4096} {
		require.Len(t, payload(n), n)
	}
}

func TestRun_RiverPhaseCountsEveryJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.cfg.withDefaults()
	require.NoError(t, c.validate())
	sk := newSink(0, 0)
	w := newWorkload(&c, "rivertest", 1)
	row, err := runPhase(context.Background(), b.db, &c, newRiverSubject(&c, b.db, sk, w), sk)
	require.NoError(t, err)
	require.Equal(t, int64(2_000), row.Published)
	require.Positive(t, row.Cost.WALBytes)
	// Zero is a fair pick-up time: River may start a probe's job before
	// its insert has returned to the bench (a loaded machine).
	require.GreaterOrEqual(t, row.IdleP50ms, 0.0)
	require.GreaterOrEqual(t, row.IdleP95ms, row.IdleP50ms)
	t.Logf("%+v", row)
}

func TestRun_ScaleMeasuresClaimThroughput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.IdleSamples = 5
	rep, err := RunScale(context.Background(), b.db, b.cfg, 30_000)
	require.NoError(t, err)
	require.Len(t, rep.Points, 2)
	require.Equal(t, 30_000, rep.Points[1].Backlog)
	for _, p := range rep.Points {
		// Three preloads of the small backlog, three consecutive windows
		// of the large one.
		require.Len(t, p.ClaimPerSec, 3, "backlog %d", p.Backlog)
		for _, r := range p.ClaimPerSec {
			require.Positive(t, r)
		}
		require.Positive(t, p.DueIndexBytes)
	}
	var out bytes.Buffer
	require.NoError(t, WriteScale(&out, rep))
	require.Contains(t, out.String(), "claim throughput at 30000 / at 10000")
}

func TestRun_XminReportsEachPhase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rep, err := RunXmin(context.Background(), b.db, b.cfg, 2*time.Second)
	require.NoError(t, err)
	require.Len(t, rep.Phases, 3)
	for _, p := range rep.Phases {
		require.Positive(t, p.Seconds, p.Phase)
	}
	var out bytes.Buffer
	require.NoError(t, WriteXmin(&out, rep))
	require.Contains(t, out.String(), "held")
}

func TestRun_SoakSamplesMemory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rep, err := RunSoak(context.Background(), b.db, b.cfg, 11*time.Second)
	require.NoError(t, err)
	require.NotEmpty(t, rep.Samples)
	require.Positive(t, rep.Delivered)
	require.NotEmpty(t, rep.PeakRSS)
}

func TestSharedBuffers_QuarterOfMemoryBounded(t *testing.T) {
	t.Parallel()
	total := procMeminfo("MemTotal:")
	require.Positive(t, total, "this machine has /proc/meminfo")
	want := min(max(total/4, 128<<20), 8<<30) >> 20
	require.Equal(t, fmt.Sprintf("%dMB", want), sharedBuffers())
}

func TestIndexTuples_CountedFromWALPerEngine(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.db.inspectWAL(ctx)
	require.NoError(t, b.db.walErr)
	b.cfg.Vs = "river"
	b.cfg.IdleSamples = -1

	rep, err := Run(ctx, b.db, b.cfg)
	require.NoError(t, err)
	require.Len(t, rep.Rows, 2)
	for _, r := range rep.Rows {
		require.NotNil(t, r.Cost.IndexTuples, r.Engine)
		require.NotNil(t, r.IndexTuplesPerRoute, r.Engine)
		require.NotEmpty(t, r.Cost.Indexes, r.Engine)
		tables := map[string]TableCost{}
		for _, tc := range r.Cost.Tables {
			tables[tc.Table] = tc
		}
		var sum int64
		checked := 0
		for _, ic := range r.Cost.Indexes {
			sum += ic.Tuples
			// Each engine's figure holds its own tables' indexes only.
			require.Equal(t, r.Engine == "river", len(ic.Table) > 6 && ic.Table[:6] == "river_", "%s: %s", r.Engine, ic.Index)
			// A primary key has no predicate, so every new heap tuple
			// version that was not a HOT update wrote exactly one entry
			// into it: on the table of routes (jobs), which only the
			// phase writes, the WAL count must agree with the heap
			// counters. (Small tables an engine writes as it starts,
			// before the phase, are not compared: their counters reach
			// pg_stat late, their WAL does not.)
			if ic.Index == "routes_pkey" || ic.Index == "river_job_pkey" {
				checked++
				tc := tables[ic.Table]
				require.Equal(t, tc.Inserted+tc.Updated-tc.HOTUpdated, ic.Tuples, "%s: %s", r.Engine, ic.Index)
			}
		}
		require.Equal(t, 1, checked, r.Engine)
		require.Equal(t, *r.Cost.IndexTuples, sum, r.Engine)
		// Every route (job) inserted wrote at least its primary key entry.
		require.GreaterOrEqual(t, *r.IndexTuplesPerRoute, 1.0, r.Engine)
		require.InDelta(t, float64(r.Cost.HOTUpdates())/float64(r.Published), r.HOTUpdatesPerRoute, 1e-9, r.Engine)
	}
	var out bytes.Buffer
	require.NoError(t, WriteTable(&out, rep))
	require.Contains(t, out.String(), "index tuples written per route")
	require.Contains(t, out.String(), "HOT updates per route")
	require.Contains(t, out.String(), "routes_pkey")
	require.NotContains(t, out.String(), "n/a")
	t.Log("\n" + out.String())
}

func TestIndexTuples_NAWithoutWAL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// A role that is not a superuser may neither create pg_walinspect nor
	// a replication slot.
	name, pool := pgtemp.Login(t, b.db.Pool, "bench_nowal")
	u, err := url.Parse(b.db.URL)
	require.NoError(t, err)
	u.User = url.User(name)
	_, err = newWALInspector(ctx, pool, u.String())
	require.Error(t, err)

	b.db.walErr = err
	b.cfg.IdleSamples = -1
	rep, err := Run(ctx, b.db, b.cfg)
	require.NoError(t, err)
	require.Nil(t, rep.Rows[0].IndexTuplesPerRoute)
	require.Nil(t, rep.Rows[0].Cost.IndexTuples)
	var out bytes.Buffer
	require.NoError(t, WriteTable(&out, rep))
	require.Regexp(t, `index tuples written per route\s+n/a`, out.String())
	require.Contains(t, out.String(), "index tuples written: n/a (create extension pg_walinspect")
}

func TestRun_ProviderModeUsesProvider(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.cfg.Intents = 500
	b.cfg.Provider = true

	rep, err := Run(ctx, b.db, b.cfg)
	require.NoError(t, err)
	r := rep.Rows[0]
	require.Equal(t, int64(500), r.Published)
	require.Nil(t, r.Receipts, "receipts are off")
	require.Contains(t, r.Settings, "provider sms/bench")
	// Every route, probes included, was delivered by sms/bench, which
	// answered with its message id; no receipt key was recorded.
	var viaProvider, keyed int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE provider_message_id LIKE 'bench-%' AND channel = 'sms'),
    count(receipt_key)
FROM herald.routes`).Scan(&viaProvider, &keyed))
	require.Equal(t, int64(500+b.cfg.IdleSamples), viaProvider)
	require.Zero(t, keyed)
}

func TestRun_ReceiptsModeMatchesEveryRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.cfg.Intents = 1_000
	b.cfg.Receipts = true
	b.cfg.ReceiptDelay = 20 * time.Millisecond
	b.cfg.Vs = "river"

	rep, err := Run(ctx, b.db, b.cfg)
	require.NoError(t, err)
	require.Len(t, rep.Rows, 2)
	h, river := rep.Rows[0], rep.Rows[1]
	require.Equal(t, "herald", h.Engine)
	require.Nil(t, river.Receipts, "River has no receipts")
	rc := h.Receipts
	require.NotNil(t, rc)
	// One receipt per delivery (the probes' too), each stored, each
	// matched, and every measured route has its delivery status.
	probes := int64(b.cfg.IdleSamples)
	require.Equal(t, h.Published+probes, rc.Sent)
	require.Equal(t, rc.Sent, rc.Received)
	require.Equal(t, rc.Sent, rc.Matched)
	require.Zero(t, rc.Unmatched)
	require.Equal(t, h.Published, rc.Routes)
	require.Positive(t, rc.LagP50ms)
	require.GreaterOrEqual(t, rc.LagP95ms, rc.LagP50ms)
	// The inbox is the engine's table: its cost is herald's.
	var inbox bool
	for _, tc := range h.Cost.Tables {
		inbox = inbox || tc.Table == "delivery_receipts"
	}
	require.True(t, inbox)

	var out bytes.Buffer
	require.NoError(t, WriteTable(&out, rep))
	require.Regexp(t, `receipts matched\s+1003\s+n/a`, out.String())
	require.Contains(t, out.String(), "receipt lag p95")
	require.Contains(t, out.String(), "River has no routing, circuit, caps or receipts")
	require.Contains(t, out.String(), "river worker: http")
}

func TestRun_TracingExportsSpans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		sample float64
	}{{"AllSampled", 1}, {"NoneSampled", 0}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.cfg.Intents = 500
			b.cfg.IdleSamples = -1
			b.cfg.Tracing, b.cfg.TraceSample = true, tt.sample
			b.cfg.Vs = "river"
			rep, err := Run(ctx, b.db, b.cfg)
			require.NoError(t, err)
			h, river := rep.Rows[0], rep.Rows[1]
			require.Nil(t, river.TraceSpans, "River is not traced")
			require.NotNil(t, h.TraceSpans)
			if tt.sample == 1 {
				// At least a span per attempt, all flushed by the time
				// the phase's engine stopped.
				require.GreaterOrEqual(t, *h.TraceSpans, h.Attempts)
			} else {
				require.Zero(t, *h.TraceSpans)
			}
			require.Equal(t, tt.sample, *rep.Config.TraceSample)
			var out bytes.Buffer
			require.NoError(t, WriteTable(&out, rep))
			require.Regexp(t, `spans exported per route\s+\S+\s+n/a`, out.String())
			require.Contains(t, out.String(), fmt.Sprintf("sampling parentbased_traceidratio %g", tt.sample))
		})
	}
}

func TestRun_TracingOffByDefault(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Intents = 200
	b.cfg.IdleSamples = -1
	rep, err := Run(context.Background(), b.db, b.cfg)
	require.NoError(t, err)
	require.Nil(t, rep.Rows[0].TraceSpans)
	require.Nil(t, rep.Config.TraceSample)
	var out bytes.Buffer
	require.NoError(t, WriteTable(&out, rep))
	require.NotContains(t, out.String(), "spans exported")
	require.Contains(t, out.String(), "tracing off")
}

// A run whose deliveries bypass the bench channel (serve's discard
// driver) has no split: the table says n/a rather than a rate of zero.
func TestReport_TableSaysNAForUnseenSplit(t *testing.T) {
	t.Parallel()
	seen := int64(400)
	rep := &Report{Rows: []Row{
		{Engine: "herald", Published: 1_000, AcceptSeconds: 1, EndToEndSeconds: 2},
		{Engine: "river", Published: 1_000, AcceptSeconds: 1, EndToEndSeconds: 3, DeliveredWhileAccepting: &seen},
	}}
	var out bytes.Buffer
	require.NoError(t, WriteTable(&out, rep))
	require.Regexp(t, `routes delivered/s while accepting +n/a +400 `, out.String())
	require.Regexp(t, `routes delivered/s after accepting +n/a +300 `, out.String())
}
