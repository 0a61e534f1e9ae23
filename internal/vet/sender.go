package vet

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// senderRefusal returns why the sms content of payload, stored by a
// producer's login past the accept path, names a sender the drivers must
// not send (one of another form than intake's, or not approved for
// producer), or "" when it names none or an approved one. Only an sms
// route whose content names a sender pays the lookup.
func senderRefusal(ctx context.Context, tx pgx.Tx, producer, payload string) (heraldtype.Code, string, error) {
	var pl struct {
		SMS *struct {
			From *string `json:"from"`
		} `json:"sms"`
	}
	if json.Unmarshal([]byte(payload), &pl) != nil || pl.SMS == nil || pl.SMS.From == nil {
		return "", "", nil
	}
	from := *pl.SMS.From
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
