package routing_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/routing"
)

type testBundle struct {
	pool *pgxpool.Pool
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{pool: pgtemp.NewPool(t)}
}

// apply parses file and applies it as actor "tester".
func (b *testBundle) apply(t *testing.T, file string, opts *routing.ApplyOpts) []routing.Change {
	t.Helper()
	f, err := routing.Parse([]byte(file))
	require.NoError(t, err)
	changes, err := routing.Apply(context.Background(), b.pool, f, "tester", opts)
	require.NoError(t, err)
	return changes
}

// count runs a count(*) query as the test's admin login: the test's own
// SQL, checking what the package wrote.
func (b *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

func (b *testBundle) version(t *testing.T) int64 {
	t.Helper()
	v, err := routing.ReadVersion(context.Background(), b.pool)
	require.NoError(t, err)
	return v
}

func TestApply_LoadReadsItBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	empty, err := routing.Load(ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, &routing.Table{Providers: map[string]routing.Provider{}, Rules: map[string][]routing.Rule{}}, empty)

	changes := b.apply(t, exampleFile, &routing.ApplyOpts{Reason: "first providers"})
	require.Equal(t, []routing.Change{
		{Kind: "provider", Name: "email/dev", Change: "added"},
		{Kind: "provider", Name: "email/ses", Change: "added"},
		{Kind: "provider", Name: "sms/acme", Change: "added"},
		{Kind: "provider", Name: "sms/backup", Change: "added"},
		{Kind: "provider", Name: "webhook/default", Change: "added"},
		{Kind: "rule", Name: "email/default", Change: "added"},
		{Kind: "rule", Name: "email/internal", Change: "added"},
		{Kind: "rule", Name: "sms/default", Change: "added"},
		{Kind: "rule", Name: "sms/kenya", Change: "added"},
	}, changes)

	got, err := routing.Load(ctx, b.pool)
	require.NoError(t, err)
	want := table(t, exampleFile)
	want.Version = 1
	require.Equal(t, want, got, "what Load reads is what the file says")

	// Settings hold references, keyed as the file is, without empty values.
	var settings string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT settings::text FROM herald.providers WHERE name = 'sms/acme'`).Scan(&settings))
	require.JSONEq(t, `{"timeout": "10s", "sms_http": {"url": "https://api.acme.example/v1/sms", "api_key": {"env": "ACME_KEY"}, "from": "HERALD"}}`, settings)
	// Each provider has its pacing and circuit rows.
	require.Equal(t, 5, b.count(t, `SELECT count(*) FROM herald.provider_circuits WHERE state = 'closed'`))
	require.Equal(t, 5, b.count(t, `SELECT count(*) FROM herald.provider_pacing`))
}

func TestApply_TwiceChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NotEmpty(t, b.apply(t, exampleFile, nil))
	require.Equal(t, int64(1), b.version(t))
	require.Empty(t, b.apply(t, exampleFile, nil))
	require.Equal(t, int64(1), b.version(t), "no change, no new version")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.audit_log WHERE action = 'routing_apply'`), "nor an audit row")
}

func TestApply_ReportsWhatChanged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.apply(t, exampleFile, nil)
	edited := strings.NewReplacer(
		"cap_per_second: 200", "cap_per_second: 100", // sms/acme changed
		"  - name: email/dev\n    driver: log\n", "", // email/dev removed ...
		"providers: [email/dev]", "providers: [email/ses]", // ... so rule internal changed
		"weights: [80, 20]", "weights: [50, 50]", // rule sms/default changed
	).Replace(exampleFile) + "  webhook:\n    - {name: all, providers: [webhook/default]}\n"
	changes := b.apply(t, edited, nil)
	require.Equal(t, []routing.Change{
		{Kind: "provider", Name: "email/dev", Change: "removed"},
		{Kind: "provider", Name: "sms/acme", Change: "changed"},
		{Kind: "rule", Name: "email/internal", Change: "changed"},
		{Kind: "rule", Name: "sms/default", Change: "changed"},
		{Kind: "rule", Name: "webhook/all", Change: "added"},
	}, changes)
	require.Equal(t, int64(2), b.version(t))
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.provider_circuits WHERE provider = 'email/dev'`))

	// Reordering rules is a change of each moved rule.
	kenya := `    - name: kenya
      match: {prefixes: ["+254"], producers: [shop], types: [otp.sent], priorities: [transactional]}
      strategy: failover
      providers: [sms/acme, sms/backup]
`
	swapped := strings.Replace(edited, kenya, "", 1)
	swapped = strings.Replace(swapped, "      weights: [50, 50]\n", "      weights: [50, 50]\n"+kenya, 1)
	f, err := routing.Parse([]byte(swapped))
	require.NoError(t, err)
	require.Equal(t, "default", f.Table().Rules["sms"][0].Name)
	changes, err = routing.Apply(context.Background(), b.pool, f, "tester", nil)
	require.NoError(t, err)
	require.Equal(t, []routing.Change{
		{Kind: "rule", Name: "sms/default", Change: "changed"},
		{Kind: "rule", Name: "sms/kenya", Change: "changed"},
	}, changes)

	// An empty list removes everything.
	changes = b.apply(t, "providers: []\n", nil)
	require.Len(t, changes, 9)
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.providers`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.routing_rules`))
}

func TestApply_DryRunChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	changes := b.apply(t, exampleFile, &routing.ApplyOpts{DryRun: true})
	require.Len(t, changes, 9)
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.providers`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.routing_rules`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM herald.audit_log`))
	require.Zero(t, b.version(t))
}

func TestApply_AuditsWithTheLogin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	name, asOp := pgtemp.Login(t, b.pool, "opr", "herald_operator")
	f, err := routing.Parse([]byte(exampleFile))
	require.NoError(t, err)
	changes, err := routing.Apply(ctx, asOp, f, "ann", &routing.ApplyOpts{Reason: "add acme"})
	require.NoError(t, err)

	var actor, reason, appliedBy string
	var affected int
	var details []byte
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT actor, reason, affected, details FROM herald.audit_log WHERE action = 'routing_apply'`).
		Scan(&actor, &reason, &affected, &details))
	require.Equal(t, "ann", actor)
	require.Equal(t, "add acme", reason)
	require.Equal(t, len(changes), affected)
	var d struct {
		Changes []routing.Change `json:"changes"`
	}
	require.NoError(t, json.Unmarshal(details, &d))
	require.Equal(t, changes, d.Changes)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT applied_by FROM herald.routing_state`).Scan(&appliedBy))
	require.Equal(t, name, appliedBy, "the login, whatever the actor says")

	_, err = routing.Apply(ctx, asOp, f, "", nil)
	require.ErrorContains(t, err, "actor is required")
}

func TestApply_RefusedFileChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.apply(t, exampleFile, nil)
	before, err := routing.Load(context.Background(), b.pool)
	require.NoError(t, err)

	bad := strings.Replace(exampleFile, "url: \"https://sms.backup.example/send\", ", "", 1)
	_, err = routing.Parse([]byte(bad))
	require.EqualError(t, err, "providers[1].sms_http.url: required")

	// The database's own check, for a doc that skipped Parse: refused whole.
	_, err = b.pool.Exec(context.Background(), `SELECT * FROM herald.routing_apply($1, 'tester', '', false)`,
		`{"providers": [{"name": "sms/z", "channel": "sms", "driver": "log"}], "rules": [{"channel": "sms", "position": 1, "name": "r", "strategy": "failover", "providers": ["sms/nope"]}]}`)
	require.ErrorContains(t, err, "rules.sms[1].providers: sms/nope is not a provider of channel sms")

	after, err := routing.Load(context.Background(), b.pool)
	require.NoError(t, err)
	require.Equal(t, before, after)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.audit_log`))
}

func TestOpenCircuits_ListsCoolingCircuits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.apply(t, exampleFile, nil)
	// The test plays serve's part: it opens two circuits, one already past its cool-down.
	_, err := b.pool.Exec(ctx, `UPDATE herald.provider_circuits SET state = 'open', open_until = now() + interval '1 minute' WHERE provider = 'sms/acme'`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE herald.provider_circuits SET state = 'open', open_until = now() - interval '1 second' WHERE provider = 'sms/backup'`)
	require.NoError(t, err)
	open, err := routing.OpenCircuits(ctx, b.pool, time.Time{})
	require.NoError(t, err)
	require.Len(t, open, 1)
	require.Contains(t, open, "sms/acme")
	open, err = routing.OpenCircuits(ctx, b.pool, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Empty(t, open)
}

func TestDefaultCircuit_IsTheSchemas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// A provider inserted with the columns' defaults (the test's own SQL).
	_, err := b.pool.Exec(ctx, `INSERT INTO herald.providers (name, channel, driver) VALUES ('sms/d', 'sms', 'log')`)
	require.NoError(t, err)
	tab, err := routing.Load(ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, routing.DefaultCircuit, tab.Providers["sms/d"].Circuit)
}

func TestApply_SMPPPasswordStaysAReference(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const file = `
providers:
  - name: sms/smsc
    driver: smpp
    cap_per_second: 100
    smpp:
      host: smsc.example.com
      port: 2775
      system_id: herald
      password: {env: SMSC_PASSWORD}
      binds: 4
      window: 20
      source_addr: HERALD
      long_messages: sar
      enquire_link_interval: 15s
rules:
  sms:
    - name: default
      providers: [sms/smsc]
`
	b.apply(t, file, nil)
	got, err := routing.Load(ctx, b.pool)
	require.NoError(t, err)
	want := table(t, file)
	want.Version = 1
	require.Equal(t, want, got)
	p := got.Providers["sms/smsc"]
	require.Equal(t, "smpp", p.Driver)
	require.Equal(t, 4, p.SMPP.Binds)
	require.Equal(t, 15*time.Second, p.SMPP.EnquireLinkInterval)
	require.Equal(t, "SMSC_PASSWORD", p.SMPP.Password.Env)

	var settings string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT settings::text FROM herald.providers WHERE name = 'sms/smsc'").Scan(&settings))
	require.JSONEq(t, `{"smpp": {"host": "smsc.example.com", "port": 2775, "system_id": "herald", "password": {"env": "SMSC_PASSWORD"},
		"binds": 4, "window": 20, "source_addr": "HERALD", "long_messages": "sar", "enquire_link_interval": "15s"}}`, settings)
	require.Empty(t, b.apply(t, file, nil), "the same file again changes nothing")
}
