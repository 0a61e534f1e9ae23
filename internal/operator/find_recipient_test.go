package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/accept"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/benchstore"
)

// acceptIntents decodes, validates and accepts the intents (JSON objects)
// in one statement, as the engine does, and returns their notification ids.
func acceptIntents(t *testing.T, db store.DBTX, bodies ...string) []string {
	t.Helper()
	vs := make([]*intake.Validated, len(bodies))
	for i, body := range bodies {
		in, err := intake.DecodeRaw([]byte(body), intake.Limits{})
		require.NoError(t, err)
		vs[i], err = intake.Validate(in, intake.Limits{}, time.Now())
		require.NoError(t, err, body)
	}
	out, err := accept.Accept(context.Background(), db, vs, accept.Params{})
	require.NoError(t, err)
	ids := make([]string, len(out))
	for i, o := range out {
		ids[i] = o.NotificationID
	}
	return ids
}

// intentTo is an intent of producer with idempotency key key, on
// channels, to audience (a JSON object's members).
func intentTo(producer, key, channels, audience string) string {
	var content []string
	for ch, c := range map[string]string{"sms": `"sms":{"body":"On its way"}`, "email": `"email":{"subject":"Shipped","text":"On its way"}`,
		"webhook": `"webhook":{"order":7}`} {
		if strings.Contains(channels, `"`+ch+`"`) {
			content = append(content, c)
		}
	}
	return fmt.Sprintf(`{"notification_type":"order.shipped","producer":%q,"idempotency_key":%q,"channels":[%s],"audience":{%s},"content":{%s}}`,
		producer, key, channels, audience, strings.Join(content, ","))
}

// deadLetter dead-letters the pending routes of the notifications.
func deadLetter(t *testing.T, db store.DBTX, nids ...string) {
	t.Helper()
	_, err := benchstore.New().RouteDeadLetterMany(context.Background(), db, benchstore.RouteDeadLetterManyParams{
		NotificationIds: nids, Attempts: 3, Classification: "permanent", Message: "rejected by test",
	})
	require.NoError(t, err)
}

func routeIDs(s *operator.RecipientSearch) []string {
	var out []string
	for _, r := range s.Routes {
		out = append(out, r.NotificationID+"/"+r.RouteID)
	}
	return out
}

func TestFindByRecipient_AsTypedOrAsStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ids := acceptIntents(t, b.pool,
		intentTo("shop", "sms", `"sms"`, `"sms":["+1 (415) 555-0123"]`),
		intentTo("shop", "email", `"email"`, `"email":["Ana.Lee@Example.COM"]`),
		intentTo("shop", "hook", `"webhook"`, `"webhook":["HTTPS://Hooks.Example.com/Orders/B7"]`),
		intentTo("shop", "user", `"sms","email"`, `"user_ids":["u-42"]`),
		intentTo("shop", "other", `"sms"`, `"sms":["+447911123456"]`),
	)
	deadLetter(t, b.pool, ids[0])

	find := func(typed string) *operator.RecipientSearch {
		t.Helper()
		s, err := b.op.FindByRecipient(ctx, typed, 0, "")
		require.NoError(t, err, typed)
		return s
	}
	// A phone number as stored (E.164), as typed with spaces and
	// punctuation, and without its "+", finds the one sms route, and its
	// dead letter.
	for _, typed := range []string{"+14155550123", "+1 415 555 0123", "+1 (415) 555-0123", "1-415-555-0123"} {
		s := find(typed)
		require.Equal(t, []string{ids[0] + "/" + s.Routes[0].RouteID}, routeIDs(s), typed)
		require.Equal(t, "+14155550123", s.Routes[0].RecipientRef)
		require.Equal(t, "dead_letter", s.Routes[0].Status)
		require.Equal(t, "shop", s.Routes[0].Producer)
		require.Len(t, s.DeadLetters, 1, typed)
		require.Equal(t, ids[0], s.DeadLetters[0].NotificationID)
		require.Equal(t, "permanent", s.DeadLetters[0].Classification)
	}
	// An e-mail address: the domain's case does not matter, the local
	// part's does (herald keeps it as given).
	s := find("Ana.Lee@example.com")
	require.Len(t, s.Routes, 1)
	require.Equal(t, ids[1], s.Routes[0].NotificationID)
	require.Equal(t, "Ana.Lee@example.com", s.Routes[0].RecipientRef)
	require.Len(t, find(" Ana.Lee@EXAMPLE.COM ").Routes, 1)
	require.Empty(t, find("ana.lee@example.com").Routes)
	// A webhook URL: scheme and host in any case, the path as given.
	s = find("https://HOOKS.example.com/Orders/B7")
	require.Len(t, s.Routes, 1)
	require.Equal(t, ids[2], s.Routes[0].NotificationID)
	require.Empty(t, find("https://hooks.example.com/orders/b7").Routes)
	// A user id, bare or as stored: both of its routes.
	for _, typed := range []string{"u-42", "user:u-42"} {
		s = find(typed)
		require.Len(t, s.Routes, 2, typed)
		for _, r := range s.Routes {
			require.Equal(t, ids[3], r.NotificationID)
			require.Equal(t, "user:u-42", r.RecipientRef)
		}
		require.Empty(t, s.DeadLetters)
	}
	// Nobody: nothing, which is not an error.
	for _, typed := range []string{"+14155550199", "nobody@example.com", "https://hooks.example.com/none", "u-43"} {
		s = find(typed)
		require.Empty(t, s.Routes, typed)
		require.Empty(t, s.DeadLetters, typed)
		require.Empty(t, s.Next, typed)
	}
	_, err := b.op.FindByRecipient(ctx, "  ", 0, "")
	require.ErrorIs(t, err, operator.ErrBadRecipient)
	_, err = b.op.FindByRecipient(ctx, "u-42", 0, "not-a-cursor")
	require.ErrorIs(t, err, operator.ErrBadCursor)
}

func TestFindByRecipient_NewestFirstInBoundedPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const hook = "https://hooks.example.com/customers/000500"
	var all []string
	// Five accepts of one, then one of three (which share created_at):
	// the pages still cut between routes, never repeat or skip one.
	for i := range 5 {
		all = append(all, acceptIntents(t, b.pool, intentTo("shop", fmt.Sprint("k", i), `"webhook"`, `"webhook":["`+hook+`"]`))...)
	}
	all = append(all, acceptIntents(t, b.pool,
		intentTo("shop", "k5", `"webhook"`, `"webhook":["`+hook+`"]`),
		intentTo("shop", "k6", `"webhook"`, `"webhook":["`+hook+`"]`),
		intentTo("shop", "k7", `"webhook"`, `"webhook":["`+hook+`"]`))...)
	acceptIntents(t, b.pool, intentTo("shop", "elsewhere", `"webhook"`, `"webhook":["https://hooks.example.com/customers/000501"]`))
	deadLetter(t, b.pool, all[0], all[7])

	var got []operator.RecipientRoute
	after, pages := "", 0
	for {
		s, err := b.op.FindByRecipient(ctx, hook, 3, after)
		require.NoError(t, err)
		require.LessOrEqual(t, len(s.Routes), 3)
		require.Len(t, s.DeadLetters, 2, "every page shows the newest")
		require.False(t, s.MoreDeadLetters)
		got = append(got, s.Routes...)
		pages++
		if s.Next == "" {
			break
		}
		after = s.Next
	}
	require.Equal(t, 3, pages)
	require.Len(t, got, len(all))
	seen := map[string]bool{}
	for i, r := range got {
		require.False(t, seen[r.NotificationID], "repeated %s", r.NotificationID)
		seen[r.NotificationID] = true
		require.Equal(t, hook, r.RecipientRef)
		if i > 0 {
			p := got[i-1]
			require.True(t, p.AcceptedAt.After(r.AcceptedAt) || p.AcceptedAt.Equal(r.AcceptedAt) && p.NotificationID > r.NotificationID,
				"newest first: %v %s then %v %s", p.AcceptedAt, p.NotificationID, r.AcceptedAt, r.NotificationID)
		}
	}
	// The newest accept comes first; the first accept last.
	require.Contains(t, all[5:], got[0].NotificationID)
	require.Equal(t, all[0], got[len(got)-1].NotificationID)

	s, err := b.op.FindByRecipient(ctx, hook, 0, "")
	require.NoError(t, err)
	require.Len(t, s.Routes, len(all))
	require.Empty(t, s.Next)
	require.Len(t, s.DeadLetters, 2)
	require.False(t, s.MoreDeadLetters)
	require.Equal(t, all[7], s.DeadLetters[0].NotificationID, "newest dead letter first")
	s, err = b.op.FindByRecipient(ctx, hook, 1, "")
	require.NoError(t, err)
	require.Len(t, s.DeadLetters, 1)
	require.Equal(t, all[7], s.DeadLetters[0].NotificationID)
	require.True(t, s.MoreDeadLetters)
}

func TestFindByRecipient_ProducerSeesItsOwnAuditorAll(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	nameA, asA := pgtemp.Login(t, b.pool, "prod_a", "herald_producer")
	nameB, _ := pgtemp.Login(t, b.pool, "prod_b", "herald_producer")
	_, asAuditor := pgtemp.Login(t, b.pool, "aud", "herald_auditor")
	mine := acceptIntents(t, b.pool, intentTo(nameA, "a1", `"sms"`, `"sms":["+254712345678"]`), intentTo(nameA, "a2", `"sms"`, `"sms":["+254712345678"]`))
	theirs := acceptIntents(t, b.pool, intentTo(nameB, "b1", `"sms"`, `"sms":["+254712345678"]`))
	deadLetter(t, b.pool, mine[0], theirs[0])

	opA, err := operator.New(asA, nil)
	require.NoError(t, err)
	s, err := opA.FindByRecipient(ctx, "+254 712 345 678", 0, "")
	require.NoError(t, err)
	require.ElementsMatch(t, mine, []string{s.Routes[0].NotificationID, s.Routes[1].NotificationID})
	require.Len(t, s.Routes, 2)
	require.Len(t, s.DeadLetters, 1)
	require.Equal(t, mine[0], s.DeadLetters[0].NotificationID)

	aud, err := operator.New(asAuditor, nil)
	require.NoError(t, err)
	s, err = aud.FindByRecipient(ctx, "+254712345678", 0, "")
	require.NoError(t, err)
	require.Len(t, s.Routes, 3)
	require.Len(t, s.DeadLetters, 2)
	require.Equal(t, nameB, s.Routes[0].Producer, "the newest, another producer's")
}

// TestFindByRecipient_ReadsTheRecipientIndex shows the plans of the
// searches on a history of twenty thousand routes over five weeks, a
// quarter of them to one hot webhook and the rest each to its own:
// every partition holding routes is read along its recipient index, for
// an operator and for a producer's login alike (whose reads pass
// row-level security, ahead of which Postgres puts only leakproof
// conditions: hashtext is not one, texteq is); and the hot recipient's
// partitions are merged in order (Merge Append) and stopped at the page,
// not read whole and sorted. The statements are the store's own, caught
// as the operator runs them, and EXPLAINed (raw SQL: a plan read) as they
// ran, planned for their arguments.
func TestFindByRecipient_ReadsTheRecipientIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	oldest := time.Now().Add(-40 * 24 * time.Hour)
	span := 30 * 24 * time.Hour
	first := pgtype.Date{Time: oldest.UTC(), Valid: true}
	last := pgtype.Date{Time: oldest.Add(span + 24*time.Hour).UTC(), Valid: true}
	_, err := store.New().RouteWeeksCreate(ctx, b.pool, store.RouteWeeksCreateParams{FirstDay: first, LastDay: last, WaitSeconds: 10})
	require.NoError(t, err)
	_, err = store.New().RecordWeeksCreate(ctx, b.pool, store.RecordWeeksCreateParams{FirstDay: first, LastDay: last, WaitSeconds: 10})
	require.NoError(t, err)
	const n, hot = 20_000, "https://hooks.example.com/hot"
	for from := int64(0); from < n; from += 1000 {
		ref := "https://hooks.example.com/customers/{g}"
		if from%4000 == 0 {
			ref = hot
		}
		require.NoError(t, benchstore.New().BenchHistoryFill(ctx, b.pool, benchstore.BenchHistoryFillParams{
			Producer: "shop", PayloadJson: `{"webhook":{"body":{"order":9}}}`, Channel: "webhook",
			Oldest: oldest, SpanSeconds: span.Seconds(), N: n, FromN: from, ToN: from + 1000, DeadEvery: 2,
			RouteIds: []string{"webhook:0"}, RecipientRefs: []string{ref},
		}))
	}
	_, err = b.pool.Exec(ctx, "ANALYZE") // as autovacuum would have
	require.NoError(t, err)

	_, asProducer := pgtemp.Login(t, b.pool, "prod", "herald_producer")
	for _, as := range []struct {
		name string
		pool *pgxpool.Pool
	}{{"operator", b.pool}, {"producer", asProducer}} {
		for _, recipient := range []string{"https://hooks.example.com/customers/001500", hot} {
			tr := &catcher{}
			cfg := as.pool.Config().Copy()
			cfg.ConnConfig.Tracer = tr
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			require.NoError(t, err)
			t.Cleanup(pool.Close)
			op, err := operator.New(pool, nil)
			require.NoError(t, err)
			s, err := op.FindByRecipient(ctx, recipient, 0, "")
			require.NoError(t, err)
			if as.name == "operator" && recipient == hot {
				require.Len(t, s.Routes, operator.DefaultPageSize)
				require.NotEmpty(t, s.Next)
				require.Len(t, s.DeadLetters, operator.DefaultPageSize)
				require.True(t, s.MoreDeadLetters)
			}
			if as.name == "operator" && recipient != hot {
				require.Len(t, s.Routes, 1)
				require.Len(t, s.DeadLetters, 1, "record 1500 is dead-lettered")
			}
			for _, name := range []string{"RouteListByRecipient", "DeadLetterListByRecipient"} {
				q := tr.find(t, name)
				var plan []byte
				// As the login that ran it: row-level security is in the plan.
				require.NoError(t, pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+q.sql, q.args...).Scan(&plan))
				nodes := planNodes(t, plan)
				what := fmt.Sprintf("%s as %s for %s:\n%s", name, as.name, recipient, nodes)
				t.Log(what)
				index := "dead_letters_recipient_idx"
				if name == "RouteListByRecipient" {
					index = "_recipient_ref_created_at_idx"
				}
				read := 0
				for _, nd := range nodes {
					if !strings.HasPrefix(nd.rel, "routes") && !strings.HasPrefix(nd.rel, "dead_letters") {
						continue
					}
					var tuples float64
					// A catalog read: which partitions hold rows.
					require.NoError(t, b.pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = ('herald.' || $1)::regclass`, nd.rel).Scan(&tuples))
					if tuples <= 0 {
						continue // an empty partition costs nothing either way
					}
					require.Contains(t, nd.index, index, what)
					read++
				}
				require.Positive(t, read, what)
				if recipient == hot && name == "RouteListByRecipient" {
					require.Contains(t, nodes.String(), "Merge Append", what)
				}
			}
		}
	}
}

// planNode is a node of a plan: its type, and the relation and index it
// reads, if any.
type planNode struct{ typ, rel, index string }

type planNodeList []planNode

func (l planNodeList) String() string {
	var lines []string
	for _, n := range l {
		line := n.typ
		if n.rel != "" {
			line += " on " + n.rel
		}
		if n.index != "" {
			line += " using " + n.index
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// planNodes lists the nodes of a JSON plan, depth first; a bitmap heap
// scan takes the index of its bitmap index scan.
func planNodes(t *testing.T, plan []byte) planNodeList {
	var root []struct{ Plan map[string]any }
	require.NoError(t, json.Unmarshal(plan, &root))
	var out planNodeList
	var walk func(n map[string]any) string
	walk = func(n map[string]any) string {
		nd := planNode{typ: fmt.Sprint(n["Node Type"])}
		nd.rel, _ = n["Relation Name"].(string)
		nd.index, _ = n["Index Name"].(string)
		at := len(out)
		out = append(out, nd)
		kids, _ := n["Plans"].([]any)
		for _, k := range kids {
			ix := walk(k.(map[string]any))
			if nd.typ == "Bitmap Heap Scan" && out[at].index == "" {
				out[at].index = ix
			}
		}
		return out[at].index
	}
	walk(root[0].Plan)
	return out
}

// catcher is a pgx tracer that keeps each statement the pool runs.
type catcher struct {
	mu   sync.Mutex
	seen []caught
}

type caught struct {
	sql  string
	args []any
}

func (c *catcher) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, caught{d.SQL, d.Args})
	return ctx
}

func (c *catcher) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// find returns the statement the store names name.
func (c *catcher) find(t *testing.T, name string) caught {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.seen {
		if strings.HasPrefix(q.sql, "-- name: "+name+" ") {
			return q
		}
	}
	require.FailNow(t, "statement not run", name)
	return caught{}
}
