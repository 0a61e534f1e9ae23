package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/channel/email"
	"github.com/heraldhq/herald/internal/channel/sms"
	"github.com/heraldhq/herald/internal/channel/webhook"
	"github.com/heraldhq/herald/internal/demo"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/maintenance"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/migrate"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/pgtemp"
	"github.com/heraldhq/herald/internal/store"
)

func init() {
	register(&command{
		name:    "demo",
		summary: "run the engine against loopback channel servers with a mixed workload, and summarise it",
		run:     runDemo,
	})
}

// demoSummary is what `herald demo` reports; every count but the client's
// own answers (duplicates, conflicts and refusals it was told about) is read
// back from the database.
type demoSummary struct {
	RunID       string `json:"run_id"`
	DatabaseURL string `json:"database_url"`
	Throwaway   bool   `json:"throwaway"`
	Kept        bool   `json:"kept"`

	SubmittedClient int `json:"submitted_client"`
	SubmittedRaw    int `json:"submitted_raw"`

	// Accepted is the notifications stored for this run.
	Accepted int64 `json:"accepted"`
	// Duplicates are submits answered with the original notification (Go
	// client receipts plus the intake worker's duplicate results).
	Duplicates int `json:"duplicates"`
	// Conflicts are idempotency conflicts: the client's ConflictErrors plus
	// the raw entries recorded as malformed with code idempotency_conflict.
	Conflicts int `json:"conflicts"`
	// Invalid are intents the Go client refused with field errors.
	Invalid int `json:"invalid"`

	Routes       int64 `json:"routes"`
	Published    int64 `json:"published"`
	Retried      int64 `json:"retried"`
	DeadLettered int64 `json:"dead_lettered"`
	Skipped      int64 `json:"skipped"`
	Canceled     int64 `json:"canceled"`
	Unfinished   int64 `json:"unfinished"`
	Attempts     int64 `json:"attempts"`
	Malformed    int64 `json:"malformed"`

	// Seconds spans the first acceptance to the last route's terminal
	// change; Throughput is terminal routes per second over it.
	Seconds    float64 `json:"seconds"`
	Throughput float64 `json:"throughput_routes_per_second"`
	Elapsed    float64 `json:"elapsed_seconds"`

	// Isolation is what a second producer's login tried and was refused.
	Isolation *demoIsolation `json:"isolation"`

	DeadLetters     []demoCount `json:"dead_letters_by"`
	MalformedByCode []demoCount `json:"malformed_by_code"`
	Commands        []string    `json:"commands"`
}

type demoCount struct {
	Channel string `json:"channel,omitempty"`
	Key     string `json:"key"`
	Count   int64  `json:"count"`
}

type demoFlags struct {
	globalFlags
	keep    bool
	users   int
	timeout time.Duration
	metrics string
}

func runDemo(ctx context.Context, m *Main, args []string) error {
	var f demoFlags
	fs := m.newFlagSet("demo", &f.globalFlags)
	fs.BoolVar(&f.JSON, "json", false, "print the summary as JSON (progress still goes to stderr)")
	fs.BoolVar(&f.keep, "keep", false, "leave the throwaway PostgreSQL running after the summary, until Ctrl-C")
	fs.IntVar(&f.users, "users", 200, "users in the demo's recipient directory (the workload scales with it)")
	fs.DurationVar(&f.timeout, "timeout", 50*time.Second, "give up if the workload has not finished by then")
	fs.StringVar(&f.metrics, "metrics-addr", "", "serve /metrics, /healthz and /readyz here while the demo runs, e.g. 127.0.0.1:9090")
	if m.Getenv("HERALD_LOG_LEVEL") == "" {
		_ = fs.Set("log-level", "error") // the progress lines are the demo's output
	}
	if err := m.parse(fs, &f.globalFlags, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if f.users < 10 || f.users > 5000 {
		return usageError{fmt.Errorf("invalid -users %d: want 10 to 5000", f.users)}
	}
	if f.timeout <= 0 {
		return usageError{fmt.Errorf("invalid -timeout %s: must be positive", f.timeout)}
	}
	start := time.Now()
	logger := m.logger(&f.globalFlags)
	say := func(format string, a ...any) { fmt.Fprintf(m.Stderr, format+"\n", a...) }

	var cluster *pgtemp.Cluster
	throwaway := f.DatabaseURL == "" && m.Getenv("PGHOST") == "" && m.Getenv("PGDATABASE") == ""
	if throwaway {
		say("demo: no DATABASE_URL: starting a throwaway PostgreSQL from the local binaries")
		var err error
		cluster, err = pgtemp.Start(ctx, nil)
		if err != nil {
			return fmt.Errorf("start throwaway postgres: %w", err)
		}
		defer func() {
			if err := cluster.Stop(); err != nil {
				logger.Warn("stop throwaway postgres", "err", err)
			}
		}()
		f.DatabaseURL = cluster.URL("postgres")
		say("demo: PostgreSQL at %s (removed when the demo exits)", redactConnString(f.DatabaseURL))
	}
	pool, err := m.pool(ctx, &f.globalFlags)
	if err != nil {
		return err
	}
	steps, err := migrate.New(pool, &migrate.Config{Logger: logger}).Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	say("demo: schema migrated (%d migrations applied)", len(steps))

	srv, err := demo.Start(ctx)
	if err != nil {
		return err
	}
	defer srv.Close()
	say("demo: loopback channels: webhook receiver %s, SMTP %s:%d, SMS provider %s",
		srv.Webhook, srv.SMTPHost, srv.SMTPPort, srv.SMS)

	reg := metrics.NewRegistry()
	met := metrics.New(reg)
	if f.metrics != "" {
		reg.MustRegister(metrics.NewBacklogCollector(pool, &metrics.BacklogCollectorConfig{
			Channels: []string{"email", "sms", "webhook"}, Logger: logger,
		}))
		h, err := metrics.NewHandler(&metrics.HandlerConfig{Pool: pool, Gatherer: reg, Logger: logger})
		if err != nil {
			return err
		}
		mctx, stop := context.WithCancel(ctx)
		defer stop()
		addr, _, err := metrics.Server(mctx, f.metrics, h)
		if err != nil {
			return err
		}
		say("demo: metrics at http://%s/metrics (and /healthz, /readyz)", addr)
	}
	eng, err := startDemoEngine(ctx, pool, srv, met, logger)
	if err != nil {
		return err
	}
	defer eng.stop()

	w := newDemoWorkload(f.users, srv)
	say("demo: run %s: submitting through the Go client and raw INSERTs into herald.intake", w.runID)
	sum := &demoSummary{RunID: w.runID, DatabaseURL: redactConnString(f.DatabaseURL), Throwaway: throwaway, Kept: throwaway && f.keep}
	client, err := herald.NewClient(pool, &herald.Config{Logger: logger, ResultFunc: met.Intent})
	if err != nil {
		return err
	}
	defer client.Close()
	if err := w.submit(ctx, client, pool, sum); err != nil {
		return err
	}
	say("demo: submitted %d intents through the client and %d raw entries; delivering…", sum.SubmittedClient, sum.SubmittedRaw)

	if err := w.wait(ctx, pool, f.timeout, say); err != nil {
		return err
	}
	keep := throwaway && f.keep
	if !keep {
		// Stopped before the summary so the intake worker's last results are
		// counted; with -keep the engine runs on, so a replay from another
		// terminal is delivered.
		eng.stop()
	}
	sum.Duplicates += int(eng.intakeDuplicates.Load())
	if err := w.summarize(ctx, pool, sum); err != nil {
		return err
	}
	say("demo: a second producer's login tries to step outside its own rows…")
	if sum.Isolation, err = probeIsolation(ctx, pool); err != nil {
		return err
	}
	sum.Elapsed = time.Since(start).Seconds()
	sum.Commands = demoCommands(f.DatabaseURL, throwaway, f.keep)

	if f.JSON {
		if err := writeJSON(m.Stdout, sum); err != nil {
			return err
		}
	} else {
		printDemoSummary(m, sum)
	}
	if keep {
		say("demo: PostgreSQL and the engine stay up at %s; press Ctrl-C to stop and remove them", redactConnString(f.DatabaseURL))
		<-ctx.Done()
	}
	return nil
}

// demoEngine is the engine of `herald serve`, in-process: the dispatcher,
// the raw-intake worker and maintenance.
type demoEngine struct {
	cancel           context.CancelFunc
	wg               sync.WaitGroup
	maint            *maintenance.Maintenance
	closers          []func() error
	once             sync.Once
	intakeDuplicates atomic.Int64
}

func startDemoEngine(ctx context.Context, pool *pgxpool.Pool, srv *demo.Servers, met *metrics.Metrics, logger *slog.Logger) (*demoEngine, error) {
	e := &demoEngine{}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	wh, err := webhook.New(webhook.Config{
		Secrets:      []string{webhook.SecretPrefix + base64.StdEncoding.EncodeToString(secret)},
		AllowPrivate: true, // the receiver is on loopback
		Timeout:      5 * time.Second,
		Logger:       logger,
	})
	if err != nil {
		return nil, err
	}
	e.closers = append(e.closers, wh.Close)
	em, err := email.New(email.Config{
		Host: srv.SMTPHost, Port: srv.SMTPPort, TLS: email.TLSNone,
		From: "herald demo <noreply@example.test>", HeloName: "localhost",
		Timeout: 5 * time.Second, MaxIdleConns: 4, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	e.closers = append(e.closers, em.Close)
	sm, err := sms.New(sms.Config{URL: srv.SMS, APIKey: srv.SMSAPIKey, From: "HERALD", Timeout: 5 * time.Second, Logger: logger})
	if err != nil {
		return nil, err
	}
	e.closers = append(e.closers, sm.Close)

	// Short backoffs so that retries happen while you watch; production
	// defaults are seconds to minutes.
	backoff := dispatch.BackoffConfig{Base: 100 * time.Millisecond, Cap: 2 * time.Second}
	disp, err := dispatch.New(pool, &dispatch.Config{
		Channels: map[string]dispatch.ChannelConfig{
			"webhook": {Deliverer: wh, Concurrency: 8, MaxAttempts: 5, Backoff: backoff, Timeout: 5 * time.Second},
			"email":   {Deliverer: em, Concurrency: 4, MaxAttempts: 5, Backoff: backoff, Timeout: 5 * time.Second},
			"sms":     {Deliverer: sm, Concurrency: 8, MaxAttempts: 5, Backoff: backoff, Timeout: 5 * time.Second},
		},
		PollInterval:    200 * time.Millisecond,
		ShutdownTimeout: 5 * time.Second,
		Logger:          logger,
		Metrics:         met,
	})
	if err != nil {
		return nil, err
	}
	worker, err := intake.NewWorker(pool, &intake.WorkerConfig{
		Logger:       logger,
		PollInterval: 200 * time.Millisecond,
		ResultFunc: func(producer, result string) {
			met.Intent(producer, result)
			if result == intake.ResultDuplicate {
				e.intakeDuplicates.Add(1)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	e.maint, err = maintenance.New(pool, &maintenance.Config{
		Logger: logger, Metrics: met, RunOnStart: true,
		// The operator's bulk replay runs where maintenance runs.
		Workers: func(w *river.Workers) error { return operator.AddWorkers(w, pool, nil) },
	})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	for _, run := range []func(context.Context) error{disp.Run, worker.Run, e.maint.Run} {
		e.wg.Go(func() {
			if err := run(rctx); err != nil {
				logger.Error("demo engine part stopped", "err", err)
			}
		})
	}
	return e, nil
}

// stop stops the engine once: the dispatcher and worker drain, maintenance
// stops, the deliverers close their connections.
func (e *demoEngine) stop() {
	e.once.Do(func() {
		e.cancel()
		e.wg.Wait()
		for _, c := range e.closers {
			_ = c()
		}
	})
}

// demoWorkload is one run's intents; every notification's request_id starts
// with runID, which is how the summary finds this run's rows (a shared
// DATABASE_URL may hold others').
type demoWorkload struct {
	runID     string
	users     int
	srv       *demo.Servers
	entryIDs  []string
	scheduled time.Time
}

func newDemoWorkload(users int, srv *demo.Servers) *demoWorkload {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return &demoWorkload{
		runID: "demo-" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b),
		users: users,
		srv:   srv,
	}
}

func (w *demoWorkload) userID(i int) string { return fmt.Sprintf("u%04d", i) }

// recipient is user i's directory entry: most have an e-mail and a phone;
// every 25th has no phone (its SMS is skipped), every 40th opted out of
// e-mail, every 50th has a mailbox that bounces (a dead letter), every 30th
// is greylisted once (a retry), and every 67th has a number the provider
// cannot reach (a dead letter).
func (w *demoWorkload) recipient(i int) herald.Recipient {
	r := herald.Recipient{
		UserID: w.userID(i),
		Email:  fmt.Sprintf("user%04d@example.test", i),
		Phone:  fmt.Sprintf("+1415555%04d", 1000+i),
		Locale: []string{"en-US", "pt-BR", "de-DE"}[i%3],
	}
	switch {
	case i%50 == 0:
		r.Email = fmt.Sprintf("%s%04d@example.test", demo.MailboxBounce, i)
	case i%30 == 0:
		r.Email = fmt.Sprintf("%s%04d@example.test", demo.MailboxGreylist, i)
	}
	switch {
	case i%25 == 0:
		r.Phone = ""
	case i%67 == 0:
		r.Phone = "+14155550199"
	}
	if i%40 == 0 {
		r.OptedOut = []string{"email"}
	}
	return r
}

func (w *demoWorkload) reqID(kind string, i int) string {
	return w.runID + ":" + kind + ":" + strconv.Itoa(i)
}

func (w *demoWorkload) orderShipped(i int) *herald.Intent {
	return &herald.Intent{
		NotificationType: "order.shipped",
		Producer:         "shop",
		IdempotencyKey:   w.runID + ":order:" + strconv.Itoa(i),
		Audience:         herald.Audience{UserIDs: []string{w.userID(i)}},
		Channels:         []string{"sms", "email"},
		Content: herald.Content{
			SMS: &herald.SMSContent{Body: fmt.Sprintf("Your order #%d has shipped. Track it at https://shop.example/t/%d", 9000+i, 9000+i)},
			Email: &herald.EmailContent{
				Subject: fmt.Sprintf("Order #%d is on its way", 9000+i),
				Text:    "Good news: your order has shipped and should arrive in 2-3 days.",
			},
		},
		RequestID: w.reqID("order", i),
	}
}

// submit sends the workload through both doors.
func (w *demoWorkload) submit(ctx context.Context, client *herald.Client, pool *pgxpool.Pool, sum *demoSummary) error {
	for i := 1; i <= w.users; i++ {
		// The demo runs as the engine's login: its users go in the shared
		// directory, which every producer's routes fall back to.
		if err := client.UpsertSharedRecipient(ctx, w.recipient(i)); err != nil {
			return fmt.Errorf("upsert demo recipient: %w", err)
		}
	}

	var batch []*herald.Intent
	// One order.shipped per user, by SMS and e-mail.
	for i := 1; i <= w.users; i++ {
		batch = append(batch, w.orderShipped(i))
	}
	// A weekly newsletter to every user, bulk priority: claimed after the
	// transactional routes.
	all := make([]string, w.users)
	for i := range all {
		all[i] = w.userID(i + 1)
	}
	batch = append(batch, &herald.Intent{
		NotificationType: "newsletter.weekly", Producer: "marketing",
		IdempotencyKey: w.runID + ":newsletter", Audience: herald.Audience{UserIDs: all},
		Channels: []string{"email"}, Priority: herald.PriorityBulk,
		Content:   herald.Content{Email: &herald.EmailContent{Subject: "This week at the shop", HTML: "<h1>New arrivals</h1><p>…</p>"}},
		RequestID: w.reqID("newsletter", 0),
	})
	// Webhooks to partners: most accept, two are gone (410, a dead letter at
	// once), one is down (503 until its budget of 3 attempts runs out).
	for i := range 23 {
		path := demo.WebhookPathOK
		maxAttempts := 0
		switch {
		case i >= 22:
			path, maxAttempts = demo.WebhookPathDown, 3
		case i >= 20:
			path = demo.WebhookPathGone
		}
		batch = append(batch, &herald.Intent{
			NotificationType: "invoice.paid", Producer: "billing",
			IdempotencyKey: w.runID + ":invoice:" + strconv.Itoa(i),
			Audience:       herald.Audience{Webhook: []string{w.srv.Webhook + path + "partner-" + strconv.Itoa(i)}},
			Channels:       []string{"webhook"}, MaxAttempts: maxAttempts,
			Content:   herald.Content{Webhook: json.RawMessage(fmt.Sprintf(`{"invoice":"INV-%04d","amount_cents":%d}`, i, 1999+i))},
			RequestID: w.reqID("invoice", i),
		})
	}
	// Appointment reminders scheduled two seconds ahead.
	w.scheduled = time.Now().Add(2 * time.Second)
	for i := 1; i <= 10; i++ {
		batch = append(batch, &herald.Intent{
			NotificationType: "appointment.reminder", Producer: "clinic",
			IdempotencyKey: w.runID + ":reminder:" + strconv.Itoa(i),
			Audience:       herald.Audience{UserIDs: []string{w.userID(i)}},
			Channels:       []string{"sms"}, SendAt: w.scheduled,
			Content:   herald.Content{SMS: &herald.SMSContent{Body: "Reminder: your appointment is tomorrow at 10:00."}},
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
		r, err := client.Submit(ctx, w.orderShipped(i))
		tally([]herald.SubmitResult{{Receipt: r, Err: err}}, sum)
		sum.SubmittedClient++
	}
	// A producer bug: a key reused for a different request.
	conflicting := w.orderShipped(1)
	conflicting.Content.SMS.Body = "Your order has been cancelled."
	_, err := client.Submit(ctx, conflicting)
	tally([]herald.SubmitResult{{Err: err}}, sum)
	sum.SubmittedClient++
	// An intent the client refuses with a field-level error.
	_, err = client.Submit(ctx, &herald.Intent{
		NotificationType: "order.shipped", Producer: "shop", IdempotencyKey: w.runID + ":bad",
		Audience: herald.Audience{Email: []string{"not an address"}}, Channels: []string{"email"},
		Content: herald.Content{Email: &herald.EmailContent{Subject: "x", Text: "x"}},
	})
	tally([]herald.SubmitResult{{Err: err}}, sum)
	sum.SubmittedClient++

	return w.submitRaw(ctx, pool, sum)
}

// submitRaw INSERTs raw JSON into herald.intake, as a service in another
// language or a person with psql would: password resets (one to a mailbox
// that bounces), five repeats, one key conflict, and six malformed entries.
func (w *demoWorkload) submitRaw(ctx context.Context, pool *pgxpool.Pool, sum *demoSummary) error {
	reset := func(i int, subject string) string {
		addr := fmt.Sprintf("reset%03d@example.test", i)
		if i == 7 {
			addr = fmt.Sprintf("%s-reset%03d@example.test", demo.MailboxBounce, i)
		}
		b, _ := json.Marshal(&herald.Intent{
			NotificationType: "password.reset", Producer: "accounts",
			IdempotencyKey: w.runID + ":reset:" + strconv.Itoa(i),
			Audience:       herald.Audience{Email: []string{addr}}, Channels: []string{"email"},
			Content:   herald.Content{Email: &herald.EmailContent{Subject: subject, Text: "Use the link to choose a new password. It expires in 30 minutes."}},
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
	ids, err := store.New().IntakeInsertReturning(ctx, pool, bodies)
	if err != nil {
		return fmt.Errorf("insert raw intake entries: %w", err)
	}
	for _, id := range ids {
		w.entryIDs = append(w.entryIDs, "intake:"+strconv.FormatInt(id, 10))
	}
	sum.SubmittedRaw = len(bodies)
	return nil
}

func tally(res []herald.SubmitResult, sum *demoSummary) {
	for _, r := range res {
		var ve *herald.ValidationError
		switch {
		case r.Err == nil && r.Receipt != nil && r.Receipt.Duplicate:
			sum.Duplicates++
		case errors.Is(r.Err, herald.ErrIdempotencyConflict):
			sum.Conflicts++
		case errors.As(r.Err, &ve):
			sum.Invalid++
		}
	}
}

// wait shows progress until the intake is drained and every route of the
// run is terminal.
func (w *demoWorkload) wait(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, say func(string, ...any)) error {
	q := store.New()
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
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// summarize reads the run's outcome back from the database.
func (w *demoWorkload) summarize(ctx context.Context, pool *pgxpool.Pool, sum *demoSummary) error {
	q := store.New()
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
	dls, err := q.DeadLetterCountByRequestPrefix(ctx, pool, w.runID+":")
	if err != nil {
		return fmt.Errorf("read demo dead letters: %w", err)
	}
	for _, d := range dls {
		sum.DeadLetters = append(sum.DeadLetters, demoCount{Channel: d.Channel, Key: d.FailureClassification, Count: d.DeadLetters})
	}
	mals, err := q.MalformedIntentCountByEntryIDs(ctx, pool, w.entryIDs)
	if err != nil {
		return fmt.Errorf("read demo malformed intents: %w", err)
	}
	for _, mi := range mals {
		sum.Malformed += mi.Malformed
		sum.MalformedByCode = append(sum.MalformedByCode, demoCount{Key: mi.FailureCode, Count: mi.Malformed})
		if mi.FailureCode == herald.CodeIdempotencyConflict {
			sum.Conflicts += int(mi.Malformed)
		}
	}
	return nil
}

// demoCommands are the commands that inspect the run's dead letters. The
// database URL is shown without its password.
func demoCommands(dbURL string, throwaway, keep bool) []string {
	cmds := []string{
		"export DATABASE_URL='" + redactConnString(dbURL) + "'",
		"go run ./cmd/herald dead-letters list",
		"go run ./cmd/herald dead-letters list --channel email --json",
		"go run ./cmd/herald malformed list",
		`psql "$DATABASE_URL" -c 'SELECT channel, classification, count(*) FROM herald.dead_letter_view GROUP BY 1, 2 ORDER BY 1, 2'`,
		`psql "$DATABASE_URL" -c 'SELECT notification_type, channel, attempts, classification, message, recovery_hint FROM herald.dead_letter_view ORDER BY dead_lettered_at DESC LIMIT 20'`,
	}
	if throwaway && !keep {
		cmds = append([]string{"# the throwaway database is gone once the demo exits: run `go run ./cmd/herald demo -keep` to keep it up, then in another terminal:"}, cmds...)
	}
	return cmds
}

func printDemoSummary(m *Main, s *demoSummary) {
	out := m.Stdout
	fmt.Fprintf(out, "\nherald demo %s\n\n", s.RunID)
	row := func(name string, v any, note string) { fmt.Fprintf(out, "  %-14s %8v   %s\n", name, v, note) }
	row("submitted", s.SubmittedClient+s.SubmittedRaw, fmt.Sprintf("%d through the Go client, %d raw INSERTs into herald.intake", s.SubmittedClient, s.SubmittedRaw))
	row("accepted", s.Accepted, "notifications stored")
	row("duplicates", s.Duplicates, "repeats answered with the original notification, nothing stored")
	row("conflicts", s.Conflicts, "idempotency key reused for a different request")
	row("invalid", s.Invalid, "refused by the Go client with field errors")
	row("malformed", s.Malformed, "raw entries kept in herald.malformed_intents (the raw conflict included)")
	row("routes", s.Routes, "one per (channel, recipient)")
	row("published", s.Published, "delivered")
	row("retried", s.Retried, "routes that needed more than one attempt (throttling, 5xx, greylisting)")
	row("dead-lettered", s.DeadLettered, "permanent failures and exhausted budgets, in herald.dead_letters")
	row("skipped", s.Skipped, "no address for the channel, or opted out")
	row("unfinished", s.Unfinished, "")
	row("throughput", fmt.Sprintf("%.0f/s", s.Throughput), fmt.Sprintf("terminal routes over %.1fs, first acceptance to last outcome", s.Seconds))

	if len(s.DeadLetters) > 0 {
		fmt.Fprintln(out, "\ndead letters by channel and classification:")
		tw := newTable(out)
		for _, d := range s.DeadLetters {
			fmt.Fprintf(tw, "  %s\t%s\t%d\n", d.Channel, d.Key, d.Count)
		}
		_ = tw.Flush()
	}
	if len(s.MalformedByCode) > 0 {
		fmt.Fprintln(out, "\nmalformed intents by failure code:")
		tw := newTable(out)
		for _, d := range s.MalformedByCode {
			fmt.Fprintf(tw, "  %s\t%d\n", d.Key, d.Count)
		}
		_ = tw.Flush()
	}
	if iso := s.Isolation; iso != nil {
		if iso.Skipped != "" {
			fmt.Fprintf(out, "\nisolation: not probed (%s)\n", iso.Skipped)
		} else {
			fmt.Fprintf(out, "\nisolation: %d of %d attempts by a second producer's login refused\n", iso.Refused, len(iso.Attempts))
			tw := newTable(out)
			for _, a := range iso.Attempts {
				verdict := "refused"
				if !a.Refused {
					verdict = "ALLOWED"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", a.What, verdict, a.How)
			}
			_ = tw.Flush()
		}
	}
	fmt.Fprintln(out, "\ninspect the dead letters:")
	for _, c := range s.Commands {
		fmt.Fprintln(out, "  "+c)
	}
	fmt.Fprintf(out, "\nfinished in %.1fs\n", s.Elapsed)
}
