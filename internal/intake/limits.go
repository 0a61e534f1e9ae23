package intake

import "time"

// Default limits, used for the zero fields of a Limits.
const (
	// DefaultMaxPayloadBytes is the default Limits.MaxPayloadBytes: 64 KiB.
	DefaultMaxPayloadBytes = 64 << 10
	// DefaultMaxEntryBytes is the default Limits.MaxEntryBytes: 256 KiB.
	DefaultMaxEntryBytes = 256 << 10
	// DefaultMaxSMSSegments is the default Limits.MaxSMSSegments: 10.
	DefaultMaxSMSSegments = 10
	// DefaultMaxScheduleAhead is the default Limits.MaxScheduleAhead: 90 days.
	DefaultMaxScheduleAhead = 90 * 24 * time.Hour
	// DefaultMaxRoutes is the default Limits.MaxRoutes: 1000.
	DefaultMaxRoutes = 1000
)

// Field length limits, in characters (runes) unless noted.
const (
	maxNameLen           = 128  // notification_type, producer
	maxIdempotencyKeyLen = 255  // idempotency_key
	maxTraceLen          = 128  // request_id, trace_id
	maxUserIDLen         = 255  // audience.user_ids[i]
	maxURLLen            = 2048 // audience.webhook[i]
	maxEmailLen          = 254  // audience.email[i], bytes (RFC 5321 path limit)
	maxSubjectLen        = 998  // content.email.subject (RFC 5322 line limit)
	maxMaxAttempts       = 100  // max_attempts
)

// Limits bounds what an intent may carry. Zero (or negative) fields take
// the defaults; see WithDefaults.
type Limits struct {
	// MaxPayloadBytes caps the canonical content JSON (records.payload_json).
	// Default 64 KiB.
	MaxPayloadBytes int
	// MaxEntryBytes caps one raw intake entry. Default 256 KiB.
	MaxEntryBytes int
	// MaxSMSSegments caps the segments an SMS body may need. Default 10.
	MaxSMSSegments int
	// MaxScheduleAhead caps how far ahead send_at may be. Default 90 days.
	MaxScheduleAhead time.Duration
	// MaxRoutes caps the routes one intent may fan out to. Default 1000.
	MaxRoutes int
}

// WithDefaults returns l with every zero or negative field replaced by its
// default.
func (l Limits) WithDefaults() Limits {
	pos := func(v, def int) int {
		if v <= 0 {
			return def
		}
		return v
	}
	l.MaxPayloadBytes = pos(l.MaxPayloadBytes, DefaultMaxPayloadBytes)
	l.MaxEntryBytes = pos(l.MaxEntryBytes, DefaultMaxEntryBytes)
	l.MaxSMSSegments = pos(l.MaxSMSSegments, DefaultMaxSMSSegments)
	l.MaxRoutes = pos(l.MaxRoutes, DefaultMaxRoutes)
	if l.MaxScheduleAhead <= 0 {
		l.MaxScheduleAhead = DefaultMaxScheduleAhead
	}
	return l
}
