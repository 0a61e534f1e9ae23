package operator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// Sender is one sender approved for a producer (herald.sender_ids): the
// from_sender its intents may name.
type Sender struct {
	Producer   string    `json:"producer"`
	Sender     string    `json:"sender"`
	Note       string    `json:"note"`
	ApprovedAt time.Time `json:"approved_at"`
	ApprovedBy string    `json:"approved_by"`
}

// SenderChange is what ApproveSender or RevokeSender did: Changed is false
// when the sender was already approved (approve) or was not (revoke), and
// then no audit row was written.
type SenderChange struct {
	Producer string `json:"producer"`
	Sender   string `json:"sender"`
	Action   string `json:"action"`
	Changed  bool   `json:"changed"`
}

// ParseSender returns s if it is a sender intents may name: 1 to 11
// letters and digits, or 1 to 15 digits, "+" first for an international
// number (intake.SenderKindOf), so that a mistyped sender is a usage
// error, not an approval no intent can use.
func ParseSender(s string) (string, error) {
	if _, why := intake.SenderKindOf(s); why != "" {
		return "", fmt.Errorf("invalid sender %s: %s", QuoteArg(s), why)
	}
	return s, nil
}

// ParseProducer returns s if it is a producer name intents may carry.
func ParseProducer(s string) (string, error) {
	if !intake.ValidProducer(s) || strings.TrimSpace(s) != s {
		return "", fmt.Errorf("invalid producer %s: want 1 to 128 letters, digits or . _ : -", QuoteArg(s))
	}
	return s, nil
}

// Senders lists the approved senders the login may read, of producer or
// ("") of every producer, by producer and sender.
func (o *Operator) Senders(ctx context.Context, producer string) ([]Sender, error) {
	rows, err := o.q.SenderIDList(ctx, o.pool, producer)
	if err != nil {
		return nil, fmt.Errorf("list senders: %w", err)
	}
	out := make([]Sender, len(rows))
	for i, r := range rows {
		out[i] = Sender{Producer: r.Producer, Sender: r.Sender, Note: r.Note, ApprovedAt: r.ApprovedAt, ApprovedBy: r.ApprovedBy}
	}
	return out, nil
}

// ApproveSender approves sender for producer's intents, with note, and
// writes an audit row naming actor (herald.sender_id_approve, which only
// operators may execute).
func (o *Operator) ApproveSender(ctx context.Context, producer, sender, actor, note string) (*SenderChange, error) {
	ok, err := o.q.SenderIDApprove(ctx, o.pool, store.SenderIDApproveParams{Producer: producer, Sender: sender, Actor: actor, Note: note})
	if err != nil {
		return nil, fmt.Errorf("approve sender: %w", err)
	}
	return &SenderChange{Producer: producer, Sender: sender, Action: "approve", Changed: ok}, nil
}

// RevokeSender withdraws the approval of sender for producer, with
// reason, and writes an audit row naming actor (herald.sender_id_revoke):
// intents naming it are refused from then on.
func (o *Operator) RevokeSender(ctx context.Context, producer, sender, actor, reason string) (*SenderChange, error) {
	ok, err := o.q.SenderIDRevoke(ctx, o.pool, store.SenderIDRevokeParams{Producer: producer, Sender: sender, Actor: actor, Reason: reason})
	if err != nil {
		return nil, fmt.Errorf("revoke sender: %w", err)
	}
	return &SenderChange{Producer: producer, Sender: sender, Action: "revoke", Changed: ok}, nil
}
