package heraldtype

// Recipient is one user's entry in the recipient directory
// (herald.recipients), which routes addressed to a user id resolve through
// at delivery time. Empty addresses mean the user has none for that
// channel (the route is skipped).
type Recipient struct {
	// UserID is the id intents name in Audience.UserIDs. Required.
	UserID string
	// Email is an RFC 5322 address.
	Email string
	// Phone is an international number with a leading "+"; stored in E.164.
	Phone string
	// WebhookURL is an absolute http or https URL.
	WebhookURL string
	// Locale is a language tag such as "pt-BR".
	Locale string
	// OptedOut lists the channels, by name, the user opted out of; their
	// routes are skipped.
	OptedOut []string
}
