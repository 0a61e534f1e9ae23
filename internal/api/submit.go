package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/content"
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

// accept validates ins (decodeErrs[i], if set, is intent i's decoding
// error) and accepts the valid ones in tx, as the acting producer: an
// intent without a producer is the key's. Intents in another producer's
// name get 403 each without being sent (the database would refuse the
// whole statement, and with it the others); should the database refuse
// the statement anyway, the error is its 403. The caller calls committed
// once tx has committed (it schedules the dispatchers' trailing hint).
func (s *Server) accept(r *request, tx pgx.Tx, producer string, ins []*intake.Intent, decodeErrs []error) (
	res []result, committed func(), err error) {
	committed = func() {}
	res = make([]result, len(ins))
	for _, in := range ins {
		if in == nil {
			continue
		}
		if in.Producer == "" {
			in.Producer = producer
		}
		if in.RequestID == "" && r.call != nil && r.Header.Get("X-Request-Id") != "" {
			in.RequestID = r.call.requestID
		}
	}
	vs, errs := intake.ValidateMany(ins, s.limits, s.now())
	var valid []*intake.Validated
	var index []int
	for i := range ins {
		switch {
		case decodeErrs != nil && decodeErrs[i] != nil:
			res[i].problem = asProblem(decodeErrs[i])
		case errs[i] != nil:
			res[i].problem = asProblem(errs[i])
			res[i].producer = ins[i].Producer
		case vs[i].Intent.Producer != producer && len(ins) > 1:
			res[i].problem = problem(http.StatusForbidden, CodeForbidden,
				fmt.Sprintf("this API key acts for producer %q, not %q", producer, vs[i].Intent.Producer))
			res[i].producer = vs[i].Intent.Producer
		default:
			valid = append(valid, vs[i])
			index = append(index, i)
		}
	}
	// Templates and the content blocklist, as the other doors check them.
	// An intent a review rule matched is stored all the same: this login
	// is a producer's, so its routes wait for the engine's vetter (lane
	// '!vet'), which finds the rule again and holds them for an operator.
	verdicts, err := s.content.Check(r.Context(), tx, valid, s.limits, nil)
	if err != nil {
		return nil, nil, err
	}
	kept := 0
	var held []*content.Match // by kept index
	for j, v := range valid {
		verdict := verdicts[j]
		if verdict.Err != nil {
			res[index[j]].problem, res[index[j]].producer = asProblem(verdict.Err), v.Intent.Producer
			continue
		}
		valid[kept], index[kept] = v, index[j]
		held = append(held, verdict.Held)
		kept++
	}
	valid, index = valid[:kept], index[:kept]
	if len(valid) == 0 {
		return res, committed, nil
	}
	ch := accept.HintChannel(valid)
	hint := s.waker.Hint(ch)
	outs, err := accept.Accept(r.Context(), tx, valid, accept.Params{
		IdempotencyWindow: s.cfg.IdempotencyWindow, Notify: hint,
	})
	if err != nil {
		return nil, nil, err
	}
	fresh := false
	for j, o := range outs {
		i, v := index[j], valid[j]
		res[i].producer = v.Intent.Producer
		if o.Refused != nil { // its campaign refused it
			res[i].problem = asProblem(o.Refused)
			continue
		}
		if o.Conflict {
			p := problem(http.StatusConflict, heraldtype.CodeIdempotencyConflict,
				"the idempotency key was used for a different request, by notification "+o.NotificationID)
			p.Field, p.NotificationID = "idempotency_key", o.NotificationID
			res[i].problem = p
			continue
		}
		fresh = fresh || !o.Duplicate
		ids := make([]string, len(v.Routes))
		for k, rt := range v.Routes {
			ids[k] = rt.RouteID
		}
		res[i].receipt = &Receipt{NotificationID: o.NotificationID, Duplicate: o.Duplicate,
			AcceptedAt: o.AcceptedAt, RouteIDs: ids}
		if m := held[j]; m != nil {
			res[i].receipt.Held, res[i].receipt.HeldRule = true, m.Rule.String()
		}
	}
	if hint == nil && fresh {
		// After the commit: a trailing hint sent before it could wake the
		// dispatchers before the routes are visible.
		committed = func() { s.waker.Done(ch) }
	}
	return res, committed, nil
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
