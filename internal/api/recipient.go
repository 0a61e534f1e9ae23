package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// maxUserIDLen is the longest user id the directory holds (as the
// intake's rule).
const maxUserIDLen = 255

// Recipient is a directory entry as the API reads and answers it; the
// user id is the path's.
type Recipient struct {
	UserID     string   `json:"user_id"`
	Email      string   `json:"email"`
	Phone      string   `json:"phone"`
	WebhookURL string   `json:"webhook_url"`
	Locale     string   `json:"locale"`
	OptedOut   []string `json:"opted_out"`
}

// putRecipient is PUT /v1/recipients/{user_id}: creates or replaces the
// producer's own entry, validated as the Go client's UpsertRecipient.
func (s *Server) putRecipient(w http.ResponseWriter, r *request) error {
	body, bodyErr, err := readBody(w, r, 64<<10)
	if err != nil {
		return err
	}
	var v heraldtype.Recipient
	err = s.inTx(r, func(tx pgx.Tx, producer string) error {
		if p := checkMedia(r.Request, len(body)); p != nil {
			return p
		}
		if bodyErr != nil {
			return bodyErr
		}
		var in struct {
			Email      string   `json:"email"`
			Phone      string   `json:"phone"`
			WebhookURL string   `json:"webhook_url"`
			Locale     string   `json:"locale"`
			OptedOut   []string `json:"opted_out"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return fieldProblem("", heraldtype.CodeWrongShape, "the body must be a recipient object: "+err.Error())
		}
		var err error
		v, err = intake.ValidateRecipient(heraldtype.Recipient{UserID: r.PathValue("user_id"), Email: in.Email,
			Phone: in.Phone, WebhookURL: in.WebhookURL, Locale: in.Locale, OptedOut: in.OptedOut})
		if err != nil {
			return err
		}
		return store.New().RecipientUpsert(r.Context(), tx, store.RecipientUpsertParams{
			Owner: &producer, UserID: v.UserID, Email: v.Email, Phone: v.Phone, WebhookUrl: v.WebhookURL,
			Locale: v.Locale, OptedOut: append([]string{}, v.OptedOut...),
		})
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, Recipient{UserID: v.UserID, Email: v.Email, Phone: v.Phone,
		WebhookURL: v.WebhookURL, Locale: v.Locale, OptedOut: append([]string{}, v.OptedOut...)})
	return nil
}

// userIDParam returns the path's user id; one longer than any entry can
// have is refused as PUT refuses it.
func userIDParam(r *request) (string, error) {
	userID, err := pathText(r, "user_id")
	if err != nil {
		return "", err
	}
	if utf8.RuneCountInString(userID) > maxUserIDLen {
		return "", fieldProblem("user_id", heraldtype.CodeInvalidField,
			fmt.Sprintf("user_id is longer than %d characters", maxUserIDLen))
	}
	return userID, nil
}

// getRecipient is GET /v1/recipients/{user_id}: the producer's own entry,
// or 404 when it has none (another producer's entry, and the shared
// directory's, are not its own).
func (s *Server) getRecipient(w http.ResponseWriter, r *request) error {
	var out Recipient
	err := s.inTx(r, func(tx pgx.Tx, producer string) error {
		if p := checkAccept(r.Request); p != nil {
			return p
		}
		userID, err := userIDParam(r)
		if err != nil {
			return err
		}
		e, err := store.New().RecipientGetOwn(r.Context(), tx, store.RecipientGetOwnParams{Owner: producer, UserID: userID})
		if err != nil {
			return notFound(err, "recipient")
		}
		out = Recipient{UserID: e.UserID, Email: e.Email, Phone: e.Phone, WebhookURL: e.WebhookUrl,
			Locale: e.Locale, OptedOut: append([]string{}, e.OptedOut...)}
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteRecipient is DELETE /v1/recipients/{user_id}: 204, or 404 when
// the producer has no entry for the user.
func (s *Server) deleteRecipient(w http.ResponseWriter, r *request) error {
	var deleted bool
	err := s.inTx(r, func(tx pgx.Tx, _ string) error {
		if p := checkAccept(r.Request); p != nil {
			return p
		}
		userID, err := userIDParam(r)
		if err != nil {
			return err
		}
		deleted, err = store.New().RecipientDelete(r.Context(), tx, store.RecipientDeleteParams{UserID: userID})
		return err
	})
	if err != nil {
		return err
	}
	if !deleted {
		p := *errNotFound
		p.Detail = "no such recipient"
		return &p
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
