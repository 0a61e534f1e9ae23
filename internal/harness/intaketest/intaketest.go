// Package intaketest holds the fixtures that the tests of package intake
// and of package accept (whose worker drains the SQL intake) share: a
// valid raw entry, the fuzz seeds with the failure code each must produce,
// the limits they are written for, and the clock they are validated at. It
// imports nothing of herald's, so that intake's own tests can import it;
// failure codes are spelled out, and intake's tests check each seed's.
package intaketest

import (
	"encoding/json"
	"strings"
	"time"
)

// Now is the validation clock of the tests.
var Now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// ValidEntry is a raw intake entry that passes validation: one user and
// one direct address on each of the three channels. It is the JSON form
// of the valid intent of intake's tests.
const ValidEntry = `{
  "notification_type": "order.shipped",
  "producer": "shop",
  "idempotency_key": "order-9-shipped",
  "audience": {
    "user_ids": ["42"],
    "sms": ["+14155550123"],
    "email": ["ops@example.com"],
    "webhook": ["https://hooks.example.com/orders"]
  },
  "channels": ["sms", "email", "webhook"],
  "content": {
    "sms": {"body": "Order 9 shipped"},
    "email": {"subject": "Order 9 shipped", "text": "It is on its way."},
    "webhook": {"order":9}
  }
}`

// Limits are tighter than the defaults so that small seeds reach every
// limit. The struct has intake.Limits's fields, so intake.Limits(Limits)
// converts it (and stops compiling if the two drift apart).
var Limits = struct {
	MaxPayloadBytes  int
	MaxEntryBytes    int
	MaxSMSSegments   int
	MaxScheduleAhead time.Duration
	MaxRoutes        int
}{
	MaxPayloadBytes:  512,
	MaxEntryBytes:    4096,
	MaxSMSSegments:   2,
	MaxScheduleAhead: 24 * time.Hour,
	MaxRoutes:        8,
}

// Seed is one fuzz seed: an f.Add input and the failure code it must
// produce.
type Seed struct {
	Name string
	// Want is the failure code the entry must produce; "" if it must be
	// accepted.
	Want string
	Body string
}

// EntryWith returns ValidEntry decoded, changed by mod and encoded again.
func EntryWith(mod func(m map[string]any)) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(ValidEntry), &m); err != nil {
		panic(err)
	}
	mod(m)
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// sub returns m[key] as an object.
func sub(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

// Seeds covers every failure code that validation returns (not
// idempotency_conflict, rejected_by_database, producer_mismatch and
// campaign_canceled, which only the accept path and the intake worker
// return), plus accepted
// entries and inputs that stress intake.RawFields. The entries are written
// for Limits, at Now.
func Seeds() []Seed {
	return []Seed{
		{"Valid", "", ValidEntry},
		{"ValidWithEveryField", "", EntryWith(func(m map[string]any) {
			m["occurred_at"] = "2026-03-01T11:59:00.5+01:00"
			m["send_at"] = "2026-03-01T13:00:00Z"
			m["expires_at"] = "2026-03-01T14:00:00Z"
			m["priority"] = "bulk"
			m["max_attempts"] = 5
			m["request_id"] = "req-1"
			m["trace_id"] = "trace-1"
			m["campaign"] = "spring-sale"
			sub(m, "audience")["sms"] = []any{"+1 (415) 555-0123", "+14155550123", "+44 20 7183 8750"}
			sub(sub(m, "content"), "email")["html"] = "<p>It is on its way.</p>"
			sub(sub(m, "content"), "sms")["body"] = "Commande expédiée 📦 {€}"
		})},
		{"ValidUsersOnly", "", `{"notification_type":"a","producer":"p","idempotency_key":"k","channels":["webhook"],"audience":{"user_ids":["1","2"]},"content":{"webhook":[1,"two",{"3":null}]}}`},
		{"NotJSON", "not_json", `{"producer":"shop",`},
		{"NotUTF8", "not_json", "{\"producer\":\"\xff\"}"},
		{"NotAnObject", "wrong_shape", `["order.shipped"]`},
		{"UnknownField", "wrong_shape", EntryWith(func(m map[string]any) { m["colour"] = "red" })},
		{"WrongType", "wrong_shape", EntryWith(func(m map[string]any) { m["channels"] = "sms" })},
		{"EntryTooLarge", "too_large", `{"producer":"` + strings.Repeat("p", 4096) + `"}`},
		{"PayloadTooLarge", "too_large", EntryWith(func(m map[string]any) {
			sub(sub(m, "content"), "email")["text"] = strings.Repeat("t", 600)
		})},
		{"Empty", "missing_field", `{}`},
		{"BadPriority", "invalid_field", EntryWith(func(m map[string]any) { m["priority"] = "urgent" })},
		{"BadTime", "invalid_field", EntryWith(func(m map[string]any) { m["send_at"] = "tomorrow" })},
		{"UnknownChannel", "unknown_channel", EntryWith(func(m map[string]any) { m["channels"] = []any{"sms", "email", "webhook", "push"} })},
		{"InvalidPhone", "invalid_phone", EntryWith(func(m map[string]any) { sub(m, "audience")["sms"] = []any{"0123"} })},
		{"InvalidEmail", "invalid_email", EntryWith(func(m map[string]any) { sub(m, "audience")["email"] = []any{"ops.example.com"} })},
		{"InvalidURL", "invalid_url", EntryWith(func(m map[string]any) { sub(m, "audience")["webhook"] = []any{"ftp://example.com"} })},
		{"MissingContent", "missing_content", EntryWith(func(m map[string]any) { delete(sub(m, "content"), "webhook") })},
		{"SMSTooLong", "sms_too_long", EntryWith(func(m map[string]any) {
			sub(sub(m, "content"), "sms")["body"] = strings.Repeat("a", 307)
		})},
		{"SendAtTooFar", "schedule_out_of_range", EntryWith(func(m map[string]any) { m["send_at"] = "2026-03-03T00:00:00Z" })},
		{"ExpiredAlready", "schedule_out_of_range", EntryWith(func(m map[string]any) { m["expires_at"] = "2026-03-01T11:00:00Z" })},
		{"TooManyRoutes", "too_many_routes", EntryWith(func(m map[string]any) {
			sub(m, "audience")["user_ids"] = []any{"1", "2", "3"}
		})},
		{"NULEverywhere", "wrong_shape", `{"a\u0000":"\u0000","producer":"p\u0000"}`},
		{"DeepAndHuge", "invalid_field", EntryWith(func(m map[string]any) {
			sub(m, "content")["webhook"] = json.RawMessage(strings.Repeat("[", 70) + "1e99999" + strings.Repeat("]", 70))
		})},
	}
}
