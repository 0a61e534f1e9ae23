package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/operator"
)

// DeadLetterPage writes a page of `herald dead-letters list`.
func DeadLetterPage(w io.Writer, p *operator.DeadLetterPage) error {
	return list(w, "dead letters", "herald dead-letters list", p.Next,
		"DEAD LETTERED\tROUTE\tCHANNEL\tPROVIDER\tPRODUCER\tTYPE\tCLASS\tATTEMPTS\tMESSAGE", p.DeadLetters,
		func(dl operator.DeadLetter) string {
			return fmt.Sprintf("%s\t%s/%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s",
				stamp(dl.DeadLetteredAt), dl.NotificationID, dl.RouteID, dl.Channel, dash(dl.Provider), dl.Producer,
				dl.NotificationType, dl.Classification, dl.Attempts, dl.MaxAttempts, clip(dl.Message, 60))
		})
}

// DeadLetters writes the dead letters `herald dead-letters show` found for
// ref, one record each, and the command that replays them.
func DeadLetters(w io.Writer, dls []operator.DeadLetter, ref operator.RouteRef) error {
	for i, dl := range dls {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := fields(w, [][2]string{
			{"notification", dl.NotificationID},
			{"route", dl.RouteID},
			{"type", dl.NotificationType},
			{"producer", dl.Producer},
			{"channel", dl.Channel},
			{"provider", dash(dl.Provider)},
			{"recipient", dl.RecipientRef},
			{"attempts", fmt.Sprintf("%d of %d", dl.Attempts, dl.MaxAttempts)},
			{"classification", dl.Classification},
			{"message", dl.Message},
			{"recovery hint", dl.RecoveryHint},
			{"accepted", stamp(dl.AcceptedAt)},
			{"last failed", stamp(dl.LastFailedAt)},
			{"dead lettered", stamp(dl.DeadLetteredAt)},
		}); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nreplay: herald dead-letters replay --reason WHY %s\n", ref)
	return nil
}

// ReplayResult writes what `herald dead-letters replay` did, or for a dry
// run would do, with a sample of what would move.
func ReplayResult(w io.Writer, res *operator.ReplayResult) error {
	if !res.DryRun {
		fmt.Fprintf(w, "replayed %d routes in %d batches (replay %s, %s); they are pending with a fresh attempt budget.\n",
			res.Moved, res.Batches, res.ReplayID, res.Elapsed.Round(time.Millisecond))
		return nil
	}
	fmt.Fprintf(w, "dry run: %d dead letters would move back to pending; nothing moved.\n", res.Matched)
	if len(res.Sample) == 0 {
		return nil
	}
	fmt.Fprintf(w, "the first %d:\n", len(res.Sample))
	return table(w, "ROUTE\tCHANNEL\tPRODUCER\tCLASS\tMESSAGE", res.Sample, false, func(dl operator.DeadLetter) string {
		return fmt.Sprintf("%s/%s\t%s\t%s\t%s\t%s", dl.NotificationID, dl.RouteID, dl.Channel, dl.Producer, dl.Classification, clip(dl.Message, 60))
	})
}

// ReplayOutcome writes what `herald dead-letters replay` did: its
// ReplayResult, or the River job it queued (Queued).
func ReplayOutcome(w io.Writer, o *operator.ReplayOutcome) error {
	if o.LeftOutPermanent > 0 {
		fmt.Fprintf(w, "left out %d dead letters that failed permanently (they would fail again): -include-permanent replays them too.\n", o.LeftOutPermanent)
	}
	if o.Queued != nil {
		return Queued(w, o.Queued)
	}
	return ReplayResult(w, o.ReplayResult)
}

// Queued writes the bulk replay `herald dead-letters replay` handed to a
// River job, and the command that follows its progress.
func Queued(w io.Writer, q *operator.Queued) error {
	fmt.Fprintf(w, "queued replay %s of %d dead letters as River job %d; a running `herald serve` works it.\n", q.ReplayID, q.Matched, q.JobID)
	fmt.Fprintf(w, "progress: herald dead-letters progress %s\n", q.ReplayID)
	return nil
}

// ReplayProgress writes what `herald dead-letters progress` read of a
// replay.
func ReplayProgress(w io.Writer, p *operator.ReplayProgress) error {
	fmt.Fprintf(w, "replay %s: %d routes moved in %d batches", p.ReplayID, p.Moved, p.Batches)
	if p.LastAt != nil {
		fmt.Fprintf(w, ", last at %s", stamp(*p.LastAt))
	}
	fmt.Fprintln(w)
	return nil
}

// MalformedPage writes a page of `herald malformed list`.
func MalformedPage(w io.Writer, p *operator.MalformedPage) error {
	return list(w, "malformed intents", "herald malformed list", p.Next,
		"RECORDED\tID\tCODE\tPRODUCER\tTYPE\tMESSAGE", p.Malformed,
		func(e operator.Malformed) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", stamp(e.RecordedAt), e.EntryRef, e.FailureCode,
				dash(e.Producer), dash(e.NotificationType), clip(e.FailureMessage, 70))
		})
}

// Malformed writes one malformed intent as `herald malformed show` shows
// it: its record and, when they are JSON, its raw fields indented.
func Malformed(w io.Writer, e *operator.Malformed) error {
	if err := fields(w, [][2]string{
		{"id", e.EntryRef},
		{"recorded", stamp(e.RecordedAt)},
		{"code", e.FailureCode},
		{"message", e.FailureMessage},
		{"producer", dash(e.Producer)},
		{"type", dash(e.NotificationType)},
		{"idempotency key", dash(e.IdempotencyKey)},
	}); err != nil {
		return err
	}
	var raw any
	if json.Unmarshal(e.RawFields, &raw) == nil {
		fmt.Fprintln(w, "raw fields:")
		b, _ := json.MarshalIndent(raw, "  ", "  ")
		fmt.Fprintf(w, "  %s\n", b)
	}
	return nil
}

// Status writes one notification as `herald status` shows it: its record,
// its routes (with the providers of their attempts, in order), the status
// callbacks herald created about them (when there are any) and its
// timeline.
func Status(w io.Writer, st *operator.Status) error {
	r := st.Record
	tw := newTable(w)
	fmt.Fprintf(tw, "notification:\t%s\n", r.NotificationID)
	fmt.Fprintf(tw, "type:\t%s\n", r.NotificationType)
	fmt.Fprintf(tw, "producer:\t%s (key %s)\n", r.Producer, r.IdempotencyKey)
	fmt.Fprintf(tw, "channels:\t%s, priority %d\n", strings.Join(r.Channels, ", "), r.Priority)
	fmt.Fprintf(tw, "accepted:\t%s\n", stamp(r.AcceptedAt))
	if r.SendAt != nil {
		fmt.Fprintf(tw, "send at:\t%s\n", stamp(*r.SendAt))
	}
	if r.ExpiresAt != nil {
		fmt.Fprintf(tw, "expires:\t%s\n", stamp(*r.ExpiresAt))
	}
	if r.TraceID != "" {
		fmt.Fprintf(tw, "trace:\t%s\n", r.TraceID)
	}
	if r.Campaign != "" {
		fmt.Fprintf(tw, "campaign:\t%s (herald campaigns show %s %s)\n", r.Campaign, r.Producer, r.Campaign)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nroutes:")
	err := table(w, "ROUTE\tCHANNEL\tSTATUS\tATTEMPTS\tPROVIDERS\tDELIVERY\tNEXT ATTEMPT\tLAST ERROR", st.Routes, false, func(rt operator.Route) string {
		last := "-"
		if rt.LastErrorClass != "" || rt.LastError != "" {
			last = clip(rt.LastErrorClass+": "+rt.LastError, 60)
		}
		delivery := rt.DeliveryStatus
		if rt.DeliveryError != "" {
			delivery += " (" + rt.DeliveryError + ")"
		}
		return fmt.Sprintf("%s\t%s\t%s\t%d/%s\t%s\t%s\t%s\t%s", rt.RouteID, rt.Channel, rt.Status, rt.Attempts, maxAttempts(rt.MaxAttempts),
			dash(strings.Join(rt.Providers, ",")), dash(delivery), stampPtr(rt.NextAttemptAt), last)
	})
	if err != nil {
		return err
	}
	if err := callbacks(w, st.Callbacks); err != nil {
		return err
	}

	fmt.Fprintln(w, "\ntimeline:")
	return table(w, "AT\tROUTE\tEVENT\tATTEMPT\tDETAIL", st.Timeline, false, func(e operator.Event) string {
		attempt := "-"
		if e.Attempt > 0 {
			attempt = fmt.Sprint(e.Attempt)
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", stamp(e.At), dash(e.RouteID), e.Event, attempt, clip(e.Detail, 80))
	})
}

// callbacks writes the callbacks part of `herald status`, when there are
// any: per route and event, the callback's status (published: the producer
// was told), its attempts, its id and its last error while it has not got
// through.
func callbacks(w io.Writer, cbs []operator.Callback) error {
	if len(cbs) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\ncallbacks:")
	return table(w, "ROUTE\tEVENT\tSTATUS\tATTEMPTS\tNEXT ATTEMPT\tCALLBACK\tLAST ERROR", cbs, false, func(c operator.Callback) string {
		last := "-"
		if c.Status != "published" && (c.LastErrorClass != "" || c.LastError != "") {
			last = clip(c.LastErrorClass+": "+c.LastError, 60)
		}
		return fmt.Sprintf("%s\t%s\t%s\t%d/%s\t%s\t%s\t%s", c.RouteID, c.Event, c.Status, c.Attempts, maxAttempts(c.MaxAttempts),
			stampPtr(c.NextAttemptAt), c.CallbackID, last)
	})
}

// maxAttempts shows a route's attempt budget; 0 is the channel's default.
func maxAttempts(n int) string {
	if n == 0 {
		return "default"
	}
	return fmt.Sprint(n)
}

// Stats writes what `herald stats` read: the backlog and its lag per
// channel, what was published in the last window, the dead letters, the
// providers' health and circuit events, and the window's delivery receipts
// and status callbacks.
func Stats(w io.Writer, st *operator.Stats, window time.Duration) error {
	fmt.Fprintf(w, "at %s\n\nbacklog (routes still to deliver):\n", stamp(st.At))
	err := table(w, "CHANNEL\tSTATUS\tROUTES\tDUE\tLAG", st.Backlog, true, func(b operator.Backlog) string {
		return fmt.Sprintf("%s\t%s\t%d\t%d\t%s", b.Channel, b.Status, b.Routes, b.Due,
			(time.Duration(b.LagSeconds * float64(time.Second))).Round(time.Millisecond))
	})
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "\npublished in the last %s:\n", window)
	err = table(w, "CHANNEL\tPUBLISHED\tPER SECOND\tMEAN LATENCY\tMAX LATENCY", st.Throughput, true, func(t operator.Throughput) string {
		return fmt.Sprintf("%s\t%d\t%.1f\t%s\t%s", t.Channel, t.Published, t.PerSecond,
			seconds(t.MeanLatencySeconds), seconds(t.MaxLatencySeconds))
	})
	if err != nil {
		return err
	}

	fmt.Fprintln(w, "\ndead letters:")
	err = table(w, "CHANNEL\tCLASSIFICATION\tDEAD LETTERS\tNEWEST", st.DeadLetters, true, func(d operator.DeadLetterCount) string {
		return fmt.Sprintf("%s\t%s\t%d\t%s", d.Channel, d.Classification, d.DeadLetters, stamp(d.NewestAt))
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\ndead letters by producer:")
	err = table(w, "PRODUCER\tDEAD LETTERS\tNEWEST", st.DeadLettersByProducer, true, func(d operator.DeadLetterGroup) string {
		return fmt.Sprintf("%s\t%d\t%s", d.Producer, d.DeadLetters, stamp(d.NewestAt))
	})
	if err != nil {
		return err
	}
	if err := providerStats(w, st, window); err != nil {
		return err
	}
	if err := receiptStats(w, st, window); err != nil {
		return err
	}
	return callbackStats(w, st, window)
}

// callbackStats writes the callbacks part of `herald stats`: per producer,
// the status callbacks created over the window by where they stand now.
func callbackStats(w io.Writer, st *operator.Stats, window time.Duration) error {
	fmt.Fprintf(w, "\nstatus callbacks (created in the last %s, by outcome):\n", window)
	return table(w, "PRODUCER\tCREATED\tPUBLISHED\tFAILED\tDEAD LETTERED\tPENDING", st.Callbacks, true,
		func(c operator.CallbackStats) string {
			return fmt.Sprintf("%s\t%d\t%d\t%d\t%d\t%d", c.Producer, c.Created, c.Published, c.Failed, c.DeadLettered, c.Pending)
		})
}

// receiptStats writes the receipts part of `herald stats`: per provider,
// the window's receipts by what the matcher made of them, the delivery
// statuses they set, and the receipt lag.
func receiptStats(w io.Writer, st *operator.Stats, window time.Duration) error {
	fmt.Fprintf(w, "\ndelivery receipts (last %s):\n", window)
	return table(w, "PROVIDER\tRECEIVED\tMATCHED\tDUPLICATE\tWAITING\tUNMATCHED\tMALFORMED\tDELIVERED\tUNDELIVERED\tEXPIRED\tLAG P50\tLAG P95",
		st.Receipts, true, func(r operator.ReceiptStats) string {
			lag50, lag95 := "-", "-"
			if r.Matched > 0 {
				lag50, lag95 = seconds(r.LagP50Seconds), seconds(r.LagP95Seconds)
			}
			return fmt.Sprintf("%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s", r.Provider, r.Received, r.Matched,
				r.Duplicate, r.Waiting, r.Unmatched, r.Malformed, r.Delivered, r.Undelivered, r.Expired, lag50, lag95)
		})
}

// providerStats writes the providers part of `herald stats`: each
// provider's health over the window (ProviderHealth), the window's
// failovers, then the newest circuit events. Without providers it says
// none is configured.
func providerStats(w io.Writer, st *operator.Stats, window time.Duration) error {
	if len(st.Providers) == 0 {
		fmt.Fprintln(w, "\nproviders: none (each channel delivers through serve's configured driver)")
		return nil
	}
	fmt.Fprintf(w, "\nproviders (attempts in the last %s):\n", window)
	if err := ProviderHealth(w, st.Providers); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nfailovers (last %s):\n", window)
	if err := table(w, "FROM\tTO\tROUTES\tLAST AT", st.Failovers, true, func(f operator.Failover) string {
		return fmt.Sprintf("%s\t%s\t%d\t%s", f.From, f.To, f.Failovers, stamp(f.LastAt))
	}); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ncircuit events (newest %d):\n", operator.CircuitEventsShown)
	return table(w, "AT\tPROVIDER\tEVENT\tDETAIL", st.CircuitEvents, true, func(e operator.CircuitEvent) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s", stamp(e.At), e.Provider, e.Event, clip(e.Detail, 120))
	})
}

// ServeProcesses writes `herald status` without an argument: every serve
// process with a row, its version, when it started, how long ago it last
// recorded its readiness, and what that said.
func ServeProcesses(w io.Writer, l *operator.ServeProcessList) error {
	if len(l.Processes) == 0 {
		fmt.Fprintln(w, "no serve process has recorded itself (herald serve records itself in herald.serve_processes while it runs)")
		return nil
	}
	return table(w, "HOST\tPID\tVERSION\tUP SINCE\tHEARTBEAT\tSTATE\tPARTS", l.Processes, false, func(p operator.ServeProcess) string {
		return fmt.Sprintf("%s\t%d\t%s\t%s\t%s ago\t%s\t%s", p.Host, p.PID, clip(p.Version, 40), stamp(p.StartedAt),
			seconds(max(p.HeartbeatAgeSeconds, 0)), clip(p.Summary(), 100), dash(p.PartsSummary()))
	})
}
