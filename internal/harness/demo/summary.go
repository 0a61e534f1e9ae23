package demo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Summary is what `herald demo` reports; every count but the client's
// own answers (duplicates, conflicts and refusals it was told about) is read
// back from the database.
type Summary struct {
	RunID       string `json:"run_id"`
	DatabaseURL string `json:"database_url"`
	Throwaway   bool   `json:"throwaway"`
	Kept        bool   `json:"kept"`

	SubmittedClient int `json:"submitted_client"`
	SubmittedHTTP   int `json:"submitted_http"`
	SubmittedRaw    int `json:"submitted_raw"`

	// Accepted is the notifications stored for this run.
	Accepted int64 `json:"accepted"`
	// Duplicates are submits answered with the original notification (Go
	// client receipts plus the intake worker's duplicate results).
	Duplicates int `json:"duplicates"`
	// Conflicts are idempotency conflicts: the client's ConflictErrors plus
	// the raw entries recorded as malformed with code idempotency_conflict.
	Conflicts int `json:"conflicts"`
	// Invalid are intents the Go client refused with field errors.
	Invalid int `json:"invalid"`

	Routes       int64 `json:"routes"`
	Published    int64 `json:"published"`
	Retried      int64 `json:"retried"`
	DeadLettered int64 `json:"dead_lettered"`
	Skipped      int64 `json:"skipped"`
	Canceled     int64 `json:"canceled"`
	Unfinished   int64 `json:"unfinished"`
	Attempts     int64 `json:"attempts"`
	Malformed    int64 `json:"malformed"`

	// Seconds spans the first acceptance to the last route's terminal
	// change; Throughput is terminal routes per second over it.
	Seconds    float64 `json:"seconds"`
	Throughput float64 `json:"throughput_routes_per_second"`
	Elapsed    float64 `json:"elapsed_seconds"`

	// Isolation is what a second producer's login tried and was refused.
	Isolation *Isolation `json:"isolation"`
	// Providers is what the SMS providers the demo applied did.
	Providers *Providers `json:"providers"`
	// Receipts, Callbacks and API are the delivery receipts, the status
	// callbacks and the HTTP API parts.
	Receipts  *Receipts  `json:"receipts"`
	Callbacks *Callbacks `json:"callbacks"`
	API       *APIPart   `json:"api"`
	// DirectCallback is one intent with its own callback_url and
	// metadata, and its callback as the receiver took it.
	DirectCallback *DirectCallback `json:"direct_callback,omitempty"`
	// Content is the templates and content blocklist part.
	Content *ContentPart `json:"content"`
	// LongSMS is the long SMS over SMPP and its receipt.
	LongSMS *LongSMSPart `json:"long_sms"`
	// Senders is the approved sender and the flash SMS over SMPP.
	Senders *SendersPart `json:"senders,omitempty"`
	// Campaign is a campaign scheduled and then canceled.
	Campaign *CampaignPart `json:"campaign"`
	// Console is the operator console the demo serves; OnCall the drain of
	// a provider through it.
	Console *ConsolePart `json:"console,omitempty"`
	OnCall  *OnCallPart  `json:"on_call,omitempty"`

	DeadLetters     []Count  `json:"dead_letters_by"`
	MalformedByCode []Count  `json:"malformed_by_code"`
	Commands        []string `json:"commands"`
	// RouteStorage is where this run's routes are stored: per partition of
	// routes.
	RouteStorage []RouteStorage `json:"route_storage"`
	// Weeks are the finished routes' week partitions that exist, by their
	// Monday (YYYYMMDD).
	Weeks []string `json:"weeks"`
	// RecordStorage is where this run's records are stored: per partition
	// of records, with their idempotency keys (00026).
	RecordStorage []RecordStorage `json:"record_storage"`
	// RecordWeeks are records' week partitions that exist, by their Monday
	// (YYYYMMDD).
	RecordWeeks []string `json:"record_weeks"`
}

// RecordStorage is one partition of records, this run's records in it, and
// how many of them hold their idempotency key.
type RecordStorage struct {
	Partition string `json:"partition"`
	Records   int64  `json:"records"`
	Keys      int64  `json:"keys"`
}

// RouteStorage is one partition of routes and this run's routes in it.
type RouteStorage struct {
	Partition string `json:"partition"`
	Routes    int64  `json:"routes"`
	Statuses  string `json:"statuses"`
}

// Count is one line of the summary's breakdowns: dead letters by channel and
// classification, malformed intents by failure code.
type Count struct {
	Channel string `json:"channel,omitempty"`
	Key     string `json:"key"`
	Count   int64  `json:"count"`
}

// Providers is the summary's providers part: the SMS providers and rules
// the demo applied, what each provider took (from routes.providers) and
// what its loopback server received, the routes that failed over, and the
// circuits' events during the run.
type Providers struct {
	// Skipped says why the demo applied no providers (the database holds
	// providers of its own, or the login may not apply them); empty when
	// it did.
	Skipped string `json:"skipped,omitempty"`
	// Rules are the SMS channel's rules, in order.
	Rules     []Rule          `json:"rules,omitempty"`
	Providers []ProviderCount `json:"providers,omitempty"`
	// FailedOver counts the routes whose attempts went to more than one
	// provider; FailedOverPublished those of them published.
	FailedOver          int64 `json:"failed_over"`
	FailedOverPublished int64 `json:"failed_over_published"`
	// ChannelDriverAttempts counts SMS attempts made by the channel's own
	// driver (the demo's serve configuration, pointing at sms/acme's
	// server) rather than by a provider: before the engine had loaded the
	// providers. Normally 0.
	ChannelDriverAttempts int64 `json:"channel_driver_attempts"`
	// Circuits are the providers' circuits opening and closing during the
	// run, in order.
	Circuits []CircuitEvent `json:"circuits,omitempty"`
}

// Rule is one routing rule the demo applied; Match is its prefixes, or
// "anything else" for a catch-all.
type Rule struct {
	Name      string   `json:"name"`
	Match     string   `json:"match"`
	Strategy  string   `json:"strategy"`
	Providers []string `json:"providers"`
}

// ProviderCount is one provider's line: what the database recorded of it
// and what its loopback server received.
type ProviderCount struct {
	Name string `json:"name"`
	// CapPerSecond is its cap; 0 is none.
	CapPerSecond int `json:"cap_per_second"`
	// Attempts are the attempts routes.providers says it took; Routes the
	// routes it took at least one attempt of; Published and DeadLettered
	// the routes whose last attempt it took, by outcome.
	Attempts     int64 `json:"attempts"`
	Routes       int64 `json:"routes"`
	Published    int64 `json:"published"`
	DeadLettered int64 `json:"dead_lettered"`
	// Received is what its loopback server counted, and MaxPerSecond the
	// most it received in any one-second window.
	Received     int64 `json:"received"`
	MaxPerSecond int   `json:"max_per_second"`
}

// CircuitEvent is a provider's circuit opening or closing
// (herald.provider_events).
type CircuitEvent struct {
	Provider string    `json:"provider"`
	At       time.Time `json:"at"`
	Event    string    `json:"event"`
	Detail   string    `json:"detail"`
}

// Isolation is what the demo's isolation probe found: a second
// producer's login tries to step outside its own rows, each attempt either
// refused or (a failure of herald's) let through.
type Isolation struct {
	// Skipped says why the probe did not run (the demo's login cannot
	// create roles, or cannot connect as one); empty when it ran.
	Skipped string `json:"skipped,omitempty"`
	// Attempts are the hostile attempts in order, each with its outcome.
	Attempts []Attempt `json:"attempts,omitempty"`
	Refused  int       `json:"refused"`
	// ByHand is what became of the rows the second producer's login wrote
	// by hand with the blocked word hidden.
	ByHand *DoorCount `json:"by_hand,omitempty"`
}

// Attempt is one of the isolation probe's hostile attempts.
type Attempt struct {
	What    string `json:"what"`
	Refused bool   `json:"refused"`
	How     string `json:"how"`
}

// commands are the commands that inspect the run's dead letters and
// providers; dbURL is the database's URL without its password, and
// providers says that the demo's providers stay in the database (a
// throwaway one's).
func commands(dbURL string, throwaway, keep, providers bool) []string {
	cmds := []string{
		"export DATABASE_URL='" + dbURL + "'",
		"go run ./cmd/herald dead-letters list",
		"go run ./cmd/herald dead-letters list --channel email --json",
		"go run ./cmd/herald malformed list",
		`psql "$DATABASE_URL" -c 'SELECT channel, classification, count(*) FROM herald.dead_letter_view GROUP BY 1, 2 ORDER BY 1, 2'`,
		`psql "$DATABASE_URL" -c 'SELECT notification_type, channel, attempts, classification, message, recovery_hint FROM herald.dead_letter_view ORDER BY dead_lettered_at DESC LIMIT 20'`,
		`psql "$DATABASE_URL" -c 'SELECT providers, status, count(*) FROM herald.routes WHERE providers IS NOT NULL GROUP BY 1, 2 ORDER BY 3 DESC'`,
		`psql "$DATABASE_URL" -c 'SELECT provider, state, delivery_status, count(*) FROM herald.delivery_receipts GROUP BY 1, 2, 3 ORDER BY 1, 2, 3'`,
		`psql "$DATABASE_URL" -c 'SELECT * FROM herald.unmatched_receipts_view'`,
	}
	if throwaway && providers {
		cmds = append(cmds,
			"go run ./cmd/herald routing test "+SMSDownPrefix+"710001002",
			`psql "$DATABASE_URL" -c 'SELECT * FROM herald.provider_health_view'`)
	}
	if throwaway && !keep {
		cmds = append([]string{"# the throwaway database is gone once the demo exits: run `go run ./cmd/herald demo -keep` to keep it up, then in another terminal:"}, cmds...)
	}
	return cmds
}

// WriteSummary prints s as the table `herald demo` shows.
func WriteSummary(out io.Writer, s *Summary) error {
	fmt.Fprintf(out, "\nherald demo %s\n\n", s.RunID)
	row := func(name string, v any, note string) { fmt.Fprintf(out, "  %-14s %8v   %s\n", name, v, note) }
	row("submitted", s.SubmittedClient+s.SubmittedHTTP+s.SubmittedRaw, fmt.Sprintf("%d through the Go client, %d over the HTTP API, %d raw INSERTs into herald.intake",
		s.SubmittedClient, s.SubmittedHTTP, s.SubmittedRaw))
	row("accepted", s.Accepted, "notifications stored")
	row("duplicates", s.Duplicates, "repeats answered with the original notification, nothing stored")
	row("conflicts", s.Conflicts, "idempotency key reused for a different request")
	row("invalid", s.Invalid, "refused by the Go client with field errors")
	row("malformed", s.Malformed, "raw entries kept in herald.malformed_intents (the raw conflict included)")
	row("routes", s.Routes, "one per (channel, recipient)")
	row("published", s.Published, "accepted by the channel's server or the provider (delivery receipts below say what happened next)")
	row("retried", s.Retried, "routes that needed more than one attempt (throttling, 5xx, greylisting, failover)")
	row("dead-lettered", s.DeadLettered, "permanent failures and exhausted budgets, in herald.dead_letters")
	row("skipped", s.Skipped, "no address for the channel, or opted out")
	row("unfinished", s.Unfinished, "")
	row("throughput", fmt.Sprintf("%.0f/s", s.Throughput), fmt.Sprintf("terminal routes over %.1fs, first acceptance to last outcome", s.Seconds))

	if len(s.DeadLetters) > 0 {
		fmt.Fprintln(out, "\ndead letters by channel and classification:")
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, d := range s.DeadLetters {
			fmt.Fprintf(tw, "  %s\t%s\t%d\n", d.Channel, d.Key, d.Count)
		}
		_ = tw.Flush()
	}
	if len(s.MalformedByCode) > 0 {
		fmt.Fprintln(out, "\nmalformed intents by failure code:")
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, d := range s.MalformedByCode {
			fmt.Fprintf(tw, "  %s\t%d\n", d.Key, d.Count)
		}
		_ = tw.Flush()
	}
	if len(s.RouteStorage) > 0 {
		fmt.Fprintf(out, "\nstorage: routes are partitioned by the week they finished in (%s); retention drops a week whole once it ended more than the retention ago\n",
			strings.Join(s.Weeks, ", "))
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, p := range s.RouteStorage {
			fmt.Fprintf(tw, "  %s\t%d routes\t%s\n", p.Partition, p.Routes, p.Statuses)
		}
		_ = tw.Flush()
	}
	if len(s.RecordStorage) > 0 {
		fmt.Fprintf(out, "storage: records are partitioned by the week they were accepted in (%s); retention retires a week whole a week after its routes' weeks, keeping what must stay; idempotency keys are rows of their own, swept when their window ends\n",
			strings.Join(s.RecordWeeks, ", "))
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, p := range s.RecordStorage {
			fmt.Fprintf(tw, "  %s\t%d records\t%d idempotency keys held\n", p.Partition, p.Records, p.Keys)
		}
		_ = tw.Flush()
	}
	if s.Providers != nil {
		writeProviders(out, s.Providers, row)
	}
	writeDelivery(out, s, row)
	if s.LongSMS != nil {
		writeLongSMS(out, s.LongSMS)
	}
	if s.Senders != nil {
		writeSenders(out, s.Senders)
	}
	if s.Content != nil {
		writeContent(out, s.Content)
	}
	if s.Campaign != nil {
		writeCampaign(out, s.Campaign, row)
	}
	writeOnCall(out, s.Console, s.OnCall)
	if iso := s.Isolation; iso != nil {
		if iso.Skipped != "" {
			fmt.Fprintf(out, "\nisolation: not probed (%s)\n", iso.Skipped)
		} else {
			fmt.Fprintf(out, "\nisolation: %d of %d attempts by a second producer's login refused\n", iso.Refused, len(iso.Attempts))
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			for _, a := range iso.Attempts {
				verdict := "refused"
				if !a.Refused {
					verdict = "ALLOWED"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", a.What, verdict, a.How)
			}
			_ = tw.Flush()
		}
	}
	fmt.Fprintln(out, "\ninspect the dead letters, the providers and the receipts:")
	for _, c := range s.Commands {
		fmt.Fprintln(out, "  "+c)
	}
	fmt.Fprintf(out, "\nfinished in %.1fs\n", s.Elapsed)
	return nil
}

// writeProviders prints the providers part of the summary, its last lines
// as row prints the summary's.
func writeProviders(out io.Writer, p *Providers, row func(name string, v any, note string)) {
	if p.Skipped != "" {
		fmt.Fprintf(out, "\nSMS providers: none applied (%s)\n", p.Skipped)
		return
	}
	fmt.Fprintln(out, "\nSMS providers and rules, applied with routing.Apply as `herald providers apply -f` does:")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, r := range p.Rules {
		to := strings.Join(r.Providers, " → ")
		if len(r.Providers) > 1 {
			to += " (" + r.Strategy + ")"
		}
		fmt.Fprintf(tw, "  rule %s\t%s\t%s\n", r.Name, r.Match, to)
	}
	_ = tw.Flush()
	line := "  %-12s %5s %9v %7v %10v %14v %9v %11v\n"
	fmt.Fprintf(out, "\n"+line, "provider", "cap", "attempts", "routes", "published", "dead-lettered", "received", "most in 1s")
	var capped *ProviderCount
	for i, c := range p.Providers {
		limit := "none"
		if c.CapPerSecond > 0 {
			limit = fmt.Sprintf("%d/s", c.CapPerSecond)
			if capped == nil {
				capped = &p.Providers[i]
			}
		}
		fmt.Fprintf(out, line, c.Name, limit, c.Attempts, c.Routes, c.Published, c.DeadLettered, c.Received, c.MaxPerSecond)
	}
	fmt.Fprintln(out, "  attempts to dead-lettered: routes.providers; received and most in 1s: each provider's own server")
	fmt.Fprintln(out)
	row("failed over", p.FailedOver, fmt.Sprintf("routes sent on to the next provider after a transient failure, %d of them published", p.FailedOverPublished))
	if capped != nil {
		verdict := "held"
		if capped.MaxPerSecond > capped.CapPerSecond {
			verdict = "BROKEN"
		}
		row("cap "+verdict, capped.MaxPerSecond, fmt.Sprintf("the most %s's server received in any one second; its cap is %d/s",
			capped.Name, capped.CapPerSecond))
	}
	if p.ChannelDriverAttempts > 0 {
		row("no provider", p.ChannelDriverAttempts, "SMS attempts by the channel's own driver, before the engine had loaded the providers")
	}
	row("circuits", len(p.Circuits), "opened or closed (herald.provider_events)")
	for _, e := range p.Circuits {
		fmt.Fprintf(out, "  %-14s %8s   %s %s %s\n", "", "", e.At.Local().Format("15:04:05.000"), e.Provider, strings.ReplaceAll(e.Event, "_", " "))
	}
}
