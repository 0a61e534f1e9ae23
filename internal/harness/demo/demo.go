// Package demo is `herald demo`: the engine, in-process, delivering a mixed
// workload to loopback channel servers that misbehave as real ones do, and a
// summary of what happened read back from the database.
//
// The servers (Start) are a webhook receiver, a real SMTP server, two
// HTTP SMS providers and an SMSC on SMPP, throttling, failing for a while
// and refusing addresses that do not exist, deterministically, so that a
// run shows herald's retries and dead letters; the SMS providers send
// delivery receipts (some early, some twice, some for ids herald never
// sent), and the producer's callback receiver verifies and orders the
// status callbacks. They listen on 127.0.0.1 only.
//
// The SMS providers are the database's: the demo applies a providers file
// (sms/acme, and sms/backup with a cap, both with receipts settings, and
// sms/operator over SMPP, and sms/legacy, whose binds the SMSC refuses; a
// failover rule for +254 numbers, which sms/acme cannot reach, a rule for
// +44 to the SMSC, a failover rule for +353 from sms/legacy to the SMSC,
// and a catch-all) with
// routing.Apply before
// the engine starts, and the summary reports what each provider took, the
// failovers, and the most the capped provider's own server received in any
// one second. On a database that holds providers of its own the demo leaves
// them alone; on any database but its throwaway one it removes its
// providers again when it is done.
//
// The workload goes through three doors: intents submitted through the
// public client (the orders by the run's producer, on a login of its own
// subscribed to status callbacks; repeats, a key conflict and an intent
// the client refuses), intents over the engine's HTTP API with that
// producer's key, and raw JSON INSERTed into herald.intake (with malformed
// entries). The summary adds the delivery statuses and receipts per
// provider, the callbacks per event, and the HTTP part. Then a long SMS
// goes to the SMSC (sms/legacy passed over without an attempt), which
// sends one receipt for its last part; a refuse
// rule's word, hidden by zero-width, homoglyph and fullwidth tricks, is
// refused by the Go client and the SQL intake; and two hostile templates
// (a range over a number, a printf amplification) are refused, one by the
// check before storing, one by the render budget at submit. A second
// producer's login then tries to step outside its own rows while the
// engine runs (including rows written by hand that the engine's vetter
// dead-letters), and the summary shows each refusal. Last, the producer
// sends one intent with metadata and a callback_url of its own at the
// receiver (allowed because it subscribed: its secret signs the
// callback), and the summary shows that callback arriving there with the
// intent's metadata.
//
// The operator console serves beside the engine (ConsoleAddr) for the
// whole run, and with Keep until Run's context is done; on its throwaway
// cluster the demo makes it a login (ConsoleLogin, a member of
// herald_operator) with a random password, shown in the summary, and on
// any other database it makes none. Once the workload is delivered, an
// operator drains sms/acme (audited), SMS for the kenya rule then go to
// sms/backup, and sms/acme is enabled again; the summary shows the
// failovers provider health counted from sms/acme and its state.
//
// The public client is the module root, which no internal package imports
// (see DESIGN.md), so Run reaches it through the Client interface:
// cmd/herald adapts *herald.Client to it. The intents and recipients travel
// as intake's types, whose JSON form is the public client's.
package demo

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/channel/email"
	"github.com/heraldhq/herald/internal/channel/sms"
	"github.com/heraldhq/herald/internal/channel/webhook"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/engine"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/maintenance"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/receipt"
	"github.com/heraldhq/herald/internal/render"
	"github.com/heraldhq/herald/internal/sqldoor"
	"github.com/heraldhq/herald/internal/vet"
	"github.com/heraldhq/herald/schema"
)

// Errors a Client's results match (with errors.Is), as the public client's
// errors match its own sentinels.
var (
	// ErrConflict: the intent's idempotency key holds a different request.
	ErrConflict = errors.New("idempotency conflict")
	// ErrInvalid: the client refused the intent with field errors.
	ErrInvalid = errors.New("invalid intent")
	// ErrForbidden: the database refused the client's login.
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound: no notification the client's login may see has the id.
	ErrNotFound = errors.New("notification not found")
)

// Client is what the demo needs of herald's public client.
type Client interface {
	// SubmitMany submits intents in one statement and returns one Result
	// per intent, in order; the error is the statement's.
	SubmitMany(ctx context.Context, intents []*intake.Intent) ([]Result, error)
	// UpsertRecipient writes r in the shared directory when shared, else
	// in the client's login's own.
	UpsertRecipient(ctx context.Context, r heraldtype.Recipient, shared bool) error
	// Get reads notification id.
	Get(ctx context.Context, id string) error
	// Cancel cancels notification id, for reason.
	Cancel(ctx context.Context, id, reason string) error
	// SetCallbackSubscription subscribes the client's login to status
	// callbacks at url, signed with secret (whsec_...), for every event.
	SetCallbackSubscription(ctx context.Context, url, secret string) error
	// Close releases the client (not its pool).
	Close()

	// Campaigns.

	// Campaign reads producer's campaign with its progress.
	Campaign(ctx context.Context, producer, campaign string) (*heraldtype.Campaign, error)
	// CancelCampaign cancels producer's campaign, for reason, in batches
	// of batchSize notifications; it returns the routes canceled and the
	// batches run.
	CancelCampaign(ctx context.Context, producer, campaign, reason string, batchSize int) (int64, int, error)
}

// Result is one intent's outcome in Client.SubmitMany.
type Result struct {
	// NotificationID is the notification stored, or the original one for a
	// duplicate.
	NotificationID string
	// Duplicate reports an intent answered with the original notification.
	Duplicate bool
	// Err is why the intent was refused, nil if it was not.
	Err error
}

// ClientConfig is what the demo asks of a new Client.
type ClientConfig struct {
	// Actor names the client in the audit log; "" is the client's default.
	Actor string
	// Logger receives the client's records; nil discards them.
	Logger *slog.Logger
	// ResultFunc, if set, is called with each intent's producer and result.
	ResultFunc func(producer, result string)
	// TracerProvider, when set, makes the client's spans (Submit,
	// SubmitMany): Config.TracerProvider.
	TracerProvider trace.TracerProvider
}

// Config configures Run.
type Config struct {
	// Users is the number of users in the demo's recipient directory; the
	// workload scales with it.
	Users int
	// Timeout is how long the workload may take to finish.
	Timeout time.Duration
	// MetricsAddr, if set, is where the engine serves /metrics, /healthz
	// and /readyz while the demo runs.
	MetricsAddr string
	// ConsoleAddr is where the operator console listens while the demo
	// runs (and, with Keep, until Run's context is done); "" for
	// 127.0.0.1:0.
	ConsoleAddr string
	// Keep keeps the engine running after ReportFunc until Run's context is
	// done, so that a replay from another terminal is delivered.
	Keep bool
	// DatabaseURL is the database's URL without its password, for the
	// summary and the commands it shows; Throwaway says it is a throwaway
	// cluster's, removed when the demo exits.
	DatabaseURL string
	Throwaway   bool
	// Started is when the demo started, for Summary.Elapsed.
	Started time.Time
	// TracerProvider, when set, makes the spans of the engine (its API,
	// intake, claims, attempts, completions, receipts and callbacks) and
	// of the clients the workload submits through; nil makes none.
	TracerProvider trace.TracerProvider
	// Logger receives the engine's records. Required.
	Logger *slog.Logger
	// Progress receives the progress lines. Required.
	Progress io.Writer
	// NewClientFunc returns a Client on pool: the clients the workload
	// submits through. Required.
	NewClientFunc func(pool *pgxpool.Pool, cfg *ClientConfig) (Client, error)
	// ReportFunc is called with the summary, before Run waits when Keep is
	// set. Required.
	ReportFunc func(*Summary) error
}

// Run runs the demo on the database behind pool: it migrates it, starts the
// loopback servers and the engine, submits the workload through both doors,
// shows progress until every route of the run is terminal, stops the engine
// (unless Config.Keep), reads the summary back from the database, probes
// the producers' isolation and calls Config.ReportFunc. It returns the
// engine's error if the engine stops before the workload is done.
func Run(ctx context.Context, pool *pgxpool.Pool, cfg *Config) error {
	if tp := cfg.TracerProvider; tp != nil {
		// Every client the demo makes is traced with the engine.
		c := *cfg
		newClient := c.NewClientFunc
		c.NewClientFunc = func(pool *pgxpool.Pool, cc *ClientConfig) (Client, error) {
			with := ClientConfig{}
			if cc != nil {
				with = *cc
			}
			with.TracerProvider = tp
			return newClient(pool, &with)
		}
		cfg = &c
	}
	say := func(format string, a ...any) { fmt.Fprintf(cfg.Progress, format+"\n", a...) }
	steps, err := schema.NewMigrator(pool, &schema.MigratorConfig{Logger: cfg.Logger}).Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	say("demo: schema migrated (%d migrations applied)", len(steps))

	srv, err := Start(ctx)
	if err != nil {
		return err
	}
	defer srv.Close()
	say("demo: loopback channels: webhook receiver %s, SMTP %s:%d, SMS providers %s (sms/acme) and %s (sms/backup),",
		srv.Webhook, srv.SMTPHost, srv.SMTPPort, srv.SMS.URL, srv.SMSBackup.URL)
	say("      an SMSC on SMPP at %s (sms/operator), and the producer's callback receiver %s", srv.SMSC.Addr(), srv.Callbacks.URL)

	w := newWorkload(cfg.Users, srv)
	since := time.Now().Add(-time.Second) // the run's receipts come after (same host's clock, give or take)
	pl, skipped, err := applyProviders(ctx, pool, srv, w.runID)
	if err != nil {
		return err
	}
	if pl != nil {
		say("demo: providers applied with routing.Apply, as `herald providers apply -f` does: sms/acme, which cannot reach %s numbers today,",
			SMSDownPrefix)
		say("      sms/backup, capped at %d/s, both posting delivery receipts to herald, and sms/operator over SMPP;", BackupCapPerSecond)
		say("      SMS rule kenya (%s) fails over from sms/acme to sms/backup, rule uk (%s) goes to sms/operator, rule default to sms/acme",
			SMSDownPrefix, SMSCPrefix)
		if !cfg.Throwaway {
			// Runs after the engine has stopped (deferred before it).
			defer func() {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if err := removeProviders(rctx, pool, w.runID); err != nil {
					say("demo: %v", err)
				}
			}()
		}
	} else {
		say("demo: no providers applied: %s", skipped)
	}

	cd, err := setupContent(ctx, pool, w.runID)
	if err != nil {
		return err
	}
	defer cd.close(context.WithoutCancel(ctx), pool)
	say("demo: template %s/%s published (en, pt, fr); blocklist %s added", ContentProducer, cd.part.Template, cd.part.Rule)

	prod, err := newProducer(ctx, pool, srv, w.runID, cfg.NewClientFunc)
	if err != nil {
		return err
	}
	defer prod.close(ctx, pool) // after the engine has stopped (deferred before it)
	w.producer = prod.name
	if prod.callbacksSkipped == "" {
		say("demo: producer %s has a login of its own and subscribes to status callbacks at %s", prod.name, srv.Callbacks.URL)
	}

	var intakeDuplicates atomic.Int64
	ecfg, err := engineConfig(srv, cfg.Logger)
	if err != nil {
		return err
	}
	ecfg.MetricsAddr = cfg.MetricsAddr
	ecfg.TracerProvider = cfg.TracerProvider
	if prod.apiPool != nil {
		ecfg.API, ecfg.APIAddr = &api.Config{Pool: prod.apiPool}, "127.0.0.1:0"
	}
	ecfg.Intake.ResultFunc = func(_, result string) {
		if result == sqldoor.ResultDuplicate {
			intakeDuplicates.Add(1)
		}
	}
	// The demo's engine records itself as a serve process does, so the
	// console's overview and `herald status` list it.
	ecfg.Process = &engine.Process{Version: render.BuildVersion().Short()}
	eng, err := engine.New(pool, ecfg)
	if err != nil {
		return err
	}
	if addr := eng.MetricsAddr(); addr != nil {
		say("demo: metrics at http://%s/metrics (and /healthz, /readyz)", addr)
	}
	for name, p := range srv.httpProviders() {
		p.SendReceiptsTo("http://" + eng.ReceiptsAddr().String() + receipt.Path + name)
	}
	say("demo: the engine's receipts endpoint is at http://%s%s<provider>", eng.ReceiptsAddr(), receipt.Path)
	if addr := eng.APIAddr(); addr != nil {
		prod.apiURL = "http://" + addr.String()
		say("demo: the engine's HTTP API is at %s, as login %s (herald_api); producer %s has key %s…", prod.apiURL, prod.apiLogin, prod.name, prod.key.Prefix)
	} else {
		say("demo: no HTTP API: %s", prod.apiSkipped)
	}
	// The engine outlives ctx (with Keep, it runs until ctx is done; then
	// stop stops it); if it fails, the workload's context says why.
	runCtx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	con, conPart, err := startConsole(ctx, pool, cmp.Or(cfg.ConsoleAddr, "127.0.0.1:0"), cfg.Throwaway)
	if err != nil {
		return err
	}
	consoleCtx, stopConsole := context.WithCancel(context.WithoutCancel(ctx))
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		if err := con.Run(consoleCtx); err != nil {
			cfg.Logger.Error("demo console stopped", "err", err)
		}
	}()
	defer func() { stopConsole(); <-consoleDone }()
	if err := checkConsole(ctx, conPart); err != nil {
		return err
	}
	say("demo: operator console at %s (sign in as %s)", conPart.URL, conPart.Login)
	engineCtx, stopEngine := context.WithCancel(context.WithoutCancel(ctx))
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := eng.Run(engineCtx); err != nil {
			cfg.Logger.Error("demo engine stopped", "err", err)
			fail(err)
		}
	}()
	stop := func() { stopEngine(); <-stopped }
	defer stop()

	say("demo: run %s: submitting through the Go client, the HTTP API and raw INSERTs into herald.intake", w.runID)
	sum := &Summary{RunID: w.runID, DatabaseURL: cfg.DatabaseURL, Throwaway: cfg.Throwaway, Kept: cfg.Keep,
		API: &APIPart{Skipped: prod.apiSkipped}, Console: conPart}
	client, err := cfg.NewClientFunc(pool, &ClientConfig{Logger: cfg.Logger, ResultFunc: eng.Metrics().Intent})
	if err != nil {
		return err
	}
	defer client.Close()
	if err := w.submit(runCtx, client, cmp.Or(prod.client, client), pool, sum); err != nil {
		return err
	}
	if prod.apiURL != "" {
		if err := w.submitHTTP(runCtx, prod, sum.API); err != nil {
			return fmt.Errorf("submit over the HTTP API: %w", err)
		}
		sum.SubmittedHTTP = sum.API.Submitted
	}
	say("demo: submitted %d intents through the client, %d over HTTP and %d raw entries; delivering…",
		sum.SubmittedClient, sum.SubmittedHTTP, sum.SubmittedRaw)

	if err := w.wait(runCtx, pool, cfg.Timeout, say); err != nil {
		return err
	}
	var providerNames []string
	if pl != nil {
		providerNames = pl.names()
	}
	if err := w.waitPlane(runCtx, pool, providerNames, since, say); err != nil {
		return err
	}
	if pl != nil {
		say("demo: on call: an operator drains sms/acme, sends SMS for %s (they go to sms/backup), then enables it again…", SMSDownPrefix)
		if sum.OnCall, err = runOnCall(runCtx, pool, client, w.runID, cfg.Timeout); err != nil {
			return err
		}
		sum.SubmittedClient += sum.OnCall.Sent
	} else {
		sum.OnCall = &OnCallPart{Skipped: skipped}
	}
	say("demo: a templated notification to users in pt-BR and fr, a long SMS over SMPP, intents the blocklist refuses")
	say("      through the Go client and the SQL intake, and two hostile templates…")
	if sum.Content, err = cd.run(runCtx, pool, client, w.runID, cfg.Timeout, pl != nil); err != nil {
		return err
	}
	if cd.longID != "" {
		sum.SubmittedClient++ // the long SMS is the run's, as the workload's intents are
		if sum.LongSMS, err = readLongSMS(runCtx, pool, cd.longID, cfg.Timeout); err != nil {
			return err
		}
	}
	if pl != nil {
		say("demo: an operator approves sender %s; an SMS and a FLASH_SMS naming it go over SMPP, and sender %s is refused…", DemoSender, DemoUnapprovedSender)
		if sum.Senders, err = runSenders(runCtx, pool, client, srv.SMSC, w.runID, cfg.Timeout); err != nil {
			return err
		}
		sum.SubmittedClient += 2
	}
	// The probe runs while the engine does: the rows its second producer
	// writes by hand meet the engine's vetter.
	say("demo: a second producer's login tries to step outside its own rows…")
	if sum.Isolation, err = probeIsolation(runCtx, pool, cfg.NewClientFunc, cd.handDoor()); err != nil {
		return err
	}
	if d := sum.Isolation.ByHand; d != nil {
		sum.Content.Doors = append(sum.Content.Doors, *d)
	}
	if prod.callbacksSkipped == "" {
		say("demo: producer %s sends one intent with metadata, an approved sender and a callback_url of its own at the receiver…", prod.name)
	}
	if sum.DirectCallback, err = runDirectCallback(runCtx, pool, prod, srv, w.runID, skipped == "", cfg.Timeout); err != nil {
		return err
	}
	if d := sum.DirectCallback; d.Skipped == "" {
		sum.SubmittedClient++ // the run's, as the workload's intents are
		say("demo: its %s callback arrived at %s with metadata %v", d.Event, d.Path, d.Metadata)
	}
	// The steps after the workload sent SMS of their own (on call,
	// senders): their receipts and callbacks settle before the summary
	// counts them.
	if err := w.waitPlane(runCtx, pool, providerNames, since, say); err != nil {
		return err
	}
	if !cfg.Keep {
		// Stopped before the summary so the intake worker's last results are
		// counted; with Keep the engine runs on, so a replay from another
		// terminal is delivered.
		stop()
	}
	sum.Duplicates += int(intakeDuplicates.Load())
	if err := w.summarize(ctx, pool, sum); err != nil {
		return err
	}
	sum.Providers, sum.Receipts = &Providers{Skipped: skipped}, &Receipts{Skipped: skipped}
	if pl != nil {
		if sum.Providers, err = pl.summarize(ctx, pool, srv, w.runID); err != nil {
			return err
		}
		if err := summarizeOnCall(ctx, pool, sum.OnCall, cfg.Started); err != nil {
			return err
		}
		if sum.Receipts, err = pl.summarizeReceipts(ctx, pool, srv, w.runID, since); err != nil {
			return err
		}
		if l := sum.LongSMS; l != nil {
			for _, c := range sum.Providers.Providers {
				if c.Name == l.PassedOver {
					l.LegacyAttempts = c.Attempts
				}
			}
		}
	}
	sum.Callbacks = &Callbacks{Skipped: prod.callbacksSkipped}
	if prod.callbacksSkipped == "" {
		if sum.Callbacks, err = summarizeCallbacks(ctx, pool, srv.Callbacks, prod.name, w.runID); err != nil {
			return err
		}
	}
	if prod.apiURL != "" {
		sum.API.Login, sum.API.Producer, sum.API.KeyPrefix = prod.apiLogin, prod.name, prod.key.Prefix
		if err := summarizeAPI(ctx, pool, sum.API, w.runID); err != nil {
			return err
		}
	}
	say("demo: producer %s schedules a campaign an hour ahead, then cancels it…", prod.name)
	if sum.Campaign, err = runCampaign(ctx, pool, cmp.Or(prod.client, client), prod.name, w); err != nil {
		return err
	}
	sum.Elapsed = time.Since(cfg.Started).Seconds()
	sum.Commands = commands(cfg.DatabaseURL, cfg.Throwaway, cfg.Keep, pl != nil)
	if err := cfg.ReportFunc(sum); err != nil {
		return err
	}
	if cfg.Keep {
		say("demo: PostgreSQL and the engine stay up at %s, the console at %s; press Ctrl-C to stop and remove them", cfg.DatabaseURL, conPart.URL)
		<-ctx.Done()
	}
	return nil
}

// engineConfig is the demo's engine: `herald serve`'s parts (the
// dispatcher, the SQL intake worker, maintenance), delivering to srv, with
// short polls and backoffs so that retries happen while you watch
// (production defaults are seconds to minutes), and maintenance's jobs run
// at once.
func engineConfig(srv *Servers, logger *slog.Logger) (*engine.Config, error) {
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
	em, err := email.New(email.Config{
		Host: srv.SMTPHost, Port: srv.SMTPPort, TLS: email.TLSNone,
		From: "herald demo <noreply@example.test>", HeloName: "localhost",
		Timeout: 5 * time.Second, MaxIdleConns: 4, Logger: logger,
	})
	if err != nil {
		_ = wh.Close()
		return nil, err
	}
	// The SMS channel's own driver, as serve's configuration gives it: it
	// delivers only while the database holds no SMS providers (the demo's
	// are applied before the engine starts, and the engine delivers the
	// channel through them once it has loaded them).
	sm, err := sms.New(sms.Config{URL: srv.SMS.URL, APIKey: srv.SMS.APIKey, From: "HERALD", Timeout: 5 * time.Second, Logger: logger})
	if err != nil {
		_ = wh.Close()
		_ = em.Close()
		return nil, err
	}
	backoff := dispatch.BackoffConfig{Base: 100 * time.Millisecond, Cap: 2 * time.Second}
	return &engine.Config{
		Logger:     logger,
		Registry:   metrics.NewRegistry(),
		GetenvFunc: srv.getenv,
		Dispatch: dispatch.Config{
			Channels: map[string]dispatch.ChannelConfig{
				"webhook": {Deliverer: wh, Concurrency: 8, MaxAttempts: 5, Backoff: backoff, Timeout: 5 * time.Second},
				"email":   {Deliverer: em, Concurrency: 4, MaxAttempts: 5, Backoff: backoff, Timeout: 5 * time.Second},
				"sms":     {Deliverer: sm, Concurrency: 8, MaxAttempts: 5, Backoff: backoff, Timeout: 5 * time.Second},
			},
			PollInterval:    200 * time.Millisecond,
			ShutdownTimeout: 5 * time.Second,
		},
		Intake: &sqldoor.WorkerConfig{PollInterval: 200 * time.Millisecond},
		// The isolation probe adds a rule while the engine runs, then
		// writes rows by hand that only that rule refuses.
		Vet:         vet.Config{PollInterval: 100 * time.Millisecond, ContentRulesMaxAge: -1},
		Maintenance: &maintenance.Config{RunOnStart: true},
		// Receipts come to an endpoint of the engine's own, on loopback.
		ReceiptsAddr: "127.0.0.1:0",
		// The producer's receiver is on loopback; a callback waiting
		// behind an earlier one of its route tries again soon.
		Callbacks: engine.Callbacks{AllowPrivate: true, Backoff: backoff, Timeout: 5 * time.Second,
			OrderRetry: 100 * time.Millisecond},
	}, nil
}
