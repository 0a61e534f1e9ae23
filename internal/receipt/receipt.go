// Package receipt is herald's delivery-receipts side: what providers say
// happened after they accepted a message.
//
// Every receipt is stored in herald.delivery_receipts as it arrived, before
// its sender is answered (Store): by serve's HTTP endpoint (Handler), by the
// SMPP driver before its deliver_sm_resp, or by a plain INSERT. The Matcher
// finds each one's route (the endpoint's and the SMPP driver's in the
// transaction that stores them, Matcher.StoreMatched; the rest in its
// rounds) by provider and provider message id (the
// route's receipt key, written at completion for providers that send
// receipts) and records the route's delivery status — delivered,
// undelivered (with the provider's error code, permanent or temporary as
// the provider says), expired or unknown — beside its scheduling status,
// which never moves back.
package receipt

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/store"
)

// Sources of a receipt (delivery_receipts.source).
const (
	SourceHTTP = "http"
	SourceSMPP = "smpp"
	SourceSQL  = "sql"
)

// Receipt is one receipt as it arrived.
type Receipt struct {
	// Provider is the provider's name, e.g. "sms/acme".
	Provider string
	// ProviderMessageID is the provider's id of the message the receipt
	// is about ('' when the receipt had none: it is kept as malformed).
	ProviderMessageID string
	// Status and ErrorCode are as the provider sent them.
	Status    string
	ErrorCode string
	// Raw is the receipt as it came (a body, a query string, a PDU's
	// text), without credentials.
	Raw string
	// Source is SourceHTTP, SourceSMPP or SourceSQL.
	Source string
}

// Limits of delivery_receipts' columns (its CHECK): Store clips a longer
// field rather than lose the receipt.
const (
	maxField = 200
	maxRaw   = 65536
)

// Store writes r to the inbox and returns its id. It commits (on db's
// own transaction when db is one) before it returns, so a caller answers
// the receipt's sender only once it is stored.
func Store(ctx context.Context, db store.DBTX, r Receipt) (int64, error) {
	r = r.clipped()
	id, err := store.New().ReceiptInsert(ctx, db, store.ReceiptInsertParams{
		Provider:          r.Provider,
		ProviderMessageID: r.ProviderMessageID,
		Status:            r.Status,
		ErrorCode:         r.ErrorCode,
		Raw:               r.Raw,
		Source:            r.Source,
	})
	if err != nil {
		return 0, fmt.Errorf("store receipt of %s: %w", r.Provider, err)
	}
	return id, nil
}

// clipped returns r as the table can keep it: each field valid UTF-8
// without NUL (Postgres text refuses both, and a receipt refused for its
// bytes would be refused again each time its sender repeated it, so it is
// kept readable instead: U+FFFD for what was not), and cut to the
// column's limit.
func (r Receipt) clipped() Receipt {
	r.Provider = clip(storable(r.Provider), maxField)
	r.ProviderMessageID = clip(storable(r.ProviderMessageID), maxField)
	r.Status = clip(storable(r.Status), maxField)
	r.ErrorCode = clip(storable(r.ErrorCode), maxField)
	r.Raw = clip(storable(r.Raw), maxRaw)
	return r
}

// storable returns s with each invalid UTF-8 sequence and each NUL
// replaced by U+FFFD.
func storable(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// clip cuts s to at most n bytes, on a UTF-8 boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// backoff is how long an unmatched receipt waits before its next try:
// doubling from a second, at most a minute.
func backoff(attempts int32) time.Duration {
	d := time.Second << min(attempts, 6)
	return min(d, time.Minute)
}

// Inbound is a mobile-originated message: what someone sent to one of the
// senders' numbers, as a provider handed it over.
type Inbound struct {
	Provider   string
	From, To   string
	Body       string
	DataCoding uint8
}

// StoreInbound writes m to herald.inbound_messages and returns its id, as
// Store does a receipt: before the provider is answered, and kept
// readable whatever its bytes.
func StoreInbound(ctx context.Context, db store.DBTX, m Inbound) (int64, error) {
	m = m.clipped()
	id, err := store.New().InboundMessageInsert(ctx, db, store.InboundMessageInsertParams{
		Provider:   m.Provider,
		FromAddr:   m.From,
		ToAddr:     m.To,
		Body:       m.Body,
		DataCoding: int16(m.DataCoding),
	})
	if err != nil {
		return 0, fmt.Errorf("store inbound message of %s: %w", m.Provider, err)
	}
	return id, nil
}

// clipped returns m as the table can keep it, as Receipt.clipped does.
func (m Inbound) clipped() Inbound {
	m.Provider = clip(storable(m.Provider), maxField)
	m.From = clip(storable(m.From), 64)
	m.To = clip(storable(m.To), 64)
	m.Body = clip(storable(m.Body), maxRaw)
	return m
}
