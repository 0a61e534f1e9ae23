package herald

import "github.com/heraldhq/herald/internal/heraldtype"

// Intent is one request to notify an audience: the Go door's form of the
// JSON object a producer INSERTs into herald.intake (the JSON tags are the
// same, so json.Marshal of an Intent is a valid intake entry). Its fields
// are NotificationType, Producer, IdempotencyKey, Audience, Channels,
// Content, OccurredAt, SendAt, ExpiresAt, Priority, MaxAttempts, RequestID,
// TraceID, CallbackURL, FromSender, MessageType, and Template and Data (instead of Content); the
// package documentation's section "The intent" gives each
// one's JSON name and rules, and `go doc
// github.com/heraldhq/herald/internal/heraldtype.Intent` its Go type.
type Intent = heraldtype.Intent

// Audience is who an intent is for: UserIDs, resolved at delivery through
// the recipient directory (see Client.UpsertRecipient), and/or direct
// addresses per channel in SMS, Email and Webhook; see "The intent" in the
// package documentation.
type Audience = heraldtype.Audience

// Content is what an intent sends, per channel: SMS (*SMSContent), Email
// (*EmailContent) and Webhook (a json.RawMessage, POSTed as the body). Each
// listed channel needs its content, and no content may be given for an
// unlisted channel.
type Content = heraldtype.Content

// SMSContent is an SMS body, its field Body; see "The intent" in the
// package documentation for its limits.
type SMSContent = heraldtype.SMSContent

// EmailContent is an e-mail's Subject and its bodies, Text (text/plain)
// and HTML (text/html), of which at least one is required.
type EmailContent = heraldtype.EmailContent

// TemplateRef names a stored template to render instead of Content, by
// Name, optionally a Version (0: the current one) and the Locale of routes
// to direct addresses; see "Templates" in the package documentation.
type TemplateRef = heraldtype.TemplateRef
