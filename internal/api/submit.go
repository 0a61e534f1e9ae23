package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
)

// Receipt is the answer for an accepted intent (the Go client's Receipt).
type Receipt struct {
	NotificationID string    `json:"notification_id"`
	Duplicate      bool      `json:"duplicate"`
	AcceptedAt     time.Time `json:"accepted_at"`
	RouteIDs       []string  `json:"route_ids"`
	// Held is set when a review rule matched: the notification is
	// stored, and the engine's vetter holds its routes for an operator.
	Held     bool   `json:"held,omitempty"`
	HeldRule string `json:"held_rule,omitempty"`
}

// submit is POST /v1/notifications: one intent, the Idempotency-Key header
// standing for its key when the body has none.
func (s *Server) submit(w http.ResponseWriter, r *request) error {
	body, bodyErr, err := readBody(w, r, int64(s.limits.MaxEntryBytes))
	if err != nil {
		return err
	}
	var res []result
	var committed func()
	err = s.inTx(r, func(tx pgx.Tx, producer string) error {
		if p := checkMedia(r.Request, len(body)); p != nil {
			return p
		}
		if bodyErr != nil {
			return bodyErr
		}
		in, err := intake.DecodeRaw(body, s.limits)
		if err != nil {
			return err
		}
		if h := r.Header.Get("Idempotency-Key"); h != "" {
			switch in.IdempotencyKey {
			case "":
				in.IdempotencyKey = h
			case h:
			default:
				return fieldProblem("idempotency_key", heraldtype.CodeInvalidField,
					"idempotency_key differs from the Idempotency-Key header")
			}
		}
		res, committed, err = s.accept(r, tx, producer, []*intake.Intent{in}, nil)
		return err
	})
	if err != nil {
		return err
	}
	committed()
	s.report(res)
	one := res[0]
	if one.problem != nil {
		return one.problem
	}
	if one.receipt.Duplicate {
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, http.StatusOK, one.receipt)
		return nil
	}
	w.Header().Set("Location", "/v1/notifications/"+one.receipt.NotificationID)
	writeJSON(w, http.StatusCreated, one.receipt)
	return nil
}

// result is one intent's outcome: a receipt or a problem.
type result struct {
	producer string
	receipt  *Receipt
	problem  *Problem
}

// accept runs ins (decodeErrs[i], if set, is intent i's decoding error)
// through the intake pipeline in tx, as the acting producer: an intent
// without a producer is the key's. Intents of a batch in another
// producer's name get 403 each without being sent (the database would
// refuse the whole statement, and with it the others); should the
// database refuse the statement anyway, the error is its 403. An intent a
// review rule matched is stored all the same: this login is a
// producer's, so its routes wait for the engine's vetter (lane '!vet'),
// which finds the rule again and holds them for an operator. The caller
// calls committed once tx has committed (it schedules the dispatchers'
// trailing hint).
func (s *Server) accept(r *request, tx pgx.Tx, producer string, ins []*intake.Intent, decodeErrs []error) (
	res []result, committed func(), err error) {
	items := make([]accept.Item, len(ins))
	for i, in := range ins {
		if decodeErrs != nil && decodeErrs[i] != nil {
			items[i].Err = decodeErrs[i]
			continue
		}
		if in.Producer == "" {
			in.Producer = producer
		}
		if in.RequestID == "" && r.call != nil && r.Header.Get("X-Request-Id") != "" {
			in.RequestID = r.call.requestID
		}
		items[i].Intent = in
		if len(ins) > 1 {
			items[i].Actor = producer
		}
	}
	out, committed, err := s.pipeline.Run(r.Context(), tx, items, accept.RunOpts{Now: s.now()})
	if err != nil {
		return nil, nil, err
	}
	res = make([]result, len(ins))
	for i, o := range out {
		if o.Kind == accept.KindForbidden && o.Err != nil {
			return nil, nil, o.Err // the database refused the statement
		}
		switch {
		case o.Validated != nil:
			res[i].producer = o.Validated.Intent.Producer
		case items[i].Err == nil:
			res[i].producer = ins[i].Producer
		}
		res[i].receipt, res[i].problem = resultOf(o, producer)
	}
	return res, committed, nil
}

// resultOf translates the pipeline's result o into a receipt or a problem;
// producer is the key's.
func resultOf(o accept.Result, producer string) (*Receipt, *Problem) {
	switch o.Kind {
	case accept.KindInvalid, accept.KindRefused:
		return nil, asProblem(o.Err)
	case accept.KindForbidden:
		return nil, problem(http.StatusForbidden, CodeForbidden,
			fmt.Sprintf("this API key acts for producer %q, not %q", producer, o.Validated.Intent.Producer))
	case accept.KindConflict:
		p := problem(http.StatusConflict, heraldtype.CodeIdempotencyConflict,
			"the idempotency key was used for a different request, by notification "+o.NotificationID)
		p.Field, p.NotificationID = "idempotency_key", o.NotificationID
		return nil, p
	}
	rc := &Receipt{NotificationID: o.NotificationID, Duplicate: o.Kind == accept.KindDuplicate,
		AcceptedAt: o.AcceptedAt, RouteIDs: o.RouteIDs}
	if o.Held != nil {
		rc.Held, rc.HeldRule = true, o.Held.Rule.String()
	}
	return rc, nil
}

// report counts each result in herald_intents_total.
func (s *Server) report(res []result) {
	for _, r := range res {
		switch {
		case r.receipt != nil && r.receipt.Duplicate:
			s.metrics.Intent(r.producer, "duplicate")
		case r.receipt != nil:
			s.metrics.Intent(r.producer, "accepted")
		case r.problem == nil:
		case r.problem.Code == heraldtype.CodeIdempotencyConflict:
			s.metrics.Intent(r.producer, "conflict")
		case r.problem.Code == CodeForbidden:
			s.metrics.Intent(r.producer, "forbidden")
		default:
			s.metrics.Intent(r.producer, "invalid")
		}
	}
}
