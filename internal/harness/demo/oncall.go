package demo

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/console"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/store"
)

// ConsoleLogin is the operator login the demo creates for its console on
// its throwaway cluster.
const ConsoleLogin = "demo_operator"

// ConsolePart is the operator console the demo serves while it runs.
type ConsolePart struct {
	URL string `json:"url"`
	// Login is who to sign in as; Password is set only on the demo's
	// throwaway cluster (a random one, for the cluster's life). On any
	// other database the demo creates no login: Login says which to use.
	Login    string `json:"login"`
	Password string `json:"password,omitempty"`
	// Status is what the console answered the demo's GET of its sign-in
	// page.
	Status int `json:"status"`
}

// startConsole starts the console on addr for the database behind pool
// and, on the throwaway cluster, creates ConsoleLogin with a random
// password. It checks that the sign-in page answers.
func startConsole(ctx context.Context, pool *pgxpool.Pool, addr string, throwaway bool) (*console.Console, *ConsolePart, error) {
	c, err := console.New(ctx, &console.Config{Listen: addr, DatabaseURL: pool.Config().ConnString()})
	if err != nil {
		return nil, nil, err
	}
	p := &ConsolePart{URL: c.URL(), Login: "a member of herald_operator"}
	if throwaway {
		p.Password = randomPassword()
		q := "CREATE ROLE " + pgx.Identifier{ConsoleLogin}.Sanitize() + " LOGIN IN ROLE herald_operator PASSWORD " + quoteLiteral(p.Password)
		if _, err := pool.Exec(ctx, q); err != nil {
			c.Close()
			return nil, nil, fmt.Errorf("create the console's login: %w", err)
		}
		p.Login = ConsoleLogin
	}
	return c, p, nil
}

// randomPassword returns a random password for a login the demo makes.
func randomPassword() string {
	pw := make([]byte, 12)
	_, _ = rand.Read(pw)
	return base64.RawURLEncoding.EncodeToString(pw)
}

// quoteLiteral quotes s as an SQL string literal: a DDL statement takes no
// parameters. (randomPassword's alphabet has no quote; this is for safety.)
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// checkConsole GETs the console's sign-in page and records its status.
func checkConsole(ctx context.Context, p *ConsolePart) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/login", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("console sign-in page: %w", err)
	}
	_ = res.Body.Close()
	p.Status = res.StatusCode
	return nil
}

// OnCallPart is the on-call step: an operator drains sms/acme, SMS for its
// failover rule then go to sms/backup, and it is enabled again.
type OnCallPart struct {
	Provider string `json:"provider"`
	Backup   string `json:"backup"`
	Actor    string `json:"actor"`
	Reason   string `json:"reason"`
	// DeliveredBefore is what its health counted delivered before the drain.
	DeliveredBefore int64 `json:"delivered_before"`
	// Sent are the SMS sent while it drained, and ToBackup those whose
	// only attempt was at Backup.
	Sent     int `json:"sent"`
	ToBackup int `json:"to_backup"`
	// StateDrained is the state the drain set, StateNow the provider's
	// state at the summary (enabled again).
	StateDrained string `json:"state_drained"`
	StateNow     string `json:"state_now"`
	// Failovers is what provider health counted of routes that failed at
	// Provider and went on to another, over the run.
	Failovers int64 `json:"failovers"`
	// Processes are the serve processes recorded in the database (the
	// demo's engine among them), and Ready those whose last heartbeat
	// found them ready.
	Processes int `json:"serve_processes"`
	Ready     int `json:"serve_processes_ready"`
	// Recipient is the first on-call SMS's number as a person types it,
	// and Found what `herald find -recipient` found for it: its routes,
	// with the status of the newest.
	Recipient   string `json:"recipient"`
	Found       int    `json:"recipient_routes"`
	FoundStatus string `json:"recipient_status"`
	Skipped     string `json:"skipped,omitempty"`
}

const (
	onCallProvider = "sms/acme"
	onCallBackup   = "sms/backup"
	onCallActor    = "demo"
	onCallSMS      = 4
	// onCallRecipientTyped is the first on-call SMS's number
	// (SMSDownPrefix, "72", 0009000) with a person's spaces.
	onCallRecipientTyped = "+254 720 009 000"
)

// runOnCall drains sms/acme, sends onCallSMS SMS to the kenya rule's
// prefix (failover from sms/acme to sms/backup), waits for them, and
// enables sms/acme again so the rest of the run (and a replay with -keep)
// goes through it. sms/acme is the provider to drain: it is the first of
// the only rule with a backup; the catch-all rule's routes wait while it
// drains, so the demo sends none then.
func runOnCall(ctx context.Context, pool *pgxpool.Pool, client Client, runID string, timeout time.Duration) (*OnCallPart, error) {
	p := &OnCallPart{Provider: onCallProvider, Backup: onCallBackup, Actor: onCallActor,
		Reason: "on call: sms/acme cannot reach " + SMSDownPrefix + " numbers"}
	op, err := operator.New(pool, nil)
	if err != nil {
		return nil, err
	}
	if h, err := op.ProviderHealthOver(ctx, time.Hour); err == nil {
		if i := slices.IndexFunc(h, func(h operator.ProviderHealth) bool { return h.Provider == onCallProvider }); i >= 0 {
			p.DeliveredBefore = h[i].Window.Delivered
		}
	}
	ch, err := op.SetProviderState(ctx, onCallProvider, operator.ProviderDraining, onCallActor, p.Reason)
	if err != nil {
		return nil, err
	}
	p.StateDrained = ch.State
	var ins []*intake.Intent
	for i := range onCallSMS {
		ins = append(ins, &intake.Intent{
			NotificationType: "alert", Producer: "billing", IdempotencyKey: fmt.Sprintf("%s:oncall-%d", runID, i), RequestID: runID + ":oncall",
			Audience: intake.Audience{SMS: []string{fmt.Sprintf("%s72%07d", SMSDownPrefix, 9000+i)}}, Channels: []string{channel.SMS},
			Content: intake.Content{SMS: &intake.SMSContent{Body: "Your code is 9" + fmt.Sprint(i) + " (" + runID + ")"}},
		})
	}
	res, err := client.SubmitMany(ctx, ins)
	if err != nil {
		return nil, fmt.Errorf("submit the on-call SMS: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		done, toBackup := 0, 0
		for _, r := range res {
			if r.Err != nil {
				return nil, fmt.Errorf("submit an on-call SMS: %w", r.Err)
			}
			routes, err := store.New().RouteListByNotification(ctx, pool, r.NotificationID)
			if err != nil {
				return nil, fmt.Errorf("read an on-call route: %w", err)
			}
			for _, rt := range routes {
				if rt.Status == "published" || rt.Status == "dead_letter" || rt.Status == "canceled" {
					done++
					if slices.Equal(rt.Providers, []string{onCallBackup}) {
						toBackup++
					}
				}
			}
		}
		if done == len(res) {
			p.Sent, p.ToBackup = len(res), toBackup
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the on-call SMS were not delivered within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	if _, err := op.SetProviderState(ctx, onCallProvider, operator.ProviderEnabled, onCallActor, "on call: drained for the demo, back in service"); err != nil {
		return nil, err
	}
	// The first of them, found as an operator asked about it would: by
	// the number as the customer reads it out.
	p.Recipient = onCallRecipientTyped
	found, err := op.FindByRecipient(ctx, p.Recipient, 0, "")
	if err != nil {
		return nil, err
	}
	p.Found = len(found.Routes)
	if p.Found > 0 {
		p.FoundStatus = found.Routes[0].Status
	}
	// Read while the engine runs: the summary comes after it stops.
	ps, err := op.ServeProcesses(ctx)
	if err != nil {
		return nil, err
	}
	for _, sp := range ps.Processes {
		// Running: beating, ready or not (a kept database may hold
		// earlier runs' stopped or stale rows).
		switch sp.State {
		case operator.ProcessReady:
			p.Processes++
			p.Ready++
		case operator.ProcessNotReady:
			p.Processes++
		}
	}
	return p, nil
}

// summarizeOnCall reads the provider's state and its failovers over the
// run from provider health, once the engine has written its last counts.
func summarizeOnCall(ctx context.Context, pool *pgxpool.Pool, p *OnCallPart, since time.Time) error {
	op, err := operator.New(pool, nil)
	if err != nil {
		return err
	}
	h, err := op.ProviderHealthOver(ctx, time.Since(since)+time.Minute)
	if err != nil {
		return err
	}
	for _, ph := range h {
		if ph.Provider == p.Provider {
			p.StateNow, p.Failovers = ph.State, ph.Window.FailedOverTo
		}
	}
	return nil
}

// writeOnCall prints the console's and the on-call step's lines.
func writeOnCall(out io.Writer, c *ConsolePart, p *OnCallPart) {
	if c != nil {
		pw := ""
		if c.Password != "" {
			pw = ", password " + c.Password + " (this throwaway cluster's only)"
		}
		fmt.Fprintf(out, "\nconsole: %s (sign in as %s%s); its sign-in page answered %d\n", c.URL, c.Login, pw, c.Status)
	}
	if p == nil {
		return
	}
	if p.Skipped != "" {
		fmt.Fprintf(out, "on call: not shown (%s)\n", p.Skipped)
		return
	}
	fmt.Fprintf(out, "on call: %s set %s %s (%q, audited) after %d deliveries; %d of %d SMS for %s then went straight to %s;\n",
		p.Actor, p.Provider, p.StateDrained, p.Reason, p.DeliveredBefore, p.ToBackup, p.Sent, SMSDownPrefix, p.Backup)
	fmt.Fprintf(out, "  provider health counted %d failovers from %s over the run; %s is %s again\n", p.Failovers, p.Provider, p.Provider, p.StateNow)
	fmt.Fprintf(out, "  herald find -recipient '%s': %d route(s), the newest %s\n", p.Recipient, p.Found, p.FoundStatus)
	fmt.Fprintf(out, "  serve processes: %d running, %d ready at their last heartbeat (`herald status`; the console's overview)\n", p.Processes, p.Ready)
}
