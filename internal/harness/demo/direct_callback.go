package demo

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/operator"
)

// DirectCallback is the summary's part for one intent that names its own
// callback_url and carries metadata: the producer subscribed first (its
// secret signs the callback), and the callback reached the receiver at
// that URL with the intent's metadata.
type DirectCallback struct {
	// Skipped says why the part is not shown.
	Skipped        string            `json:"skipped,omitempty"`
	NotificationID string            `json:"notification_id,omitempty"`
	CallbackURL    string            `json:"callback_url,omitempty"`
	FromSender     string            `json:"from_sender,omitempty"`
	Event          string            `json:"event,omitempty"`
	Path           string            `json:"path,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
}

// directCallbackPath is where the demo's intent asks its callbacks to go,
// under the receiver's URL: not the subscription's own path.
const directCallbackPath = "/order-9"

// runDirectCallback submits, as the demo's producer, one intent with
// metadata, a callback_url at the receiver and, for its SMS, a sender an
// operator approved for the producer first (audited), and waits (at most
// timeout) for its first callback there (and, when viaSMSC, the one its
// SMSC's receipt makes).
func runDirectCallback(ctx context.Context, pool *pgxpool.Pool, prod *producer, srv *Servers, runID string, viaSMSC bool, timeout time.Duration) (*DirectCallback, error) {
	if prod.callbacksSkipped != "" {
		return &DirectCallback{Skipped: prod.callbacksSkipped}, nil
	}
	op, err := operator.New(pool, nil)
	if err != nil {
		return nil, err
	}
	if _, err := op.ApproveSender(ctx, prod.name, DemoSender, "demo-operator", "the demo's shop name"); err != nil {
		return nil, fmt.Errorf("approve the sender of the intent with a callback_url: %w", err)
	}
	out := &DirectCallback{CallbackURL: srv.Callbacks.URL + directCallbackPath, FromSender: DemoSender}
	in := &intake.Intent{
		NotificationType: "order.shipped", Producer: prod.name, IdempotencyKey: runID + ":direct-callback",
		// An SMS only, so the callback waited for below is its one route's.
		Audience:   intake.Audience{SMS: []string{SMSCPrefix + "7911123458"}},
		Channels:   []string{channel.SMS},
		Content:    intake.Content{SMS: &intake.SMSContent{Body: "Order 9 shipped (" + runID + ")"}},
		FromSender: DemoSender,
		// Counted with the run's intents, by this prefix.
		RequestID:   runID + ":direct-callback",
		CallbackURL: out.CallbackURL,
		Metadata:    map[string]string{"order_id": "9", "tenant": "acme", "run": runID},
	}
	res, err := prod.client.SubmitMany(ctx, []*intake.Intent{in})
	if err != nil {
		return nil, fmt.Errorf("submit the intent with a callback_url: %w", err)
	}
	if res[0].Err != nil {
		return nil, fmt.Errorf("submit the intent with a callback_url: %w", res[0].Err)
	}
	out.NotificationID = res[0].NotificationID
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got, err := srv.Callbacks.WaitFirst(wctx, out.NotificationID)
	if err != nil {
		return nil, fmt.Errorf("wait for the callback of notification %s at its callback_url: %w", out.NotificationID, err)
	}
	out.Event, out.Path, out.Metadata = got.Event, got.Path, got.Metadata
	// Through the demo's SMSC, its receipt makes a second callback
	// (delivered): the summary counts it, so it has arrived before the part
	// ends. With providers the demo did not write, no receipt is certain.
	if !viaSMSC {
		return out, nil
	}
	if err := srv.Callbacks.WaitEvent(wctx, out.NotificationID, "delivered"); err != nil {
		return nil, fmt.Errorf("wait for the delivered callback of notification %s: %w", out.NotificationID, err)
	}
	return out, nil
}

// writeDirectCallback prints the part.
func writeDirectCallback(out io.Writer, d *DirectCallback) {
	if d == nil {
		return
	}
	if d.Skipped != "" {
		fmt.Fprintf(out, "\ncallback_url with metadata: not shown (%s)\n", d.Skipped)
		return
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(d.Metadata)) {
		kv = append(kv, k+"="+d.Metadata[k])
	}
	fmt.Fprintf(out, "\ncallback_url with metadata and an approved sender: notification %s (SMS from %s) — its %s callback reached %s, signed, with metadata %s\n",
		d.NotificationID, d.FromSender, d.Event, d.Path, strings.Join(kv, " "))
}
