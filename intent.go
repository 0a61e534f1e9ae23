package herald

import (
	"encoding/json"
	"time"

	"github.com/heraldhq/herald/internal/intake"
)

// Intent is one request to notify an audience: the Go door's form of the
// JSON object a producer INSERTs into herald.intake (the JSON tags are the
// same, so json.Marshal of an Intent is a valid intake entry). See the
// package documentation for every field's rules.
type Intent struct {
	// NotificationType names what happened, e.g. "order.shipped". Required;
	// at most 128 characters of letters, digits and . _ : -.
	NotificationType string `json:"notification_type"`
	// Producer names the submitting service; idempotency keys are scoped by
	// it. Required; same rules as NotificationType.
	Producer string `json:"producer"`
	// IdempotencyKey makes the submit safe to retry: within the idempotency
	// window the same (Producer, IdempotencyKey) stores one notification.
	// Required; at most 255 printable characters.
	IdempotencyKey string `json:"idempotency_key"`
	// Audience says who to notify. At least one recipient is required.
	Audience Audience `json:"audience"`
	// Channels lists the channels to use: "sms", "email", "webhook". Every
	// user in Audience.UserIDs gets one route per channel; direct addresses
	// must belong to a listed channel. Required.
	Channels []string `json:"channels"`
	// Content holds what to send, one entry per listed channel.
	Content Content `json:"content"`
	// OccurredAt is when the event happened; zero means the acceptance time.
	OccurredAt time.Time `json:"occurred_at,omitzero"`
	// SendAt schedules delivery; zero means now. At most 90 days ahead by
	// default (Limits.MaxScheduleAhead).
	SendAt time.Time `json:"send_at,omitzero"`
	// ExpiresAt is when undelivered routes stop being worth attempting (an
	// OTP stale after 10 minutes); zero means never. It must be after now
	// and after SendAt.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Priority is PriorityTransactional (the default, claimed first) or
	// PriorityBulk.
	Priority string `json:"priority,omitempty"`
	// MaxAttempts overrides the channel's attempt budget (1..100); 0 means
	// the channel's default, resolved at delivery time.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// RequestID continues the producer's request id (at most 128
	// characters). It is stored, not part of the fingerprint.
	RequestID string `json:"request_id,omitempty"`
	// TraceID continues the producer's trace id (at most 128 characters).
	// It is stored, not part of the fingerprint.
	TraceID string `json:"trace_id,omitempty"`
}

// Audience is who an intent is for: user ids resolved at delivery through
// the recipient directory (see Client.UpsertRecipient), and/or direct
// addresses per channel.
type Audience struct {
	// UserIDs are directory user ids; each gets one route per channel.
	UserIDs []string `json:"user_ids,omitempty"`
	// SMS are phone numbers in international form with a leading "+";
	// stored in E.164.
	SMS []string `json:"sms,omitempty"`
	// Email are RFC 5322 addresses; stored as bare addr-specs.
	Email []string `json:"email,omitempty"`
	// Webhook are absolute http or https URLs without userinfo.
	Webhook []string `json:"webhook,omitempty"`
}

// Content is what an intent sends, per channel. Each listed channel needs
// its content, and no content may be given for an unlisted channel.
type Content struct {
	// SMS is the SMS text.
	SMS *SMSContent `json:"sms,omitempty"`
	// Email is the e-mail's subject and bodies.
	Email *EmailContent `json:"email,omitempty"`
	// Webhook is the JSON body POSTed to each webhook, any JSON value.
	Webhook json.RawMessage `json:"webhook,omitempty"`
}

// SMSContent is an SMS body. It may need at most Limits.MaxSMSSegments
// segments (10 by default) in GSM-7, or in UCS-2 if it holds a character
// GSM-7 lacks.
type SMSContent struct {
	Body string `json:"body"`
}

// EmailContent is an e-mail's subject and bodies; at least one of Text and
// HTML is required.
type EmailContent struct {
	// Subject is one line of at most 998 characters.
	Subject string `json:"subject"`
	// Text is the text/plain body.
	Text string `json:"text,omitempty"`
	// HTML is the text/html body.
	HTML string `json:"html,omitempty"`
}

// Priorities of an intent.
const (
	// PriorityTransactional routes are claimed before bulk ones: OTPs,
	// receipts, alerts. It is the default.
	PriorityTransactional = intake.PriorityTransactional
	// PriorityBulk routes wait for transactional ones: newsletters, digests.
	PriorityBulk = intake.PriorityBulk
)

// toInternal converts in to the validator's intent. Slices are shared, not
// copied: the validator never modifies its input.
func (in *Intent) toInternal() *intake.Intent {
	if in == nil {
		return nil
	}
	out := &intake.Intent{
		NotificationType: in.NotificationType,
		Producer:         in.Producer,
		IdempotencyKey:   in.IdempotencyKey,
		Audience: intake.Audience{
			UserIDs: in.Audience.UserIDs,
			SMS:     in.Audience.SMS,
			Email:   in.Audience.Email,
			Webhook: in.Audience.Webhook,
		},
		Channels:    in.Channels,
		Content:     intake.Content{Webhook: in.Content.Webhook},
		OccurredAt:  in.OccurredAt,
		SendAt:      in.SendAt,
		ExpiresAt:   in.ExpiresAt,
		Priority:    in.Priority,
		MaxAttempts: in.MaxAttempts,
		RequestID:   in.RequestID,
		TraceID:     in.TraceID,
	}
	if in.Content.SMS != nil {
		out.Content.SMS = &intake.SMSContent{Body: in.Content.SMS.Body}
	}
	if e := in.Content.Email; e != nil {
		out.Content.Email = &intake.EmailContent{Subject: e.Subject, Text: e.Text, HTML: e.HTML}
	}
	return out
}
