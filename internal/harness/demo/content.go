package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/content"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// ContentProducer is the producer of the demo's templated notification
// and blocked intent: one without a callback subscription, so that they
// add nothing to the workload's counts.
const ContentProducer = "demo-content"

// welcomeTemplate is the demo's template: a webhook body in three locales.
const welcomeTemplate = `{
  "en": {"webhook": {"text": "Welcome {{.name}}! Your order {{.order}} is confirmed."}},
  "pt": {"webhook": {"text": "Bem-vindo, {{.name}}! O seu pedido {{.order}} está confirmado."}},
  "fr": {"webhook": {"text": "Bienvenue {{.name}} ! Votre commande {{.order}} est confirmée."}}
}`

// ContentPart is what the demo showed of templates and the content
// blocklist: one notification rendered at delivery in each recipient's
// locale, and an intent a blocklist rule refused.
type ContentPart struct {
	Producer string `json:"producer"`
	Template string `json:"template"`
	Version  int    `json:"version"`
	// Deliveries are the templated notification's routes: the user's
	// directory locale, the locale rendered (routes.resolved_locale) and
	// the text the webhook received.
	Deliveries []TemplatedDelivery `json:"deliveries"`
	// Rule is the blocklist rule the demo added; Blocked the Go client's
	// refusal of an intent that matched it.
	Rule    string `json:"rule"`
	Blocked string `json:"blocked"`
	// Doors are the evasions of the rule (Evasions) through each door: the
	// Go client, the SQL intake, and rows a producer's login wrote by hand
	// (the isolation probe's), which the engine's vetter dead-letters.
	Doors []DoorCount `json:"doors"`
	// Hostile are the templates built to exhaust the engine, each refused.
	Hostile []HostileTemplate `json:"hostile_templates"`
}

// TemplatedDelivery is one route of the templated notification.
type TemplatedDelivery struct {
	User           string `json:"user"`
	Locale         string `json:"locale"`
	ResolvedLocale string `json:"resolved_locale"`
	Status         string `json:"status"`
	Text           string `json:"text"`
}

// contentDemo holds the part's fixtures: the template, two users in the
// producer's directory with webhook addresses on a loopback receiver that
// keeps what it is sent, and a refuse rule for the producer.
type contentDemo struct {
	part   ContentPart
	users  map[string]string // user id → directory locale
	ruleID int64
	srv    *http.Server
	url    string
	mu     sync.Mutex
	bodies map[string]string // by path
	longID string            // the long SMS's notification
}

// setupContent publishes the template, writes the users and adds the
// rule. It runs before any intent is submitted, so that every client
// reads the rule with its first submit.
func setupContent(ctx context.Context, pool *pgxpool.Pool, runID string) (*contentDemo, error) {
	c := &contentDemo{bodies: map[string]string{}, users: map[string]string{runID + "-ana": "pt-BR", runID + "-zoe": "fr"}}
	ln, err := listen(ctx)
	if err != nil {
		return nil, err
	}
	c.url = "http://" + ln.Addr().String()
	c.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		c.mu.Lock()
		c.bodies[r.URL.Path] = string(b)
		c.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = c.srv.Serve(ln) }()

	q := store.New()
	producer := ContentProducer
	row, err := q.TemplateInsertNext(ctx, pool, store.TemplateInsertNextParams{
		Producer: &producer, Name: "welcome", DefaultLocale: "en", Locales: []byte(welcomeTemplate)})
	if err != nil {
		c.srv.Close()
		return nil, fmt.Errorf("publish the demo's template: %w", err)
	}
	c.part = ContentPart{Producer: producer, Template: row.Name, Version: int(row.Version)}
	for id, locale := range c.users {
		if err := q.RecipientUpsert(ctx, pool, store.RecipientUpsertParams{Owner: &producer, UserID: id,
			WebhookUrl: c.url + "/" + id, Locale: locale, OptedOut: []string{}}); err != nil {
			c.srv.Close()
			return nil, fmt.Errorf("write the demo's templated users: %w", err)
		}
	}
	rule := content.Rule{Producer: producer, Kind: content.KindWord, Pattern: "jackpot", Mode: content.ModeRefuse}
	if rule.ID, err = q.ContentRuleInsert(ctx, pool, store.ContentRuleInsertParams{Producer: producer, Kind: rule.Kind,
		Pattern: rule.Pattern, Mode: rule.Mode, Note: "herald demo " + runID}); err != nil {
		c.srv.Close()
		return nil, fmt.Errorf("add the demo's blocklist rule: %w", err)
	}
	c.ruleID, c.part.Rule = rule.ID, rule.String()
	return c, nil
}

// run submits the templated notification, the blocked intent and (with
// long, when the demo's providers route it to the SMSC) the long SMS
// through client, the evasions through the client and the SQL
// intake, and the hostile templates; it waits for the templated
// notification's routes and reads back what each recipient got.
func (c *contentDemo) run(ctx context.Context, pool *pgxpool.Pool, client Client, runID string, timeout time.Duration, long bool) (*ContentPart, error) {
	var users []string
	for id := range c.users {
		users = append(users, id)
	}
	intents := []*intake.Intent{{
		NotificationType: "welcome", Producer: ContentProducer, IdempotencyKey: runID + "/welcome", RequestID: runID + "/content",
		Audience: intake.Audience{UserIDs: users}, Channels: []string{channel.Webhook},
		Template: &heraldtype.TemplateRef{Name: c.part.Template}, Data: map[string]any{"name": "Ana & Zoé", "order": 1042},
	}, {
		NotificationType: "promo", Producer: ContentProducer, IdempotencyKey: runID + "/blocked", RequestID: runID + "/content",
		Audience: intake.Audience{SMS: []string{"+14155550199"}}, Channels: []string{channel.SMS},
		Content: intake.Content{SMS: &intake.SMSContent{Body: "Win the JACKPOT tonight!"}},
	}}
	if long {
		intents = append(intents, longSMSIntent(runID))
	}
	res, err := client.SubmitMany(ctx, intents)
	if err != nil {
		return nil, fmt.Errorf("submit the templated and the blocked intent: %w", err)
	}
	if res[0].Err != nil {
		return nil, fmt.Errorf("submit the templated intent: %w", res[0].Err)
	}
	if res[1].Err == nil {
		return nil, fmt.Errorf("the intent the blocklist should refuse was accepted as %s", res[1].NotificationID)
	}
	c.part.Blocked = res[1].Err.Error()
	if long {
		if res[2].Err != nil {
			return nil, fmt.Errorf("submit the long SMS: %w", res[2].Err)
		}
		c.longID = res[2].NotificationID
	}
	if c.part.Doors, err = c.evasions(ctx, pool, client, runID, timeout); err != nil {
		return nil, err
	}
	if c.part.Hostile, err = c.hostileTemplates(ctx, pool, client, runID); err != nil {
		return nil, err
	}

	deadline := time.Now().Add(timeout)
	for {
		routes, err := store.New().RouteListByNotification(ctx, pool, res[0].NotificationID)
		if err != nil {
			return nil, fmt.Errorf("read the templated notification's routes: %w", err)
		}
		done := len(routes) > 0
		for _, r := range routes {
			done = done && r.NextAttemptAt == nil
		}
		if done || time.Now().After(deadline) {
			c.part.Deliveries = nil
			for _, r := range routes {
				id := strings.TrimPrefix(r.RecipientRef, "user:")
				c.mu.Lock()
				body := c.bodies["/"+id]
				c.mu.Unlock()
				var b struct { // the webhook channel's envelope
					Data struct{ Text string }
				}
				_ = json.Unmarshal([]byte(body), &b)
				c.part.Deliveries = append(c.part.Deliveries, TemplatedDelivery{User: id, Locale: c.users[id],
					ResolvedLocale: r.ResolvedLocale, Status: r.Status, Text: b.Data.Text})
			}
			return &c.part, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// close stops the receiver and removes the rule; the template and the two
// directory entries stay, as the run's notifications do.
func (c *contentDemo) close(ctx context.Context, pool *pgxpool.Pool) {
	c.srv.Close()
	_ = store.New().ContentRuleDelete(ctx, pool, c.ruleID)
}

// writeContent prints the content part of the summary.
func writeContent(out io.Writer, p *ContentPart) {
	fmt.Fprintf(out, "\ntemplates: %s's %q version %d, rendered at delivery in each recipient's locale:\n", p.Producer, p.Template, p.Version)
	for _, d := range p.Deliveries {
		fmt.Fprintf(out, "  %-28s locale %-6s rendered %-3s %-10s %q\n", d.User, d.Locale, d.ResolvedLocale, d.Status, d.Text)
	}
	fmt.Fprintf(out, "content blocklist: %s\n  refused: %s\n", p.Rule, p.Blocked)
	var names []string
	for _, e := range Evasions {
		names = append(names, e.Name)
	}
	fmt.Fprintf(out, "  evasions (%s), folded before matching, by door:\n", strings.Join(names, ", "))
	for _, d := range p.Doors {
		delivered := ""
		if d.Door == DoorByHand {
			delivered = fmt.Sprintf(", %d delivered", d.Delivered)
		}
		fmt.Fprintf(out, "  %-14s %d of %d refused%s: %s\n", d.Door, d.Refused, d.Tried, delivered, d.How)
	}
	for _, h := range p.Hostile {
		verdict := "ACCEPTED"
		if h.Refused {
			verdict = "refused at " + h.Where
		}
		fmt.Fprintf(out, "hostile template %s: %s in %dµs; the process allocated %d KiB meanwhile (would have built %s)\n",
			h.What, verdict, h.Micros, h.Allocated>>10, humanBytes(h.Asks))
		if h.Error != "" {
			fmt.Fprintf(out, "  %s\n", h.Error)
		}
	}
}

// humanBytes is n in B, MB or GB.
func humanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.0f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0f MB", float64(n)/1e6)
	default:
		return fmt.Sprintf("%d B", n)
	}
}

// handDoor is where the isolation probe's rows written by hand send their
// webhook: the content part's receiver, which counts what reaches it.
type handDoor struct {
	url       string
	delivered func() int
}

// handDoor returns the receiver's address for rows written by hand and a
// count of the requests that reached it there.
func (c *contentDemo) handDoor() handDoor {
	return handDoor{url: c.url + "/by-hand/", delivered: func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		n := 0
		for path := range c.bodies {
			if strings.HasPrefix(path, "/by-hand/") {
				n++
			}
		}
		return n
	}}
}
