package accept

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// checkSenders refuses, among valid (items[index[j]] each), the intents
// whose from_sender is not approved for their producer
// (herald.sender_ids), with CodeSenderNotApproved, and returns the rest;
// results gets the refused ones'. A batch without a sender costs nothing;
// one with senders costs one lookup, through db, so that row-level
// security shows a producer's login only its own senders, as it should.
func (p *Pipeline) checkSenders(ctx context.Context, db store.DBTX, valid []*intake.Validated, index []int,
	results []Result) ([]*intake.Validated, []int, error) {
	var want store.SenderIDApprovedParams
	for _, v := range valid {
		if s := v.Intent.FromSender; s != "" {
			want.Producers = append(want.Producers, v.Intent.Producer)
			want.Senders = append(want.Senders, s)
		}
	}
	if len(want.Senders) == 0 {
		return valid, index, nil
	}
	rows, err := store.New().SenderIDApproved(ctx, db, want)
	if err != nil {
		return nil, nil, fmt.Errorf("read approved senders: %w", err)
	}
	type pair struct{ producer, sender string }
	approved := make(map[pair]bool, len(rows))
	for _, r := range rows {
		approved[pair{r.Producer, r.Sender}] = true
	}
	kept, keptIndex := refuseEach(valid, index, results, func(v *intake.Validated) *heraldtype.FieldError {
		in := &v.Intent
		if in.FromSender == "" || approved[pair{in.Producer, in.FromSender}] {
			return nil
		}
		return &heraldtype.FieldError{Field: "from_sender", Code: heraldtype.CodeSenderNotApproved,
			Message: fmt.Sprintf("sender %q is not approved for producer %s: an operator approves it with `herald senders approve %s %s`",
				in.FromSender, in.Producer, in.Producer, in.FromSender)}
	})
	return kept, keptIndex, nil
}
