package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
)

// BatchResult is one intent's result in a batch's answer: its status code
// and either its receipt or its problem.
type BatchResult struct {
	Status  int      `json:"status"`
	Receipt *Receipt `json:"receipt,omitempty"`
	Error   *Problem `json:"error,omitempty"`
}

// submitBatch is POST /v1/notifications/batch: {"intents": [...]}, one
// result per intent in the same order; 200 however many were refused.
func (s *Server) submitBatch(w http.ResponseWriter, r *request) error {
	body, bodyErr, err := readBody(w, r, s.cfg.MaxBodyBytes)
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
		ins, decodeErrs, err := s.decodeBatch(body)
		if err != nil {
			return err
		}
		res, committed, err = s.accept(r, tx, producer, ins, decodeErrs)
		return err
	})
	if err != nil {
		return err
	}
	committed()
	s.report(res)
	out := struct {
		Results []BatchResult `json:"results"`
	}{make([]BatchResult, len(res))}
	for i, one := range res {
		switch {
		case one.problem != nil:
			p := *one.problem
			p.RequestID = r.call.requestID
			out.Results[i] = BatchResult{Status: p.Status, Error: &p}
		case one.receipt.Duplicate:
			out.Results[i] = BatchResult{Status: http.StatusOK, Receipt: one.receipt}
		default:
			out.Results[i] = BatchResult{Status: http.StatusCreated, Receipt: one.receipt}
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// decodeBatch decodes a batch's body: its intents, and each one's
// decoding error (nil when it decoded); a body that is no batch is the
// error.
func (s *Server) decodeBatch(body []byte) ([]*intake.Intent, []error, error) {
	var batch struct {
		Intents []json.RawMessage `json:"intents"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&batch); err != nil {
		return nil, nil, fieldProblem("", heraldtype.CodeWrongShape, `the body must be {"intents": [intent, ...]}: `+err.Error())
	}
	switch n := len(batch.Intents); {
	case n == 0:
		return nil, nil, fieldProblem("intents", heraldtype.CodeMissingField, "intents is required: at least one intent")
	case n > s.cfg.MaxBatch:
		p := problem(http.StatusRequestEntityTooLarge, heraldtype.CodeTooLarge,
			fmt.Sprintf("a batch holds at most %d intents, not %d", s.cfg.MaxBatch, n))
		p.Field = "intents"
		return nil, nil, p
	}
	ins := make([]*intake.Intent, len(batch.Intents))
	decodeErrs := make([]error, len(batch.Intents))
	for i, raw := range batch.Intents {
		ins[i], decodeErrs[i] = intake.DecodeRaw(raw, s.limits)
	}
	return ins, decodeErrs, nil
}
