// Package heraldtype is herald's vocabulary: the types and constants that
// the Go client (the module's root package) and the engine's internal
// packages share, as River's rivertype is River's. It holds the intent a
// producer submits, the recipient directory's entry, the validation errors
// and their failure codes, and the typed names of priorities, delivery
// channels and route states.
//
// It is a leaf: it imports only the standard library, so that every
// package of the module can import it without a cycle. Users never name it:
// the root package re-exports each type by alias (herald.Intent is
// heraldtype.Intent). Its constants are written here once: go generate
// copies them, values spelled out for go doc, into the root package's
// vocabulary.go, and a test fails when that file is stale.
package heraldtype

//go:generate go test -run TestVocabulary_RootIsGenerated -update .

import (
	"encoding/json"
	"time"
)

// Intent is one request to notify an audience: the Go door's form of the
// JSON object a producer INSERTs into herald.intake (the JSON tags are that
// object's keys, so json.Marshal of an Intent is a valid intake entry).
// The herald package's documentation, section "The intent", gives every
// field's rules.
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
	// Channels lists the delivery channels to use, by name: "sms", "email",
	// "webhook" (the values of ChannelSMS, ChannelEmail and ChannelWebhook).
	// Every user in Audience.UserIDs gets one route per channel; direct
	// addresses must belong to a listed channel. Required.
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
	Priority Priority `json:"priority,omitempty"`
	// MaxAttempts overrides the channel's attempt budget (1..100); 0 means
	// the channel's default, resolved at delivery time.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// RequestID continues the producer's request id (at most 128
	// characters). It is stored, not part of the fingerprint.
	RequestID string `json:"request_id,omitempty"`
	// TraceID continues the producer's trace id (at most 128 characters).
	// It is stored, not part of the fingerprint.
	TraceID string `json:"trace_id,omitempty"`
	// CallbackURL, if set, is where herald posts this notification's
	// status callbacks (one per route and event) instead of the producer's
	// subscription URL; they are signed with the subscription's secret or
	// token, so a producer without a subscription is refused at submit
	// (CodeCallbackURLNeedsSubscription). An absolute http
	// or https URL without userinfo, at most 2048 characters, as a webhook
	// address. It is stored, not part of the fingerprint.
	CallbackURL string `json:"callback_url,omitempty"`

	// SMS sender and message type.

	// FromSender is the sender the SMS routes show (their originator),
	// instead of the provider's default: an alphanumeric sender of 1 to 11
	// letters and digits (GSM 03.40), or a number of 1 to 15 digits,
	// international with a leading "+". It must be a sender an operator
	// approved for the producer (herald.sender_ids), or the intent is
	// refused with CodeSenderNotApproved. Only for an intent listing sms.
	// Empty means the provider's default. Part of the fingerprint when set.
	FromSender string `json:"from_sender,omitempty"`
	// MessageType is MessageTypeSMS ("SMS", the default) or
	// MessageTypeFlashSMS ("FLASH_SMS": shown at once and not stored by
	// the handset, SMS message class 0). Only for an intent listing sms.
	// Part of the fingerprint when it is FLASH_SMS.
	MessageType MessageType `json:"message_type,omitempty"`

	// Campaigns.

	// Campaign groups the intent with the producer's other intents under
	// one campaign id, so that they are scheduled, shown and canceled as
	// one (Client.CancelCampaign, `herald campaigns`). Every intent of a
	// campaign must carry the campaign's SendAt, the one its first intent
	// gave; an intent of a canceled campaign is refused
	// (CodeCampaignCanceled). Empty means none. At most 128 characters of
	// letters, digits and . _ : -. It is stored, not part of the
	// fingerprint.
	Campaign string `json:"campaign,omitempty"`

	// Templates. An intent gives either Content or a Template
	// with its Data, never both.

	// Template names a stored template (herald.templates) of the intent's
	// producer to render instead of Content: at delivery, in each
	// recipient's locale, with Data. Its version is fixed at acceptance.
	Template *TemplateRef `json:"template,omitempty"`
	// Data are the values the template's variables take: a JSON object,
	// values only (strings, numbers, booleans, arrays, objects). Every
	// variable the template uses must be present, or the intent is refused
	// with missing_field. It is part of the fingerprint.
	Data map[string]any `json:"data,omitempty"`

	// Metadata.

	// Metadata is the producer's own string-to-string map (an order id, a
	// tenant), stored with the notification, returned by Get and in every
	// status callback of its routes; herald never reads it. At most 32
	// keys, each 1 to 64 characters of letters, digits and . _ : -; values
	// valid UTF-8 without U+0000, at most 512 bytes each, and 4 KiB for
	// the whole map as JSON. Nil or empty means none. It is part of the
	// fingerprint when present.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// MessageType is an SMS intent's message type: Intent.MessageType.
type MessageType string

// Message types.
const (
	// MessageTypeSMS is a normal SMS, the default.
	MessageTypeSMS MessageType = "SMS"
	// MessageTypeFlashSMS is a flash SMS (message class 0): the handset
	// shows it at once and does not store it.
	MessageTypeFlashSMS MessageType = "FLASH_SMS"
)

// TemplateRef names a template: Intent.Template.
type TemplateRef struct {
	// Name is the template's name in its producer's templates. Required.
	Name string `json:"name"`
	// Version pins a version; 0 means the current one (the highest
	// published when the intent is accepted).
	Version int `json:"version,omitempty"`
	// Locale is the locale of routes to direct addresses, which have no
	// directory entry to give one; "" means the template's default. Routes
	// to user ids use the user's locale from the directory.
	Locale string `json:"locale,omitempty"`
}

// Audience is who an intent is for: user ids resolved at delivery through
// the recipient directory (herald.recipients), and/or direct addresses per
// channel.
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
	// Body is the text sent.
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

// Priority is an intent's priority: which of its routes dispatchers claim
// first.
type Priority string

// Priorities of an intent. The empty Priority is PriorityTransactional.
const (
	// PriorityTransactional routes are claimed before bulk ones: OTPs,
	// receipts, alerts. It is the default.
	PriorityTransactional Priority = "transactional"
	// PriorityBulk routes wait for transactional ones: newsletters, digests.
	PriorityBulk Priority = "bulk"
)

// Number returns the routes.priority (and records.priority) value of p: 0
// for PriorityTransactional or the empty Priority, 1 for PriorityBulk. ok
// is false for any other name, whose number is 0.
func (p Priority) Number() (n int16, ok bool) {
	switch p {
	case "", PriorityTransactional:
		return 0, true
	case PriorityBulk:
		return 1, true
	}
	return 0, false
}

// PriorityOf returns the Priority whose Number is n: PriorityBulk for 1,
// PriorityTransactional for any other value.
func PriorityOf(n int16) Priority {
	if n == 1 {
		return PriorityBulk
	}
	return PriorityTransactional
}

// Channel names a delivery channel: how a route reaches its recipient.
// Intent.Channels lists channels by these names, as strings.
type Channel string

// Delivery channels, the only ones Intent.Channels may list.
const (
	// ChannelSMS delivers an SMS to a phone number.
	ChannelSMS Channel = "sms"
	// ChannelEmail delivers an e-mail to an address.
	ChannelEmail Channel = "email"
	// ChannelWebhook POSTs the webhook content to a URL.
	ChannelWebhook Channel = "webhook"
)
