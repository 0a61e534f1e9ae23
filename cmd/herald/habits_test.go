package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/operatortest"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/render"
	"github.com/heraldhq/herald/schema"
)

// connecting are command lines, valid but for the database, of every
// command that reads or writes one; demo and bench start a throwaway
// PostgreSQL without one, and version prints what it can.
var connecting = [][]string{
	{"api-keys", "create", "-producer", "shop"}, {"api-keys", "list"}, {"api-keys", "revoke", "-producer", "shop", "1"},
	{"campaigns", "list"}, {"campaigns", "show", "shop", "c"}, {"campaigns", "cancel", "-reason", "x", "shop", "c"},
	{"cancel", "-reason", "x", "0192f1c2-3b4a-7d5e-8f60-123456789abc"},
	{"dead-letters", "list"}, {"dead-letters", "show", "0192f1c2-3b4a-7d5e-8f60-123456789abc"},
	{"dead-letters", "replay", "-reason", "x", "-all"}, {"dead-letters", "progress", "rpl_0123456789abcdef"},
	{"dead-letters", "count"}, {"find", "-producer", "shop", "-key", "k"},
	{"held", "list"}, {"held", "release", "-reason", "x", "1"}, {"held", "reject", "-reason", "x", "1"},
	{"malformed", "list"}, {"malformed", "show", "intake:1"},
	{"migrate", "up"}, {"migrate", "down"}, {"migrate", "status"},
	{"providers", "list"}, {"providers", "export"}, {"providers", "health"},
	{"providers", "disable", "-reason", "x", "sms/a"}, {"providers", "drain", "-reason", "x", "sms/a"}, {"providers", "enable", "sms/a"},
	{"routing", "list"}, {"routing", "test", "+14155550100"},
	{"serve"}, {"stats"}, {"status", "0192f1c2-3b4a-7d5e-8f60-123456789abc"},
	{"templates", "apply", "-f", "testdata/templates"}, {"templates", "list"}, {"templates", "show", "t"}, {"templates", "render", "t"},
}

func TestMain_WithoutADatabaseIsAUsageError(t *testing.T) {
	t.Parallel()
	for _, args := range connecting {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := execute(t, map[string]string{"USER": "tester", "PGUSER": "postgres", "PGPASSWORD": "x", "HERALD_CHANNELS_SMS_DRIVER": "log"}, args...)
			requireUsageError(t, stdout, stderr, code, "no database given: set --database-url, HERALD_DATABASE_URL or DATABASE_URL")
		})
	}
}

func TestHasTarget_TakesAURLOrAPGVariable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		env  map[string]string
		url  string
		want bool
	}{
		{nil, "", false},
		{map[string]string{"PGUSER": "ann", "PGPASSWORD": "x", "PGSSLMODE": "require"}, "", false},
		{nil, "postgres://db/herald", true},
		{map[string]string{"PGHOST": "/run/postgresql"}, "", true},
		{map[string]string{"PGDATABASE": "herald"}, "", true},
		{map[string]string{"PGSERVICE": "herald"}, "", true},
	} {
		m, _, _ := testMain(tt.env)
		require.Equal(t, tt.want, m.hasTarget(&globalFlags{DatabaseURL: tt.url}), "%v %q", tt.env, tt.url)
	}
	// The environment's URLs reach globalFlags through the flag set.
	m, _, _ := testMain(map[string]string{"HERALD_DATABASE_URL": "postgres://db/herald"})
	var g globalFlags
	require.NoError(t, m.parse(m.newFlagSet("stats", &g), &g, nil))
	require.True(t, m.hasTarget(&g))
}

// setSchemaVersion rolls dbURL's schema back to version to, or, above the
// binary's latest, records a migration the binary does not know.
func setSchemaVersion(t *testing.T, dbURL string, to int64) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	if to > schema.LatestVersion() {
		_, err = pool.Exec(ctx, `INSERT INTO herald.goose_db_version (version_id, is_applied) VALUES ($1, true)`, to)
	} else {
		_, err = schema.NewMigrator(pool, nil).Down(ctx, to)
	}
	require.NoError(t, err)
}

func TestMain_OldSchemaSaysOneLineToMigrate(t *testing.T) {
	t.Parallel()
	latest := schema.LatestVersion()
	for _, to := range []int64{0, 20} {
		t.Run(fmt.Sprint(to), func(t *testing.T) {
			t.Parallel()
			dbURL := pgtemp.NewDatabase(t)
			setSchemaVersion(t, dbURL, to)
			env := map[string]string{"DATABASE_URL": dbURL, "USER": "tester", "HERALD_CHANNELS_SMS_DRIVER": "log"}
			want := fmt.Sprintf("herald: schema at version %d of %d: run herald migrate up\n", to, latest)
			for _, args := range connecting {
				if args[0] == "migrate" {
					continue
				}
				stdout, stderr, code := execute(t, env, args...)
				require.Equal(t, 1, code, "%v: %s", args, stderr)
				require.Empty(t, stdout, "%v", args)
				require.Equal(t, want, stderr, "%v", args)
			}
			// migrate is what fixes it.
			_, stderr, code := execute(t, env, "migrate", "up")
			require.Equal(t, 0, code, stderr)
			_, stderr, code = execute(t, env, "stats")
			require.Equal(t, 0, code, stderr)
		})
	}
}

func TestMain_NewerSchemaWarnsReadsRefusesWrites(t *testing.T) {
	t.Parallel()
	dbURL := pgtemp.NewDatabase(t)
	newer := schema.LatestVersion() + 1
	setSchemaVersion(t, dbURL, newer)
	env := map[string]string{"DATABASE_URL": dbURL, "USER": "tester", "HERALD_CHANNELS_SMS_DRIVER": "log"}
	want := fmt.Sprintf("binary older than schema: the database is at version %d, this herald knows %d", newer, schema.LatestVersion())

	stdout, stderr, code := execute(t, env, "stats", "--json")
	require.Equal(t, 0, code, stderr)
	require.NotEmpty(t, stdout)
	require.Equal(t, "herald: warning: "+want+": upgrade herald\n", stderr)

	for _, args := range [][]string{{"serve"}, {"cancel", "-reason", "x", "0192f1c2-3b4a-7d5e-8f60-123456789abc"}, {"dead-letters", "replay", "-reason", "x", "-all"}} {
		stdout, stderr, code = execute(t, env, args...)
		require.Equal(t, 1, code, "%v: %s", args, stderr)
		require.Empty(t, stdout)
		require.Equal(t, "herald: "+want+": upgrade herald\n", stderr, "%v", args)
	}
}

func TestVersionCmd_PrintsBuildAndSchemaVersions(t *testing.T) {
	t.Parallel()
	var v map[string]any
	stdout, stderr, code := execute(t, nil, "version", "--json")
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(stdout), &v))
	for _, k := range []string{"version", "commit", "commit_time", "modified", "go_version", "schema_version"} {
		require.Contains(t, v, k)
	}
	require.NotContains(t, v, "database_schema_version", "no database given, none asked")
	require.Equal(t, runtime.Version(), v["go_version"])
	require.Equal(t, "devel", v["version"], "a test binary has no module version")
	require.InDelta(t, schema.LatestVersion(), v["schema_version"], 0)

	dbURL := pgtemp.NewDatabase(t)
	setSchemaVersion(t, dbURL, 20)
	stdout, stderr, code = execute(t, map[string]string{"DATABASE_URL": dbURL}, "version", "--json")
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(stdout), &v))
	require.InDelta(t, 20, v["database_schema_version"], 0)

	stdout, _, code = execute(t, map[string]string{"DATABASE_URL": dbURL}, "version")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, fmt.Sprintf("schema:   version %d\n", schema.LatestVersion()))
	require.Contains(t, stdout, "database: schema version 20\n")
}

// ownFlags are the flags each command line has besides -database-url,
// -log-format and -log-level, which every one has: a flag a subcommand
// does not read must not show up in its usage.
var ownFlags = map[string]string{
	"api-keys create":       "actor json producer reason",
	"api-keys list":         "json producer",
	"senders approve":       "actor json reason",
	"senders list":          "json producer",
	"senders revoke":        "actor json reason",
	"api-keys revoke":       "actor json producer reason",
	"bench":                 "backlog batch concurrency cpuprofile dispatch-batch durable duration engine-async-commit engine-set fail-share history hold idle-samples intents json latency mode payload-bytes pg-set processes producers provider receipt-delay receipts retention-batch rounds routes-per-intent serve serve-discard trace-sample vs warmup window",
	"campaigns list":        "json limit producer read-database-url read-max-lag",
	"campaigns show":        "json read-database-url read-max-lag",
	"campaigns cancel":      "actor batch-size json reason",
	"cancel":                "actor json reason",
	"dead-letters list":     "after channel classification json limit producer provider read-database-url read-max-lag since type",
	"dead-letters show":     "json read-database-url read-max-lag",
	"dead-letters replay":   "actor all async async-threshold batch-size channel classification dry-run include-permanent json producer provider reason since type",
	"dead-letters progress": "interval json watch",
	"dead-letters count":    "by channel classification interval json producer provider since type watch",
	"find":                  "after json key limit producer recipient",
	"demo":                  "console-addr json keep metrics-addr otlp-endpoint timeout users",
	"held list":             "after json limit",
	"held release":          "actor json reason",
	"held reject":           "actor json reason",
	"malformed list":        "after code json limit producer read-database-url read-max-lag since",
	"malformed show":        "json read-database-url read-max-lag",
	"migrate up":            "json",
	"migrate down":          "json to",
	"migrate status":        "json",
	"providers apply":       "actor dry-run f json reason",
	"providers list":        "json",
	"providers export":      "",
	"providers health":      "interval json watch window",
	"providers disable":     "actor json reason",
	"providers drain":       "actor json reason",
	"providers enable":      "actor json reason",
	"routing list":          "json",
	"routing test":          "channel json priority producer tried type",
	"serve":                 "config dead-letter-retention finished-retention malformed-retention max-conns metrics-addr metrics-idle-timeout metrics-max-client-conns metrics-read-timeout metrics-write-timeout no-maintenance retention-duty",
	"stats":                 "interval json read-database-url read-max-lag watch window",
	"status":                "json read-database-url read-max-lag",
	"templates apply":       "f json producer",
	"templates list":        "json producer",
	"templates show":        "json producer version",
	"templates render":      "data json locale producer version",
	"version":               "json",

	// Commands that print a file and need no database.
	"observability alerts":    "backlog dead-letters job lag malformed output unmatched-receipts",
	"observability dashboard": "output",
}

func TestUsage_EachSubcommandListsOnlyItsFlags(t *testing.T) {
	t.Parallel()
	flagLine := regexp.MustCompile(`(?m)^  -([a-z-]+)`)
	var walked []string
	for name, c := range commands {
		lines := []*command{c}
		if c.subs != nil {
			lines = c.subs
		}
		for _, s := range lines {
			full := name
			if s != c {
				full += " " + s.name
			}
			walked = append(walked, full)
			t.Run(strings.ReplaceAll(full, " ", "_"), func(t *testing.T) {
				t.Parallel()
				stdout, stderr, code := execute(t, nil, append(strings.Fields(full), "-h")...)
				require.Equal(t, 0, code, stderr)
				var got []string
				for _, m := range flagLine.FindAllStringSubmatch(stdout, -1) {
					if !slices.Contains([]string{"database-url", "log-format", "log-level"}, m[1]) {
						got = append(got, m[1])
					}
				}
				require.Equal(t, ownFlags[full], strings.Join(got, " "), "herald %s -h", full)
				require.NotEmpty(t, s.summary)
				require.Contains(t, stdout, "\n"+s.summary+"\n")
				require.Contains(t, stdout, "\nExample:\n  herald "+full)

				// A flag it does not have is an error naming the command.
				stdout, stderr, code = execute(t, nil, append(strings.Fields(full), "-x")...)
				requireUsageError(t, stdout, stderr, code, "herald: "+full+": flag provided but not defined: -x\n")
			})
		}
	}
	slices.Sort(walked)
	declared := make([]string, 0, len(ownFlags))
	for k := range ownFlags {
		declared = append(declared, k)
	}
	slices.Sort(declared)
	require.Equal(t, declared, walked, "every command line is declared in ownFlags")
}

func TestProvidersApply_DryRunNeedsNoActor(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	file := writeProviders(t, providersFile)
	env := map[string]string{"DATABASE_URL": b.env["DATABASE_URL"]} // no $USER, no $LOGNAME
	stdout, stderr, code := execute(t, env, "providers", "apply", "-f", file, "--dry-run")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "sms/acme")

	// Without the environment's names, the OS user's is the actor.
	m, _, errb := testMain(env)
	m.Username = func() string { return "os-user" }
	require.Equal(t, 0, m.Execute(context.Background(), []string{"providers", "apply", "-f", file}), errb.String())
	var actor string
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT actor FROM herald.audit_log WHERE action = 'routing_apply'`).Scan(&actor))
	require.Equal(t, "os-user", actor)
}

func TestDeadLettersCmd_ClassificationTakesStoredValues(t *testing.T) {
	t.Parallel()
	b := opSetup(t)
	for class, n := range map[string]int{"http_503": 2, "timeout": 1, "http_404": 1, "smtp_550": 1} {
		operatortest.Seed(t, b.pool, operatortest.Spec{N: n, Dead: true, Classification: class})
	}
	count := func(args ...string) int {
		t.Helper()
		var page operator.DeadLetterPage
		runJSON(t, b.env, &page, append([]string{"dead-letters", "list"}, args...)...)
		return len(page.DeadLetters)
	}
	require.Equal(t, 3, count("--classification", "transient"))
	require.Equal(t, 2, count("--classification", "permanent"))
	require.Equal(t, 2, count("--classification", "http_503"))
	require.Equal(t, 0, count("--classification", "http_500"))
	require.Equal(t, 5, count())

	var dry operator.ReplayResult
	runJSON(t, b.env, &dry, "dead-letters", "replay", "--dry-run", "--classification", "transient")
	require.Equal(t, int64(3), dry.Matched)

	// A value no dead letter can have is refused, naming the valid ones;
	// the help names them too.
	for _, args := range [][]string{{"list"}, {"replay", "--reason", "x"}} {
		stdout, stderr, code := execute(t, b.env, append([]string{"dead-letters", args[0], "--classification", "exhausted"}, args[1:]...)...)
		requireUsageError(t, stdout, stderr, code, `invalid -classification "exhausted": want transient, permanent, `)
		require.Contains(t, stderr, "timeout")
		require.Contains(t, stderr, "http_NNN")
	}
	stdout, _, _ := execute(t, nil, "dead-letters", "list", "-h")
	require.Contains(t, stdout, "transient, permanent, attempts_exhausted")
}

func TestMalformedCmd_CodeTakesTheStoredCodes(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := execute(t, unreachable, "malformed", "list", "--code", "invalid_json")
	requireUsageError(t, stdout, stderr, code, `invalid -code "invalid_json": want one of `)
	require.Contains(t, stderr, "not_json")
	stdout, _, _ = execute(t, nil, "malformed", "list", "-h")
	require.Contains(t, stdout, "not_json")
}

func TestBinary_RefusesWithoutADatabasePrintsVersion(t *testing.T) {
	t.Parallel()
	bin := buildHerald(t)
	// An environment with no database in it: only what go needs to run.
	cmd := exec.Command(bin, "migrate", "up")
	cmd.Env = []string{"HOME=" + t.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 2, exit.ExitCode())
	require.Empty(t, stdout.String())
	require.Equal(t, "herald: "+errNoTarget.Error()+"\n", stderr.String())

	cmd = exec.Command(bin, "version", "--json")
	cmd.Env = []string{"HOME=" + t.TempDir()}
	out, err := cmd.Output()
	require.NoError(t, err)
	var v render.VersionInfo
	require.NoError(t, json.Unmarshal(out, &v))
	require.Equal(t, runtime.Version(), v.GoVersion)
	require.Equal(t, schema.LatestVersion(), v.SchemaVersion)
	require.Nil(t, v.DatabaseSchemaVersion)
}
