package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
)

// probeIsolation creates two producer logins for the run ("shop" and
// "rogue", with the run's suffix), has shop submit a notification and keep a
// directory entry, and then has rogue try what issue 10's findings did:
// read, cancel and resubmit shop's notification, rewrite shop's directory
// entry, lock the engine out, forge an audit row, insert a route no
// dispatcher would claim. The logins are dropped at the end. The hostile
// statements are deliberately raw SQL (they are what a person would type).
func probeIsolation(ctx context.Context, admin *pgxpool.Pool, newClient func(*pgxpool.Pool, *ClientConfig) (Client, error)) (*Isolation, error) {
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
