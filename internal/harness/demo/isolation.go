package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/content"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/wake"
)

// probeIsolation creates two producer logins for the run ("shop" and
// "rogue", with the run's suffix), has shop submit a notification and keep a
// directory entry, and then has rogue try what a hostile producer would:
// read, cancel and resubmit shop's notification, rewrite shop's directory
// entry, lock the engine out, forge an audit row, insert a route no
// dispatcher would claim, forge a held intent, listen to the engine's
// wake-ups while shop submits, and write a notification and its route by
// hand, past the Go client's checks, with the blocked word hidden (Evasions)
// for a rule on rogue's content that the running engine's vetter must
// apply. The logins and the rule are removed at the end. The hostile
// statements are deliberately raw SQL (they are what a person would type).
func probeIsolation(ctx context.Context, admin *pgxpool.Pool, newClient func(*pgxpool.Pool, *ClientConfig) (Client, error), hand handDoor) (*Isolation, error) {
	res := &Isolation{}
	var tag [3]byte
	_, _ = rand.Read(tag[:])
	suffix := hex.EncodeToString(tag[:])
	shopName, rogueName := "demo_shop_"+suffix, "demo_rogue_"+suffix
	var logins []string
	defer func() {
		for _, n := range logins {
			dropLogin(ctx, admin, n)
		}
	}()
	connect := func(name string) (*pgxpool.Pool, error) {
		p, err := createLogin(ctx, admin, name, "herald_producer")
		if err == nil {
			logins = append(logins, name)
		}
		return p, err
	}
	asShop, err := connect(shopName)
	if err != nil {
		res.Skipped = "this login cannot create and connect as producer logins: " + err.Error()
		return res, nil
	}
	defer asShop.Close()
	asRogue, err := connect(rogueName)
	if err != nil {
		res.Skipped = "this login cannot create and connect as producer logins: " + err.Error()
		return res, nil
	}
	defer asRogue.Close()

	shop, err := newClient(asShop, &ClientConfig{Actor: "shop-service"})
	if err != nil {
		return nil, err
	}
	defer shop.Close()
	rogue, err := newClient(asRogue, &ClientConfig{Actor: "rogue-service"})
	if err != nil {
		return nil, err
	}
	defer rogue.Close()
	// shop's notification is due in an hour, so the running engine leaves
	// it alone (the probe is about access, not delivery), and shop cancels
	// it at the end.
	sendAt := time.Now().Add(time.Hour)
	intent := func(producer string) *intake.Intent {
		return &intake.Intent{
			NotificationType: "order.shipped", Producer: producer, IdempotencyKey: "isolation-" + suffix,
			Audience: intake.Audience{UserIDs: []string{"u-isolation"}}, Channels: []string{"webhook"},
			Content: intake.Content{Webhook: []byte(`{"order":1}`)},
			SendAt:  sendAt,
		}
	}
	// rogue listens where the engine's wake-ups used to be named, and the
	// demo where they are (their names end in a secret rogue cannot read),
	// while shop submits.
	heard, err := listenBoth(ctx, admin, asRogue)
	if err != nil {
		return nil, err
	}
	defer heard.close()
	rcpt, err := submit(ctx, shop, intent(shopName))
	if err != nil {
		return nil, fmt.Errorf("isolation probe: submit as shop: %w", err)
	}
	if err := shop.UpsertRecipient(ctx, heraldtype.Recipient{UserID: "u-isolation", WebhookURL: "https://shop.example.com/hook"}, false); err != nil {
		return nil, fmt.Errorf("isolation probe: shop's directory entry: %w", err)
	}

	try := func(what string, refused func() (bool, string)) {
		ok, how := refused()
		res.Attempts = append(res.Attempts, Attempt{What: what, Refused: ok, How: how})
		if ok {
			res.Refused++
		}
	}
	sqlRefused := func(err error) (bool, string) {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return true, pgErr.Code + " " + pgErr.Message
		}
		if err != nil {
			return false, err.Error()
		}
		return false, "the database allowed it"
	}
	try("read shop's notification", func() (bool, string) {
		err := rogue.Get(ctx, rcpt.NotificationID)
		return errors.Is(err, ErrNotFound), fmt.Sprint(err)
	})
	try("cancel shop's notification", func() (bool, string) {
		err := rogue.Cancel(ctx, rcpt.NotificationID, "probe")
		return errors.Is(err, ErrNotFound), fmt.Sprint(err)
	})
	try("submit in shop's name", func() (bool, string) {
		_, err := submit(ctx, rogue, intent(shopName))
		return errors.Is(err, ErrForbidden), fmt.Sprint(err)
	})
	try("rewrite shop's user's webhook_url", func() (bool, string) {
		tag, err := asRogue.Exec(ctx, `UPDATE herald.recipients SET webhook_url = 'https://rogue.example.com/' WHERE user_id = 'u-isolation'`)
		if err != nil {
			return sqlRefused(err)
		}
		return tag.RowsAffected() == 0, fmt.Sprintf("%d rows changed: shop's entry is invisible to it", tag.RowsAffected())
	})
	try("move a route into shop's notification", func() (bool, string) {
		_, err := asRogue.Exec(ctx, `UPDATE herald.routes SET notification_id = $1, status = 'canceled' WHERE true`, rcpt.NotificationID)
		return sqlRefused(err)
	})
	try("LOCK TABLE herald.routes IN ACCESS EXCLUSIVE MODE", func() (bool, string) {
		err := pgx.BeginFunc(ctx, asRogue, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `LOCK TABLE herald.routes IN ACCESS EXCLUSIVE MODE NOWAIT`)
			return err
		})
		return sqlRefused(err)
	})
	try("forge a cancel by alice in the audit log", func() (bool, string) {
		_, err := asRogue.Exec(ctx, `INSERT INTO herald.audit_log (actor, action, affected, filter)
			VALUES ('alice', 'cancel', 1, jsonb_build_object('notification_id', $1::text))`, rcpt.NotificationID)
		return sqlRefused(err)
	})
	try("add a route no dispatcher claims (priority -32768) to its own notification", func() (bool, string) {
		own, err := submit(ctx, rogue, intent(rogueName))
		if err != nil {
			return false, err.Error()
		}
		defer func() {
			_ = rogue.Cancel(ctx, own.NotificationID, "isolation probe done")
		}()
		_, err = asRogue.Exec(ctx, `INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
			max_attempts, next_attempt_at, created_at, updated_at, priority)
			VALUES ($1, 'rogue', 'sms', '+14155550123', 'pending', 3, now(), now(), now(), -32768)`, own.NotificationID)
		return sqlRefused(err)
	})
	try("forge a held intent in shop's name (herald.held_intents)", func() (bool, string) {
		_, err := asRogue.Exec(ctx, `INSERT INTO herald.held_intents (producer, idempotency_key, body, rule_id, rule)
			VALUES ($1, 'forged', '{}', 1, 'forged')`, shopName)
		return sqlRefused(err)
	})
	try("LISTEN herald_routes and herald_vet while shop submits", func() (bool, string) {
		engine, rogueHeard := heard.wait(ctx)
		if engine == 0 {
			return false, "the engine's own topics carried nothing to compare with"
		}
		return rogueHeard == 0, fmt.Sprintf("heard %d; the engine's topics (named after a secret) carried %d meanwhile", rogueHeard, engine)
	})
	try(fmt.Sprintf("write %d notifications and routes by hand, the blocked word hidden", len(Evasions)), func() (bool, string) {
		d, err := writeByHand(ctx, admin, asRogue, rogueName, hand)
		if err != nil {
			return false, err.Error()
		}
		res.ByHand = d
		return d.Refused == d.Tried && d.Delivered == 0, fmt.Sprintf("%d of %d dead-lettered %s by the engine's vetter, %d delivered",
			d.Refused, d.Tried, heraldtype.CodeContentBlocked, d.Delivered)
	})
	if err := shop.Cancel(ctx, rcpt.NotificationID, "isolation probe done"); err != nil {
		return nil, fmt.Errorf("isolation probe: cancel as shop: %w", err)
	}
	return res, nil
}

// submit submits in alone through c, as a producer calling Submit would,
// and returns its Result: an error for a refusal as for a failed statement.
func submit(ctx context.Context, c Client, in *intake.Intent) (Result, error) {
	res, err := c.SubmitMany(ctx, []*intake.Intent{in})
	if err != nil {
		return Result{}, err
	}
	return res[0], res[0].Err
}

// listening is a LISTEN by rogue on the engine's topics' base names and
// one by the demo's login on their real names.
type listening struct {
	engine, rogue *pgxpool.Conn
}

// listenBoth starts both LISTENs.
func listenBoth(ctx context.Context, admin, asRogue *pgxpool.Pool) (*listening, error) {
	l := &listening{}
	var err error
	if l.engine, err = admin.Acquire(ctx); err != nil {
		return nil, err
	}
	if l.rogue, err = asRogue.Acquire(ctx); err != nil {
		l.engine.Release()
		return nil, err
	}
	for _, base := range []string{wake.RoutesTopic, wake.VetTopic} {
		name, err := store.New().NotifyTopic(ctx, l.engine, base)
		if err == nil {
			_, err = l.engine.Exec(ctx, "LISTEN "+pgx.Identifier{name}.Sanitize())
		}
		if err == nil {
			_, err = l.rogue.Exec(ctx, "LISTEN "+pgx.Identifier{base}.Sanitize())
		}
		if err != nil {
			l.close()
			return nil, fmt.Errorf("isolation probe: listen on %s: %w", base, err)
		}
	}
	return l, nil
}

// wait waits (up to two seconds) for the engine's topics to carry a
// notification, then counts what each listener received.
func (l *listening) wait(ctx context.Context) (engine, rogue int) {
	count := func(c *pgxpool.Conn, first, rest time.Duration) int {
		n := 0
		for wait := first; ; wait = rest {
			wctx, cancel := context.WithTimeout(ctx, wait)
			_, err := c.Conn().WaitForNotification(wctx)
			cancel()
			if err != nil {
				return n
			}
			n++
		}
	}
	engine = count(l.engine, 2*time.Second, 100*time.Millisecond)
	return engine, count(l.rogue, 100*time.Millisecond, 100*time.Millisecond)
}

// close closes both connections (a LISTEN stays with its connection, so
// neither goes back to its pool).
func (l *listening) close() {
	for _, c := range []*pgxpool.Conn{l.engine, l.rogue} {
		if c != nil {
			_ = c.Hijack().Close(context.Background())
		}
	}
}

// writeByHand adds a refuse rule on rogue's content for the blocked word
// (removed again at the end), writes one notification and its webhook
// route per evasion in one transaction of rogue's login, as a psql
// session can, and waits (up to ten seconds) for the engine's vetter to
// move them; it counts the content_blocked dead letters rogue's login
// reads, and what reached the receiver.
func writeByHand(ctx context.Context, admin, asRogue *pgxpool.Pool, rogue string, hand handDoor) (*DoorCount, error) {
	q := store.New()
	ruleID, err := q.ContentRuleInsert(ctx, admin, store.ContentRuleInsertParams{Producer: rogue, Kind: content.KindWord,
		Pattern: "jackpot", Mode: content.ModeRefuse, Note: "herald demo isolation probe"})
	if err != nil {
		return nil, fmt.Errorf("add the rule on %s: %w", rogue, err)
	}
	defer func() { _ = q.ContentRuleDelete(context.WithoutCancel(ctx), admin, ruleID) }()
	d := &DoorCount{Door: DoorByHand, Tried: len(Evasions)}
	var ids []string
	err = pgx.BeginFunc(ctx, asRogue, func(tx pgx.Tx) error {
		for i, e := range Evasions {
			var id string
			if err := tx.QueryRow(ctx, `INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind,
				payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at, channels)
				VALUES (gen_random_uuid()::text, 'promo', $1, 'addresses', json_build_object('webhook', json_build_object('text', $3::text))::text,
					$2, 'by-hand', now(), now(), now(), now() + interval '1 day', '{webhook}')
				RETURNING notification_id`, rogue, fmt.Sprintf("by-hand-%d", i), e.Text).Scan(&id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
				max_attempts, next_attempt_at, created_at, updated_at, lane)
				VALUES ($1, 'r1', 'webhook', $2, 'pending', 3, now(), now(), now(), '!vet')`, id, hand.url+strconv.Itoa(i)); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("write rows by hand: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var moved int
		if err := asRogue.QueryRow(ctx, `SELECT count(*) FROM herald.routes WHERE notification_id = ANY($1) AND lane <> '!vet'`,
			ids).Scan(&moved); err != nil {
			return nil, err
		}
		if moved == len(ids) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := asRogue.QueryRow(ctx, `SELECT count(*) FROM herald.dead_letters WHERE notification_id = ANY($1)
		AND failure_classification = $2`, ids, string(heraldtype.CodeContentBlocked)).Scan(&d.Refused); err != nil {
		return nil, err
	}
	d.Delivered = hand.delivered()
	d.How = fmt.Sprintf("lane !vet (the database's mark), dead-lettered %s by the engine's vetter", heraldtype.CodeContentBlocked)
	return d, nil
}
