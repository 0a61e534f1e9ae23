package dispatch

import (
	"context"
	"encoding/json"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/content"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// publishTemplate publishes the next version of shop's template name.
func (b *testBundle) publishTemplate(t *testing.T, name, locales string) int {
	t.Helper()
	shop := "shop"
	row, err := b.q.TemplateInsertNext(context.Background(), b.pool, store.TemplateInsertNextParams{
		Producer: &shop, Name: name, DefaultLocale: "en", Locales: []byte(locales),
	})
	require.NoError(t, err)
	return int(row.Version)
}

// submitTemplated accepts one templated intent of shop the way both doors
// do: validate, check its content, accept.
func (b *testBundle) submitTemplated(t *testing.T, in *heraldtype.Intent) accept.Outcome {
	t.Helper()
	v, err := intake.Validate(in, intake.Limits{}, time.Now())
	require.NoError(t, err)
	verdicts, err := content.NewChecker(nil).Check(context.Background(), b.pool, []*intake.Validated{v}, intake.Limits{}, nil)
	require.NoError(t, err)
	require.NoError(t, verdicts[0].Err)
	require.Nil(t, verdicts[0].Held)
	out, err := accept.Accept(context.Background(), b.pool, []*intake.Validated{v}, accept.Params{})
	require.NoError(t, err)
	return out[0]
}

// recorder is a Deliverer that keeps every message it is given.
type recorder struct {
	mu   sync.Mutex
	msgs map[string]channel.Message // by recipient address
}

func (r *recorder) Deliver(_ context.Context, m *channel.Message) channel.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.msgs == nil {
		r.msgs = map[string]channel.Message{}
	}
	r.msgs[m.Address] = *m
	return channel.Outcome{Class: channel.Delivered}
}

func (r *recorder) get(addr string) channel.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.msgs[addr]
}

func TestDispatcher_RendersTemplateAtDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	v1 := b.publishTemplate(t, "order.shipped", `{
		"en": {"sms": {"body": "v1 Hi {{.name}}, order {{.order}} shipped"}},
		"pt": {"sms": {"body": "v1 Olá {{.name}}, pedido {{.order}} enviado"}},
		"pt-BR": {"sms": {"body": "v1 Oi {{.name}}, pedido {{.order}} saiu"}}}`)
	require.Equal(t, 1, v1)
	owner := func(s string) *string { return &s }
	for _, u := range []store.RecipientUpsertParams{
		{Owner: owner("shop"), UserID: "br", Phone: "+5511999990001", Locale: "pt-BR", OptedOut: []string{}},
		{Owner: owner("shop"), UserID: "pt", Phone: "+351912345678", Locale: "pt-PT", OptedOut: []string{}},
		{Owner: owner("shop"), UserID: "fr", Phone: "+33612345678", Locale: "fr", OptedOut: []string{}},
	} {
		require.NoError(t, b.q.RecipientUpsert(ctx, b.pool, u))
	}
	out := b.submitTemplated(t, &heraldtype.Intent{
		NotificationType: "order.shipped", Producer: "shop", IdempotencyKey: "o-9",
		Audience: heraldtype.Audience{UserIDs: []string{"br", "pt", "fr"}, SMS: []string{"+14155550123"}},
		Channels: []string{"sms"},
		Template: &heraldtype.TemplateRef{Name: "order.shipped", Locale: "pt"},
		Data:     map[string]any{"name": "Ana", "order": 9},
	})

	// A new version is published while the notification waits.
	require.Equal(t, 2, b.publishTemplate(t, "order.shipped", `{"en": {"sms": {"body": "v2 {{.name}} {{.order}}"}}}`))

	rec := &recorder{}
	b.start(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: rec}}})
	want := map[string]struct{ locale, body string }{
		"user:br":      {"pt-BR", "v1 Oi Ana, pedido 9 saiu"},
		"user:pt":      {"pt", "v1 Olá Ana, pedido 9 enviado"},
		"user:fr":      {"en", "v1 Hi Ana, order 9 shipped"},
		"+14155550123": {"pt", "v1 Olá Ana, pedido 9 enviado"}, // a direct address: the intent's template.locale
	}
	routes, err := b.q.RouteListByNotification(ctx, b.pool, out.NotificationID)
	require.NoError(t, err)
	require.Len(t, routes, 4)
	for _, r := range routes {
		got := b.waitStatus(t, routeKey{out.NotificationID, r.RouteID}, "published")
		w := want[r.RecipientRef]
		require.Equal(t, w.locale, got.ResolvedLocale, r.RecipientRef)
		addr := r.RecipientRef
		switch addr {
		case "user:br":
			addr = "+5511999990001"
		case "user:pt":
			addr = "+351912345678"
		case "user:fr":
			addr = "+33612345678"
		}
		var c struct{ Body string }
		require.NoError(t, json.Unmarshal(rec.get(addr).Content, &c))
		require.Equal(t, w.body, c.Body, r.RecipientRef)
	}

	// An intent accepted now gets version 2.
	out2 := b.submitTemplated(t, &heraldtype.Intent{
		NotificationType: "order.shipped", Producer: "shop", IdempotencyKey: "o-10",
		Audience: heraldtype.Audience{SMS: []string{"+14155550124"}}, Channels: []string{"sms"},
		Template: &heraldtype.TemplateRef{Name: "order.shipped"},
		Data:     map[string]any{"name": "Bo", "order": 10},
	})
	routes, err = b.q.RouteListByNotification(ctx, b.pool, out2.NotificationID)
	require.NoError(t, err)
	b.waitStatus(t, routeKey{out2.NotificationID, routes[0].RouteID}, "published")
	var c struct{ Body string }
	require.NoError(t, json.Unmarshal(rec.get("+14155550124").Content, &c))
	require.Equal(t, "v2 Bo 10", c.Body)
}

func TestDispatcher_GoneTemplateDeadLettered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publishTemplate(t, "t", `{"en": {"sms": {"body": "hi {{.name}}"}}}`)
	out := b.submitTemplated(t, &heraldtype.Intent{
		NotificationType: "x", Producer: "shop", IdempotencyKey: "k",
		Audience: heraldtype.Audience{SMS: []string{"+14155550123"}}, Channels: []string{"sms"},
		Template: &heraldtype.TemplateRef{Name: "t"}, Data: map[string]any{"name": "A"},
	})
	// Only the owner can do this: versions are immutable to every role.
	_, err := b.pool.Exec(context.Background(), `DELETE FROM herald.templates`)
	require.NoError(t, err)
	b.start(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: &recorder{}}}})
	routes, err := b.q.RouteListByNotification(context.Background(), b.pool, out.NotificationID)
	require.NoError(t, err)
	r := b.waitStatus(t, routeKey{out.NotificationID, routes[0].RouteID}, "dead_letter")
	require.Equal(t, ClassTemplateError, r.LastErrorClassification)
	require.Contains(t, r.LastErrorMessage, "template t version 1")
}

// BenchmarkContentPerRoute measures what the dispatcher does per claimed
// route to find what to send: the channel's entry of an inline payload,
// and a templated payload rendered in the recipient's locale (the version
// cached, as it is after a batch's first route). Run both side by side
// for the ratio.
func BenchmarkContentPerRoute(b *testing.B) {
	pool := pgtemp.NewPool(b)
	tb := &testBundle{pool: pool, q: store.New()}
	shop := "shop"
	_, err := tb.q.TemplateInsertNext(context.Background(), pool, store.TemplateInsertNextParams{
		Producer: &shop, Name: "order.shipped", DefaultLocale: "en", Locales: []byte(`{
		"en": {"sms": {"body": "Hi {{.name}}, your order {{.order}} has shipped and arrives {{.day}}."}},
		"pt": {"sms": {"body": "Olá {{.name}}, o seu pedido {{.order}} foi enviado e chega {{.day}}."}}}`)})
	require.NoError(b, err)
	inline := `{"sms":{"body":"Hi Ana, your order 9 has shipped and arrives Thursday."}}`
	templated := `{"data":{"day":"quinta","name":"Ana","order":9},"template":{"locale":"","name":"order.shipped","version":1}}`
	l := &channelLoop{name: channel.SMS, d: &Dispatcher{q: store.New()}}
	ctx := context.Background()
	b.Run("Inline", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if contentFor(inline, channel.SMS) == nil {
				b.Fatal("no content")
			}
		}
	})
	b.Run("Templated", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			j := &job{row: store.RouteClaimDueRow{Producer: "shop", PayloadJson: templated}, locale: "pt-BR"}
			body := contentFor(templated, channel.SMS)
			if body == nil && isTemplated(templated) {
				body, err = l.render(ctx, pool, j)
			}
			if err != nil || body == nil || j.locale != "pt" {
				b.Fatal("not rendered", err)
			}
		}
	})
}

// reportCPU starts measuring the process's CPU time and returns the func
// that reports it per op as cpu-ns/op: on a machine shared with other
// work, wall-clock ns/op is inflated by the time the process waits for a
// core, CPU time is not.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() { b.ReportMetric(float64((cpu()-start).Nanoseconds())/float64(b.N), "cpu-ns/op") }
}
