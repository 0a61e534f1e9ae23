package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// workload is one run's intents; every notification's request_id starts
// with runID, which is how the summary finds this run's rows (a shared
// DATABASE_URL may hold others').
type workload struct {
	runID string
	// producer is the orders' producer (the demo producer's login, or
	// "shop").
	producer  string
	users     int
	srv       *Servers
	entryIDs  []string
	scheduled time.Time
}

func newWorkload(users int, srv *Servers) *workload {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return &workload{
		runID:    "demo-" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b),
		producer: "shop",
		users:    users,
		srv:      srv,
	}
}

func (w *workload) userID(i int) string { return fmt.Sprintf("u%04d", i) }

// recipient is user i's directory entry: most have an e-mail and a US
// phone; every 25th has no phone (its SMS is skipped), every 40th opted out
// of e-mail, every 50th has a mailbox that bounces (a dead letter), every
// 30th is greylisted once (a retry), every 67th has a number the providers
// cannot reach (a dead letter), one in four of the others (i%4 == 2) a
// Kenyan number, which the main SMS provider cannot reach today
// (SMSDownPrefix): the demo's routing rule for +254 fails over to the
// backup; and one in eight (i%8 == 3) a UK number, which the demo's rules
// send to the SMSC (SMSCPrefix).
func (w *workload) recipient(i int) heraldtype.Recipient {
	r := heraldtype.Recipient{
		UserID: w.userID(i),
		Email:  fmt.Sprintf("user%04d@example.test", i),
		Phone:  fmt.Sprintf("+1415555%04d", 1000+i),
		Locale: []string{"en-US", "pt-BR", "de-DE"}[i%3],
	}
	switch {
	case i%50 == 0:
		r.Email = fmt.Sprintf("%s%04d@example.test", MailboxBounce, i)
	case i%30 == 0:
		r.Email = fmt.Sprintf("%s%04d@example.test", MailboxGreylist, i)
	}
	switch {
	case i%25 == 0:
		r.Phone = ""
	case i%67 == 0:
		r.Phone = "+14155550199"
	case i%4 == 2:
		r.Phone = fmt.Sprintf("%s71%07d", SMSDownPrefix, 1000+i)
	case i%8 == 3:
		r.Phone = fmt.Sprintf("%s79111%05d", SMSCPrefix, i)
	}
	if i%40 == 0 {
		r.OptedOut = []string{"email"}
	}
	return r
}

func (w *workload) reqID(kind string, i int) string {
	return w.runID + ":" + kind + ":" + strconv.Itoa(i)
}

func (w *workload) orderShipped(i int) *intake.Intent {
	return &intake.Intent{
		NotificationType: "order.shipped",
		Producer:         w.producer,
		IdempotencyKey:   w.runID + ":order:" + strconv.Itoa(i),
		Audience:         intake.Audience{UserIDs: []string{w.userID(i)}},
		Channels:         []string{"sms", "email"},
		Content: intake.Content{
			SMS: &intake.SMSContent{Body: fmt.Sprintf("Your order #%d has shipped. Track it at https://shop.example/t/%d", 9000+i, 9000+i)},
			Email: &intake.EmailContent{
				Subject: fmt.Sprintf("Order #%d is on its way", 9000+i),
				Text:    "Good news: your order has shipped and should arrive in 2-3 days.",
			},
		},
		RequestID: w.reqID("order", i),
	}
}

// submit sends the workload through the client and the SQL door: the
// orders (and their retries and conflict) through shop, the producer's
// own client, everything else through client.
func (w *workload) submit(ctx context.Context, client, shop Client, pool *pgxpool.Pool, sum *Summary) error {
	for i := 1; i <= w.users; i++ {
		// The demo runs as the engine's login: its users go in the shared
		// directory, which every producer's routes fall back to.
		if err := client.UpsertRecipient(ctx, w.recipient(i), true); err != nil {
			return fmt.Errorf("upsert demo recipient: %w", err)
		}
	}

	// One order.shipped per user, by SMS and e-mail.
	var orders []*intake.Intent
	for i := 1; i <= w.users; i++ {
		orders = append(orders, w.orderShipped(i))
	}
	for chunk := range slices.Chunk(orders, 100) {
		res, err := shop.SubmitMany(ctx, chunk)
		if err != nil {
			return fmt.Errorf("submit demo orders: %w", err)
		}
		tally(res, sum)
	}
	sum.SubmittedClient += len(orders)

	var batch []*intake.Intent
	// A weekly newsletter to every user, bulk priority: claimed after the
	// transactional routes.
	all := make([]string, w.users)
	for i := range all {
		all[i] = w.userID(i + 1)
	}
	batch = append(batch, &intake.Intent{
		NotificationType: "newsletter.weekly", Producer: "marketing",
		IdempotencyKey: w.runID + ":newsletter", Audience: intake.Audience{UserIDs: all},
		Channels: []string{"email"}, Priority: heraldtype.PriorityBulk,
		Content:   intake.Content{Email: &intake.EmailContent{Subject: "This week at the shop", HTML: "<h1>New arrivals</h1><p>…</p>"}},
		RequestID: w.reqID("newsletter", 0),
	})
	// Webhooks to partners: most accept, two are gone (410, a dead letter at
	// once), one is down (503 until its budget of 3 attempts runs out).
	for i := range 23 {
		path := WebhookPathOK
		maxAttempts := 0
		switch {
		case i >= 22:
			path, maxAttempts = WebhookPathDown, 3
		case i >= 20:
			path = WebhookPathGone
		}
		batch = append(batch, &intake.Intent{
			NotificationType: "invoice.paid", Producer: "billing",
			IdempotencyKey: w.runID + ":invoice:" + strconv.Itoa(i),
			Audience:       intake.Audience{Webhook: []string{w.srv.Webhook + path + "partner-" + strconv.Itoa(i)}},
			Channels:       []string{"webhook"}, MaxAttempts: maxAttempts,
			Content:   intake.Content{Webhook: json.RawMessage(fmt.Sprintf(`{"invoice":"INV-%04d","amount_cents":%d}`, i, 1999+i))},
			RequestID: w.reqID("invoice", i),
		})
	}
	// Appointment reminders scheduled two seconds ahead.
	w.scheduled = time.Now().Add(2 * time.Second)
	for i := 1; i <= 10; i++ {
		batch = append(batch, &intake.Intent{
			NotificationType: "appointment.reminder", Producer: "clinic",
			IdempotencyKey: w.runID + ":reminder:" + strconv.Itoa(i),
			Audience:       intake.Audience{UserIDs: []string{w.userID(i)}},
			Channels:       []string{"sms"}, SendAt: w.scheduled,
			Content:   intake.Content{SMS: &intake.SMSContent{Body: "Reminder: your appointment is tomorrow at 10:00."}},
			RequestID: w.reqID("reminder", i),
		})
	}
	for chunk := range slices.Chunk(batch, 100) {
		res, err := client.SubmitMany(ctx, chunk)
		if err != nil {
			return fmt.Errorf("submit demo intents: %w", err)
		}
		tally(res, sum)
	}
	sum.SubmittedClient += len(batch)

	// A producer retrying after a timeout: the same 15 intents again.
	// Answered with the original notifications, nothing new stored.
	for i := 1; i <= min(15, w.users); i++ {
		submitOne(ctx, shop, w.orderShipped(i), sum)
	}
	// A producer bug: a key reused for a different request.
	conflicting := w.orderShipped(1)
	conflicting.Content.SMS.Body = "Your order has been cancelled."
	submitOne(ctx, shop, conflicting, sum)
	// An intent the client refuses with a field-level error.
	submitOne(ctx, client, &intake.Intent{
		NotificationType: "order.shipped", Producer: "shop", IdempotencyKey: w.runID + ":bad",
		Audience: intake.Audience{Email: []string{"not an address"}}, Channels: []string{"email"},
		Content: intake.Content{Email: &intake.EmailContent{Subject: "x", Text: "x"}},
	}, sum)

	return w.submitRaw(ctx, pool, sum)
}

// submitRaw INSERTs raw JSON into herald.intake, as a service in another
// language or a person with psql would: password resets (one to a mailbox
// that bounces), five repeats, one key conflict, and six malformed entries.
func (w *workload) submitRaw(ctx context.Context, pool *pgxpool.Pool, sum *Summary) error {
	reset := func(i int, subject string) string {
		addr := fmt.Sprintf("reset%03d@example.test", i)
		if i == 7 {
			addr = fmt.Sprintf("%s-reset%03d@example.test", MailboxBounce, i)
		}
		b, _ := json.Marshal(&intake.Intent{
			NotificationType: "password.reset", Producer: "accounts",
			IdempotencyKey: w.runID + ":reset:" + strconv.Itoa(i),
			Audience:       intake.Audience{Email: []string{addr}}, Channels: []string{"email"},
			Content:   intake.Content{Email: &intake.EmailContent{Subject: subject, Text: "Use the link to choose a new password. It expires in 30 minutes."}},
			RequestID: w.reqID("reset", i),
		})
		return string(b)
	}
	var bodies []string
	for i := range 40 {
		bodies = append(bodies, reset(i, "Reset your password"))
	}
	for i := range 5 {
		bodies = append(bodies, reset(i, "Reset your password"))
	}
	bodies = append(bodies, reset(0, "Your password was changed"))
	bodies = append(bodies,
		`this is not JSON`,
		`["an", "array"]`,
		`{"notification_type":"password.reset","idempotency_key":"k","channels":["email"],"audience":{"email":["a@example.test"]},"content":{"email":{"subject":"s","text":"t"}}}`,
		`{"notification_type":"x.y","producer":"p","idempotency_key":"k2","channels":["pigeon"],"audience":{"user_ids":["u1"]}}`,
		`{"notification_type":"otp.sent","producer":"auth","idempotency_key":"k3","channels":["sms"],"audience":{"sms":["+12"]},"content":{"sms":{"body":"123456"}}}`,
		`{"notification_type":"x.y","producer":"p","idempotency_key":"k4","channels":["email"],"audience":{"email":["a@example.test"]},"content":{"email":{"subject":"no body"}}}`,
	)
	ids, err := benchstore.New().IntakeInsertReturning(ctx, pool, bodies)
	if err != nil {
		return fmt.Errorf("insert raw intake entries: %w", err)
	}
	for _, id := range ids {
		w.entryIDs = append(w.entryIDs, "intake:"+strconv.FormatInt(id, 10))
	}
	sum.SubmittedRaw = len(bodies)
	return nil
}

// submitOne submits in alone, as a producer calling Submit would, and
// tallies its result, whatever it is: refusals are what the workload
// expects, and a failure shows in the summary.
func submitOne(ctx context.Context, client Client, in *intake.Intent, sum *Summary) {
	res, err := client.SubmitMany(ctx, []*intake.Intent{in})
	if err != nil {
		res = []Result{{Err: err}}
	}
	tally(res, sum)
	sum.SubmittedClient++
}

func tally(res []Result, sum *Summary) {
	for _, r := range res {
		switch {
		case r.Err == nil && r.Duplicate:
			sum.Duplicates++
		case errors.Is(r.Err, ErrConflict):
			sum.Conflicts++
		case errors.Is(r.Err, ErrInvalid):
			sum.Invalid++
		}
	}
}

// wait shows progress until the intake is drained and every route of the
// run is terminal. It returns ctx's cause if ctx is done first (the
// engine's error, when the engine stopped).
func (w *workload) wait(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, say func(string, ...any)) error {
	q := benchstore.New()
	deadline := time.Now().Add(timeout)
	start := time.Now()
	last := ""
	for {
		p, err := q.RouteProgressByRequestPrefix(ctx, pool, w.runID+":")
		if err != nil {
			return fmt.Errorf("read demo progress: %w", err)
		}
		waiting, err := q.IntakeCount(ctx, pool)
		if err != nil {
			return fmt.Errorf("read intake: %w", err)
		}
		line := fmt.Sprintf("routes %d: published %d, pending %d, in flight %d, retrying %d, dead %d, skipped %d; intake %d",
			p.Total, p.Published, p.Pending, p.Claimed, p.Failed, p.DeadLetter, p.Skipped, waiting)
		if line != last {
			say("  %5.1fs  %s", time.Since(start).Seconds(), line)
			last = line
		}
		if waiting == 0 && p.Total > 0 && p.Pending+p.Claimed+p.Failed == 0 && time.Now().After(w.scheduled) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("demo did not finish within %s: %s", timeout, line)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// waitPlane shows progress until what follows the routes is done: the
// providers have sent their receipts, the matcher has decided on
// every receipt of providers since since, and the run's status callbacks
// are delivered or failed.
func (w *workload) waitPlane(ctx context.Context, pool *pgxpool.Pool, providers []string, since time.Time, say func(string, ...any)) error {
	deadline := time.Now().Add(30 * time.Second)
	start := time.Now()
	last := ""
	for {
		// Sent before the database is read: a receipt stored in between
		// is then counted as still to match.
		posting := w.srv.receiptsPending()
		p, err := benchstore.New().DemoPlaneProgress(ctx, pool, benchstore.DemoPlaneProgressParams{
			Providers: providers, Since: since, RunPrefix: w.runID + ":"})
		if err != nil {
			return fmt.Errorf("read demo receipts and callbacks: %w", err)
		}
		line := fmt.Sprintf("receipts: %d still to send, %d to match; callbacks: %d to deliver", posting, p.ReceiptsWaiting, p.CallbacksWaiting)
		if line != last {
			say("  %5.1fs  %s", time.Since(start).Seconds(), line)
			last = line
		}
		if posting <= 0 && p.ReceiptsWaiting+p.CallbacksWaiting == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("receipts and callbacks did not settle within 30s: %s", line)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// summarize reads the run's outcome back from the database.
func (w *workload) summarize(ctx context.Context, pool *pgxpool.Pool, sum *Summary) error {
	q := benchstore.New()
	s, err := q.RecordSummaryByRequestPrefix(ctx, pool, w.runID+":")
	if err != nil {
		return fmt.Errorf("read demo summary: %w", err)
	}
	sum.Accepted, sum.Routes, sum.Published = s.Notifications, s.Routes, s.Published
	sum.DeadLettered, sum.Skipped, sum.Canceled = s.DeadLettered, s.Skipped, s.Canceled
	sum.Unfinished, sum.Retried, sum.Attempts = s.Unfinished, s.Retried, s.Attempts
	sum.Seconds = s.Seconds
	if sum.Seconds > 0 {
		sum.Throughput = float64(s.Published+s.DeadLettered+s.Skipped+s.Canceled) / sum.Seconds
	}
	parts, err := q.DemoRouteStorage(ctx, pool, w.runID+":")
	if err != nil {
		return fmt.Errorf("read demo route storage: %w", err)
	}
	for _, p := range parts {
		sum.RouteStorage = append(sum.RouteStorage, RouteStorage{Partition: p.Partition, Routes: p.Routes, Statuses: p.Statuses})
	}
	weeks, err := store.New().RouteWeeksList(ctx, pool)
	if err != nil {
		return fmt.Errorf("read week partitions: %w", err)
	}
	for _, wk := range weeks {
		sum.Weeks = append(sum.Weeks, wk.Week)
	}
	recs, err := q.DemoRecordStorage(ctx, pool, w.runID+":")
	if err != nil {
		return fmt.Errorf("read demo record storage: %w", err)
	}
	for _, p := range recs {
		sum.RecordStorage = append(sum.RecordStorage, RecordStorage{Partition: p.Partition, Records: p.Records, Keys: p.Keys})
	}
	rparts, err := store.New().RecordPartitionsList(ctx, pool)
	if err != nil {
		return fmt.Errorf("read record partitions: %w", err)
	}
	for _, p := range rparts {
		if week, ok := strings.CutPrefix(p.Partition, "records_w"); ok && p.Kind == "week" {
			sum.RecordWeeks = append(sum.RecordWeeks, week)
		}
	}
	dls, err := q.DeadLetterCountByRequestPrefix(ctx, pool, w.runID+":")
	if err != nil {
		return fmt.Errorf("read demo dead letters: %w", err)
	}
	for _, d := range dls {
		sum.DeadLetters = append(sum.DeadLetters, Count{Channel: d.Channel, Key: d.FailureClassification, Count: d.DeadLetters})
	}
	mals, err := q.MalformedIntentCountByEntryIDs(ctx, pool, w.entryIDs)
	if err != nil {
		return fmt.Errorf("read demo malformed intents: %w", err)
	}
	for _, mi := range mals {
		sum.Malformed += mi.Malformed
		sum.MalformedByCode = append(sum.MalformedByCode, Count{Key: mi.FailureCode, Count: mi.Malformed})
		if mi.FailureCode == string(heraldtype.CodeIdempotencyConflict) {
			sum.Conflicts += int(mi.Malformed)
		}
	}
	return nil
}
