// Package intake is the first step of herald's data flow: it checks an
// intent and plans it, touching no database. DecodeRaw reads a raw entry
// of the SQL intake (herald.intake) into an Intent. Validate refuses a bad
// intent with every field error it finds, each with a stable failure code,
// or returns it normalized (names trimmed, phone numbers in E.164, e-mail
// domains lower-cased, duplicate recipients dropped), with its canonical
// content JSON, its request fingerprint and one route plan per (delivery
// channel, recipient), SMS segments counted.
//
// Both doors use it: the Go client at the module root and the intake
// worker of package accept, which then store what it validated through
// accept.Accept. Canonical JSON and the fingerprint's encoding are package
// canonjson's.
package intake

import (
	"encoding/json"
	"time"
)

// Intent is one request to notify an audience. Its JSON form is what a
// producer INSERTs into herald.intake; the Go client converts its public
// Intent into this one.
type Intent struct {
	// NotificationType names what happened, e.g. "order.shipped". Required.
	NotificationType string `json:"notification_type"`
	// Producer names the submitting service; idempotency keys are scoped by
	// it. Required.
	Producer string `json:"producer"`
	// IdempotencyKey makes the submit safe to retry. Required.
	IdempotencyKey string `json:"idempotency_key"`
	// Audience says who to notify.
	Audience Audience `json:"audience"`
	// Channels lists the channels to use: "sms", "email", "webhook". Every
	// user in Audience.UserIDs gets one route per channel; direct addresses
	// must belong to a listed channel. Required.
	Channels []string `json:"channels"`
	// Content holds what to send, one entry per listed channel.
	Content Content `json:"content"`
	// OccurredAt is when the event happened; defaults to acceptance time.
	OccurredAt time.Time `json:"occurred_at,omitzero"`
	// SendAt schedules delivery; zero means now.
	SendAt time.Time `json:"send_at,omitzero"`
	// ExpiresAt is when undelivered routes stop being worth attempting (an
	// OTP stale after 10 minutes); zero means never.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Priority is "transactional" (default, claimed first) or "bulk".
	Priority string `json:"priority,omitempty"`
	// MaxAttempts overrides the channel's attempt budget; 0 means the
	// channel's default.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// RequestID and TraceID continue the producer's identifiers.
	RequestID string `json:"request_id,omitempty"`
	TraceID   string `json:"trace_id,omitempty"`
}

// Audience is who an intent is for: user ids resolved at delivery through
// herald.recipients, and/or direct addresses per channel.
type Audience struct {
	UserIDs []string `json:"user_ids,omitempty"`
	SMS     []string `json:"sms,omitempty"`
	Email   []string `json:"email,omitempty"`
	Webhook []string `json:"webhook,omitempty"`
}

// Content is what an intent sends, per channel.
type Content struct {
	SMS     *SMSContent     `json:"sms,omitempty"`
	Email   *EmailContent   `json:"email,omitempty"`
	Webhook json.RawMessage `json:"webhook,omitempty"`
}

// SMSContent is an SMS body.
type SMSContent struct {
	Body string `json:"body"`
}

// EmailContent is an e-mail's subject and bodies; at least one of Text and
// HTML is required.
type EmailContent struct {
	Subject string `json:"subject"`
	Text    string `json:"text,omitempty"`
	HTML    string `json:"html,omitempty"`
}

// Priorities, as stored in routes.priority: lower is claimed first.
const (
	PriorityTransactional = "transactional"
	PriorityBulk          = "bulk"
)
