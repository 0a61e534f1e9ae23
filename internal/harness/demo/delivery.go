package demo

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/smpp"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// Receipts is the summary's delivery receipts part: per provider, the
// delivery statuses receipts gave the run's routes (herald.routes), what
// the matcher made of the receipts (herald.delivery_receipts), and what
// the provider's own server sent.
type Receipts struct {
	// Skipped says why there are none (the demo applied no providers).
	Skipped   string         `json:"skipped,omitempty"`
	Providers []ReceiptCount `json:"providers,omitempty"`
}

// ReceiptCount is one provider's line of the receipts part.
type ReceiptCount struct {
	Provider string `json:"provider"`
	// Published are the run's SMS routes whose last attempt it took and
	// which it accepted; Delivered to Unknown their delivery status, and
	// NoStatus those with none.
	Published   int64 `json:"published"`
	Delivered   int64 `json:"delivered"`
	Undelivered int64 `json:"undelivered"`
	Expired     int64 `json:"expired"`
	Unknown     int64 `json:"unknown"`
	NoStatus    int64 `json:"no_status"`
	// Received are its receipts in the inbox; Matched, Duplicate,
	// Unmatched, Malformed and Waiting (still to match) by state; Early
	// those matched on a later try, having come before the completion.
	Received  int64 `json:"received"`
	Matched   int64 `json:"matched"`
	Duplicate int64 `json:"duplicate"`
	Unmatched int64 `json:"unmatched"`
	Malformed int64 `json:"malformed"`
	Waiting   int64 `json:"waiting"`
	Early     int64 `json:"early"`
	// Sent is what its own server sent and herald took: receipts answered
	// 200 by the endpoint, or deliver_sm answered ESME_ROK by the SMPP
	// driver.
	Sent int64 `json:"sent"`
}

// Callbacks is the summary's status callbacks part: what the database
// created and delivered per event, and what the producer's receiver took.
type Callbacks struct {
	// Skipped says why there are none (no producer login).
	Skipped  string          `json:"skipped,omitempty"`
	Producer string          `json:"producer,omitempty"`
	URL      string          `json:"url,omitempty"`
	Events   []CallbackEvent `json:"events,omitempty"`
	// Routes are the routes the receiver heard about; OutOfOrder those
	// whose receipt event came before their published.
	Routes     int `json:"routes"`
	OutOfOrder int `json:"out_of_order"`
	// Requests, Refused (503), BadSignatures and Repeats are the
	// receiver's counts.
	Requests      int64 `json:"requests"`
	Refused       int64 `json:"refused"`
	BadSignatures int64 `json:"bad_signatures"`
	Repeats       int64 `json:"repeats"`
}

// CallbackEvent is one event's line: the callbacks created, delivered,
// failed (dead-lettered), waiting and retried, from the database, and
// those the receiver took.
type CallbackEvent struct {
	Event     string `json:"event"`
	Created   int64  `json:"created"`
	Delivered int64  `json:"delivered"`
	Failed    int64  `json:"failed"`
	Waiting   int64  `json:"waiting"`
	Retried   int64  `json:"retried"`
	Received  int64  `json:"received"`
}

// APIPart is the summary's HTTP API part: the intents the producer sent
// over HTTP with its key, and what the database holds of them.
type APIPart struct {
	// Skipped says why the part did not run (no login in herald_api).
	Skipped   string `json:"skipped,omitempty"`
	Login     string `json:"login,omitempty"`
	Producer  string `json:"producer,omitempty"`
	KeyPrefix string `json:"key_prefix,omitempty"`
	// Requests, Submitted (intents), Created (201) and Replayed (a repeat
	// answered with the original) are the HTTP side.
	Requests  int `json:"requests"`
	Submitted int `json:"submitted"`
	Created   int `json:"created"`
	Replayed  int `json:"replayed"`
	// Stored to SkippedRoutes are the database's, for the notifications
	// whose request_id marks them as the HTTP part's.
	Stored        int64 `json:"stored"`
	Routes        int64 `json:"routes"`
	Published     int64 `json:"published"`
	DeadLettered  int64 `json:"dead_lettered"`
	SkippedRoutes int64 `json:"skipped_routes"`
}

// summarizeReceipts reads the run's delivery statuses and receipts per
// provider of p, received since since.
func (p *plane) summarizeReceipts(ctx context.Context, pool *pgxpool.Pool, srv *Servers, runID string, since time.Time) (*Receipts, error) {
	q := benchstore.New()
	statuses, err := q.DemoDeliveryStatusCounts(ctx, pool, runID+":")
	if err != nil {
		return nil, fmt.Errorf("read the run's delivery statuses: %w", err)
	}
	names := p.names()
	receipts, err := q.DemoReceiptCounts(ctx, pool, benchstore.DemoReceiptCountsParams{Providers: names, Since: since, RunPrefix: runID + ":"})
	if err != nil {
		return nil, fmt.Errorf("read the run's receipts: %w", err)
	}
	out := &Receipts{}
	servers := srv.httpProviders()
	for _, name := range names {
		c := ReceiptCount{Provider: name}
		if i := slices.IndexFunc(statuses, func(r benchstore.DemoDeliveryStatusCountsRow) bool { return r.Provider == name }); i >= 0 {
			s := statuses[i]
			c.Published, c.Delivered, c.Undelivered, c.Expired, c.Unknown, c.NoStatus =
				s.Published, s.Delivered, s.Undelivered, s.Expired, s.Unknown, s.NoStatus
		}
		if i := slices.IndexFunc(receipts, func(r benchstore.DemoReceiptCountsRow) bool { return r.Provider == name }); i >= 0 {
			r := receipts[i]
			c.Received, c.Matched, c.Duplicate, c.Unmatched, c.Malformed, c.Waiting, c.Early =
				r.Received, r.Matched, r.Duplicate, r.Unmatched, r.Malformed, r.Waiting, r.Early
		}
		if s := servers[name]; s != nil {
			c.Sent = s.ReceiptsSent.Load()
		} else if name == "sms/operator" {
			for _, st := range srv.SMSC.DeliverResps() {
				if st == smpp.StatusOK {
					c.Sent++
				}
			}
		}
		out.Providers = append(out.Providers, c)
	}
	return out, nil
}

// names returns the names of the plane's providers, in file order.
func (p *plane) names() []string {
	out := make([]string, len(p.file.Providers))
	for i, spec := range p.file.Providers {
		out[i] = spec.Name
	}
	return out
}

// callbackEvents are the callback events in the order a route meets them.
var callbackEvents = []string{"published", "delivered", "undelivered", "expired", "dead_lettered", "skipped", "canceled"}

// summarizeCallbacks reads the run's status callbacks by event and adds
// what the receiver took.
func summarizeCallbacks(ctx context.Context, pool *pgxpool.Pool, rcv *CallbackReceiver, producer, runID string) (*Callbacks, error) {
	rows, err := benchstore.New().DemoCallbackCounts(ctx, pool, runID+":")
	if err != nil {
		return nil, fmt.Errorf("read the run's callbacks: %w", err)
	}
	out := &Callbacks{Producer: producer, URL: rcv.URL, Requests: rcv.Requests.Load(), Refused: rcv.Refused.Load(),
		BadSignatures: rcv.BadSignatures.Load(), Repeats: rcv.Repeats.Load()}
	received := rcv.Received()
	for _, r := range rows {
		out.Events = append(out.Events, CallbackEvent{Event: r.Event, Created: r.Created, Delivered: r.Delivered,
			Failed: r.Failed, Waiting: r.Waiting, Retried: r.Retried, Received: received[r.Event]})
		delete(received, r.Event)
	}
	for _, e := range slices.Sorted(maps.Keys(received)) { // taken, but not in the database: a failure of herald's
		out.Events = append(out.Events, CallbackEvent{Event: e, Received: received[e]})
	}
	// In a route's order of events, the unknown last.
	rank := func(e string) int {
		return cmp.Or(slices.Index(callbackEvents, e)+1, len(callbackEvents)+1)
	}
	slices.SortStableFunc(out.Events, func(a, b CallbackEvent) int { return cmp.Compare(rank(a.Event), rank(b.Event)) })
	out.Routes, out.OutOfOrder = rcv.Order()
	return out, nil
}

// summarizeAPI reads what the database holds of the HTTP part.
func summarizeAPI(ctx context.Context, pool *pgxpool.Pool, a *APIPart, runID string) error {
	s, err := benchstore.New().RecordSummaryByRequestPrefix(ctx, pool, runID+":api:")
	if err != nil {
		return fmt.Errorf("read the HTTP part: %w", err)
	}
	a.Stored, a.Routes, a.Published, a.DeadLettered, a.SkippedRoutes = s.Notifications, s.Routes, s.Published, s.DeadLettered, s.Skipped
	return nil
}

// writeDelivery prints the receipts, callbacks and HTTP API parts.
func writeDelivery(out io.Writer, s *Summary, row func(name string, v any, note string)) {
	if r := s.Receipts; r != nil {
		if r.Skipped != "" {
			fmt.Fprintf(out, "\ndelivery receipts: none (%s)\n", r.Skipped)
		} else {
			fmt.Fprintln(out, "\ndelivery receipts, by the provider that took each route's last attempt:")
			line := "  %-13s %9v %9v %11v %7v %7v %5v   %8v %7v %5v %9v %9v %5v\n"
			fmt.Fprintf(out, line, "provider", "published", "delivered", "undelivered", "expired", "unknown", "none",
				"receipts", "matched", "early", "duplicate", "unmatched", "sent")
			for _, c := range r.Providers {
				fmt.Fprintf(out, line, c.Provider, c.Published, c.Delivered, c.Undelivered, c.Expired, c.Unknown, c.NoStatus,
					c.Received, c.Matched, c.Early, c.Duplicate, c.Unmatched, c.Sent)
			}
			fmt.Fprintln(out, "  published to none: routes.delivery_status; receipts to unmatched: herald.delivery_receipts;")
			fmt.Fprintln(out, "  early: matched on a later try, having come before herald wrote the message id; sent: each provider's own server")
		}
	}
	if c := s.Callbacks; c != nil {
		if c.Skipped != "" {
			fmt.Fprintf(out, "\nstatus callbacks: not shown (%s)\n", c.Skipped)
		} else {
			fmt.Fprintf(out, "\nstatus callbacks to producer %s at %s, signed with its whsec_ secret:\n", c.Producer, c.URL)
			line := "  %-13s %7v %9v %6v %7v %7v %8v\n"
			fmt.Fprintf(out, line, "event", "created", "delivered", "failed", "waiting", "retried", "received")
			for _, e := range c.Events {
				fmt.Fprintf(out, line, e.Event, e.Created, e.Delivered, e.Failed, e.Waiting, e.Retried, e.Received)
			}
			fmt.Fprintln(out, "  created to retried: the callbacks' own records and routes (retried: a 503, or a wait behind the route's")
			fmt.Fprintln(out, "  earlier callback); received: the producer's receiver, each callback once")
			fmt.Fprintln(out)
			verdict := "order held"
			if c.OutOfOrder > 0 {
				verdict = "order BROKEN"
			}
			row(verdict, c.Routes, fmt.Sprintf("routes heard about, %d with a receipt's event before its published", c.OutOfOrder))
			row("signatures", c.Requests-c.BadSignatures, fmt.Sprintf("of %d requests verified, %d refused with 503 and sent again, %d repeats dropped by webhook-id",
				c.Requests, c.Refused, c.Repeats))
			var failed int64
			for _, e := range c.Events {
				failed += e.Failed
			}
			row("failed", failed, "callbacks dead-lettered (herald.failed_callbacks_view)")
		}
	}
	writeDirectCallback(out, s.DirectCallback)
	if a := s.API; a != nil {
		if a.Skipped != "" {
			fmt.Fprintf(out, "\nHTTP API: not shown (%s)\n", a.Skipped)
		} else {
			fmt.Fprintf(out, "\nHTTP API, served by the engine as login %s (herald_api), with key %s… of producer %s (herald.api_key_create):\n",
				a.Login, a.KeyPrefix, a.Producer)
			row("over HTTP", a.Submitted, fmt.Sprintf("intents in %d requests: %d created, %d replayed (Idempotent-Replayed, nothing stored)",
				a.Requests, a.Created, a.Replayed))
			row("stored", a.Stored, fmt.Sprintf("notifications: %d routes, %d published, %d dead-lettered, %d skipped",
				a.Routes, a.Published, a.DeadLettered, a.SkippedRoutes))
		}
	}
}
