package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/heraldtype"
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

// Page sizes of the list.
const (
	defaultPageSize = 50
	maxPageSize     = 200
)

// list is GET /v1/notifications?limit=&after=.
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
		size := int(params.PageSize)
		rows, err := store.New().RecordListPage(r.Context(), tx, params)
		if err != nil {
			return err
		}
		for _, rec := range rows {
			out.Notifications = append(out.Notifications, Summary{
				ID: rec.NotificationID, NotificationType: rec.NotificationType, Producer: rec.Producer,
				IdempotencyKey: rec.IdempotencyKey, Channels: rec.Channels, Priority: string(heraldtype.PriorityOf(rec.Priority)),
				RequestID: rec.RequestID, AcceptedAt: rec.AcceptedAt, SendAt: rec.SendAt, ExpiresAt: rec.ExpiresAt,
			})
		}
		if len(rows) == size {
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

// listParams returns the list's query (limit, after) as the page's
// parameters, or a 400 problem naming the one that is invalid.
func listParams(r *request) (store.RecordListPageParams, error) {
	q := r.URL.Query()
	size := defaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return store.RecordListPageParams{}, fieldProblem("limit", heraldtype.CodeInvalidField,
				fmt.Sprintf("limit must be 1 to %d", maxPageSize))
		}
		size = n
	}
	params := store.RecordListPageParams{PageSize: int32(size)}
	if v := q.Get("after"); v != "" {
		_, id, ok := decodeCursor(v)
		if !ok {
			return store.RecordListPageParams{}, fieldProblem("after", heraldtype.CodeInvalidField,
				"after is not a cursor this API returned")
		}
		params.BeforeNotificationID = &id
	}
	return params, nil
}

// encodeCursor and decodeCursor: a position in the list, opaque to clients.
// The list pages by notification id (migration 00024); the accepted_at a
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
