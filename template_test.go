package herald_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
)

// The SQL here is the test's own: what a producer or operator types in
// psql to publish, read or tamper with templates.

const orderTemplate = `{
  "en": {"sms": {"body": "Hi {{.name}}, order {{.order}} shipped"},
         "email": {"subject": "Order {{.order}}", "html": "<p>Hi {{.name}}</p>"}},
  "fr": {"sms": {"body": "Bonjour {{.name}}, commande {{.order}} partie"}}}`

func templatedIntent(producer, key string, data map[string]any) *herald.Intent {
	return &herald.Intent{
		NotificationType: "order.shipped", Producer: producer, IdempotencyKey: key,
		Audience: herald.Audience{SMS: []string{"+14155550123"}}, Channels: []string{"sms"},
		Template: &herald.TemplateRef{Name: "order"}, Data: data,
	}
}

func requireFieldError(t *testing.T, err error, field string, code herald.Code) {
	t.Helper()
	var ve *herald.ValidationError
	require.True(t, errors.As(err, &ve), "want a *ValidationError, got %v", err)
	for _, fe := range ve.Errors {
		if fe.Field == field && fe.Code == code {
			return
		}
	}
	require.Failf(t, "field error not found", "want %s (%s) in %v", field, code, err)
}

func TestClient_TemplatedSubmitCheckedAtIntake(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	_, err := b.asA.Exec(ctx, `INSERT INTO herald.templates (name, version, default_locale, locales) VALUES ('order', 1, 'en', $1)`, orderTemplate)
	require.NoError(t, err)

	// Accepted: payload pinned to version 1, whatever version was asked.
	r, err := b.clientA.Submit(ctx, templatedIntent(b.nameA, "ok", map[string]any{"name": "Ana", "order": 9}))
	require.NoError(t, err)
	var payload string
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT payload_json FROM herald.records WHERE notification_id = $1`, r.NotificationID).Scan(&payload))
	require.JSONEq(t, `{"data":{"name":"Ana","order":9},"template":{"locale":"","name":"order","version":1}}`, payload)
	got, err := b.clientA.Get(ctx, r.NotificationID)
	require.NoError(t, err)
	require.Equal(t, &herald.TemplateRef{Name: "order", Version: 1}, got.Template, "the version it was accepted with")
	require.Equal(t, "Ana", got.Data["name"])
	require.Nil(t, got.Content.SMS)

	// Missing variables are refused, each named; nothing is stored.
	_, err = b.clientA.Submit(ctx, templatedIntent(b.nameA, "missing", map[string]any{"name": "Ana"}))
	requireFieldError(t, err, "data.order", herald.CodeMissingField)
	_, err = b.clientA.Submit(ctx, templatedIntent(b.nameA, "nodata", nil))
	requireFieldError(t, err, "data.name", herald.CodeMissingField)
	requireFieldError(t, err, "data.order", herald.CodeMissingField)

	// An SMS the data makes too long, in any locale, is refused.
	_, err = b.clientA.Submit(ctx, templatedIntent(b.nameA, "long", map[string]any{"name": strings.Repeat("a", 1600), "order": 9}))
	requireFieldError(t, err, "data", herald.CodeSMSTooLong)

	// A channel the template has no text for.
	in := templatedIntent(b.nameA, "webhook", map[string]any{"name": "Ana", "order": 9})
	in.Channels, in.Audience = []string{"webhook"}, herald.Audience{Webhook: []string{"https://example.com/h"}}
	_, err = b.clientA.Submit(ctx, in)
	requireFieldError(t, err, "template.name", herald.CodeMissingContent)

	// A template or version the producer does not have; another
	// producer's template is not its own.
	in = templatedIntent(b.nameA, "unknown", map[string]any{})
	in.Template.Name = "nope"
	_, err = b.clientA.Submit(ctx, in)
	requireFieldError(t, err, "template.name", herald.CodeUnknownTemplate)
	in = templatedIntent(b.nameA, "v2", map[string]any{"name": "Ana", "order": 9})
	in.Template.Version = 2
	_, err = b.clientA.Submit(ctx, in)
	requireFieldError(t, err, "template.name", herald.CodeUnknownTemplate)
	_, err = b.clientB.Submit(ctx, templatedIntent(b.nameB, "theirs", map[string]any{"name": "Ana", "order": 9}))
	requireFieldError(t, err, "template.name", herald.CodeUnknownTemplate)

	// Content and a template together.
	in = templatedIntent(b.nameA, "both", map[string]any{"name": "Ana", "order": 9})
	in.Content.SMS = &herald.SMSContent{Body: "hi"}
	_, err = b.clientA.Submit(ctx, in)
	requireFieldError(t, err, "content", herald.CodeInvalidField)

	var n int
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT count(*) FROM herald.records`).Scan(&n))
	require.Equal(t, 1, n, "only the valid intent was stored")

	// Retried after a new version is published, the same intent is the
	// same request: a duplicate of the original, still on version 1.
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.templates (name, version, default_locale, locales) VALUES ('order', 2, 'en', $1)`, orderTemplate)
	require.NoError(t, err)
	again, err := b.clientA.Submit(ctx, templatedIntent(b.nameA, "ok", map[string]any{"name": "Ana", "order": 9}))
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Equal(t, r.NotificationID, again.NotificationID)
}

func TestTemplates_ProducerPublishesStaffReads(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	ins := `INSERT INTO herald.templates (name, version, default_locale, locales) VALUES ('order', 1, 'en', $1)`
	_, err := b.asA.Exec(ctx, ins, orderTemplate)
	require.NoError(t, err)
	_, err = b.asB.Exec(ctx, ins, orderTemplate)
	require.NoError(t, err, "B's template of the same name is B's own")

	// In another's name, changed, deleted: refused.
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.templates (producer, name, version, default_locale, locales) VALUES ($1, 'x', 1, 'en', $2)`, b.nameB, orderTemplate)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.templates (name, version, default_locale, locales, created_by) VALUES ('y', 1, 'en', $1, 'someone')`, orderTemplate)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asA.Exec(ctx, `UPDATE herald.templates SET locales = '{"en":{"sms":{"body":"evil"}}}'`)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asA.Exec(ctx, `DELETE FROM herald.templates`)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asOp.Exec(ctx, ins, orderTemplate)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asOp.Exec(ctx, `UPDATE herald.templates SET version = 9`)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asAud.Exec(ctx, `DELETE FROM herald.templates`)
	requireSQLState(t, err, insufficientPrivilege)

	// A template that breaks the table's rules.
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.templates (name, version, default_locale, locales) VALUES ('z', 1, 'de', $1)`, orderTemplate)
	requireSQLState(t, err, checkViolation)

	require.Equal(t, 1, countAs(t, b.asA, `SELECT count(*) FROM herald.templates`), "a producer sees its own")
	require.Equal(t, 2, countAs(t, b.asOp, `SELECT count(*) FROM herald.templates`), "an operator reads all")
	require.Equal(t, 2, countAs(t, b.asAud, `SELECT count(*) FROM herald.templates`), "an auditor reads all")
	var by string
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT created_by FROM herald.templates WHERE producer = $1`, b.nameA).Scan(&by))
	require.Equal(t, b.nameA, by)
}

func TestClient_HostileTemplateRefusedOthersPass(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	ins := `INSERT INTO herald.templates (name, version, default_locale, locales) VALUES ($1, 1, 'en', $2)`
	_, err := b.asB.Exec(ctx, ins, "order", orderTemplate)
	require.NoError(t, err)
	// A publishes templates that would loop without end, build gigabytes
	// or recurse, and one that amplifies its data.
	hostile := map[string]struct{ body, field, msg string }{
		"loop":    {`{{range 100000000000}}{{end}}`, "template.name", "the stored template is refused: template loop/en/sms.body: line 1:8: {{range 100000000000}} is not allowed"},
		"printf":  {`{{$a := printf "%999999999s" ""}}{{len $a}}`, "template.name", "a width over 99 is not allowed"},
		"recurse": {`{{define "x"}}{{template "x" .}}{{end}}{{template "x" .}}`, "template.name", "{{define}} is not allowed"},
		"amplify": {`{{range .a}}{{range $.a}}{{range $.a}}x{{end}}{{end}}{{end}}`, "data", "template amplify/en/sms.body: over the template's budget"},
	}
	for name, h := range hostile {
		_, err := b.asA.Exec(ctx, ins, name, `{"en":{"sms":{"body":`+strconv.Quote(h.body)+`}}}`)
		require.NoError(t, err, "publishing is an INSERT: the template is refused when it is first used")
	}
	a := make([]any, 30_000) // 60 KB of data, within intake's limits
	for i := range a {
		a[i] = 0
	}

	// B submits while A's intents are checked.
	var wg sync.WaitGroup
	var bDone atomic.Int32
	bErr := make(chan error, 1)
	wg.Go(func() {
		for i := range 20 {
			if _, err := b.clientB.Submit(ctx, templatedIntent(b.nameB, fmt.Sprintf("b-%d", i), map[string]any{"name": "Ana", "order": i})); err != nil {
				bErr <- err
				return
			}
			bDone.Add(1)
		}
	})
	for name, h := range hostile {
		in := templatedIntent(b.nameA, name, map[string]any{"a": a})
		in.Template.Name = name
		_, err := b.clientA.Submit(ctx, in)
		requireFieldError(t, err, h.field, herald.CodeInvalidField)
		require.ErrorContains(t, err, h.msg)
	}
	wg.Wait()
	close(bErr)
	require.NoError(t, <-bErr)
	require.EqualValues(t, 20, bDone.Load())
	require.Zero(t, countAs(t, b.asA, `SELECT count(*) FROM herald.records`), "nothing of A's was accepted")
}
