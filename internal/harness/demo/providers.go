package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/routing"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// The demo's delivery plane: three SMS providers (two over HTTP, one over
// SMPP) and the rules that choose between them, written to the database by routing.Apply (what `herald
// providers apply -f FILE` runs) before the engine starts; the engine then
// loads them as every `herald serve` does, and the SMS channel is delivered
// by them rather than by the channel's own driver.
//
// sms/acme cannot reach SMSDownPrefix's numbers (503, transient), so the
// kenya rule's routes fail over to sms/backup, whose cap the engine paces
// across processes. The catch-all rule keeps every other number on
// sms/acme, which stays at full speed while sms/backup's backlog waits for
// its cap.
const (
	// BackupCapPerSecond is sms/backup's cap: small enough that the routes
	// failing over to it outrun it, so that the pacing shows.
	BackupCapPerSecond = 20

	// The providers' credentials are environment references, as a real
	// file's are; the demo's engine resolves them (engine.Config's
	// GetenvFunc) and no other process can, so a `herald serve` sharing
	// the database refuses the demo's file and keeps its own providers.
	acmeKeyEnv        = "HERALD_DEMO_ACME_KEY"
	acmeReceiptsEnv   = "HERALD_DEMO_ACME_RECEIPTS_TOKEN"
	backupKeyEnv      = "HERALD_DEMO_BACKUP_KEY"
	backupReceiptsEnv = "HERALD_DEMO_BACKUP_RECEIPTS_TOKEN"
	smscPasswordEnv   = "HERALD_DEMO_SMSC_PASSWORD"
	legacyPasswordEnv = "HERALD_DEMO_LEGACY_PASSWORD"
	demoKeyEnv        = "HERALD_DEMO_" // how the demo's own providers are recognised

	demoActor = "herald-demo"
)

// providersFile is the demo's providers file for srv, as an operator would
// write it for `herald providers apply -f`. Both HTTP providers post
// delivery receipts to herald's receipts endpoint; a receipt that matches
// no route is given up on after two seconds (production: minutes), so that
// the demo's unknown ids are reported as unmatched while it runs. The SMSC
// sends its receipts over SMPP, which needs no settings.
func providersFile(srv *Servers) string {
	host, port, _ := net.SplitHostPort(srv.SMSC.Addr())
	return fmt.Sprintf(`providers:
  - name: sms/acme
    driver: sms-http
    # sms/acme's refusals of +254 and its throttling are about two answers
    # in five: its circuit opens only at three in four, for two seconds.
    circuit: {failure_ratio: 0.75, cooldown: 2s}
    sms_http: {url: %q, api_key: {env: %s}, from: HERALD}
    receipts: {token: {env: %s}, window: 2s}
  - name: sms/backup
    driver: sms-http
    cap_per_second: %d
    sms_http: {url: %q, api_key: {env: %s}, from: HERALD}
    receipts: {token: {env: %s}, window: 2s}
  - name: sms/operator
    driver: smpp
    smpp: {host: %q, port: %s, system_id: %s, password: {env: %s}, source_addr: HERALD}
  # sms/legacy's password is wrong: the SMSC refuses its binds, so it is
  # passed over, spending no attempt, and its health says why.
  - name: sms/legacy
    driver: smpp
    smpp: {host: %q, port: %s, system_id: %s, password: {env: %s}, source_addr: HERALD}
rules:
  sms:
    - name: kenya
      match: {prefixes: [%q]}
      strategy: failover
      providers: [sms/acme, sms/backup]
    - name: uk
      match: {prefixes: [%q]}
      providers: [sms/operator]
    - name: ireland
      match: {prefixes: [%q]}
      strategy: failover
      providers: [sms/legacy, sms/operator]
    - name: default
      providers: [sms/acme]
`, srv.SMS.URL, acmeKeyEnv, acmeReceiptsEnv, BackupCapPerSecond, srv.SMSBackup.URL, backupKeyEnv, backupReceiptsEnv,
		host, port, smscSystemID, smscPasswordEnv, host, port, smscSystemID, legacyPasswordEnv, SMSDownPrefix, SMSCPrefix, LegacyPrefix)
}

// getenv resolves the demo's credential references for its engine.
func (srv *Servers) getenv(name string) string {
	switch name {
	case acmeKeyEnv:
		return srv.SMS.APIKey
	case acmeReceiptsEnv:
		return srv.SMS.ReceiptsToken
	case backupKeyEnv:
		return srv.SMSBackup.APIKey
	case backupReceiptsEnv:
		return srv.SMSBackup.ReceiptsToken
	case smscPasswordEnv:
		return smscPassword
	case legacyPasswordEnv:
		return "wrong-pw"
	}
	return ""
}

// httpProviders are the demo's HTTP SMS providers by name.
func (srv *Servers) httpProviders() map[string]*SMSProvider {
	return map[string]*SMSProvider{"sms/acme": srv.SMS, "sms/backup": srv.SMSBackup}
}

// plane is what the demo applied, for the summary and the clean-up.
type plane struct {
	file *routing.File
	// lastEvent is the newest herald.provider_events id before the run:
	// the run's circuit events come after it.
	lastEvent int64
}

// applyProviders applies the demo's providers file, unless the database
// holds providers the demo did not write (a shared DATABASE_URL: they stay
// as they are) or the login may not apply a file; then it returns a nil
// plane and the reason. The demo's own providers left by an earlier run
// are replaced.
func applyProviders(ctx context.Context, pool *pgxpool.Pool, srv *Servers, runID string) (*plane, string, error) {
	f, err := routing.Parse([]byte(providersFile(srv)))
	if err != nil {
		return nil, "", fmt.Errorf("the demo's providers file: %w", err)
	}
	t, err := routing.Load(ctx, pool)
	if err != nil {
		if denied(err) {
			return nil, "this login may not read herald.providers", nil
		}
		return nil, "", err
	}
	var others []string
	for name, p := range t.Providers {
		if !strings.HasPrefix(p.SMSHTTP.APIKey.Env+p.SMPP.Password.Env, demoKeyEnv) {
			others = append(others, name)
		}
	}
	if len(others) > 0 {
		slices.Sort(others)
		return nil, fmt.Sprintf("the database holds providers the demo did not write (%s): it leaves them as they are",
			strings.Join(others, ", ")), nil
	}
	events, err := store.New().ProviderEventList(ctx, pool, store.ProviderEventListParams{Max: 1})
	if err != nil {
		return nil, "", fmt.Errorf("read provider events: %w", err)
	}
	p := &plane{file: f}
	if len(events) > 0 {
		p.lastEvent = events[0].ID
	}
	if _, err := routing.Apply(ctx, pool, f, demoActor, &routing.ApplyOpts{Reason: "herald demo " + runID}); err != nil {
		if denied(err) {
			return nil, "this login may not apply providers (herald_operator may)", nil
		}
		return nil, "", fmt.Errorf("apply the demo's providers: %w", err)
	}
	return p, "", nil
}

// removeProviders removes the demo's providers and rules, leaving a shared
// database as the demo found it (routes keep the providers they recorded).
func removeProviders(ctx context.Context, pool *pgxpool.Pool, runID string) error {
	f, err := routing.Parse([]byte("providers: []\n"))
	if err != nil {
		return err
	}
	if _, err := routing.Apply(ctx, pool, f, demoActor, &routing.ApplyOpts{Reason: "herald demo " + runID + " done"}); err != nil {
		return fmt.Errorf("remove the demo's providers: %w", err)
	}
	return nil
}

// denied reports whether err is the database refusing the login.
func denied(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.InsufficientPrivilege
}

// summarize reads what the run's routes recorded of the providers, what
// the providers' servers received, and the circuits' events since the
// demo applied its file.
func (p *plane) summarize(ctx context.Context, pool *pgxpool.Pool, srv *Servers, runID string) (*Providers, error) {
	out := &Providers{}
	for _, r := range p.file.Rules["sms"] {
		match := "anything else"
		if len(r.Match.Prefixes) > 0 {
			match = strings.Join(r.Match.Prefixes, ", ")
		}
		out.Rules = append(out.Rules, Rule{Name: r.Name, Match: match, Strategy: cmp.Or(r.Strategy, routing.StrategyFailover), Providers: r.Providers})
	}
	rows, err := benchstore.New().DemoProviderCounts(ctx, pool, runID+":")
	if err != nil {
		return nil, fmt.Errorf("read the run's routes per provider: %w", err)
	}
	counts := make([]ProviderCount, len(rows))
	for i, r := range rows {
		counts[i] = ProviderCount{Name: r.Provider, Attempts: r.Attempts, Routes: r.Routes,
			Published: r.Published, DeadLettered: r.DeadLettered}
	}
	servers := srv.httpProviders()
	for _, spec := range p.file.Providers {
		c := ProviderCount{Name: spec.Name}
		if i := slices.IndexFunc(counts, func(c ProviderCount) bool { return c.Name == spec.Name }); i >= 0 {
			c = counts[i]
		}
		c.CapPerSecond = spec.CapPerSecond
		if s := servers[spec.Name]; s != nil {
			c.Received, c.MaxPerSecond = s.Requests.Load(), s.MaxPerSecond()
		} else if spec.Name == "sms/operator" { // sms/legacy never binds, so never submits
			var times []time.Time
			for _, sub := range srv.SMSC.Submits() {
				times = append(times, sub.At)
			}
			c.Received, c.MaxPerSecond = int64(len(times)), maxInWindow(times, time.Second)
		}
		out.Providers = append(out.Providers, c)
	}
	f, err := benchstore.New().DemoFailovers(ctx, pool, runID+":")
	if err != nil {
		return nil, fmt.Errorf("read the run's failovers: %w", err)
	}
	out.FailedOver, out.FailedOverPublished, out.ChannelDriverAttempts = f.FailedOver, f.FailedOverPublished, f.ChannelDriverAttempts
	for _, spec := range p.file.Providers {
		events, err := store.New().ProviderEventList(ctx, pool, store.ProviderEventListParams{Provider: spec.Name, Max: 100})
		if err != nil {
			return nil, fmt.Errorf("read provider events: %w", err)
		}
		for _, e := range events {
			if e.ID > p.lastEvent {
				out.Circuits = append(out.Circuits, CircuitEvent{Provider: e.Provider, At: e.At, Event: e.Event, Detail: e.Detail})
			}
		}
	}
	slices.SortFunc(out.Circuits, func(a, b CircuitEvent) int { return a.At.Compare(b.At) })
	return out, nil
}
