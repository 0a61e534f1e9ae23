package api

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/store"
)

// Cancellation is the answer of a cancel: the routes it canceled.
type Cancellation struct {
	NotificationID string          `json:"notification_id"`
	Canceled       []CanceledRoute `json:"canceled"`
}

// CanceledRoute is one route a cancel canceled.
type CanceledRoute struct {
	RouteID string `json:"route_id"`
	Channel string `json:"channel"`
}

// cancel is POST /v1/notifications/{id}/cancel, with an optional body
// {"reason": "..."} for the audit row; the actor is the key ("api key
// hk_XXXXXXXX") and the audit row's login the API's.
func (s *Server) cancel(w http.ResponseWriter, r *request) error {
	body, bodyErr, err := readBody(w, r, 64<<10)
	if err != nil {
		return err
	}
	out := Cancellation{Canceled: []CanceledRoute{}}
	err = s.inTx(r, func(tx pgx.Tx, _ string) error {
		if p := checkMedia(r.Request, len(body)); p != nil {
			return p
		}
		if bodyErr != nil {
			return bodyErr
		}
		var in struct {
			Reason string `json:"reason"`
		}
		if len(bytes.TrimSpace(body)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				return fieldProblem("", heraldtype.CodeWrongShape, `the body must be empty or {"reason": "..."}: `+err.Error())
			}
		}
		if !validText(in.Reason) {
			return fieldProblem("reason", heraldtype.CodeInvalidField, "reason must be UTF-8 text without NUL")
		}
		id, err := pathText(r, "id")
		if err != nil {
			return err
		}
		out.NotificationID = id
		rows, err := store.New().RouteCancelByNotification(r.Context(), tx, store.RouteCancelByNotificationParams{
			NotificationID: id, Actor: "api key " + displayPrefix(r.key), Reason: in.Reason,
		})
		if err != nil {
			return notFound(err, "notification")
		}
		for _, rt := range rows {
			out.Canceled = append(out.Canceled, CanceledRoute{RouteID: rt.RouteID, Channel: rt.Channel})
		}
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
