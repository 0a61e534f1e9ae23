package vet

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

func TestMain(m *testing.M) { pgtemp.TestMain(m) }

type testBundle struct {
	admin    *pgxpool.Pool // the engine's login
	producer string
	asProd   *pgxpool.Pool // a real producer login
	asOp     *pgxpool.Pool
	vetter   *Vetter
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	b := &testBundle{admin: pgtemp.NewPool(t)}
	b.producer, b.asProd = pgtemp.Login(t, b.admin, "prod", "herald_producer")
	_, b.asOp = pgtemp.Login(t, b.admin, "opr", "herald_operator")
	b.vetter = New(b.admin, &Config{ContentRulesMaxAge: -1})
	return b
}

// rule adds a content rule as an operator.
func (b *testBundle) rule(t *testing.T, kind, pattern, mode string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.asOp.QueryRow(context.Background(),
		`INSERT INTO herald.content_rules (kind, pattern, mode) VALUES ($1, $2, $3) RETURNING id`, kind, pattern, mode).Scan(&id))
	return id
}

// insert stores one notification with one route as the producer's login
// does it by hand, past every check of the Go client, in one transaction
// (as SubmitTx's caller would), and returns its id. The route must name
// lane '!vet': the database admits nothing else.
func (b *testBundle) insert(t *testing.T, key, channel, ref, payload string, campaign *string) string {
	t.Helper()
	ctx := context.Background()
	nid := uuid.Must(uuid.NewV7()).String()
	require.NoError(t, pgx.BeginFunc(ctx, b.asProd, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind,
			payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at,
			channels, campaign)
			VALUES ($1, 'promo', $2, 'addresses', $3, $4, 'fp', now(), now(), now(), now() + interval '1 day', ARRAY[$5], $6)`,
			nid, b.producer, payload, key, channel, campaign); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
			max_attempts, next_attempt_at, created_at, updated_at, lane)
			VALUES ($1, 'r1', $2, $3, 'pending', 3, now(), now(), now(), '!vet')`, nid, channel, ref)
		return err
	}))
	return nid
}

func smsPayload(body string) string {
	return `{"sms":{"body":` + jsonString(body) + `}}`
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// route reads a route's state as the engine sees it.
type routeState struct {
	Status, Lane, Class, Message string
}

func (b *testBundle) route(t *testing.T, nid string) routeState {
	t.Helper()
	var s routeState
	require.NoError(t, b.admin.QueryRow(context.Background(), `SELECT status, lane, last_error_classification, last_error_message
		FROM herald.routes WHERE notification_id = $1`, nid).Scan(&s.Status, &s.Lane, &s.Class, &s.Message))
	return s
}

func requireSQLState(t *testing.T, err error, code string) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, code, pgErr.Code, pgErr.Message)
}

func TestVetter_DeadLettersRefusedWhateverTrick(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.rule(t, "word", "spam", "refuse")
	b.rule(t, "word", "apple", "refuse")
	b.rule(t, "word", "free money", "refuse")
	tricks := []struct{ name, body string }{
		{"Plain", "buy spam now"},
		{"ZeroWidthSpace", "buy sp\u200Bam now"},
		{"SoftHyphen", "buy sp\u00ADam now"},
		{"CyrillicHomoglyphs", "an \u0430\u0440\u0440\u04CF\u0435 a day"}, // аррӏе
		{"Fullwidth", "buy \uFF53\uFF50\uFF41\uFF4D now"},
		{"CombiningMarks", "buy s\u0308pa\u0301m now"},
		{"NoBreakSpaceInsideAPhrase", "get free\u00A0money"},
	}
	ids := map[string]string{}
	for _, tt := range tricks {
		ids[tt.name] = b.insert(t, "k-"+tt.name, "sms", "+14155550123", smsPayload(tt.body), nil)
	}
	clean := b.insert(t, "k-clean", "sms", "+14155550123", smsPayload("your order shipped"), nil)
	for _, nid := range ids {
		require.Equal(t, "!vet", b.route(t, nid).Lane, "no dispatcher sees it before the engine checked it")
	}

	n, err := b.vetter.VetOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, len(tricks)+1, n)
	for _, tt := range tricks {
		t.Run(tt.name, func(t *testing.T) {
			s := b.route(t, ids[tt.name])
			require.Equal(t, "dead_letter", s.Status)
			require.Equal(t, "content_blocked", s.Class)
			require.Contains(t, s.Message, "rule ")
			var class, hint string
			require.NoError(t, b.asProd.QueryRow(ctx, `SELECT failure_classification, recovery_hint FROM herald.dead_letters
				WHERE notification_id = $1`, ids[tt.name]).Scan(&class, &hint))
			require.Equal(t, "content_blocked", class, "the producer reads why")
			require.NotEmpty(t, hint)
		})
	}
	s := b.route(t, clean)
	require.Equal(t, "pending", s.Status)
	require.Equal(t, "", s.Lane, "the clean one goes to its channel's queue")
	var enc string
	var seg int
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT sms_encoding, sms_segments FROM herald.routes WHERE notification_id = $1`, clean).Scan(&enc, &seg))
	require.Equal(t, "gsm7", enc, "the engine counts the segments itself")
	require.Equal(t, 1, seg)
	n, err = b.vetter.VetOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to vet")
}

func TestVetter_RefusesOverCapsAndCanceled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	long := b.insert(t, "long", "sms", "+14155550123", smsPayload(strings.Repeat("a", 2000)), nil)
	big := b.insert(t, "big", "webhook", "https://example.com/hook", `{"webhook":{"x":"`+strings.Repeat("b", 70000)+`"}}`, nil)
	_, err := b.admin.Exec(ctx, `INSERT INTO herald.campaigns (producer, campaign, created_at, cancel_requested_at)
		VALUES ($1, 'spring', now(), now())`, b.producer)
	require.NoError(t, err)
	spring, never := "spring", "never-joined"
	canceled := b.insert(t, "camp", "sms", "+14155550123", smsPayload("sale"), &spring)
	unjoined := b.insert(t, "camp2", "sms", "+14155550123", smsPayload("sale"), &never)

	_, err = b.vetter.VetOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, routeState{"dead_letter", "", "sms_too_long", b.route(t, long).Message}, b.route(t, long))
	require.Equal(t, routeState{"dead_letter", "", "too_large", b.route(t, big).Message}, b.route(t, big))
	require.Equal(t, "canceled", b.route(t, canceled).Status)
	require.Equal(t, "canceled", b.route(t, unjoined).Status)
}

func TestVetter_HoldsReviewMatchUntilDecided(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ruleID := b.rule(t, "regex", `(?i)free\s+money`, "review")
	released := b.insert(t, "rel", "sms", "+14155550123", smsPayload("free\u00A0m\u043Eney"), nil) // NBSP, Cyrillic о
	rejected := b.insert(t, "rej", "sms", "+14155550123", smsPayload("FREE money"), nil)
	_, err := b.vetter.VetOnce(ctx)
	require.NoError(t, err)
	for _, nid := range []string{released, rejected} {
		s := b.route(t, nid)
		require.Equal(t, "pending", s.Status)
		require.Equal(t, "!held", s.Lane, "no dispatcher claims it")
	}
	var heldRel, heldRej, gotRule int64
	var rule string
	require.NoError(t, b.asProd.QueryRow(ctx, `SELECT id, rule_id, rule FROM herald.held_intents WHERE notification_id = $1`, released).
		Scan(&heldRel, &gotRule, &rule))
	require.Equal(t, ruleID, gotRule, "the engine names the rule")
	require.Contains(t, rule, "review")
	require.NoError(t, b.asProd.QueryRow(ctx, `SELECT id FROM herald.held_intents WHERE notification_id = $1`, rejected).Scan(&heldRej))

	// The producer cannot forge a held intent of its own.
	_, err = b.asProd.Exec(ctx, `INSERT INTO herald.held_intents (producer, idempotency_key, body, rule_id, rule, part)
		VALUES ($1, 'forged', '{}', 1, 'rule 1 (word "x", every producer, review)', 'content.sms.body')`, b.producer)
	requireSQLState(t, err, "42501")

	_, err = b.asOp.Exec(ctx, `SELECT herald.held_release(ARRAY[$1::bigint], 'ops', 'fine')`, heldRel)
	require.NoError(t, err)
	require.Equal(t, routeState{"pending", "", "content_blocked", b.route(t, released).Message}, b.route(t, released),
		"released: in its channel's queue")
	_, err = b.asOp.Exec(ctx, `SELECT herald.held_reject(ARRAY[$1::bigint], 'ops', 'spam')`, heldRej)
	require.NoError(t, err)
	s := b.route(t, rejected)
	require.Equal(t, "dead_letter", s.Status)
	require.Equal(t, "content_blocked", s.Class)
	require.Contains(t, s.Message, "spam")
	var class string
	require.NoError(t, b.asProd.QueryRow(ctx, `SELECT failure_classification FROM herald.dead_letters WHERE notification_id = $1`, rejected).Scan(&class))
	require.Equal(t, "content_blocked", class)
	n, err := b.vetter.VetOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a released route is not vetted again")
}

func TestRepeatedKey_FindsKeyWrittenTwice(t *testing.T) {
	t.Parallel()
	for payload, want := range map[string]string{
		`{"sms":{"body":"a"}}`:                          "",
		`{"sms":{"body":"a"},"sms":{"body":"b"}}`:       "sms",
		`{"sms":{"body":"a","body":"b"}}`:               "body",
		`{"webhook":[{"x":1},{"x":2}],"email":null}`:    "",
		`{"webhook":{"a":{"b":1},"c":[1,"a"],"a":2}}`:   "a",
		`{"webhook":{"k":"body","body":"k"},"x":"sms"}`: "",
	} {
		require.Equal(t, want, repeatedKey(payload), payload)
	}
}

func TestVetter_ChecksWhatTheDispatcherWouldSend(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.rule(t, "word", "spam", "refuse")
	// A key written twice: the dispatcher's reader and the drivers' could
	// each take a different one.
	twice := b.insert(t, "twice", "sms", "+14155550123", `{"sms":{"body":"spam"},"sms":{"body":"hello"}}`, nil)
	// Content for the channel beside a template reference: the dispatcher
	// sends the content.
	mixed := b.insert(t, "mixed", "sms", "+14155550123", `{"data":{},"sms":{"body":"sp\u200bam"},"template":{"locale":"","name":"none","version":1}}`, nil)
	// A webhook body whose strings hide the word in JSON escapes.
	escaped := b.insert(t, "escaped", "webhook", "https://example.com/hook", `{"webhook":{"text":"buy \u0073pam"}}`, nil)
	_, err := b.vetter.VetOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "wrong_shape", b.route(t, twice).Class)
	require.Equal(t, "dead_letter", b.route(t, twice).Status)
	require.Equal(t, "content_blocked", b.route(t, mixed).Class)
	require.Equal(t, "content_blocked", b.route(t, escaped).Class)
}

func TestVetter_RefusesSecondHeldUnderKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.rule(t, "word", "free money", "review")
	// A producer's login can store two records of one key by hand.
	first := b.insert(t, "same", "sms", "+14155550123", smsPayload("free money"), nil)
	_, err := b.vetter.VetOnce(ctx)
	require.NoError(t, err)
	second := b.insert(t, "same", "sms", "+14155550123", smsPayload("free money"), nil)
	_, err = b.vetter.VetOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "!held", b.route(t, first).Lane)
	s := b.route(t, second)
	require.Equal(t, "dead_letter", s.Status, "never left waiting for a decision no one can make")
	require.Equal(t, "idempotency_conflict", s.Class)
	var held int
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT count(*) FROM herald.held_intents WHERE notification_id = $1`, first).Scan(&held))
	require.Equal(t, 1, held)
}

// A producer's login that writes an sms route's content by hand cannot
// name a sender it has not had approved, nor one of a form intake
// refuses: the vetter dead-letters the route, sender_not_approved or
// invalid_field; an approved sender passes.
func TestVetter_RefusesASenderTheProducerHasNotHadApproved(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.admin.Exec(ctx, `SELECT herald.sender_id_approve($1, 'MINE', 'test', '')`, b.producer)
	require.NoError(t, err)
	_, err = b.admin.Exec(ctx, `SELECT herald.sender_id_approve('shop', 'THEIRS', 'test', '')`)
	require.NoError(t, err)
	mine := b.insert(t, "mine", "sms", "+14155550123", `{"sms":{"body":"hi","from":"MINE"}}`, nil)
	theirs := b.insert(t, "theirs", "sms", "+14155550123", `{"sms":{"body":"hi","from":"THEIRS"}}`, nil)
	bad := b.insert(t, "bad", "sms", "+14155550123", `{"sms":{"body":"hi","from":"A\u0007B"}}`, nil)
	templated := b.insert(t, "templated", "sms", "+14155550123",
		`{"data":{},"sms_options":{"from":"THEIRS"},"template":{"locale":"","name":"t","version":1}}`, nil)

	_, err = b.vetter.VetOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "pending", b.route(t, mine).Status)
	require.Equal(t, "", b.route(t, mine).Lane)
	require.Equal(t, routeState{"dead_letter", "", "sender_not_approved", b.route(t, theirs).Message}, b.route(t, theirs))
	require.Equal(t, routeState{"dead_letter", "", "invalid_field", b.route(t, bad).Message}, b.route(t, bad))
	require.Equal(t, routeState{"dead_letter", "", "sender_not_approved", b.route(t, templated).Message}, b.route(t, templated))
}
