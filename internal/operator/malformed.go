package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// Malformed is one intake entry the validator refused (herald.malformed_view).
// RawFields, set by MalformedIntent only, is what the entry held, made
// jsonb-safe.
type Malformed struct {
	// EntryRef is the intake entry's reference, "intake:<id>" (in JSON and
	// SQL, stream_entry_id, the seed schema's name).
	EntryRef         string          `json:"stream_entry_id"`
	RecordedAt       time.Time       `json:"recorded_at"`
	FailureCode      string          `json:"failure_code"`
	FailureMessage   string          `json:"failure_message"`
	Producer         string          `json:"producer"`
	NotificationType string          `json:"type"`
	IdempotencyKey   string          `json:"idempotency_key"`
	RawFields        json.RawMessage `json:"raw_fields,omitempty"`
}

// MalformedFilter selects malformed entries. Zero fields select everything.
type MalformedFilter struct {
	Producer    string
	FailureCode string
	Since       time.Time
}

// MalformedPage is one page of malformed entries, newest first. Next is the
// cursor of the following page, empty on the last one.
type MalformedPage struct {
	Malformed []Malformed `json:"malformed"`
	Next      string      `json:"next,omitempty"`
}

// MalformedIntents returns one page of at most limit malformed entries
// matching f, newest first (limit 0: DefaultPageSize), after the cursor
// after. It returns ErrBadCursor for a cursor it did not hand out.
func (o *Operator) MalformedIntents(ctx context.Context, f MalformedFilter, limit int, after string) (*MalformedPage, error) {
	c, err := decodeCursor(after)
	if err != nil {
		return nil, err
	}
	p := store.MalformedIntentListParams{
		Producer:    optText(f.Producer),
		FailureCode: optText(f.FailureCode),
		Since:       optTime(f.Since),
		Max:         pageSize(limit),
	}
	if c != nil {
		p.AfterRecordedAt = optTime(c.At)
		p.AfterEntryRef = &c.ID
	}
	rows, err := o.q.MalformedIntentList(ctx, o.pool, p)
	if err != nil {
		return nil, fmt.Errorf("list malformed intents: %w", err)
	}
	page := &MalformedPage{Malformed: make([]Malformed, len(rows))}
	for i, r := range rows {
		page.Malformed[i] = Malformed{
			EntryRef:         r.EntryRef,
			RecordedAt:       r.RecordedAt,
			FailureCode:      r.FailureCode,
			FailureMessage:   r.FailureMessage,
			Producer:         r.Producer,
			NotificationType: r.NotificationType,
			IdempotencyKey:   r.IdempotencyKey,
		}
	}
	if len(rows) == int(p.Max) {
		last := page.Malformed[len(rows)-1]
		page.Next = cursor{At: last.RecordedAt, ID: last.EntryRef}.encode()
	}
	return page, nil
}

// MalformedIntent returns one malformed entry with its raw fields. It
// returns ErrNotFound when there is none with that id.
func (o *Operator) MalformedIntent(ctx context.Context, entryRef string) (*Malformed, error) {
	r, err := o.q.MalformedIntentGet(ctx, o.pool, entryRef)
	if err != nil {
		return nil, fmt.Errorf("malformed intent %s: %w", entryRef, notFound(err, "read"))
	}
	return &Malformed{
		EntryRef:         r.EntryRef,
		RecordedAt:       r.RecordedAt,
		FailureCode:      r.FailureCode,
		FailureMessage:   r.FailureMessage,
		Producer:         r.Producer,
		NotificationType: r.NotificationType,
		IdempotencyKey:   r.IdempotencyKey,
		RawFields:        json.RawMessage(r.RawFields),
	}, nil
}
