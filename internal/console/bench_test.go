package console_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/benchstore"
	"github.com/heraldhq/herald/schema"
)

// BenchmarkConsole_PagesAtSize times each page of the console, signed in
// as an operator, over a database holding a finished history the size
// the console must stay fast at: HERALD_CONSOLE_BENCH_RECORDS notifications
// (default 10 million, one route each) over 30 days, one in a hundred
// dead-lettered (100 thousand dead letters), filled as the bench's
// retention mode fills its history. Run it alone:
//
//	go run ./internal/harness/pgtemp/withpg go test -run '^$' -bench BenchmarkConsole_PagesAtSize -benchtime 20x ./internal/console/
//
// The fill of ten million takes the better part of an hour on two cores.
// HERALD_CONSOLE_BENCH_DATABASE names a database to keep between runs
// instead (a superuser's URL, on a server that asks every other login
// for its password over TCP, as the tests' own cluster does): it is
// migrated to the current schema, filled once, and timed again each run.
func BenchmarkConsole_PagesAtSize(b *testing.B) {
	records := int64(10_000_000)
	if v := os.Getenv("HERALD_CONSOLE_BENCH_RECORDS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(b, err)
		records = n
	}
	ctx := context.Background()
	var tb *testBundle
	if kept := os.Getenv("HERALD_CONSOLE_BENCH_DATABASE"); kept != "" {
		pool, err := pgxpool.New(ctx, kept)
		require.NoError(b, err)
		_, err = schema.NewMigrator(pool, nil).Up(ctx)
		pool.Close()
		require.NoError(b, err)
		tb = bundleOn(b, kept)
		if n := tb.count(b, `SELECT count(*) FROM herald.records`); int64(n) >= records {
			b.Logf("kept database holds %d records: no fill", n)
			timePages(b, tb)
			return
		}
		require.Zero(b, tb.count(b, `SELECT count(*) FROM herald.records`), "a kept database is filled whole or not at all")
	} else {
		tb = setup(b)
	}
	oldest := time.Now().Add(-52 * 24 * time.Hour)
	span := 30 * 24 * time.Hour
	first := pgtype.Date{Time: oldest.UTC(), Valid: true}
	last := pgtype.Date{Time: oldest.Add(span + 24*time.Hour).UTC(), Valid: true}
	_, err := store.New().RouteWeeksCreate(ctx, tb.admin, store.RouteWeeksCreateParams{FirstDay: first, LastDay: last, WaitSeconds: 10})
	require.NoError(b, err)
	_, err = store.New().RecordWeeksCreate(ctx, tb.admin, store.RecordWeeksCreateParams{FirstDay: first, LastDay: last, WaitSeconds: 10})
	require.NoError(b, err)
	p := benchstore.BenchHistoryFillParams{
		Producer: "shop", PayloadJson: `{"webhook":{"body":{"order":9}}}`, Channel: "webhook",
		Oldest: oldest, SpanSeconds: span.Seconds(), N: records, DeadEvery: 100,
		RouteIds: []string{"webhook:0"}, RecipientRefs: []string{"https://hooks.example.com/customers/{g}"},
	}
	began := time.Now()
	for from := int64(0); from < records; from += 250_000 {
		p.FromN, p.ToN = from, min(from+250_000, records)
		require.NoError(b, benchstore.New().BenchHistoryFill(ctx, tb.admin, p))
	}
	_, err = tb.admin.Exec(ctx, "VACUUM ANALYZE") // as autovacuum would have by now
	require.NoError(b, err)
	b.Logf("filled %d records (%d dead letters) in %s", records, tb.count(b, `SELECT count(*) FROM herald.dead_letters`),
		time.Since(began).Round(time.Second))

	timePages(b, tb)
}

// timePages times each page, signed in as tb's operator.
func timePages(b *testing.B, tb *testBundle) {
	ctx := context.Background()
	c := tb.client(b)
	require.Equal(b, http.StatusSeeOther, c.signIn(tb.operator, operatorPW))
	var nid string
	require.NoError(b, tb.admin.QueryRow(ctx, `SELECT notification_id FROM herald.dead_letters LIMIT 1`).Scan(&nid))
	for _, page := range []struct{ name, path string }{
		{"Overview", "/?window=1h"},
		{"Providers", "/providers?window=1h"},
		{"DeadLetters", "/dead-letters"},
		{"DeadLettersOfProducer", "/dead-letters?producer=shop&since=2000h"},
		{"NotificationByID", "/notification?id=" + nid},
		{"NotificationByKey", "/notification?producer=shop&key=history-500"},
		// Ten routes (one each of records 500, 1,000,500, ...) and their
		// dead letters at ten million; one at a hundred thousand.
		{"NotificationByRecipient", "/notification?recipient=" + url.QueryEscape("https://hooks.example.com/customers/000500")},
		{"Held", "/held"},
		{"Campaigns", "/campaigns"},
		{"Malformed", "/malformed"},
		{"Audit", "/audit"},
	} {
		b.Run(page.name, func(b *testing.B) {
			for b.Loop() {
				status, body := c.get(page.path)
				if status != http.StatusOK {
					b.Fatalf("%s: %d %s", page.path, status, body)
				}
			}
		})
	}
}
