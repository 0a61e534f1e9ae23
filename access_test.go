package herald_test

// The access policy, checked. The operating guide's Roles section
// (internal/guide/operating.md) holds the policy table
// (between the access-policy markers); the first test reads it and checks
// every table, view, sequence and function of schema herald against it, as
// each role, so an object added without a row fails here. The tests after
// it try, as two producer logins, an operator and an auditor, each of the
// ways a hostile producer stepped outside its own rows.
//
// The SQL in this file is the test's own: grants, catalog reads and the
// statements a hostile login would type, none of which belong in queries/.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/vet"
)

// policyRoles are the policy table's role columns, in order.
var policyRoles = []string{"herald_producer", "herald_relay", "herald_directory", "herald_operator", "herald_auditor"}

// policyRow is one row of the guide's policy table: an object name (maybe a
// glob), its kind, and per role the privileges, as written ("read own").
type policyRow struct {
	name, kind string
	cells      map[string][]string
}

// readPolicy parses the policy table out of the operating guide.
func readPolicy(t *testing.T) []policyRow {
	t.Helper()
	readme, err := os.ReadFile("internal/guide/operating.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(readme), "<!-- access-policy:begin -->")
	require.True(t, ok, "the operating guide has no access-policy:begin marker")
	table, _, ok := strings.Cut(rest, "<!-- access-policy:end -->")
	require.True(t, ok, "the operating guide has no access-policy:end marker")
	var rows []policyRow
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		cols := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cols {
			cols[i] = strings.TrimSpace(cols[i])
		}
		if strings.HasPrefix(cols[0], "---") {
			continue
		}
		if cols[0] == "object" {
			require.Equal(t, append([]string{"object", "kind"}, policyRoles...), cols, "the table's header")
			continue
		}
		require.Len(t, cols, 2+len(policyRoles), "policy row %q", line)
		r := policyRow{name: strings.Trim(cols[0], "`"), kind: cols[1], cells: map[string][]string{}}
		for i, role := range policyRoles {
			if cols[2+i] == "—" {
				r.cells[role] = nil
				continue
			}
			r.cells[role] = strings.Split(cols[2+i], ", ")
		}
		rows = append(rows, r)
	}
	require.NotEmpty(t, rows)
	return rows
}

// privileges returns the privilege words of cells with their row-level
// qualifier (own, shared) dropped, sorted: "update own (columns)" is
// "update (columns)".
func privileges(cells []string) []string {
	out := []string{}
	for _, c := range cells {
		c = strings.Replace(c, " own", "", 1)
		c = strings.Replace(c, " shared", "", 1)
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// dbObject is one table, view, sequence or function of schema herald.
type dbObject struct {
	name, kind string
	oid        uint32
	rls        bool
}

func schemaObjects(t *testing.T, db *pgxpool.Pool) []dbObject {
	t.Helper()
	rows, err := db.Query(context.Background(), `
		SELECT c.relname::text,
			CASE WHEN c.relkind IN ('r', 'p', 'f') THEN 'table' WHEN c.relkind IN ('v', 'm') THEN 'view' ELSE 'sequence' END,
			c.oid, c.relrowsecurity
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'herald' AND c.relkind IN ('r', 'p', 'f', 'v', 'm', 'S')
		UNION ALL
		SELECT p.proname::text, 'function', p.oid, false
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'herald'
		ORDER BY 2, 1`)
	require.NoError(t, err)
	objs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dbObject, error) {
		var o dbObject
		return o, r.Scan(&o.name, &o.kind, &o.oid, &o.rls)
	})
	require.NoError(t, err)
	return objs
}

// granted returns what role may do with o, in the policy's words.
func granted(t *testing.T, db *pgxpool.Pool, role string, o dbObject) []string {
	t.Helper()
	ctx := context.Background()
	out := []string{}
	switch o.kind {
	case "function":
		var exec bool
		require.NoError(t, db.QueryRow(ctx, `SELECT has_function_privilege($1, $2::oid, 'EXECUTE')`, role, o.oid).Scan(&exec))
		if exec {
			out = append(out, "execute")
		}
	case "sequence":
		for _, p := range [][2]string{{"SELECT", "read"}, {"USAGE", "usage"}, {"UPDATE", "update"}} {
			var ok bool
			require.NoError(t, db.QueryRow(ctx, `SELECT has_sequence_privilege($1, $2::oid, $3)`, role, o.oid, p[0]).Scan(&ok))
			if ok {
				out = append(out, p[1])
			}
		}
	default:
		for _, p := range [][2]string{
			{"SELECT", "read"}, {"INSERT", "insert"}, {"UPDATE", "update"}, {"DELETE", "delete"},
			{"TRUNCATE", "truncate"}, {"REFERENCES", "references"}, {"TRIGGER", "trigger"},
		} {
			var table, column bool
			require.NoError(t, db.QueryRow(ctx, `SELECT has_table_privilege($1, $2::oid, $3),
				$3 IN ('SELECT', 'INSERT', 'UPDATE', 'REFERENCES') AND has_any_column_privilege($1, $2::oid, $3)`,
				role, o.oid, p[0]).Scan(&table, &column))
			switch {
			case table:
				out = append(out, p[1])
			case column:
				out = append(out, p[1]+" (columns)")
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestAccessPolicy_MatchesTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtemp.NewPool(t)
	policy := readPolicy(t)
	used := make([]bool, len(policy))
	for _, o := range schemaObjects(t, pool) {
		i := slices.IndexFunc(policy, func(r policyRow) bool {
			ok, err := path.Match(r.name, o.name)
			return err == nil && ok && r.kind == o.kind
		})
		if i < 0 {
			t.Errorf("herald.%s (%s) has no row in the access policy (internal/guide/operating.md): add one, and the grants it says", o.name, o.kind)
			continue
		}
		used[i] = true
		for _, role := range policyRoles {
			want := privileges(policy[i].cells[role])
			require.Equal(t, want, granted(t, pool, role, o), "%s on herald.%s (%s)", role, o.name, o.kind)
			// "own" and "shared" are row-level security's: the table must
			// have it on, and a policy for the role.
			// A view's "own" is its tables': it must run with the caller's
			// privileges (security_invoker), so their policies apply.
			if o.kind == "view" && slices.ContainsFunc(policy[i].cells[role], func(c string) bool {
				return strings.Contains(c, " own")
			}) {
				var invoker bool
				require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce('security_invoker=true' = ANY(reloptions), false)
					FROM pg_class WHERE oid = $1`, o.oid).Scan(&invoker))
				require.True(t, invoker, "herald.%s: %s reads its own rows only if the view is security_invoker", o.name, role)
				continue
			}
			if slices.ContainsFunc(policy[i].cells[role], func(c string) bool {
				return strings.Contains(c, " own") || strings.Contains(c, " shared")
			}) {
				require.True(t, o.rls, "herald.%s: %s's rows are limited by the policy, but row-level security is off", o.name, role)
				var n int
				require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_policies
					WHERE schemaname = 'herald' AND tablename = $1 AND $2 = ANY(roles)`, o.name, role).Scan(&n))
				require.NotZero(t, n, "herald.%s has no row-level policy for %s", o.name, role)
			}
		}
	}
	for i, r := range policy {
		require.True(t, used[i], "the access policy (internal/guide/operating.md) names %s (%s), which the database does not have", r.name, r.kind)
	}
}

func TestAccessPolicy_NoProducerLockBlocksEngine(t *testing.T) {
	t.Parallel()
	pool := pgtemp.NewPool(t)
	// Every lock mode above ROW EXCLUSIVE needs table-level UPDATE, DELETE
	// or TRUNCATE; row locks need UPDATE of a column. Checked on the
	// database itself, whatever the guide says.
	for _, o := range schemaObjects(t, pool) {
		if o.kind != "table" {
			continue
		}
		for _, role := range []string{"herald_producer", "herald_relay", "herald_directory"} {
			for _, p := range granted(t, pool, role, o) {
				require.NotContains(t, []string{"update", "delete", "truncate", "trigger", "references"}, p,
					"%s holds %s on herald.%s", role, p, o.name)
			}
		}
		for _, p := range granted(t, pool, "herald_auditor", o) {
			require.Contains(t, []string{"read", "read (columns)"}, p, "the auditor holds %s on herald.%s", p, o.name)
		}
	}
}

// accessBundle is a migrated database with two producer logins (a and b),
// an operator, an auditor, a relay and a directory login, and a client for
// each producer.
type accessBundle struct {
	admin              *pgxpool.Pool // the engine's login: owns the tables
	nameA, nameB       string
	asA, asB           *pgxpool.Pool
	clientA, clientB   *herald.Client
	opName, audName    string
	asOp, asAud        *pgxpool.Pool
	dirName, relayName string
	asDir, asRelay     *pgxpool.Pool
}

func accessSetup(t *testing.T) *accessBundle {
	t.Helper()
	b := &accessBundle{admin: pgtemp.NewPool(t)}
	b.nameA, b.asA = pgtemp.Login(t, b.admin, "prod_a", "herald_producer")
	b.nameB, b.asB = pgtemp.Login(t, b.admin, "prod_b", "herald_producer")
	b.opName, b.asOp = pgtemp.Login(t, b.admin, "opr", "herald_operator")
	b.audName, b.asAud = pgtemp.Login(t, b.admin, "aud", "herald_auditor")
	b.dirName, b.asDir = pgtemp.Login(t, b.admin, "dir", "herald_directory")
	b.relayName, b.asRelay = pgtemp.Login(t, b.admin, "relay", "herald_relay")
	var err error
	b.clientA, err = herald.NewClient(b.asA, &herald.Config{Actor: "svc-a"})
	require.NoError(t, err)
	t.Cleanup(b.clientA.Close)
	b.clientB, err = herald.NewClient(b.asB, &herald.Config{Actor: "svc-b"})
	require.NoError(t, err)
	t.Cleanup(b.clientB.Close)
	return b
}

// submit stores one intent of producer through c: one e-mail route to
// user 42 and one to a direct address.
func submit(t *testing.T, c *herald.Client, producer, key string) *herald.Receipt {
	t.Helper()
	r, err := c.Submit(context.Background(), &herald.Intent{
		NotificationType: "order.shipped",
		Producer:         producer,
		IdempotencyKey:   key,
		Audience:         herald.Audience{UserIDs: []string{"42"}, Email: []string{"ops@example.com"}},
		Channels:         []string{"email"},
		Content:          herald.Content{Email: &herald.EmailContent{Subject: "Shipped", Text: "On its way."}},
	})
	require.NoError(t, err)
	return r
}

func requireSQLState(t *testing.T, err error, code string) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "want SQLSTATE %s, got %v", code, err)
	require.Equal(t, code, pgErr.Code, pgErr.Message)
}

const (
	insufficientPrivilege = "42501"
	checkViolation        = "23514"
	noDataFound           = "P0002"
)

func TestRecipients_ProducerTouchesOnlyOwn(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	require.NoError(t, b.clientA.UpsertRecipient(ctx, herald.Recipient{UserID: "42", WebhookURL: "https://a.example.com/hook"}))
	require.NoError(t, b.clientB.UpsertRecipient(ctx, herald.Recipient{UserID: "7", Email: "seven@example.com"}))

	// B sees only its own entry, and its UPDATE of A's finds nothing to change.
	var ids []string
	rows, err := b.asB.Query(ctx, `SELECT user_id FROM herald.recipients ORDER BY user_id`)
	require.NoError(t, err)
	ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"7"}, ids)
	tag, err := b.asB.Exec(ctx, `UPDATE herald.recipients SET webhook_url = 'https://evil.example.com/' WHERE user_id = '42'`)
	require.NoError(t, err)
	require.Zero(t, tag.RowsAffected())
	// Nor can it claim the row by changing its owner: owner is not updatable.
	_, err = b.asB.Exec(ctx, `UPDATE herald.recipients SET owner = $1 WHERE true`, b.nameA)
	requireSQLState(t, err, insufficientPrivilege)
	// Its upsert of the same user id makes an entry of its own.
	require.NoError(t, b.clientB.UpsertRecipient(ctx, herald.Recipient{UserID: "42", WebhookURL: "https://evil.example.com/"}))
	var url string
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT webhook_url FROM herald.recipients WHERE owner = $1 AND user_id = '42'`, b.nameA).Scan(&url))
	require.Equal(t, "https://a.example.com/hook", url)
	// A direct INSERT in A's name is refused by the policy.
	_, err = b.asB.Exec(ctx, `INSERT INTO herald.recipients (owner, user_id, email) VALUES ($1, '43', 'x@example.com')`, b.nameA)
	requireSQLState(t, err, insufficientPrivilege)
	// B cannot delete A's entry, only its own.
	deleted, err := b.clientB.DeleteRecipient(ctx, "7")
	require.NoError(t, err)
	require.True(t, deleted)
	_, err = b.asB.Exec(ctx, `DELETE FROM herald.recipients WHERE true`)
	requireSQLState(t, err, insufficientPrivilege)
	require.Equal(t, 1, countAs(t, b.admin, `SELECT count(*) FROM herald.recipients WHERE owner = $1`, b.nameA))

	// The shared directory is the directory login's: producers can neither
	// read nor write it, and the directory login writes only it.
	dir, err := herald.NewClient(b.asDir, nil)
	require.NoError(t, err)
	defer dir.Close()
	require.NoError(t, dir.UpsertSharedRecipient(ctx, herald.Recipient{UserID: "42", Phone: "+14155550123"}))
	require.Equal(t, 0, countAs(t, b.asA, `SELECT count(*) FROM herald.recipients WHERE owner = ''`))
	err = b.clientA.UpsertSharedRecipient(ctx, herald.Recipient{UserID: "9", Email: "nine@example.com"})
	require.ErrorIs(t, err, herald.ErrForbidden)
	_, err = b.clientA.DeleteSharedRecipient(ctx, "42")
	require.ErrorIs(t, err, herald.ErrForbidden)
	err = dir.UpsertRecipient(ctx, herald.Recipient{UserID: "9", Email: "nine@example.com"}) // an entry "of its own": not allowed
	require.ErrorIs(t, err, herald.ErrForbidden)
	require.Equal(t, 1, countAs(t, b.asDir, `SELECT count(*) FROM herald.recipients`), "it sees the shared entry only")
	deleted, err = dir.DeleteSharedRecipient(ctx, "42")
	require.NoError(t, err)
	require.True(t, deleted)
}

func TestRecipients_DirectInsertsAreValidated(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	for _, tc := range []struct{ name, column, value string }{
		{"PhoneNotE164", "phone", "not-a-phone"},
		{"PhoneWithExtension", "phone", "+14155550123;ext=12"},
		{"EmailWithoutDomain", "email", "ann"},
		{"URLNotHTTP", "webhook_url", "ftp://files.example.com/"},
		{"URLWithSpace", "webhook_url", "https://exa mple.com/"},
		{"LocaleNotATag", "locale", "en GB; DROP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.asA.Exec(ctx, fmt.Sprintf(`INSERT INTO herald.recipients (user_id, %s) VALUES ('u', $1)`, tc.column), tc.value)
			requireSQLState(t, err, checkViolation)
		})
	}
	_, err := b.asA.Exec(ctx, `INSERT INTO herald.recipients (user_id, opted_out) VALUES ('u', '{pigeon}')`)
	requireSQLState(t, err, checkViolation)
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.recipients (user_id, phone, email, webhook_url, locale)
		VALUES ('u', '+14155550123', 'ann@example.com', 'https://hooks.example.com/u', 'pt-BR')`)
	require.NoError(t, err, "a normalized entry is accepted")
	var owner string
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT owner FROM herald.recipients WHERE user_id = 'u'`).Scan(&owner))
	require.Equal(t, b.nameA, owner, "the database sets the owner to the login")
}

func TestRoutes_ProducerCancelsOnlyOwnUndelivered(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	mine := submit(t, b.clientA, b.nameA, "k1")
	theirs := submit(t, b.clientB, b.nameB, "k1")

	// The finding's statement: move a route into another producer's
	// notification. Producers hold no UPDATE on routes at all now.
	_, err := b.asA.Exec(ctx, `UPDATE herald.routes SET notification_id = $1, status = 'canceled' WHERE true`, theirs.NotificationID)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asA.Exec(ctx, `UPDATE herald.routes SET status = 'published', next_attempt_at = NULL WHERE notification_id = $1`, mine.NotificationID)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asA.Exec(ctx, `DELETE FROM herald.routes WHERE true`)
	requireSQLState(t, err, insufficientPrivilege)

	// Another's notification: not found, exactly as an unknown id, nothing moves.
	_, err = b.clientA.Cancel(ctx, theirs.NotificationID, &herald.CancelOpts{Reason: "x"})
	require.ErrorIs(t, err, herald.ErrNotFound)
	_, err = b.clientA.Cancel(ctx, "ntf_unknown", &herald.CancelOpts{Reason: "x"})
	require.ErrorIs(t, err, herald.ErrNotFound)
	require.Equal(t, 2, countAs(t, b.admin, `SELECT count(*) FROM herald.routes WHERE notification_id = $1 AND status = 'pending'`, theirs.NotificationID))

	// Its own: the undelivered routes only; a published one stays published.
	_, err = b.admin.Exec(ctx, `UPDATE herald.routes SET status = 'published', next_attempt_at = NULL, published_at = now()
		WHERE notification_id = $1 AND recipient_ref = 'ops@example.com'`, mine.NotificationID)
	require.NoError(t, err)
	res, err := b.clientA.Cancel(ctx, mine.NotificationID, &herald.CancelOpts{Reason: "order refunded"})
	require.NoError(t, err)
	require.Len(t, res.Canceled, 1)
	require.Equal(t, 1, countAs(t, b.admin, `SELECT count(*) FROM herald.routes WHERE notification_id = $1 AND status = 'published'`, mine.NotificationID))

	// The operator cancels anyone's.
	op, err := herald.NewClient(b.asOp, nil)
	require.NoError(t, err)
	defer op.Close()
	res, err = op.Cancel(ctx, theirs.NotificationID, &herald.CancelOpts{Reason: "abuse"})
	require.NoError(t, err)
	require.Len(t, res.Canceled, 2)
	// The auditor cancels nothing.
	aud, err := herald.NewClient(b.asAud, nil)
	require.NoError(t, err)
	defer aud.Close()
	_, err = aud.Cancel(ctx, mine.NotificationID, &herald.CancelOpts{Reason: "x"})
	requireSQLState(t, err, insufficientPrivilege)
}

func TestAccessPolicy_ProducerCannotLockEngineOut(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	modes := []string{"ACCESS SHARE", "ROW SHARE", "ROW EXCLUSIVE", "SHARE UPDATE EXCLUSIVE", "SHARE",
		"SHARE ROW EXCLUSIVE", "EXCLUSIVE", "ACCESS EXCLUSIVE"}
	tables := []string{"records", "routes", "dead_letters", "intake", "malformed_intents", "recipients", "audit_log",
		"river_job", "river_leader"}
	// allowed are the modes the producer could take on each table: at most
	// the two every engine statement coexists with.
	allowed := map[string][]string{}
	for _, table := range tables {
		for _, mode := range modes {
			err := pgx.BeginFunc(ctx, b.asA, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, "LOCK TABLE herald."+table+" IN "+mode+" MODE NOWAIT")
				return err
			})
			if err != nil {
				requireSQLState(t, err, insufficientPrivilege)
				continue
			}
			allowed[table] = append(allowed[table], mode)
		}
		require.Subset(t, []string{"ACCESS SHARE", "ROW EXCLUSIVE"}, allowed[table], "herald.%s", table)
	}
	require.Equal(t, []string{"ACCESS SHARE", "ROW EXCLUSIVE"}, allowed["routes"], "it reads and inserts routes")
	// Row locks need UPDATE on a column: none on the engine's tables.
	for _, table := range []string{"records", "routes", "dead_letters"} {
		_, err := b.asA.Exec(ctx, "SELECT 1 FROM herald."+table+" FOR KEY SHARE")
		requireSQLState(t, err, insufficientPrivilege)
	}

	// Hold every lock it can get, in one open transaction, while the engine
	// claims and completes and another producer submits: none of them waits.
	due := submit(t, b.clientA, b.nameA, "before-lock")
	_, err := vet.New(b.admin, nil).VetOnce(ctx) // out of lane '!vet', before the locks
	require.NoError(t, err)
	hold, err := b.asA.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = hold.Rollback(ctx) }()
	for table, modes := range allowed {
		for _, mode := range modes {
			_, err := hold.Exec(ctx, "LOCK TABLE herald."+table+" IN "+mode+" MODE")
			require.NoError(t, err)
		}
	}
	_, err = hold.Exec(ctx, `INSERT INTO herald.intake (body) VALUES ('{}')`)
	require.NoError(t, err)

	// A generous bound that only a blocked statement reaches: lock_timeout
	// makes a blocked one fail instead of hanging the test.
	engine, err := b.admin.Acquire(ctx)
	require.NoError(t, err)
	defer engine.Release()
	_, err = engine.Exec(ctx, `SET lock_timeout = '20s'`)
	require.NoError(t, err)
	q := store.New()
	claimed, err := q.RouteClaimDue(ctx, engine, store.RouteClaimDueParams{Channel: "email", Max: 10, LeaseSeconds: 30})
	require.NoError(t, err)
	require.Len(t, claimed, 2)
	var p store.RouteCompleteManyParams
	for _, c := range claimed {
		p.NotificationIds = append(p.NotificationIds, c.NotificationID)
		p.RouteIds = append(p.RouteIds, c.RouteID)
		p.Attempts = append(p.Attempts, c.AttemptCount)
		p.LeaseUntils = append(p.LeaseUntils, *c.LeaseUntil)
		p.Statuses = append(p.Statuses, "published")
		p.DelaySeconds = append(p.DelaySeconds, 0)
		p.Classifications = append(p.Classifications, "")
		p.Messages = append(p.Messages, "")
		p.RecoveryHints = append(p.RecoveryHints, "")
		p.MaxAttempts = append(p.MaxAttempts, 3)
		p.ResolvedEmails = append(p.ResolvedEmails, "")
		p.ResolvedLocales = append(p.ResolvedLocales, "")
		p.ProviderMessageIds = append(p.ProviderMessageIds, "")
	}
	done, err := q.RouteCompleteMany(ctx, engine, p)
	require.NoError(t, err)
	require.Len(t, done, 2)
	submit(t, b.clientB, b.nameB, "during-lock")
	// The engine's retention and the operator's replay take row locks and
	// delete: they do not wait either.
	_, err = engine.Exec(ctx, `DELETE FROM herald.records WHERE notification_id = $1`, due.NotificationID)
	require.NoError(t, err)
}

func TestAuditLog_OnlyFunctionsWriteWithLogin(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	mine := submit(t, b.clientA, b.nameA, "k1")

	// The finding: a forged "cancel by alice" row.
	forge := `INSERT INTO herald.audit_log (actor, action, reason, filter, affected)
		VALUES ('alice', 'cancel', 'forged', jsonb_build_object('notification_id', $1::text), 1)`
	_, err := b.asA.Exec(ctx, forge, mine.NotificationID)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asOp.Exec(ctx, forge, mine.NotificationID)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asAud.Exec(ctx, forge, mine.NotificationID)
	requireSQLState(t, err, insufficientPrivilege)
	// audit_append is the operator's, and writes replay actions only.
	_, err = b.asA.Exec(ctx, `SELECT herald.audit_append('alice', 'dead_letter_replay', 'x', '{}', 0, '{}')`)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asOp.Exec(ctx, `SELECT herald.audit_append('alice', 'cancel', 'x', jsonb_build_object('notification_id', $1::text), 1, '{}')`, mine.NotificationID)
	requireSQLState(t, err, "22023")
	// Nobody rewrites or deletes a row.
	_, err = b.asOp.Exec(ctx, `UPDATE herald.audit_log SET actor = 'bob'`)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asOp.Exec(ctx, `DELETE FROM herald.audit_log`)
	requireSQLState(t, err, insufficientPrivilege)

	// A real cancel, naming "alice" as its actor, is stamped with A's login.
	_, err = b.clientA.Cancel(ctx, mine.NotificationID, &herald.CancelOpts{Actor: "alice", Reason: "refund"})
	require.NoError(t, err)
	var actor, login string
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT actor, login FROM herald.audit_log`).Scan(&actor, &login))
	require.Equal(t, "alice", actor)
	require.Equal(t, b.nameA, login)
	var detail string
	require.NoError(t, b.asOp.QueryRow(ctx, `SELECT detail FROM herald.notification_timeline($1) WHERE event = 'cancel'`,
		mine.NotificationID).Scan(&detail))
	require.Equal(t, fmt.Sprintf("by alice (login %s): refund (2 routes)", b.nameA), detail)
	// Even the owner cannot write another login into a row.
	_, err = b.admin.Exec(ctx, `INSERT INTO herald.audit_log (actor, action, affected, login) VALUES ('x', 'note', 0, 'alice')`)
	require.NoError(t, err)
	require.Zero(t, countAs(t, b.admin, `SELECT count(*) FROM herald.audit_log WHERE login = 'alice'`))
}

func TestIntake_EntriesCarryInsertingLogin(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	_, err := b.asA.Exec(ctx, `INSERT INTO herald.intake (body) VALUES ('{}')`)
	require.NoError(t, err)
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.intake (body, submitted_by) VALUES ('{}', $1)`, b.nameB)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.intake (body, received_at) VALUES ('{}', now() - interval '1 day')`)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.asRelay.Exec(ctx, `INSERT INTO herald.intake (body) VALUES ('{}')`)
	require.NoError(t, err)
	rows, err := b.admin.Query(ctx, `SELECT submitted_by FROM herald.intake ORDER BY id`)
	require.NoError(t, err)
	by, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{b.nameA, b.relayName}, by)
	// Producers read, and only read, the intake's refusals of their own entries.
	_, err = b.asA.Exec(ctx, `SELECT * FROM herald.intake`)
	requireSQLState(t, err, insufficientPrivilege)
	_, err = b.admin.Exec(ctx, `INSERT INTO herald.malformed_intents (stream_entry_id, failure_code, failure_message, raw_fields, recorded_at, submitted_by)
		VALUES ('intake:1', 'invalid_json', 'bad', '{}', now(), $1), ('intake:2', 'invalid_json', 'bad', '{}', now(), $2)`, b.nameA, b.nameB)
	require.NoError(t, err)
	require.Equal(t, 1, countAs(t, b.asA, `SELECT count(*) FROM herald.malformed_intents`))
	_, err = b.asA.Exec(ctx, `DELETE FROM herald.malformed_intents`)
	requireSQLState(t, err, insufficientPrivilege)
}

func TestRoutes_RawInsertsKeepDispatchInvariants(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	mine := submit(t, b.clientA, b.nameA, "k1")
	route := func(db *pgxpool.Pool, set string) error {
		_, err := db.Exec(ctx, `INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
			max_attempts, next_attempt_at, created_at, updated_at, priority, lane)
			SELECT notification_id, 'extra', 'sms', '+14155550123', 'pending', 3, now(), now(), now(), 0, '!vet'
			FROM herald.records WHERE notification_id = $1`, mine.NotificationID)
		if err != nil || set == "" {
			return err
		}
		// Each case rewrites the valid row as the engine's login could, or
		// inserts a variant as the producer.
		_, err = db.Exec(ctx, `UPDATE herald.routes SET `+set+` WHERE notification_id = $1 AND route_id = 'extra'`, mine.NotificationID)
		return err
	}
	// A producer's route waits for the engine's check (lane '!vet'): one
	// straight into the channel's queue is refused.
	_, err := b.asA.Exec(ctx, `INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
		max_attempts, next_attempt_at, created_at, updated_at)
		VALUES ($1, 'unvetted', 'sms', '+14155550123', 'pending', 3, now(), now(), now())`, mine.NotificationID)
	requireSQLState(t, err, insufficientPrivilege)
	require.NoError(t, route(b.asA, ""), "the valid route a producer may insert")
	for _, tc := range []struct{ name, set string }{
		{"PriorityNoDispatcherClaims", "priority = -32768"},
		{"UnknownChannel", "channel = 'pigeon'"},
		{"AttemptBudgetOutOfRange", "max_attempts = 100000"},
		{"NegativeAttempts", "attempt_count = -1"},
		{"TerminalButDue", "status = 'published'"},
		{"UnknownStatus", "status = 'lost', next_attempt_at = NULL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.admin.Exec(ctx, `UPDATE herald.routes SET `+tc.set+` WHERE notification_id = $1 AND route_id = 'extra'`, mine.NotificationID)
			requireSQLState(t, err, checkViolation)
		})
	}
	// A producer's route has an address of its channel's shape...
	for _, tc := range []struct{ name, channel, ref string }{
		{"RecipientNotAPhone", "sms", "not-a-phone"},
		{"EmailToAPhone", "email", "+14155550123"},
		{"WebhookNotHTTP", "webhook", "ftp://x"},
		{"EmptyUserRef", "sms", "user:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.asA.Exec(ctx, `INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
				max_attempts, next_attempt_at, created_at, updated_at)
				VALUES ($1, 'bad', $2, $3, 'pending', 3, now(), now(), now())`, mine.NotificationID, tc.channel, tc.ref)
			requireSQLState(t, err, insufficientPrivilege)
		})
	}
	// ...and starts pending and untried.
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
		max_attempts, next_attempt_at, created_at, updated_at, attempt_count)
		VALUES ($1, 'x2', 'sms', '+14155550123', 'claimed', 3, now(), now(), now(), 5)`, mine.NotificationID)
	requireSQLState(t, err, insufficientPrivilege)
	// ...in a notification of its own.
	other := submit(t, b.clientB, b.nameB, "k1")
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.routes (notification_id, route_id, channel, recipient_ref, status,
		max_attempts, next_attempt_at, created_at, updated_at)
		VALUES ($1, 'x3', 'sms', '+14155550123', 'pending', 3, now(), now(), now())`, other.NotificationID)
	requireSQLState(t, err, insufficientPrivilege)

	record := func(set string) error {
		_, err := b.admin.Exec(ctx, `UPDATE herald.records SET `+set+` WHERE notification_id = $1`, mine.NotificationID)
		return err
	}
	requireSQLState(t, record("priority = 7"), checkViolation)
	requireSQLState(t, record("channels = '{pigeon}'"), checkViolation)
	requireSQLState(t, record("audience_kind = 'everyone'"), checkViolation)
	requireSQLState(t, record("recipient_user_ids = '{}'"), checkViolation)
	// A producer's payload must be JSON: the cast names the bad input.
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind,
		payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at)
		VALUES ('ntf_notjson', 't', $1, 'users', 'not json', 'k2', 'fp', now(), now(), now(), now())`, b.nameA)
	requireSQLState(t, err, "22P02")
	// And a producer cannot write a record in another's name.
	_, err = b.asA.Exec(ctx, `INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind,
		payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at)
		VALUES ('ntf_forged', 't', $1, 'users', '{}', 'k', 'fp', now(), now(), now(), now())`, b.nameB)
	requireSQLState(t, err, insufficientPrivilege)
}

// emailIntent returns a valid one-route intent of producer's with key key.
func emailIntent(producer, key string) *herald.Intent {
	return &herald.Intent{
		NotificationType: "order.shipped", Producer: producer, IdempotencyKey: key,
		Audience: herald.Audience{Email: []string{"ops@example.com"}}, Channels: []string{"email"},
		Content: herald.Content{Email: &herald.EmailContent{Subject: "s", Text: "t"}},
	}
}

func TestClient_SubmitManyForbidsOthersNames(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	var results []string
	c, err := herald.NewClient(b.asA, &herald.Config{ResultFunc: func(_, r string) { results = append(results, r) }})
	require.NoError(t, err)
	defer c.Close()
	res, err := c.SubmitMany(ctx, []*herald.Intent{
		emailIntent(b.nameA, "1"), emailIntent(b.nameB, "2"), emailIntent(b.nameA, "3"), {Producer: b.nameA}, emailIntent(b.nameA, "1"),
	})
	require.NoError(t, err)
	require.Len(t, res, 5)
	require.NoError(t, res[0].Err)
	require.NotNil(t, res[0].Receipt)
	require.ErrorIs(t, res[1].Err, herald.ErrForbidden)
	var fe *herald.ForbiddenError
	require.ErrorAs(t, res[1].Err, &fe)
	require.Equal(t, b.nameB, fe.Producer)
	require.Contains(t, fe.Error(), "a producer login submits only as itself")
	require.Contains(t, fe.Error(), "herald_relay")
	require.Nil(t, res[1].Receipt)
	require.NoError(t, res[2].Err)
	var verr *herald.ValidationError
	require.ErrorAs(t, res[3].Err, &verr)
	require.True(t, res[4].Receipt.Duplicate)
	require.Equal(t, res[0].Receipt.NotificationID, res[4].Receipt.NotificationID)
	require.Equal(t, 2, countAs(t, b.admin, `SELECT count(*) FROM herald.records`))
	slices.Sort(results)
	require.Equal(t, []string{"accepted", "accepted", "duplicate", "forbidden", "invalid"}, results)

	// Submit alone, and SubmitTx (whose transaction can then only roll back).
	_, err = c.Submit(ctx, emailIntent(b.nameB, "4"))
	require.ErrorIs(t, err, herald.ErrForbidden)
	require.ErrorContains(t, err, fmt.Sprintf("the intent names producer %q", b.nameB))
	err = pgx.BeginFunc(ctx, b.asA, func(tx pgx.Tx) error {
		_, err := c.SubmitTx(ctx, tx, emailIntent(b.nameB, "5"))
		return err
	})
	require.ErrorIs(t, err, herald.ErrForbidden)
}

func TestAccessPolicy_NoOwnershipOracle(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	theirs := submit(t, b.clientB, b.nameB, "k1")
	_, err := b.asA.Exec(ctx, `SELECT herald.notification_owned_by($1, $2)`, theirs.NotificationID, b.nameB)
	requireSQLState(t, err, "42883") // undefined_function
	var mine bool
	require.NoError(t, b.asA.QueryRow(ctx, `SELECT herald.notification_is_mine($1)`, theirs.NotificationID).Scan(&mine))
	require.False(t, mine, "it answers for the caller only")
	require.NoError(t, b.asB.QueryRow(ctx, `SELECT herald.notification_is_mine($1)`, theirs.NotificationID).Scan(&mine))
	require.True(t, mine)
	// SET ROLE to the shared group role gives no namespace of its own.
	err = pgx.BeginFunc(ctx, b.asA, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL ROLE herald_producer`); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM herald.records`).Scan(&n); err != nil {
			return err
		}
		if n != 0 {
			return fmt.Errorf("as herald_producer, A sees %d records of B's", n)
		}
		_, err := tx.Exec(ctx, `INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind,
			payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at)
			VALUES ('ntf_shared', 't', 'herald_producer', 'users', '{}', 'k', 'fp', now(), now(), now(), now())`)
		return err
	})
	requireSQLState(t, err, insufficientPrivilege)
}

func TestAuditorRole_ReadsAllWritesNothing(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	submit(t, b.clientA, b.nameA, "k1")
	require.NoError(t, b.clientA.UpsertRecipient(ctx, herald.Recipient{UserID: "42", Email: "a@example.com"}))
	require.Equal(t, 1, countAs(t, b.asAud, `SELECT count(*) FROM herald.records`))
	require.Equal(t, 1, countAs(t, b.asAud, `SELECT count(*) FROM herald.recipients`))
	require.Equal(t, 1, countAs(t, b.asOp, `SELECT count(*) FROM herald.recipients`))
	for _, stmt := range []string{
		`INSERT INTO herald.intake (body) VALUES ('{}')`,
		`UPDATE herald.routes SET max_attempts = 1`,
		`DELETE FROM herald.records`,
		`UPDATE herald.recipients SET email = ''`,
		`SELECT herald.recipient_delete('42')`,
		`TRUNCATE herald.audit_log`,
		`LOCK TABLE herald.routes IN SHARE MODE`,
	} {
		err := pgx.BeginFunc(ctx, b.asAud, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, stmt)
			return err
		})
		requireSQLState(t, err, insufficientPrivilege)
	}
}

// countAs runs a count as db's login.
func countAs(t *testing.T, db *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// A producer login's SubmitMany through a pool inserts without ON CONFLICT
// first (accept.Optimism): a key it stored before fails that insert under
// its own role, and the batch goes in again with ON CONFLICT, which the
// login may run too (it reads its own records). Another producer's same key
// is another key: the plain insert stores it, and tells neither anything
// about the other's.
func TestIdempotencyKeys_PlainInsertMeetsOwnKeys(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	batch := func(producer string, keys ...string) []*herald.Intent {
		var ins []*herald.Intent
		for _, k := range keys {
			ins = append(ins, emailIntent(producer, k))
		}
		return ins
	}
	first, err := b.clientA.SubmitMany(ctx, batch(b.nameA, "1", "2"))
	require.NoError(t, err)
	fresh, fellBack := herald.InsertCounts(b.clientA)
	require.Equal(t, [2]int64{1, 0}, [2]int64{fresh, fellBack}, "the plain insert, as the producer")
	again, err := b.clientA.SubmitMany(ctx, batch(b.nameA, "1", "2", "3"))
	require.NoError(t, err)
	fresh, fellBack = herald.InsertCounts(b.clientA)
	require.Equal(t, [2]int64{1, 1}, [2]int64{fresh, fellBack}, "failed on key 1, then ON CONFLICT")
	for i := range 2 {
		require.NoError(t, again[i].Err)
		require.True(t, again[i].Receipt.Duplicate)
		require.Equal(t, first[i].Receipt.NotificationID, again[i].Receipt.NotificationID)
	}
	require.NoError(t, again[2].Err)
	require.False(t, again[2].Receipt.Duplicate)

	other, err := b.clientB.SubmitMany(ctx, batch(b.nameB, "1", "2"))
	require.NoError(t, err)
	fresh, fellBack = herald.InsertCounts(b.clientB)
	require.Equal(t, [2]int64{1, 0}, [2]int64{fresh, fellBack}, "A's keys are not B's")
	for i := range 2 {
		require.NoError(t, other[i].Err)
		require.False(t, other[i].Receipt.Duplicate, "B's key %d is its own", i+1)
		require.NotEqual(t, first[i].Receipt.NotificationID, other[i].Receipt.NotificationID)
	}
	require.Equal(t, 5, countAs(t, b.admin, `SELECT count(*) FROM herald.records`))
	require.Equal(t, 3, countAs(t, b.asA, `SELECT count(*) FROM herald.records`))
	require.Equal(t, 2, countAs(t, b.asB, `SELECT count(*) FROM herald.records`))
}

// Migration 00025: routes' partitions are reached only through routes,
// under its policies; staff read them; making and dropping weeks is the
// owner's (maintenance's).
func TestRoutes_PartitionsOnlyThroughParent(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	submit(t, b.clientA, b.nameA, "key-a")
	submit(t, b.clientB, b.nameB, "key-b")

	rows, err := b.admin.Query(ctx, `SELECT relid::regclass::text FROM pg_partition_tree('herald.routes') WHERE isleaf ORDER BY 1`)
	require.NoError(t, err)
	parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, parts, "herald.routes_live")
	require.Greater(t, len(parts), 2, "weeks made ahead: %v", parts)
	for _, p := range parts {
		_, err := b.asA.Exec(ctx, "SELECT 1 FROM "+p+" LIMIT 1")
		requireSQLState(t, err, insufficientPrivilege)
		_, err = b.asOp.Exec(ctx, "UPDATE "+p+" SET updated_at = now()")
		requireSQLState(t, err, insufficientPrivilege)
		var n int
		require.NoError(t, b.asAud.QueryRow(ctx, "SELECT count(*) FROM "+p).Scan(&n), "staff read %s", p)
	}
	var mine, all int
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE rec.producer = $1), count(*)
		FROM herald.routes rt JOIN herald.records rec USING (notification_id)`, b.nameA).Scan(&mine, &all))
	require.Positive(t, mine)
	require.Greater(t, all, mine)
	require.Equal(t, mine, countAs(t, b.asA, `SELECT count(*) FROM herald.routes`), "A sees its own routes through the parent")
	_, err = b.asA.Exec(ctx, `SELECT herald.routes_weeks_create(current_date, current_date + 30)`)
	requireSQLState(t, err, insufficientPrivilege)
	for _, call := range []string{`SELECT * FROM herald.routes_weeks_detach(now())`, `SELECT herald.partitions_drop_gone()`} {
		for _, as := range []*pgxpool.Pool{b.asA, b.asOp, b.asAud} {
			_, err = as.Exec(ctx, call)
			requireSQLState(t, err, insufficientPrivilege)
		}
	}
}

// Migration 00026: a producer login holds its own idempotency keys and no
// other's: it reads and inserts its own, cannot insert, read or release
// another's, and can neither change, delete nor lock a key row (no UPDATE
// or DELETE, so nothing it holds blocks the sweep). It takes over its own
// expired keys through herald.idempotency_keys_release, and an accept
// through its login does so by itself.
func TestIdempotencyKeys_ProducerHoldsOwnOnly(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	short, err := herald.NewClient(b.asA, &herald.Config{IdempotencyWindow: time.Second})
	require.NoError(t, err)
	defer short.Close()
	first, err := short.Submit(ctx, emailIntent(b.nameA, "k"))
	require.NoError(t, err)
	theirs := submit(t, b.clientB, b.nameB, "k")

	require.Equal(t, 1, countAs(t, b.asA, `SELECT count(*) FROM herald.idempotency_keys`))
	require.Equal(t, 1, countAs(t, b.asB, `SELECT count(*) FROM herald.idempotency_keys`))
	require.Equal(t, 2, countAs(t, b.asOp, `SELECT count(*) FROM herald.idempotency_keys`))
	require.Equal(t, 2, countAs(t, b.asAud, `SELECT count(*) FROM herald.idempotency_keys`))
	for _, stmt := range []string{
		`INSERT INTO herald.idempotency_keys VALUES ('` + b.nameB + `', 'forged', 'n1', now() + interval '1 day')`,
		`UPDATE herald.idempotency_keys SET expires_at = now()`,
		`DELETE FROM herald.idempotency_keys`,
		`SELECT 1 FROM herald.idempotency_keys FOR KEY SHARE`,
		`LOCK TABLE herald.idempotency_keys IN SHARE MODE`,
	} {
		err := pgx.BeginFunc(ctx, b.asA, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, stmt)
			return err
		})
		requireSQLState(t, err, insufficientPrivilege)
	}
	var released int
	require.NoError(t, b.asA.QueryRow(ctx, `SELECT herald.idempotency_keys_release(ARRAY[$1], ARRAY['k'], ARRAY[$2],
		now() + interval '30 days')`, b.nameB, theirs.NotificationID).Scan(&released))
	require.Zero(t, released, "another's key, expired or not, is not the caller's to release")
	require.Equal(t, 1, countAs(t, b.asB, `SELECT count(*) FROM herald.idempotency_keys`))

	// Past its window, A's own key is free: A's next accept of it, through
	// its own login, releases it and holds it for a new notification.
	require.Eventually(t, func() bool {
		var over bool
		err := b.admin.QueryRow(ctx, `SELECT expires_at < now() FROM herald.idempotency_keys
			WHERE producer = $1 AND idempotency_key = 'k'`, b.nameA).Scan(&over)
		return err == nil && over
	}, 10*time.Second, 10*time.Millisecond, "A's key's window ends")
	again, err := short.Submit(ctx, emailIntent(b.nameA, "k"))
	require.NoError(t, err)
	require.False(t, again.Duplicate)
	require.NotEqual(t, first.NotificationID, again.NotificationID)
	var holder string
	require.NoError(t, b.asA.QueryRow(ctx, `SELECT notification_id FROM herald.idempotency_keys`).Scan(&holder))
	require.Equal(t, again.NotificationID, holder)
	require.Equal(t, 2, countAs(t, b.asA, `SELECT count(*) FROM herald.records`))
	var bHolder string
	require.NoError(t, b.asB.QueryRow(ctx, `SELECT notification_id FROM herald.idempotency_keys`).Scan(&bHolder))
	require.Equal(t, theirs.NotificationID, bHolder, "B's key of the same name is untouched")
}

// Migration 00027: records' partitions are reached only through records,
// under its policies (a producer sees its own records there, kept ones
// included); staff read them and the partitions' view; making and retiring
// weeks is the owner's (maintenance's).
func TestRecords_PartitionsOnlyThroughParent(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	mine := submit(t, b.clientA, b.nameA, "key-a")
	submit(t, b.clientB, b.nameB, "key-b")
	// One of A's records in a kept partition, as a week's retirement
	// leaves one: retired through the owner's function.
	_, err := b.admin.Exec(ctx, `SELECT herald.records_weeks_create(current_date - 70, current_date - 60)`)
	require.NoError(t, err)
	old := idAt(time.Now().Add(-65 * 24 * time.Hour))
	_, err = b.admin.Exec(ctx, `INSERT INTO herald.records (notification_id, notification_type, producer, audience_kind,
		payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at)
		VALUES ($1, 't', $2, 'users', '{}', 'old', 'fp', now() - interval '65 days', now() - interval '65 days',
			now(), now() + interval '1 day')`, old, b.nameA)
	require.NoError(t, err)
	for range 2 { // a week a call: the two weeks made
		_, err = b.admin.Exec(ctx, `SELECT * FROM herald.records_week_stage(now() - interval '50 days', 1000)`)
		require.NoError(t, err)
		_, err = b.admin.Exec(ctx, `SELECT * FROM herald.records_week_swap()`)
		require.NoError(t, err)
	}
	var kept string
	require.NoError(t, b.admin.QueryRow(ctx, `SELECT tableoid::regclass::text FROM herald.records WHERE notification_id = $1`, old).Scan(&kept))
	require.Regexp(t, `^herald\.records_k\d{8}$`, kept, "kept: its idempotency window is open")

	rows, err := b.admin.Query(ctx, `SELECT relid::regclass::text FROM pg_partition_tree('herald.records') WHERE isleaf ORDER BY 1`)
	require.NoError(t, err)
	parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, parts, "herald.records_default")
	require.Contains(t, parts, kept)
	for _, p := range parts {
		_, err := b.asA.Exec(ctx, "SELECT 1 FROM "+p+" LIMIT 1")
		requireSQLState(t, err, insufficientPrivilege)
		_, err = b.asA.Exec(ctx, `INSERT INTO `+p+` (notification_id, notification_type, producer, audience_kind,
			payload_json, idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at, idempotency_expires_at)
			VALUES ('zz', 't', '`+b.nameA+`', 'users', '{}', 'zz', 'fp', now(), now(), now(), now())`)
		requireSQLState(t, err, insufficientPrivilege)
		_, err = b.asOp.Exec(ctx, "DELETE FROM "+p)
		requireSQLState(t, err, insufficientPrivilege)
		var n int
		require.NoError(t, b.asAud.QueryRow(ctx, "SELECT count(*) FROM "+p).Scan(&n), "staff read %s", p)
	}
	require.Equal(t, 2, countAs(t, b.asA, `SELECT count(*) FROM herald.records`), "A's own, kept one included")
	require.Equal(t, 1, countAs(t, b.asA, `SELECT count(*) FROM herald.records WHERE notification_id = $1`, old))
	require.Zero(t, countAs(t, b.asB, `SELECT count(*) FROM herald.records WHERE notification_id IN ($1, $2)`, old, mine.NotificationID))
	require.Equal(t, len(parts), countAs(t, b.asAud, `SELECT count(*) FROM herald.records_partitions_view`))
	require.Equal(t, len(parts), countAs(t, b.asOp, `SELECT count(*) FROM herald.records_partitions_view`))
	_, err = b.asA.Exec(ctx, `SELECT * FROM herald.records_partitions_view`)
	requireSQLState(t, err, insufficientPrivilege)
	for _, call := range []string{
		`SELECT herald.records_weeks_create(current_date, current_date + 30)`,
		`SELECT * FROM herald.records_week_stage(now(), 1000)`,
		`SELECT * FROM herald.records_week_swap()`,
		`SELECT * FROM herald.routes_weeks_detach(now())`,
		`SELECT herald.partitions_drop_gone()`,
	} {
		for _, as := range []*pgxpool.Pool{b.asA, b.asOp, b.asAud, b.asRelay, b.asDir} {
			_, err := as.Exec(ctx, call)
			requireSQLState(t, err, insufficientPrivilege)
		}
	}
}

// idAt is a UUIDv7's text made at t: its first 48 bits are t's
// milliseconds.
func idAt(t time.Time) string {
	ms := t.UnixMilli()
	return fmt.Sprintf("%08x-%04x-7000-8000-000000000000", ms>>16, ms&0xffff)
}
