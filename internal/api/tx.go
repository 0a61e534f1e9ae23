package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/store"
)

// inTx runs fn in a transaction acting as r's key's producer: it sets the
// key (herald.api_key), returns errUnauthorized when the database knows no
// valid key of it, and commits when fn returns nil. Every statement of fn is
// held by row-level security to the key's producer. Once the key
// authenticated, the answer carries the key's rate-limit fields, and a
// query parameter the operation does not take is a 400 (checkQuery). fn is
// where an endpoint validates the rest of its request.
func (s *Server) inTx(r *request, fn func(tx pgx.Tx, producer string) error) error {
	ctx := r.Context()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	producer, err := authenticate(ctx, tx, r.key)
	if err != nil {
		return err
	}
	if producer == "" {
		return errUnauthorized
	}
	if r.call != nil {
		r.call.producer = producer
	}
	if r.unmetered {
		s.limiter.taken(r.keyHash, time.Now())
	}
	s.rateFields(r)
	if err := checkQuery(r); err != nil {
		return err
	}
	if s.touchDue(r.keyHash) {
		if err := store.New().APIKeyTouch(ctx, tx); err != nil {
			return err
		}
	}
	if err := fn(tx, producer); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// touchDue reports whether the key's last_used_at is due to be written
// (once a minute per key and process; the database skips it too when
// another process wrote it within the minute).
func (s *Server) touchDue(h [sha256.Size]byte) bool {
	now := time.Now()
	s.touchMu.Lock()
	defer s.touchMu.Unlock()
	if now.Sub(s.touched[h]) < time.Minute {
		return false
	}
	if len(s.touched) > 10000 {
		clear(s.touched)
	}
	s.touched[h] = now
	return true
}

// readBody reads r's body, at most limit bytes. A client too slow to send
// it within the server's read timeout gets errSlowClient's 408 at once; any
// other failure (413 beyond limit, a body cut short) is returned as later,
// the endpoint answering it only once the key authenticated.
func readBody(w http.ResponseWriter, r *request, limit int64) (body []byte, later, now error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var maxErr *http.MaxBytesError
	var netErr net.Error
	switch {
	case err == nil:
		return body, nil, nil
	case errors.As(err, &maxErr):
		return nil, err, nil
	case errors.As(err, &netErr) && netErr.Timeout():
		p := *errSlowClient
		p.err = err
		return nil, nil, &p
	}
	return nil, fieldProblem("", heraldtype.CodeWrongShape, "the body could not be read: "+err.Error()), nil
}

// now is the validation clock.
func (s *Server) now() time.Time {
	if s.cfg.NowFunc != nil {
		return s.cfg.NowFunc()
	}
	return time.Now()
}
