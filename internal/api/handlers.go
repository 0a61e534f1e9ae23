package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/content"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// routes returns the API's router: the standard library's ServeMux with
// method patterns. Its patterns are the document's paths (a test checks).
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/notifications", s.authed(s.submit))
	mux.HandleFunc("POST /v1/notifications/batch", s.authed(s.submitBatch))
	mux.HandleFunc("GET /v1/notifications", s.authed(s.list))
	mux.HandleFunc("GET /v1/notifications/{id}", s.authed(s.get))
	mux.HandleFunc("POST /v1/notifications/{id}/cancel", s.authed(s.cancel))
	mux.HandleFunc("PUT /v1/recipients/{user_id}", s.authed(s.putRecipient))
	mux.HandleFunc("DELETE /v1/recipients/{user_id}", s.authed(s.deleteRecipient))
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		if p := checkAccept(r); p != nil {
			writeProblem(w, r, p)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(openAPIDocument)
	})
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.unmatched(mux, w, r) })
	return mux
}

// endpointPatterns are the patterns routes registers, for the drift test.
func endpointPatterns() []string {
	return []string{
		"POST /v1/notifications", "POST /v1/notifications/batch", "GET /v1/notifications",
		"GET /v1/notifications/{id}", "POST /v1/notifications/{id}/cancel",
		"PUT /v1/recipients/{user_id}", "DELETE /v1/recipients/{user_id}",
		"GET /openapi.json", "GET /healthz", "GET /readyz",
	}
}

// unmatched answers a request no route took: 405 with Allow when its path
// has routes of other methods, else 404, as problems.
func (s *Server) unmatched(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeProblem(w, r, problem(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			r.Method+" is not allowed here; allowed: "+strings.Join(allow, ", ")))
		return
	}
	writeProblem(w, r, problem(http.StatusNotFound, CodeNotFound, "no such endpoint"))
}

// request is an authenticated endpoint's view of its request.
type request struct {
	*http.Request
	key     string
	keyHash [sha256.Size]byte
	call    *call
	// unmetered: the key has no rate bucket yet; inTx takes its first
	// token once the key authenticated.
	unmetered bool
}

// maxUserIDLen is the longest user id the directory holds (as the
// intake's rule).
const maxUserIDLen = 255

// maxKeyLen bounds what is sent to the database as a key: a key is 46
// characters (NewSecret).
const maxKeyLen = 256

// authed wraps an endpoint: the key must be given (401), its client
// address must not have failed authentication too often (429, before any
// database work), and the key must be within its rate (429); the
// endpoint's error is answered as a problem. The endpoint authenticates
// (inTx) before it validates anything of the request, so that a caller
// without a valid key learns nothing but 401.
func (s *Server) authed(h func(w http.ResponseWriter, r *request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		addr := clientAddr(r.RemoteAddr)
		now := time.Now()
		if blocked, wait := s.guard.blocked(addr, now); blocked {
			p := problem(http.StatusTooManyRequests, CodeRateLimited,
				"too many failed authentications from this address; retry later")
			p.retryAfter = retryAfterSeconds(wait)
			writeProblem(w, r, p)
			return
		}
		key := bearer(r.Header.Get("Authorization"))
		if key == "" {
			writeProblem(w, r, errUnauthorized)
			return
		}
		if len(key) > maxKeyLen || !validText(key) { // no key of ours, and not text the database takes
			s.guard.failed(addr, now)
			writeProblem(w, r, errUnauthorized)
			return
		}
		req := &request{Request: r, key: key, keyHash: sha256.Sum256([]byte(key)), call: callOf(r.Context())}
		ok, wait, known := s.limiter.allowKnown(req.keyHash, now)
		if !ok {
			p := problem(http.StatusTooManyRequests, CodeRateLimited, "too many requests for this API key; retry later")
			p.retryAfter = retryAfterSeconds(wait)
			writeProblem(w, r, p)
			return
		}
		req.unmetered = !known
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		req.Request = r.WithContext(ctx)
		err := h(w, req)
		if err == errUnauthorized {
			s.guard.failed(addr, time.Now())
		}
		if err != nil {
			writeProblem(w, r, asProblem(err))
		}
	}
}

func retryAfterSeconds(wait time.Duration) int {
	return max(1, int((wait+time.Second-1)/time.Second))
}

// validText reports whether s is text PostgreSQL can hold: valid UTF-8
// without NUL.
func validText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// pathText returns r's path parameter name, or a 400 problem naming it
// when it is not valid text (validText).
func pathText(r *request, name string) (string, error) {
	v := r.PathValue(name)
	if !validText(v) {
		return "", fieldProblem(name, heraldtype.CodeInvalidField, name+" must be UTF-8 text without NUL")
	}
	return v, nil
}

// inTx runs fn in a transaction acting as r's key's producer: it sets the
// key (herald.api_key), returns errUnauthorized when the database knows no
// valid key of it, and commits when fn returns nil. Every statement of fn is
// held by row-level security to the key's producer. fn is where an
// endpoint validates its request: after the key authenticated.
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

// Route is one route of a notification as GET answers it. It may gain
// fields (a receipt's delivery status, say): clients ignore those they do
// not know.
type Route struct {
	ID                string     `json:"id"`
	Channel           string     `json:"channel"`
	RecipientRef      string     `json:"recipient_ref"`
	Status            string     `json:"status"`
	Attempts          int        `json:"attempts"`
	MaxAttempts       int        `json:"max_attempts"`
	Providers         []string   `json:"providers"`
	NextAttemptAt     *time.Time `json:"next_attempt_at"`
	LastErrorClass    string     `json:"last_error_class"`
	LastError         string     `json:"last_error"`
	LastErrorAt       *time.Time `json:"last_error_at"`
	SMSEncoding       string     `json:"sms_encoding"`
	SMSSegments       int        `json:"sms_segments"`
	ProviderMessageID string     `json:"provider_message_id"`
	// DeliveryStatus is the receipt's verdict after publication
	// (delivered, undelivered, expired, unknown); '' while none came.
	DeliveryStatus   string     `json:"delivery_status"`
	DeliveryStatusAt *time.Time `json:"delivery_status_at"`
	DeliveryError    string     `json:"delivery_error"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	PublishedAt      *time.Time `json:"published_at"`
	DeadLetteredAt   *time.Time `json:"dead_lettered_at"`
	SkippedAt        *time.Time `json:"skipped_at"`
	CanceledAt       *time.Time `json:"canceled_at"`
	ExpiresAt        *time.Time `json:"expires_at"`
}

// Notification is GET /v1/notifications/{id}'s answer (the Go client's
// Notification).
type Notification struct {
	ID                   string          `json:"id"`
	NotificationType     string          `json:"notification_type"`
	Producer             string          `json:"producer"`
	IdempotencyKey       string          `json:"idempotency_key"`
	AudienceKind         string          `json:"audience_kind"`
	UserIDs              []string        `json:"user_ids"`
	Channels             []string        `json:"channels"`
	Priority             string          `json:"priority"`
	Content              json.RawMessage `json:"content"`
	RequestID            string          `json:"request_id"`
	TraceID              string          `json:"trace_id"`
	OccurredAt           time.Time       `json:"occurred_at"`
	AcceptedAt           time.Time       `json:"accepted_at"`
	SendAt               *time.Time      `json:"send_at"`
	ExpiresAt            *time.Time      `json:"expires_at"`
	IdempotencyExpiresAt time.Time       `json:"idempotency_expires_at"`
	Routes               []Route         `json:"routes"`
}

func priorityName(p int16) string {
	if p == 1 {
		return string(heraldtype.PriorityBulk)
	}
	return string(heraldtype.PriorityTransactional)
}

// notFound maps pgx.ErrNoRows, and the no_data_found herald's functions
// raise for an id the caller may not see, to the 404 problem.
func notFound(err error, what string) error {
	var pgErr *pgconn.PgError
	if errors.Is(err, pgx.ErrNoRows) || errors.As(err, &pgErr) && pgErr.Code == "P0002" {
		p := *errNotFound
		p.Detail = "no such " + what
		return &p
	}
	return err
}

// get is GET /v1/notifications/{id}.
func (s *Server) get(w http.ResponseWriter, r *request) error {
	var n *Notification
	err := s.inTx(r, func(tx pgx.Tx, _ string) error {
		if p := checkAccept(r.Request); p != nil {
			return p
		}
		id, err := pathText(r, "id")
		if err != nil {
			return err
		}
		q := store.New()
		rec, err := q.RecordGet(r.Context(), tx, id)
		if err != nil {
			return notFound(err, "notification")
		}
		routes, err := q.RouteListByNotification(r.Context(), tx, id)
		if err != nil {
			return err
		}
		n = &Notification{
			ID: rec.NotificationID, NotificationType: rec.NotificationType, Producer: rec.Producer,
			IdempotencyKey: rec.IdempotencyKey, AudienceKind: rec.AudienceKind, UserIDs: []string{},
			Channels: rec.Channels, Priority: priorityName(rec.Priority), Content: json.RawMessage(rec.PayloadJson),
			RequestID: rec.RequestID, TraceID: rec.TraceID, OccurredAt: rec.OccurredAt, AcceptedAt: rec.AcceptedAt,
			SendAt: rec.SendAt, ExpiresAt: rec.ExpiresAt, IdempotencyExpiresAt: rec.IdempotencyExpiresAt,
			Routes: make([]Route, len(routes)),
		}
		if err := json.Unmarshal(rec.RecipientUserIds, &n.UserIDs); err != nil {
			return fmt.Errorf("decode recipient user ids: %w", err)
		}
		for i, rt := range routes {
			n.Routes[i] = Route{
				ID: rt.RouteID, Channel: rt.Channel, RecipientRef: rt.RecipientRef, Status: rt.Status,
				Attempts: int(rt.AttemptCount), MaxAttempts: int(rt.MaxAttempts), Providers: rt.Providers,
				NextAttemptAt: rt.DueAt(), LastErrorClass: rt.LastErrorClassification,
				LastError: rt.LastErrorMessage, LastErrorAt: rt.LastErrorAt, SMSEncoding: rt.SmsEncoding,
				SMSSegments: int(rt.SmsSegments), ProviderMessageID: rt.ProviderMessageID,
				DeliveryStatusAt: rt.DeliveryStatusAt, DeliveryError: rt.DeliveryError,
				CreatedAt: rt.CreatedAt, UpdatedAt: rt.UpdatedAt, PublishedAt: rt.PublishedAt,
				DeadLetteredAt: rt.DeadLetteredAt, SkippedAt: rt.SkippedAt, CanceledAt: rt.CanceledAt,
				ExpiresAt: rt.ExpiresAt,
			}
			if n.Routes[i].Providers == nil {
				n.Routes[i].Providers = []string{}
			}
			if rt.DeliveryStatus != nil {
				n.Routes[i].DeliveryStatus = *rt.DeliveryStatus
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, n)
	return nil
}

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
				IdempotencyKey: rec.IdempotencyKey, Channels: rec.Channels, Priority: priorityName(rec.Priority),
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

// deleteRecipient is DELETE /v1/recipients/{user_id}: 204, or 404 when
// the producer has no entry for the user.
func (s *Server) deleteRecipient(w http.ResponseWriter, r *request) error {
	var deleted bool
	err := s.inTx(r, func(tx pgx.Tx, _ string) error {
		if p := checkAccept(r.Request); p != nil {
			return p
		}
		userID, err := pathText(r, "user_id")
		if err != nil {
			return err
		}
		if utf8.RuneCountInString(userID) > maxUserIDLen {
			// No entry can have it: refused as PUT refuses it.
			return fieldProblem("user_id", heraldtype.CodeInvalidField,
				fmt.Sprintf("user_id is longer than %d characters", maxUserIDLen))
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

// Health is the body of /healthz and /readyz, as the metrics listener's.
type Health struct {
	OK       bool   `json:"ok"`
	Database bool   `json:"database"`
	Error    string `json:"error,omitempty"`
}

// healthz answers 200 while the API's database login answers a ping.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	s.health(w, r, nil)
}

// readyz answers 200 when the database answers and Config.ReadyFunc (the
// migrations) is satisfied.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	s.health(w, r, s.cfg.ReadyFunc)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request, ready func(context.Context) error) {
	if p := checkAccept(r); p != nil {
		writeProblem(w, r, p)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	h := Health{}
	if err := s.pool.Ping(ctx); err != nil {
		h.Error = "database: " + err.Error()
	} else {
		h.Database = true
		h.OK = true
		if ready != nil {
			if err := ready(ctx); err != nil {
				h.OK, h.Error = false, err.Error()
			}
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	status := http.StatusOK
	if !h.OK {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, h)
}
