package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/callback"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// CallbackSubscription is the calling key's producer's callback
// subscription as the API answers it: never its secret or bearer token,
// only which of them is set (auth: "secret" or "bearer_token").
type CallbackSubscription struct {
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	Auth      string    `json:"auth"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// maxSubscriptionBody bounds PUT /v1/callback-subscription's body: a URL
// of 2048 bytes, seven events and a token of 4096 characters fit many
// times over.
const maxSubscriptionBody = 16 << 10

// getSubscription is GET /v1/callback-subscription: 200, or 404 when the
// producer has none.
func (s *Server) getSubscription(w http.ResponseWriter, r *request) error {
	var out *CallbackSubscription
	err := s.inTx(r, func(tx pgx.Tx, _ string) error {
		if p := checkAccept(r.Request); p != nil {
			return p
		}
		info, err := callback.GetSubscription(r.Context(), tx)
		if errors.Is(err, callback.ErrNoSubscription) {
			return noSubscription()
		}
		if err != nil {
			return err
		}
		out = subscriptionOf(info)
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// putSubscription is PUT /v1/callback-subscription: creates or replaces
// the producer's subscription through herald.callback_subscription_set,
// which checks every field, and answers it as GET does.
func (s *Server) putSubscription(w http.ResponseWriter, r *request) error {
	body, bodyErr, err := readBody(w, r, maxSubscriptionBody)
	if err != nil {
		return err
	}
	var out *CallbackSubscription
	err = s.inTx(r, func(tx pgx.Tx, _ string) error {
		if p := checkMedia(r.Request, len(body)); p != nil {
			return p
		}
		if bodyErr != nil {
			return bodyErr
		}
		var in struct {
			URL         string   `json:"url"`
			Events      []string `json:"events"`
			Secret      string   `json:"secret"`
			BearerToken string   `json:"bearer_token"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return fieldProblem("", heraldtype.CodeWrongShape, "the body must be a subscription object: "+err.Error())
		}
		if !validText(in.URL) || !validText(in.Secret) || !validText(in.BearerToken) {
			return fieldProblem("", heraldtype.CodeInvalidField, "url, secret and bearer_token must be text without U+0000")
		}
		for _, e := range in.Events {
			if !validText(e) {
				return fieldProblem("events", heraldtype.CodeInvalidField, "events must be text without U+0000")
			}
		}
		if err := callback.SetSubscription(r.Context(), tx, callback.Subscription{URL: in.URL, Events: in.Events,
			Secret: in.Secret, BearerToken: in.BearerToken}); err != nil {
			return subscriptionRefused(err)
		}
		info, err := callback.GetSubscription(r.Context(), tx)
		if err != nil {
			return err
		}
		out = subscriptionOf(info)
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteSubscription is DELETE /v1/callback-subscription: 204, or 404
// when the producer has none.
func (s *Server) deleteSubscription(w http.ResponseWriter, r *request) error {
	var deleted bool
	err := s.inTx(r, func(tx pgx.Tx, _ string) error {
		if p := checkAccept(r.Request); p != nil {
			return p
		}
		var err error
		deleted, err = callback.DeleteSubscription(r.Context(), tx)
		return err
	})
	if err != nil {
		return err
	}
	if !deleted {
		return noSubscription()
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func subscriptionOf(info *callback.SubscriptionInfo) *CallbackSubscription {
	return &CallbackSubscription{URL: info.URL, Events: info.Events, Auth: info.Auth,
		CreatedAt: info.CreatedAt, UpdatedAt: info.UpdatedAt}
}

func noSubscription() *Problem {
	p := *errNotFound
	p.Detail = "this producer has no callback subscription"
	return &p
}

// subscriptionRefused maps the invalid_parameter_value (or check
// violation) herald.callback_subscription_set raises to a 400 problem
// with its message, on the field the message starts with; the message
// never quotes a secret or token. Any other error is returned as it is.
func subscriptionRefused(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.InvalidParameterValue && pgErr.Code != pgerrcode.CheckViolation {
		return err
	}
	field := ""
	for _, f := range []string{"url", "secret", "bearer_token"} {
		if strings.HasPrefix(pgErr.Message, f+" ") {
			field = f
		}
	}
	if strings.HasPrefix(pgErr.Message, "unknown callback event") {
		field = "events"
	}
	return fieldProblem(field, heraldtype.CodeInvalidField, pgErr.Message)
}
