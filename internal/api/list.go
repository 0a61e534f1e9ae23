package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// Summary is one notification in a list.
type Summary struct {
	ID               string     `json:"id"`
	NotificationType string     `json:"notification_type"`
	Producer         string     `json:"producer"`
	IdempotencyKey   string     `json:"idempotency_key"`
	Channels         []string   `json:"channels"`
	Priority         string     `json:"priority"`
	RequestID        string     `json:"request_id"`
	AcceptedAt       time.Time  `json:"accepted_at"`
	SendAt           *time.Time `json:"send_at"`
	ExpiresAt        *time.Time `json:"expires_at"`
}

// List is GET /v1/notifications' answer: a page, newest first, and the
// cursor of the next page when there may be one.
type List struct {
	Notifications []Summary `json:"notifications"`
	Next          string    `json:"next,omitempty"`
}

// Page sizes of the list, and how many notifications one request
// examines at most when it filters by status or channel.
const (
	defaultPageSize = 50
	maxPageSize     = 200
	listScanLimit   = 1000
)

// listStatuses are the values of the list's status filter: a route's.
var listStatuses = []heraldtype.RouteStatus{
	heraldtype.RouteStatusPending, heraldtype.RouteStatusClaimed, heraldtype.RouteStatusFailed,
	heraldtype.RouteStatusPublished, heraldtype.RouteStatusDeadLetter, heraldtype.RouteStatusSkipped,
	heraldtype.RouteStatusCanceled,
}

// listChannels are the values of the list's channel filter: an intent's
// channels, and callback for herald's status callbacks.
var listChannels = []heraldtype.Channel{
	heraldtype.ChannelSMS, heraldtype.ChannelEmail, heraldtype.ChannelWebhook, "callback",
}

// list is GET /v1/notifications?limit=&after=&status=&channel=&campaign=&since=&until=.
// A page holds the notifications that match every filter given, newest
// first. Filtering by status or channel, one request examines at most
// listScanLimit notifications: a page may then hold fewer than limit, even
// none, and still have a next cursor, from where the examination stopped.
func (s *Server) list(w http.ResponseWriter, r *request) error {
	out := List{Notifications: []Summary{}}
	err := s.inTx(r, func(tx pgx.Tx, _ string) error {
		if p := checkAccept(r.Request); p != nil {
			return p
		}
		params, err := listParams(r)
		if err != nil {
			return err
		}
		size := int(params.RowLimit) - 1
		rows, err := store.New().RecordListFilteredPage(r.Context(), tx, params)
		if err != nil {
			return err
		}
		for _, rec := range rows {
			if !rec.Matches || len(out.Notifications) == size {
				continue
			}
			out.Notifications = append(out.Notifications, Summary{
				ID: rec.NotificationID, NotificationType: rec.NotificationType, Producer: rec.Producer,
				IdempotencyKey: rec.IdempotencyKey, Channels: rec.Channels, Priority: string(heraldtype.PriorityOf(rec.Priority)),
				RequestID: rec.RequestID, AcceptedAt: rec.AcceptedAt, SendAt: rec.SendAt, ExpiresAt: rec.ExpiresAt,
			})
		}
		switch {
		case len(out.Notifications) == size:
			last := out.Notifications[size-1]
			out.Next = encodeCursor(last.AcceptedAt, last.ID)
		case len(rows) > 0 && rows[0].Scanned == params.ScanLimit:
			// Not a full page, but the examination stopped at its bound:
			// the next page goes on from the last notification examined.
			last := rows[len(rows)-1]
			out.Next = encodeCursor(last.AcceptedAt, last.NotificationID)
		}
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// listParams returns the list's query as the page's parameters, or a 400
// problem naming the first parameter that is invalid.
func listParams(r *request) (store.RecordListFilteredPageParams, error) {
	q := r.URL.Query()
	size := defaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return store.RecordListFilteredPageParams{}, fieldProblem("limit", heraldtype.CodeInvalidField,
				fmt.Sprintf("limit must be 1 to %d", maxPageSize))
		}
		size = n
	}
	params := store.RecordListFilteredPageParams{RowLimit: int32(size) + 1, ScanLimit: int32(size)}
	if v := q.Get("after"); v != "" {
		_, id, ok := decodeCursor(v)
		if !ok {
			return store.RecordListFilteredPageParams{}, fieldProblem("after", heraldtype.CodeInvalidField,
				"after is not a cursor this API returned")
		}
		params.BeforeNotificationID = &id
	}
	if q.Has("status") {
		v := q.Get("status")
		if !slices.Contains(listStatuses, heraldtype.RouteStatus(v)) {
			return store.RecordListFilteredPageParams{}, fieldProblem("status", heraldtype.CodeInvalidField,
				"status must be one of "+joinValues(listStatuses))
		}
		params.Status = &v
	}
	if q.Has("channel") {
		v := q.Get("channel")
		if !slices.Contains(listChannels, heraldtype.Channel(v)) {
			return store.RecordListFilteredPageParams{}, fieldProblem("channel", heraldtype.CodeInvalidField,
				"channel must be one of "+joinValues(listChannels))
		}
		params.Channel = &v
	}
	if params.Status != nil || params.Channel != nil {
		params.ScanLimit = max(int32(size), listScanLimit)
	}
	if q.Has("campaign") {
		v := q.Get("campaign")
		if v != strings.TrimSpace(v) || !intake.ValidProducer(v) {
			return store.RecordListFilteredPageParams{}, fieldProblem("campaign", heraldtype.CodeInvalidField,
				"campaign must be 1 to 128 of A-Za-z0-9._:-")
		}
		params.Campaign = &v
	}
	for _, name := range []string{"since", "until"} {
		if !q.Has(name) {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, q.Get(name))
		if err != nil {
			return store.RecordListFilteredPageParams{}, fieldProblem(name, heraldtype.CodeInvalidField,
				name+" must be an RFC 3339 time, such as 2026-11-28T17:00:00Z")
		}
		if name == "since" {
			params.Since = &t
		} else {
			params.Until = &t
		}
	}
	return params, nil
}

func joinValues[T ~string](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// encodeCursor and decodeCursor: a position in the list, opaque to clients.
// The list pages by notification id; the accepted_at a
// cursor also carries is no longer read, and stays in it so that a cursor
// handed out before that migration still reads as one.
func encodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(at.UTC().Format(time.RFC3339Nano) + "|" + id))
}

func decodeCursor(s string) (time.Time, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return time.Time{}, "", false
	}
	ts, id, ok := strings.Cut(string(b), "|")
	if !ok || id == "" || !validText(id) {
		return time.Time{}, "", false
	}
	at, err := time.Parse(time.RFC3339Nano, ts)
	return at, id, err == nil
}
