package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
)

// metric is one line of the side-by-side table.
type metric struct {
	name string
	unit string
	get  func(r *Row) float64
	// better says which way is better, for the reader: "higher" or "lower".
	better string
	// missing, when set, reports that the figure could not be measured
	// for a row (printed "n/a").
	missing func(r *Row) bool
}

func perRoute(r *Row, v int64) float64 {
	if r.Published == 0 {
		return 0
	}
	return float64(v) / float64(r.Published)
}

var metrics = []metric{
	{"intents accepted/s", "", func(r *Row) float64 { return r.AcceptedPerSec }, "higher", nil},
	{"routes delivered/s (end to end)", "", func(r *Row) float64 { return r.DeliveredPerSec }, "higher", nil},
	{"routes delivered/s while accepting", "", func(r *Row) float64 {
		return float64(*r.DeliveredWhileAccepting) / r.AcceptSeconds
	}, "higher", func(r *Row) bool { return r.DeliveredWhileAccepting == nil || r.AcceptSeconds <= 0 }},
	{"routes delivered/s after accepting", "", func(r *Row) float64 {
		return float64(r.Published-*r.DeliveredWhileAccepting) / (r.EndToEndSeconds - r.AcceptSeconds)
	}, "higher", func(r *Row) bool {
		return r.DeliveredWhileAccepting == nil || r.EndToEndSeconds <= r.AcceptSeconds
	}},
	{"accept→published p50", "ms", func(r *Row) float64 { return r.P50ms }, "lower", nil},
	{"accept→published p95", "ms", func(r *Row) float64 { return r.P95ms }, "lower", nil},
	{"accept→published p99", "ms", func(r *Row) float64 { return r.P99ms }, "lower", nil},
	{"idle pick-up p50", "ms", func(r *Row) float64 { return r.IdleP50ms }, "lower", nil},
	{"idle pick-up p95", "ms", func(r *Row) float64 { return r.IdleP95ms }, "lower", nil},
	{"peak RSS (max process)", "MiB", func(r *Row) float64 {
		var m int64
		for _, v := range r.PeakRSS {
			m = max(m, v)
		}
		return float64(m) / (1 << 20)
	}, "lower", nil},
	{"CPU per route, bench process", "µs", func(r *Row) float64 { return perRoute(r, int64(r.ClientCPUSeconds*1e6)) }, "lower", nil},
	{"CPU per route, Postgres", "µs", func(r *Row) float64 { return perRoute(r, int64(r.PostgresCPUSeconds*1e6)) }, "lower", nil},
	{"autovacuum runs during the phase", "", func(r *Row) float64 {
		var n int64
		for _, t := range r.Cost.Tables {
			n += t.Autovacuums
		}
		return float64(n)
	}, "-", nil},
	{"CPU per route, Postgres, VACUUM after", "µs", func(r *Row) float64 { return perRoute(r, int64(r.Cleanup.PostgresCPUSeconds*1e6)) }, "lower", nil},
	{"CPU per route, Postgres, with VACUUM after", "µs", func(r *Row) float64 {
		return perRoute(r, int64((r.PostgresCPUSeconds+r.Cleanup.PostgresCPUSeconds)*1e6))
	}, "lower", nil},
	{"WAL per route", "bytes", func(r *Row) float64 { return perRoute(r, r.Cost.WALBytes) }, "lower", nil},
	{"rows written per route", "", func(r *Row) float64 { return perRoute(r, r.Cost.Rows()) }, "lower", nil},
	{"dead tuples made per route", "", func(r *Row) float64 { return perRoute(r, r.Cost.DeadCreated()) }, "lower", nil},
	{"non-HOT updates per route", "", func(r *Row) float64 { return perRoute(r, r.Cost.NonHOT()) }, "lower", nil},
	{"HOT updates per route", "", func(r *Row) float64 { return r.HOTUpdatesPerRoute }, "-", nil},
	{"index tuples written per route", "", func(r *Row) float64 {
		if r.IndexTuplesPerRoute == nil {
			return 0
		}
		return *r.IndexTuplesPerRoute
	}, "lower", func(r *Row) bool { return r.IndexTuplesPerRoute == nil }},
	{"dead tuples left at end", "", func(r *Row) float64 {
		var n int64
		for _, t := range r.Cost.Tables {
			n += t.DeadTuples
		}
		return float64(n)
	}, "lower", nil},
	{"table size after", "MiB", func(r *Row) float64 { t, _ := r.Cost.Bytes(); return float64(t) / (1 << 20) }, "lower", nil},
	{"index size after", "MiB", func(r *Row) float64 { _, i := r.Cost.Bytes(); return float64(i) / (1 << 20) }, "lower", nil},
}

// receiptMetrics are the receipts mode's lines, printed when a row has
// receipts; a row without (River's) reads n/a.
var receiptMetrics = []metric{
	{"receipts matched", "", func(r *Row) float64 { return float64(r.Receipts.Matched) }, "higher", noReceipts},
	{"receipt lag p50 (accepted→delivered status)", "ms", func(r *Row) float64 { return r.Receipts.LagP50ms }, "lower", noReceipts},
	{"receipt lag p95 (accepted→delivered status)", "ms", func(r *Row) float64 { return r.Receipts.LagP95ms }, "lower", noReceipts},
}

func noReceipts(r *Row) bool { return r.Receipts == nil }

// traceMetrics are the tracing lines, printed when a row was traced; a
// row without (River's) reads n/a.
var traceMetrics = []metric{
	{"spans exported per route", "", func(r *Row) float64 { return perRoute(r, *r.TraceSpans) }, "-",
		func(r *Row) bool { return r.TraceSpans == nil }},
}

// WriteTable prints the report as a table: one column per engine and, with
// two engines, the ratio of the first to the second for every figure.
func WriteTable(w io.Writer, rep *Report) error {
	c := rep.Config
	fmt.Fprintf(w, "workload: %d intents × %d route(s), payload %d B, batch %d, %d producers, channel latency %s, fail share %g, concurrency %d, %d process(es)\n",
		c.Intents, c.RoutesPerIntent, c.PayloadBytes, c.Batch, c.Producers, c.Latency, c.FailShare, c.Concurrency, c.Processes)
	fmt.Fprintf(w, "postgres: %s, fsync %s, shared_buffers %s, %d CPUs\n", c.Postgres, map[bool]string{true: "on", false: "off"}[c.Durable], c.SharedBuffers, c.CPUs)
	if c.RiverWorker != "" {
		fmt.Fprintf(w, "river worker: %s\n", c.RiverWorker)
	}
	for _, r := range rep.Rows {
		fmt.Fprintf(w, "%s: %s\n", r.Engine, r.Settings)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "figure\t")
	for _, r := range rep.Rows {
		fmt.Fprintf(tw, "%s\t", r.Engine)
	}
	if len(rep.Rows) == 2 {
		fmt.Fprintf(tw, "%s/%s\tbetter\t", rep.Rows[0].Engine, rep.Rows[1].Engine)
	}
	fmt.Fprintln(tw)
	all := metrics
	if slices.ContainsFunc(rep.Rows, func(r Row) bool { return r.TraceSpans != nil }) {
		all = slices.Concat(all, traceMetrics)
	}
	if slices.ContainsFunc(rep.Rows, func(r Row) bool { return r.Receipts != nil }) {
		all = slices.Concat(all, receiptMetrics)
	}
	for _, m := range all {
		name := m.name
		if m.unit != "" {
			name += " (" + m.unit + ")"
		}
		fmt.Fprintf(tw, "%s\t", name)
		na := false
		for i := range rep.Rows {
			if m.missing != nil && m.missing(&rep.Rows[i]) {
				na = true
				fmt.Fprint(tw, "n/a\t")
				continue
			}
			fmt.Fprintf(tw, "%s\t", num(m.get(&rep.Rows[i])))
		}
		if len(rep.Rows) == 2 && na {
			fmt.Fprint(tw, "-\t-\t")
		} else if len(rep.Rows) == 2 {
			a, b := m.get(&rep.Rows[0]), m.get(&rep.Rows[1])
			ratio := "-"
			if math.Abs(b) >= 0.005 { // shown as 0.00: no ratio to a rounding
				ratio = fmt.Sprintf("%.2f×", a/b)
			}
			fmt.Fprintf(tw, "%s\t%s\t", ratio, m.better)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, r := range rep.Rows {
		fmt.Fprintf(w, "%s: %d routes, %d published, %d attempts; accept %.2fs, end to end %.2fs;", r.Engine, r.Routes, r.Published, r.Attempts, r.AcceptSeconds, r.EndToEndSeconds)
		if r.HTTPRequests != nil {
			fmt.Fprintf(w, " %d http requests to the sink (probes included), %d rejected;", *r.HTTPRequests, *r.HTTPRejected)
		}
		fmt.Fprint(w, " tables:")
		for _, t := range r.Cost.Tables {
			fmt.Fprintf(w, " %s(ins %d upd %d hot %d del %d dead %d)", t.Table, t.Inserted, t.Updated, t.HOTUpdated, t.Deleted, t.DeadTuples)
		}
		fmt.Fprintln(w)
		if rc := r.Receipts; rc != nil {
			fmt.Fprintf(w, "%s: receipts: %d posted and stored, %d in the inbox: %d matched, %d duplicate, %d unmatched; %d routes with a delivery status\n",
				r.Engine, rc.Sent, rc.Received, rc.Matched, rc.Duplicate, rc.Unmatched, rc.Routes)
		}
		if len(r.Cost.Indexes) > 0 {
			fmt.Fprintf(w, "%s: index entries written:", r.Engine)
			for _, ic := range r.Cost.Indexes {
				fmt.Fprintf(w, " %s %d (%s);", ic.Index, ic.Tuples, ic.CountedFrom)
			}
			fmt.Fprintln(w)
		}
	}
	if len(rep.Rounds) > 1 {
		fmt.Fprintf(w, "rounds: %d, engines alternating first; the table is the median round by delivery ratio; every round:\n", len(rep.Rounds))
		for i, rows := range rep.Rounds {
			fmt.Fprintf(w, "  round %d:", i+1)
			for _, r := range rows {
				fmt.Fprintf(w, " %s %.0f accepted/s %.0f delivered/s p50 %.0f ms;", r.Engine, r.AcceptedPerSec, r.DeliveredPerSec, r.P50ms)
			}
			if len(rows) == 2 && rows[1].DeliveredPerSec > 0 {
				fmt.Fprintf(w, " delivered ratio %.2f×", rows[0].DeliveredPerSec/rows[1].DeliveredPerSec)
			}
			fmt.Fprintln(w)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}

func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
