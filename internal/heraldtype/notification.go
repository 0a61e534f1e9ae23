package heraldtype

import "time"

// Notification is an accepted intent with the state of each of its routes,
// as the Go client's Get and the HTTP API's GET return it.
type Notification struct {
	// ID is the notification id.
	ID string
	// Type, Producer and IdempotencyKey are the intent's, normalized.
	Type           string
	Producer       string
	IdempotencyKey string
	// AudienceKind is "users", "addresses" or "mixed".
	AudienceKind string
	// UserIDs are the audience's directory user ids.
	UserIDs []string
	// Channels are the intent's channels.
	Channels []string
	// Priority is PriorityTransactional or PriorityBulk.
	Priority Priority
	// Content is the intent's content as it was stored: normalized, its
	// webhook body in canonical JSON. Empty for a templated notification.
	Content Content
	// Template is a templated notification's template, its Version the one
	// it was accepted with (and is rendered with), and Data its data; nil
	// for a notification with content. The locale each route was rendered
	// in is routes.resolved_locale.
	Template *TemplateRef
	Data     map[string]any
	// RequestID and TraceID are the producer's identifiers.
	RequestID string
	TraceID   string
	// OccurredAt, AcceptedAt: when the event happened and was accepted.
	OccurredAt time.Time
	AcceptedAt time.Time
	// SendAt and ExpiresAt are the schedule; nil when not set.
	SendAt    *time.Time
	ExpiresAt *time.Time
	// IdempotencyExpiresAt is when the idempotency key stops being
	// reserved.
	IdempotencyExpiresAt time.Time
	// Routes are the notification's routes, sorted by id.
	Routes []Route

	// Campaign is the producer's campaign the intent joined; "" for none.
	Campaign string

	// Metadata is the intent's metadata; nil when it carried none.
	Metadata map[string]string
}

// Route is one (channel, recipient) delivery of a notification.
type Route struct {
	// ID is "<channel>:<12 hex digits>", deterministic for the recipient.
	ID string
	// Channel is ChannelSMS, ChannelEmail or ChannelWebhook.
	Channel Channel
	// RecipientRef is "user:<id>" for a directory user, else the address.
	RecipientRef string
	// Status is one of the RouteStatus constants.
	Status RouteStatus
	// Attempts is the number of delivery attempts made so far.
	Attempts int
	// MaxAttempts is the attempt budget; 0 means the channel's default.
	MaxAttempts int
	// NextAttemptAt is when the route is next due (or its lease ends); nil
	// for a terminal route.
	NextAttemptAt *time.Time
	// LastErrorClass ("transient", "permanent", ...) and LastError describe
	// the last failed attempt; empty if none failed.
	LastErrorClass string
	LastError      string
	// LastErrorAt is when the last attempt failed; nil if none did.
	LastErrorAt *time.Time
	// SMSEncoding ("gsm7" or "ucs2") and SMSSegments describe an SMS body.
	SMSEncoding string
	SMSSegments int
	// ProviderMessageID is what the channel's provider called the delivery.
	ProviderMessageID string
	// Providers are the providers that took the route's attempts, in order
	// ("sms/acme", "sms/backup" after a failover), across replays too.
	// Empty on a channel delivered by serve's configured driver, which has
	// no providers, and before the first attempt.
	Providers []string
	// DeliveryStatus is what the provider's delivery receipt said after
	// publication: "delivered", "undelivered", "expired" or "unknown"; ""
	// while no receipt has come (or the provider sends none).
	// DeliveryStatusAt is when it was recorded, and DeliveryError the
	// provider's error code for an undelivered message.
	DeliveryStatus   string
	DeliveryStatusAt *time.Time
	DeliveryError    string
	// CreatedAt and UpdatedAt are the row's times; the others are set when
	// the route reached that state, else nil.
	CreatedAt      time.Time
	UpdatedAt      time.Time
	PublishedAt    *time.Time
	DeadLetteredAt *time.Time
	SkippedAt      *time.Time
	CanceledAt     *time.Time
	// ExpiresAt is when the route stops being attempted; nil for never.
	ExpiresAt *time.Time
}

// Provider returns the provider that took the route's last attempt: the
// one that published it, dead-lettered it, or failed it last. It returns ""
// when Providers is empty.
func (r Route) Provider() string {
	if len(r.Providers) == 0 {
		return ""
	}
	return r.Providers[len(r.Providers)-1]
}
