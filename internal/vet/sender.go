package vet

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// senderRefusal returns why the payload of an sms route (ch), stored by a
// producer's login past the accept path, names a sender the drivers must
// not send (one of another form than intake's, or not approved for
// producer), or "" when it names none or an approved one. The sender is
// the sms entry's "from", or a templated payload's "sms_options" "from",
// whichever the dispatcher would send. Only an sms route whose payload
// names a sender pays the lookup.
func senderRefusal(ctx context.Context, tx pgx.Tx, ch, producer, payload string) (heraldtype.Code, string, error) {
	type options struct {
		From *string `json:"from"`
	}
	var pl struct {
		SMS        *options `json:"sms"`
		SMSOptions *options `json:"sms_options"`
	}
	if ch != channel.SMS || json.Unmarshal([]byte(payload), &pl) != nil {
		return "", "", nil
	}
	o := pl.SMS
	if o == nil {
		o = pl.SMSOptions
	}
	if o == nil || o.From == nil {
		return "", "", nil
	}
	from := *o.From
	if _, why := intake.SenderKindOf(from); why != "" {
		return heraldtype.CodeInvalidField, "from_sender: " + why, nil
	}
	rows, err := store.New().SenderIDApproved(ctx, tx, store.SenderIDApprovedParams{Producers: []string{producer}, Senders: []string{from}})
	if err != nil {
		return "", "", fmt.Errorf("read approved senders: %w", err)
	}
	if len(rows) == 0 {
		return heraldtype.CodeSenderNotApproved, fmt.Sprintf("sender %q is not approved for producer %s", from, producer), nil
	}
	return "", "", nil
}
