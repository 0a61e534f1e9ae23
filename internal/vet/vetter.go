// Package vet is the engine's check of what a producer's login stored
// itself. The Go client inserts records and routes in the producer's own
// process and transaction, and a producer's login may INSERT them in psql:
// nothing checked there can be trusted. The database puts every route a
// login other than the engine's inserts into lane '!vet' (migration
// 00028's policy), which no dispatcher claims; the Vetter takes them from
// there, checks each notification as the intake worker checks an intake
// entry (content blocklist on folded text, template rendering, SMS
// segment cap, size limit, campaign) and moves each route on: into its
// channel's queue, to a dead letter (content_blocked and the other intake
// codes), canceled (its campaign was canceled), or held for an operator
// (lane '!held', with a held_intents row naming the notification).
package vet

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/content"
	"github.com/heraldhq/herald/internal/gsm7"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/pglisten"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/wake"
)

// Defaults of Config.
const (
	// DefaultPollInterval is how often an idle Vetter looks for routes
	// without a hint on wake.VetTopic.
	DefaultPollInterval = time.Second
	// DefaultBatchSize is how many routes one VetOnce takes.
	DefaultBatchSize = 500
)

// Verdicts a route gets (RouteVetApply's).
const (
	verdictPass   = "pass"
	verdictHold   = "hold"
	verdictRefuse = "refuse"
	verdictCancel = "cancel"
)

// Config configures a Vetter; the zero value is valid.
type Config struct {
	// Limits are the intake's limits, applied to what was stored
	// directly; zero fields take the defaults.
	Limits intake.Limits
	// PollInterval is how often an idle Vetter looks; default
	// DefaultPollInterval.
	PollInterval time.Duration
	// BatchSize caps the routes of one VetOnce; default DefaultBatchSize.
	BatchSize int
	// ContentRulesMaxAge is content.CheckerConfig's RulesMaxAge.
	ContentRulesMaxAge time.Duration
	// Logger receives a line per route refused, held or canceled; nil
	// discards.
	Logger *slog.Logger
}

// Vetter checks routes waiting in lane '!vet'. Safe for concurrent use;
// vetters in several processes share the work (SKIP LOCKED).
type Vetter struct {
	pool    *pgxpool.Pool
	cfg     Config
	checker *content.Checker
	log     *slog.Logger
}

// New returns a Vetter on pool, which must be the engine's (the owner's)
// login: it reads every producer's rules and templates and moves their
// routes. A nil cfg means the defaults.
func New(pool *pgxpool.Pool, cfg *Config) *Vetter {
	if cfg == nil {
		cfg = &Config{}
	}
	c := *cfg
	c.Limits = c.Limits.WithDefaults()
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	log := cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	return &Vetter{pool: pool, cfg: c, log: log,
		checker: content.NewChecker(&content.CheckerConfig{RulesMaxAge: c.ContentRulesMaxAge, Logger: log})}
}

// Run vets until ctx is canceled, then returns nil. It looks for routes
// when the accept path's hint (wake.VetTopic, on a connection of its own)
// says a producer's login stored some, and every PollInterval in case a
// hint was lost; a full batch is followed at once by the next.
func (v *Vetter) Run(ctx context.Context) error {
	wakeUp := make(chan struct{}, 1)
	poke := func() {
		select {
		case wakeUp <- struct{}{}:
		default:
		}
	}
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		pglisten.Run(ctx, pglisten.Config{
			ConnConfig:    v.pool.Config().ConnConfig,
			Topic:         wake.VetTopic,
			NotifyFunc:    func(string) { poke() },
			ConnectedFunc: func(bool) { poke() },
			FailedFunc: func(err error, retryIn time.Duration) {
				v.log.Warn("vetter listener connection lost; reconnecting", "err", err, "retry_in", retryIn)
			},
		})
	}()
	defer func() { <-listening }()
	timer := time.NewTimer(v.cfg.PollInterval)
	defer timer.Stop()
	for {
		n, err := v.VetOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			v.log.ErrorContext(ctx, "vet routes", slog.Any("err", err))
		}
		if err == nil && n >= v.cfg.BatchSize {
			continue
		}
		timer.Reset(v.cfg.PollInterval)
		select {
		case <-ctx.Done():
			return nil
		case <-wakeUp:
		case <-timer.C:
		}
	}
}

// VetOnce vets one batch of waiting routes in one transaction and returns
// how many it moved.
func (v *Vetter) VetOnce(ctx context.Context) (int, error) {
	var moved int64
	err := pgx.BeginFunc(ctx, v.pool, func(tx pgx.Tx) error {
		q := store.New()
		rows, err := q.RouteVetLock(ctx, tx, int32(v.cfg.BatchSize))
		if err != nil || len(rows) == 0 {
			return err
		}
		var p store.RouteVetApplyParams
		decided := map[string]*decision{}
		for _, r := range rows {
			d, ok := decided[r.NotificationID]
			if !ok {
				if d, err = v.decide(ctx, tx, &r); err != nil {
					return err
				}
				decided[r.NotificationID] = d
				if d.verdict == verdictHold {
					names, err := q.HeldIntentInsertForNotification(ctx, tx, store.HeldIntentInsertForNotificationParams{
						Producer: r.Producer, IdempotencyKey: r.IdempotencyKey, NotificationType: r.NotificationType,
						Body: r.PayloadJson, RuleID: d.held.Rule.ID, Rule: d.held.Rule.String(), Part: d.held.Part,
						NotificationID: r.NotificationID,
					})
					if err != nil {
						return fmt.Errorf("hold notification: %w", err)
					}
					if names != r.NotificationID {
						// Its key is held for another notification: held
						// here, nothing would ever decide its routes.
						d = &decision{verdict: verdictRefuse, class: string(heraldtype.CodeIdempotencyConflict),
							message: fmt.Sprintf("the text matches %s, and its idempotency key is held for review for notification %s", &d.held.Rule, names),
							hint:    "stored by the producer's login with an idempotency key held for another notification: submit it with a key of its own"}
						decided[r.NotificationID] = d
					}
				}
				if d.verdict != verdictPass {
					v.log.InfoContext(ctx, "directly stored notification "+d.verdict, slog.String("notification_id", r.NotificationID),
						slog.String("producer", r.Producer), slog.String("class", d.class), slog.String("reason", d.message))
				}
			}
			enc, seg := "", int16(0)
			if r.Channel == channel.SMS && d.smsEncoding != "" {
				enc, seg = d.smsEncoding, int16(d.smsSegments)
			}
			p.NotificationIds = append(p.NotificationIds, r.NotificationID)
			p.RouteIds = append(p.RouteIds, r.RouteID)
			p.RouteTids = append(p.RouteTids, r.RouteTid)
			p.Verdicts = append(p.Verdicts, d.verdict)
			p.Classifications = append(p.Classifications, d.class)
			p.Messages = append(p.Messages, d.message)
			p.Hints = append(p.Hints, d.hint)
			p.SmsEncodings = append(p.SmsEncodings, enc)
			p.SmsSegments = append(p.SmsSegments, seg)
		}
		res, err := q.RouteVetApply(ctx, tx, p)
		moved = res.Moved
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("vet routes: %w", err)
	}
	return int(moved), nil
}

// decision is what happens to a notification's routes.
type decision struct {
	verdict, class, message, hint string
	held                          *content.Match
	smsEncoding                   string
	smsSegments                   int
}

// payload is a record's payload_json: a content intent's channels, or a
// templated one's reference and data (intake.TemplatePayload).
type payload struct {
	heraldtype.Content
	Template *heraldtype.TemplateRef `json:"template"`
	Data     map[string]any          `json:"data"`
}

// decide checks the notification of r.
func (v *Vetter) decide(ctx context.Context, tx pgx.Tx, r *store.RouteVetLockRow) (*decision, error) {
	lim := v.cfg.Limits
	refuse := func(code heraldtype.Code, msg string) *decision {
		return &decision{verdict: verdictRefuse, class: string(code), message: msg,
			hint: "stored by the producer's login without the engine's checks, and refused by them: fix the content and submit a new intent"}
	}
	if r.CampaignStopped {
		return &decision{verdict: verdictCancel, class: string(heraldtype.CodeCampaignCanceled),
			message: "its campaign was canceled (or never joined)"}, nil
	}
	if len(r.PayloadJson) > lim.MaxPayloadBytes {
		return refuse(heraldtype.CodeTooLarge, fmt.Sprintf("the content is %d bytes; the limit is %d", len(r.PayloadJson), lim.MaxPayloadBytes)), nil
	}
	// The dispatcher reads the payload with gjson, the channels' drivers
	// with encoding/json: of a key written twice they would read different
	// texts, and this check a third. The accept path writes canonical JSON,
	// which never repeats a key; a payload that does is refused.
	var pl payload
	if err := json.Unmarshal([]byte(r.PayloadJson), &pl); err != nil {
		return refuse(heraldtype.CodeWrongShape, "the payload is not an intent's content: "+err.Error()), nil
	}
	if dup := repeatedKey(r.PayloadJson); dup != "" {
		return refuse(heraldtype.CodeWrongShape, fmt.Sprintf("the payload repeats the key %q", dup)), nil
	}
	in := heraldtype.Intent{Producer: r.Producer, NotificationType: r.NotificationType, IdempotencyKey: r.IdempotencyKey,
		Channels: []string{r.Channel}}
	d := &decision{verdict: verdictPass}
	if code, msg, err := senderRefusal(ctx, tx, r.Channel, r.Producer, r.PayloadJson); err != nil || code != "" {
		return refuse(code, msg), err
	}
	// As the dispatcher does: the channel's own entry if there is one,
	// else the template.
	own := contentFor(&pl.Content, r.Channel)
	if pl.Template != nil && !own {
		in.Template, in.Data = pl.Template, pl.Data
	} else {
		pl.Template = nil
		in.Content = pl.Content
		if c := pl.SMS; c != nil && r.Channel == channel.SMS {
			enc, seg := gsm7.Encoding(c.Body)
			if seg > lim.MaxSMSSegments {
				return refuse(heraldtype.CodeSMSTooLong, fmt.Sprintf("the sms body needs %d %s segments; the limit is %d", seg, enc, lim.MaxSMSSegments)), nil
			}
			d.smsEncoding, d.smsSegments = enc, seg
		}
	}
	val := &intake.Validated{Intent: in, Routes: []intake.RoutePlan{{Channel: r.Channel}}}
	verdicts, err := v.checker.Check(ctx, tx, []*intake.Validated{val}, lim, nil)
	if err != nil {
		return nil, err
	}
	switch vd := verdicts[0]; {
	case vd.Err != nil:
		code, msg := heraldtype.CodeContentBlocked, vd.Err.Error()
		var ve *heraldtype.ValidationError
		if errors.As(vd.Err, &ve) && len(ve.Errors) > 0 {
			code, msg = ve.Errors[0].Code, ve.Errors[0].Message
		}
		return refuse(code, msg), nil
	case vd.Held != nil:
		return &decision{verdict: verdictHold, class: string(heraldtype.CodeContentBlocked), held: vd.Held,
			message: fmt.Sprintf("held for review: the text matches %s", &vd.Held.Rule)}, nil
	}
	if pl.Template != nil && r.Channel == channel.SMS && len(val.Routes) > 0 && val.Routes[0].SMSEncoding != "" {
		d.smsEncoding, d.smsSegments = val.Routes[0].SMSEncoding, val.Routes[0].SMSSegments
	}
	return d, nil
}

// contentFor reports whether c has an entry for channel ch.
func contentFor(c *heraldtype.Content, ch string) bool {
	switch ch {
	case channel.SMS:
		return c.SMS != nil
	case channel.Email:
		return c.Email != nil
	case channel.Webhook:
		return len(c.Webhook) > 0 && string(c.Webhook) != "null"
	}
	return false
}

// repeatedKey returns the first object key that payload (valid JSON)
// repeats within one object, or "".
func repeatedKey(payload string) string {
	dec := json.NewDecoder(strings.NewReader(payload))
	type frame struct {
		object bool
		keys   map[string]bool
		expect bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top != nil && top.object {
					top.expect = true
				}
				stack = append(stack, &frame{object: t == '{', keys: map[string]bool{}, expect: t == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.object && top.expect {
				if top.keys[t] {
					return t
				}
				top.keys[t] = true
				top.expect = false
				continue
			}
		}
		if top != nil && top.object {
			top.expect = true
		}
	}
}
