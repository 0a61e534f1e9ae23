package guide

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/routing"
)

func TestTopics_EachHasAFileAndEachFileATopic(t *testing.T) {
	t.Parallel()
	entries, err := files.ReadDir(".")
	require.NoError(t, err)
	var embedded []string
	for _, e := range entries {
		embedded = append(embedded, strings.TrimSuffix(e.Name(), ".md"))
	}
	onDisk, err := filepath.Glob("*.md")
	require.NoError(t, err)
	for i, f := range onDisk {
		onDisk[i] = strings.TrimSuffix(f, ".md")
	}
	names := Names()
	slices.Sort(names)
	require.Equal(t, names, embedded, "every topic has a file NAME.md, and every file is a topic")
	require.Equal(t, names, onDisk)
	for _, tp := range Topics() {
		require.NotEmpty(t, tp.Summary, tp.Name)
		require.NotContains(t, tp.Summary, "\n", tp.Name)
		text, err := Text(tp.Name)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(text, "# "), "%s.md starts with its title", tp.Name)
	}
}

func TestText_UnknownTopicNamesEveryTopic(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	err := Write(&b, "nosuchtopic")
	require.ErrorIs(t, err, ErrUnknownTopic)
	require.Empty(t, b.String())
	require.NotContains(t, err.Error(), "\n")
	require.Contains(t, err.Error(), `"nosuchtopic"`)
	for _, n := range Names() {
		require.Contains(t, err.Error(), n)
	}
	require.NoError(t, Write(&b, "producers"))
	want, err := os.ReadFile("producers.md")
	require.NoError(t, err)
	require.Equal(t, string(want), b.String())
}

func TestWriteTopics_ListsEachTopicWithItsSummary(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	WriteTopics(&b)
	for _, tp := range Topics() {
		require.Regexp(t, `(?m)^  `+regexp.QuoteMeta(tp.Name)+` +`+regexp.QuoteMeta(tp.Summary)+`$`, b.String())
	}
}

func TestREADME_LinksEveryGuide(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	for _, n := range Names() {
		require.Contains(t, string(readme), "](internal/guide/"+n+".md)", "README links to the %s guide", n)
	}
}

// link is a Markdown link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// heading is a Markdown heading line.
var heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)

// anchors returns the anchors GitHub makes of md's headings: lower case,
// punctuation but hyphens and underscores dropped, spaces made hyphens.
func anchors(md string) map[string]bool {
	md = fenced.ReplaceAllString(md, "")
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(md, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}

// fenced matches a fenced code block.
var fenced = regexp.MustCompile("(?ms)^```.*?^```")

// TestLinks_EveryRelativeLinkResolves checks each link of the guides and
// the README to a file of the repository, and to a heading when it names
// one.
func TestLinks_EveryRelativeLinkResolves(t *testing.T) {
	t.Parallel()
	docs := []string{"../../README.md"}
	for _, n := range Names() {
		docs = append(docs, n+".md")
	}
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		text := fenced.ReplaceAllString(string(b), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
			}
			body, err := os.ReadFile(path)
			require.NoError(t, err, "%s links to %s", doc, target)
			if anchor != "" {
				require.True(t, anchors(string(body))[anchor], "%s links to %s: %s has no heading #%s", doc, target, path, anchor)
			}
		}
	}
}

// history are phrasings of a document that tells the story of its own
// making instead of what is.
var history = regexp.MustCompile(`(?i)\bissue \d|\bmigrations? 000\d\d|\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|previous|earlier) (round|session)s?\b|\btried and not kept\b|\bthe build before\b|\bseed 00\d`)

func TestGuides_SayWhatIsNotHowItCameToBe(t *testing.T) {
	t.Parallel()
	for _, doc := range append(Names(), "../../README") {
		b, err := os.ReadFile(doc + ".md")
		require.NoError(t, err)
		require.Empty(t, history.FindAllString(string(b), -1), "%s.md tells its history: say what is", doc)
	}
	require.True(t, history.MatchString("as issue 14 found"), "the check catches what it is for")
	require.True(t, history.MatchString("since the thirteenth round"))
	require.False(t, history.MatchString("one round trip per claim, in this session's transaction"))
}

// sqlBlock matches a fenced SQL block (indented in a list item or not).
var sqlBlock = regexp.MustCompile("(?ms)^[ \t]*```sql\n(.*?)^[ \t]*```")

// statements returns the statements of the README's and the guides' SQL
// blocks that run as they are shown: SELECTs and INSERTs without a
// placeholder ("...", "…"). The others need a login, a notification or a
// connection outside a transaction that a test cannot guess.
func statements(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, doc := range append(Names(), "../../README") {
		b, err := os.ReadFile(doc + ".md")
		require.NoError(t, err)
		for _, m := range sqlBlock.FindAllStringSubmatch(string(b), -1) {
			var lines []string
			for _, l := range strings.Split(m[1], "\n") {
				if c := strings.Index(l, "--"); c >= 0 && !strings.Contains(l[:c], "'") {
					l = l[:c]
				}
				lines = append(lines, l)
			}
			for _, st := range strings.Split(strings.Join(lines, "\n"), ";") {
				st = strings.TrimSpace(st)
				upper := strings.ToUpper(st)
				if !(strings.HasPrefix(upper, "SELECT") || strings.HasPrefix(upper, "INSERT")) ||
					strings.Contains(st, "...") || strings.Contains(st, "…") {
					continue
				}
				out[doc] = append(out[doc], st)
			}
		}
	}
	return out
}

// TestSQL_EveryRunnableStatementRuns runs the SQL the documents show on a
// migrated database, as the engine's login, each statement in a
// transaction rolled back: a view, column or function renamed fails here.
func TestSQL_EveryRunnableStatementRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtemp.NewDatabase(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	n := 0
	for doc, sts := range statements(t) {
		for _, st := range sts {
			n++
			require.NoError(t, runRolledBack(ctx, pool, st), "%s.md: %s", doc, st)
		}
	}
	require.Greater(t, n, 15, "the guides show SQL")
	require.Error(t, runRolledBack(ctx, pool, "SELECT no_such_column FROM herald.dead_letter_view"), "the check fails for what a document could get wrong")
}

// runRolledBack runs st in a transaction it rolls back, reading every row.
func runRolledBack(ctx context.Context, pool *pgxpool.Pool, st string) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, st)
		if err != nil {
			return err
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		return errRollback
	})
	if errors.Is(err, errRollback) {
		return nil
	}
	return err
}

// errRollback ends a transaction that must leave nothing behind.
var errRollback = errors.New("rolled back")

// yamlBlock matches a fenced YAML block, indented in a list item or not.
var yamlBlock = regexp.MustCompile("(?ms)^([ \t]*)```yaml\n(.*?)^[ \t]*```")

// yamlBlocks returns the YAML blocks of the guides that start with key,
// unindented.
func yamlBlocks(t *testing.T, key string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, n := range Names() {
		text, err := Text(n)
		require.NoError(t, err)
		for _, m := range yamlBlock.FindAllStringSubmatch(text, -1) {
			var lines []string
			for _, l := range strings.Split(m[2], "\n") {
				lines = append(lines, strings.TrimPrefix(l, m[1]))
			}
			block := strings.Join(lines, "\n")
			if strings.HasPrefix(block, key) {
				out[n] = append(out[n], block)
			}
		}
	}
	return out
}

// TestYAML_ProvidersFilesParse parses each providers file the guides show
// as herald providers apply does.
func TestYAML_ProvidersFilesParse(t *testing.T) {
	t.Parallel()
	n := 0
	for doc, blocks := range yamlBlocks(t, "providers:") {
		for _, b := range blocks {
			n++
			_, err := routing.Parse([]byte(b))
			require.NoError(t, err, "%s.md:\n%s", doc, b)
		}
	}
	require.GreaterOrEqual(t, n, 3, "providers and rules, SMPP, receipts")
}

// TestREADME_TestCommandsAreCIs checks the README's commands for the tests
// against their one definition: the command .ci/run executes, and the
// Taskfile's test task.
func TestREADME_TestCommandsAreCIs(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	flat := strings.Join(strings.Fields(string(readme)), " ")

	ci, err := os.ReadFile("../../.ci/run")
	require.NoError(t, err)
	ciCmd := regexp.MustCompile(`(?m)^exec (.+)$`).FindStringSubmatch(string(ci))
	require.NotNil(t, ciCmd, ".ci/run ends by exec-ing CI's command")
	require.Contains(t, string(readme), "```sh\n"+ciCmd[1]+"\n```", "the README shows the command .ci/run runs")
	require.Contains(t, flat, "go run ./cmd/herald demo")

	taskfile, err := os.ReadFile("../../Taskfile.yml")
	require.NoError(t, err)
	withpg := regexp.MustCompile(`(?m)^  WITHPG: (.+)$`).FindStringSubmatch(string(taskfile))
	require.NotNil(t, withpg)
	test := regexp.MustCompile(`(?m)^  test:\n(?:    .*\n)*?      - "\{\{\.WITHPG\}\} (.+?) \{\{\.CLI_ARGS\}\}"`).FindStringSubmatch(string(taskfile))
	require.NotNil(t, test, "the Taskfile's test task")
	require.Contains(t, flat, withpg[1]+" "+test[1], "the README's tests alone are the test task's command")
}
