package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/harness/smsctest"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/store"
)

// DemoSender is the sender an operator approves for ContentProducer in
// the demo, and DemoUnapprovedSender one nobody approved.
const (
	DemoSender           = "HERALDSHOP"
	DemoUnapprovedSender = "ROGUE"
)

// SendersPart is the demo's approved sender and flash SMS: an operator
// approves a sender, an SMS naming it goes over SMPP showing it, a flash
// SMS carries message class 0, and an unapproved sender is refused.
type SendersPart struct {
	Sender string `json:"sender"`
	// ApprovedBy is the operator's actor in the audit row.
	ApprovedBy string `json:"approved_by"`
	// SMS and Flash are what the SMSC saw of the two messages.
	SMS   *SeenAtSMSC `json:"sms"`
	Flash *SeenAtSMSC `json:"flash"`
	// Refused is the unapproved sender's refusal, and RefusedCode its code.
	Refused     string `json:"refused"`
	RefusedCode string `json:"refused_code"`
}

// SeenAtSMSC is one message as the SMSC received it.
type SeenAtSMSC struct {
	SourceAddr string `json:"source_addr"`
	SourceTON  uint8  `json:"source_ton"`
	SourceNPI  uint8  `json:"source_npi"`
	DataCoding uint8  `json:"data_coding"`
}

// runSenders approves DemoSender for ContentProducer as an operator
// (audited), submits an SMS and a flash SMS naming it to the SMSC's
// prefix and one naming DemoUnapprovedSender through client, and reads
// what the SMSC saw.
func runSenders(ctx context.Context, pool *pgxpool.Pool, client Client, smsc *smsctest.Server, runID string, timeout time.Duration) (*SendersPart, error) {
	p := &SendersPart{Sender: DemoSender, ApprovedBy: "demo-operator"}
	op, err := operator.New(pool, nil)
	if err != nil {
		return nil, err
	}
	if _, err := op.ApproveSender(ctx, ContentProducer, DemoSender, p.ApprovedBy, "the demo's shop name"); err != nil {
		return nil, err
	}
	mk := func(key, body, sender string, mt heraldtype.MessageType) *intake.Intent {
		return &intake.Intent{
			NotificationType: "otp", Producer: ContentProducer, IdempotencyKey: runID + ":" + key, RequestID: runID + ":senders",
			Audience: intake.Audience{SMS: []string{SMSCPrefix + "7911123457"}}, Channels: []string{channel.SMS},
			Content:    intake.Content{SMS: &intake.SMSContent{Body: body + " (" + runID + ")"}},
			FromSender: sender, MessageType: mt,
		}
	}
	res, err := client.SubmitMany(ctx, []*intake.Intent{
		mk("sender-sms", "Your order shipped", DemoSender, ""),
		mk("sender-flash", "Your code is 4242", DemoSender, heraldtype.MessageTypeFlashSMS),
		mk("sender-rogue", "Your prize awaits", DemoUnapprovedSender, ""),
	})
	if err != nil {
		return nil, fmt.Errorf("submit the intents with senders: %w", err)
	}
	for _, r := range res[:2] {
		if r.Err != nil {
			return nil, fmt.Errorf("submit an intent with an approved sender: %w", r.Err)
		}
	}
	var ve *heraldtype.ValidationError
	if !errors.As(res[2].Err, &ve) {
		return nil, fmt.Errorf("the intent with an unapproved sender was not refused (%v)", res[2].Err)
	}
	p.Refused, p.RefusedCode = ve.Errors[0].Message, string(ve.Code())

	// Until the SMSC has both and their receipts are matched (a delivery
	// status on each route), as the summary's receipts count them.
	deadline := time.Now().Add(timeout)
	for {
		settled := true
		for _, r := range res[:2] {
			routes, err := store.New().RouteListByNotification(ctx, pool, r.NotificationID)
			if err != nil {
				return nil, fmt.Errorf("read a route with a sender: %w", err)
			}
			settled = settled && len(routes) == 1 && routes[0].DeliveryStatus != nil
		}
		for _, m := range smsc.Messages() {
			seen := &SeenAtSMSC{SourceAddr: m.Source, SourceTON: m.SourceTON, SourceNPI: m.SourceNPI, DataCoding: m.DataCoding}
			switch m.Body {
			case "Your order shipped (" + runID + ")":
				p.SMS = seen
			case "Your code is 4242 (" + runID + ")":
				p.Flash = seen
			}
		}
		if settled && p.SMS != nil && p.Flash != nil {
			return p, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the messages with a sender were not delivered and receipted within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// writeSenders prints the senders' line of the summary.
func writeSenders(out io.Writer, p *SendersPart) {
	fmt.Fprintf(out, "\nsenders: %s approved %s (audited); the SMSC saw source_addr %s (TON %d, NPI %d), and for the FLASH_SMS data_coding 0x%02x; sender %s refused: %s\n",
		p.ApprovedBy, p.Sender, p.SMS.SourceAddr, p.SMS.SourceTON, p.SMS.SourceNPI, p.Flash.DataCoding, DemoUnapprovedSender, p.RefusedCode)
}
