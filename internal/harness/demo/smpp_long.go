package demo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// LongSMSParts is how many parts the demo's long SMS takes: GSM-7, 153
// characters a part.
const LongSMSParts = 3

// LongSMSPart is the demo's long SMS over SMPP: its rule's first provider,
// sms/legacy, cannot bind (the SMSC refuses its password), so it is
// passed over without an attempt; sms/operator's SMSC takes it in parts and
// sends one receipt, for the part that completed it, and the route's
// delivery status follows from its parts' statuses.
type LongSMSPart struct {
	To       string `json:"to"`
	Parts    int    `json:"parts"`
	Provider string `json:"provider"`
	// Providers are the route's attempts' providers (routes.providers).
	Providers []string `json:"providers"`
	// PassedOver is the provider that could not bind, LegacyAttempts the
	// attempts the run's routes gave it, and PassedOverReason its health's
	// unavailable_reason.
	PassedOver       string   `json:"passed_over"`
	LegacyAttempts   int64    `json:"legacy_attempts"`
	PassedOverReason string   `json:"passed_over_reason"`
	Status           string   `json:"status"`
	DeliveryStatus   string   `json:"delivery_status"`
	PartStatuses     []string `json:"part_statuses"`
	// Receipts are the route's receipts by the matcher's state.
	Receipts map[string]int64 `json:"receipts"`
}

// longSMSIntent is the long SMS, to an Irish number (rule ireland:
// sms/legacy, failing over to sms/operator).
func longSMSIntent(runID string) *intake.Intent {
	body := strings.Repeat("Your parcel is on its way and will arrive tomorrow between 9 and 12. ", 6)[:2*153+40]
	return &intake.Intent{
		NotificationType: "parcel.update", Producer: ContentProducer, IdempotencyKey: runID + ":long-sms", RequestID: runID + ":long-sms",
		Audience: intake.Audience{SMS: []string{LegacyPrefix + "851119901"}}, Channels: []string{channel.SMS},
		Content: intake.Content{SMS: &intake.SMSContent{Body: body}},
	}
}

// readLongSMS reads the long SMS's route once it is published and has a
// delivery status (or timeout passed).
func readLongSMS(ctx context.Context, pool *pgxpool.Pool, id string, timeout time.Duration) (*LongSMSPart, error) {
	deadline := time.Now().Add(timeout)
	for {
		routes, err := store.New().RouteListByNotification(ctx, pool, id)
		if err != nil {
			return nil, fmt.Errorf("read the long SMS's route: %w", err)
		}
		if len(routes) == 1 && (routes[0].DeliveryStatus != nil || time.Now().After(deadline)) {
			r := routes[0]
			p := &LongSMSPart{To: r.RecipientRef, Parts: len(r.ReceiptParts), Status: r.Status, Providers: r.Providers,
				PartStatuses: r.PartDeliveryStatuses, Receipts: map[string]int64{}, PassedOver: "sms/legacy"}
			if len(r.Providers) > 0 {
				p.Provider = r.Providers[len(r.Providers)-1]
			}
			if r.DeliveryStatus != nil {
				p.DeliveryStatus = *r.DeliveryStatus
			}
			states, err := benchstore.New().DemoRouteReceiptStates(ctx, pool, benchstore.DemoRouteReceiptStatesParams{
				NotificationID: r.NotificationID, RouteID: r.RouteID})
			if err != nil {
				return nil, fmt.Errorf("read the long SMS's receipts: %w", err)
			}
			for _, s := range states {
				p.Receipts[s.State] = s.Receipts
			}
			health, err := store.New().ProviderHealthViewList(ctx, pool)
			if err != nil {
				return nil, fmt.Errorf("read the providers' health: %w", err)
			}
			for _, h := range health {
				if h.Provider == p.PassedOver {
					p.PassedOverReason = h.UnavailableReason
				}
			}
			return p, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// writeLongSMS prints the long SMS's line of the summary.
func writeLongSMS(out io.Writer, p *LongSMSPart) {
	parts := make([]string, len(p.PartStatuses))
	for i, s := range p.PartStatuses {
		parts[i] = fmt.Sprintf("part %d: %s", i+1, cmpNone(s))
	}
	fmt.Fprintf(out, "\nlong SMS over SMPP to %s: %d parts through %s (attempts' providers: %s), %s; the SMSC sent one receipt, for the part that completed it\n",
		p.To, p.Parts, p.Provider, strings.Join(p.Providers, ", "), p.Status)
	fmt.Fprintf(out, "  delivery status %s, decided from its parts (%s); receipts: %d matched, %d duplicate, %d unmatched\n",
		cmpNone(p.DeliveryStatus), strings.Join(parts, ", "), p.Receipts["matched"], p.Receipts["duplicate"], p.Receipts["unmatched"])
	fmt.Fprintf(out, "  passed over %s, whose binds the SMSC refuses: %d attempts; its health says %q\n",
		p.PassedOver, p.LegacyAttempts, p.PassedOverReason)
}

// cmpNone is s, or "none" for "".
func cmpNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
