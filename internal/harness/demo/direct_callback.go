package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/intake"
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
	Event          string            `json:"event,omitempty"`
	Path           string            `json:"path,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
}

// directCallbackPath is where the demo's intent asks its callbacks to go,
// under the receiver's URL: not the subscription's own path.
const directCallbackPath = "/order-9"

// runDirectCallback submits, as the demo's producer, one webhook intent
// with metadata and a callback_url at the receiver, and waits (at most
// timeout) for its first callback there.
func runDirectCallback(ctx context.Context, prod *producer, srv *Servers, runID string, timeout time.Duration) (*DirectCallback, error) {
	if prod.callbacksSkipped != "" {
		return &DirectCallback{Skipped: prod.callbacksSkipped}, nil
	}
	out := &DirectCallback{CallbackURL: srv.Callbacks.URL + directCallbackPath}
	in := &intake.Intent{
		NotificationType: "order.shipped", Producer: prod.name, IdempotencyKey: runID + ":direct-callback",
		Audience: intake.Audience{Webhook: []string{srv.Webhook + WebhookPathOK + "direct-callback"}},
		Channels: []string{"webhook"},
		Content:  intake.Content{Webhook: json.RawMessage(`{"order":9,"status":"shipped"}`)},
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
	fmt.Fprintf(out, "\ncallback_url with metadata: notification %s's %s callback reached %s, signed, with metadata %s\n",
		d.NotificationID, d.Event, d.Path, strings.Join(kv, " "))
}
