package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/guide"
)

// TestHelp_TopicsAndCommandsHaveDistinctNames keeps "herald help NAME"
// unambiguous: a guide named as a command would hide the command's usage.
func TestHelp_TopicsAndCommandsHaveDistinctNames(t *testing.T) {
	t.Parallel()
	for _, cl := range commandLines() {
		require.NotContains(t, guide.Names(), cl[0], "guide topic %q is also a command: name the guide after its job", cl[0])
	}
}

// docs returns the README and every guide, by a name for messages.
func docs(t *testing.T) map[string]string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	out := map[string]string{"README.md": string(readme)}
	for _, n := range guide.Names() {
		text, err := guide.Text(n)
		require.NoError(t, err)
		out["internal/guide/"+n+".md"] = text
	}
	return out
}

// codeBlock is one fenced code block: its language and its lines, with
// the line number of its first line.
type codeBlock struct {
	lang  string
	first int
	lines []string
}

// codeBlocks returns md's fenced code blocks.
func codeBlocks(md string) []codeBlock {
	var blocks []codeBlock
	var cur *codeBlock
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &codeBlock{lang: strings.TrimPrefix(trimmed, "```"), first: i + 2}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	return blocks
}

// commandLine is a herald command line a document shows: its arguments
// after "herald", and where it stands.
type commandLine struct {
	where string
	args  []string
}

// shellWords splits one shell command line into words: quotes ('...' and
// "..." with backslash escapes) group, an unquoted # starts a comment.
// Markdown's optional-part brackets around a word are dropped ("[--limit"
// is "--limit"), and "..." alone is dropped.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	inWord, quote := false, rune(0)
	flush := func() {
		if inWord {
			words = append(words, w.String())
		}
		w.Reset()
		inWord = false
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case quote == '"':
			switch {
			case r == '"':
				quote = 0
			case r == '\\' && i+1 < len(rs):
				i++
				w.WriteRune(rs[i])
			default:
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		case r == '#' && !inWord:
			flush()
			return clean(words)
		case r == '[' && !inWord, r == ']' && (i+1 == len(rs) || rs[i+1] == ' '):
			// an optional part's bracket
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	flush()
	return clean(words)
}

func clean(words []string) []string {
	out := words[:0]
	for _, w := range words {
		if w != "..." && w != "|" {
			out = append(out, w)
		}
	}
	return out
}

// envAssignment is a VAR=value word before a command.
var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// heraldArgs returns the arguments of a herald command line (herald,
// ./herald, /tmp/herald or go run ./cmd/herald, after any VAR=value
// words), or false for a line that runs something else.
func heraldArgs(words []string) ([]string, bool) {
	for len(words) > 0 && envAssignment.MatchString(words[0]) {
		words = words[1:]
	}
	switch {
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/herald":
		return words[3:], true
	case len(words) >= 1 && (words[0] == "herald" || strings.HasSuffix(words[0], "/herald")):
		return words[1:], true
	}
	return nil, false
}

// commandLines returns every herald command line of md's fenced code
// blocks (a line ending in a backslash goes on on the next), but those of
// blocks in languages that are not shell (text is output or a diagram).
func commandLinesOf(name, md string) []commandLine {
	var out []commandLine
	for _, b := range codeBlocks(md) {
		switch b.lang {
		case "go", "sql", "yaml", "json", "text":
			continue
		}
		for i := 0; i < len(b.lines); i++ {
			line, at := b.lines[i], b.first+i
			for strings.HasSuffix(line, `\`) && i+1 < len(b.lines) {
				i++
				line = strings.TrimSuffix(line, `\`) + " " + b.lines[i]
			}
			if args, ok := heraldArgs(shellWords(line)); ok {
				out = append(out, commandLine{where: fmt.Sprintf("%s:%d", name, at), args: args})
			}
		}
	}
	return out
}

// checkCommandLine parses args with the flag sets of the command they
// name, without running it: args and -h, in-process, with no database in
// the environment. Every command parses its flags before anything else,
// and -h stops it there (flags after positional arguments are parsed, as
// the commands parse them), so a command that does not exist, or a flag
// its flag set does not define, fails as the binary would. "help TOPIC"
// is run as it is. It returns nil when the line works.
func checkCommandLine(t *testing.T, args []string) error {
	t.Helper()
	if len(args) == 0 {
		return fmt.Errorf("no command")
	}
	run := append(append([]string(nil), args...), "-h")
	if args[0] == "help" {
		run = args
	}
	stdout, stderr, code := execute(t, nil, run...)
	if code != 0 {
		return fmt.Errorf("exit %d: %s", code, strings.TrimSpace(stderr))
	}
	if args[0] != "help" && !strings.HasPrefix(stdout, "Usage: herald ") {
		return fmt.Errorf("no usage printed: %q", stdout)
	}
	return nil
}

// TestGuides_EveryCommandLineShownWorks checks each herald command line of
// the README's and the guides' code blocks against the binary's commands
// and each one's own flag set.
func TestGuides_EveryCommandLineShownWorks(t *testing.T) {
	t.Parallel()
	total := 0
	for name, md := range docs(t) {
		lines := commandLinesOf(name, md)
		total += len(lines)
		for _, l := range lines {
			require.NoError(t, checkCommandLine(t, l.args), "%s: herald %s", l.where, strings.Join(l.args, " "))
		}
	}
	require.Greater(t, total, 40, "the documents show herald's commands")

	// The check fails for what a document could get wrong.
	for _, bad := range []string{
		"herald dead-letters list --no-such-flag 3",
		"herald routing test +254712345678 --producer shop --colour red", // a flag after the positional
		"go run ./cmd/herald serve -metrics-adr :9090",
		"HERALD_CHANNELS_SMS_DRIVER=log herald demo -user 5",
		"herald deadletters list",
		"herald dead-letters relay --reason x",
		"herald help nosuchtopic",
	} {
		lines := commandLinesOf("synthetic", "```sh\n"+bad+"\n```\n")
		require.Len(t, lines, 1, bad)
		require.Error(t, checkCommandLine(t, lines[0].args), bad)
	}
	// And holds for what is right, written every way the documents write it.
	for _, good := range []string{
		`herald dead-letters list [--channel sms] [--since 24h] \` + "\n" + `    --limit 5   # a comment`,
		`HERALD_X=1 go run ./cmd/herald dead-letters replay --reason "address fixed" ntf_1/email:0 ntf_2 --dry-run`,
		`/tmp/herald bench -vs river -rounds 3`,
		`herald templates render order.shipped --producer shop --data '{"name":"Ana"}'`,
		`herald help producers`,
	} {
		lines := commandLinesOf("synthetic", "```\n"+good+"\n```\n")
		require.Len(t, lines, 1, good)
		require.NoError(t, checkCommandLine(t, lines[0].args), good)
	}
}

func TestShellWords_QuotesCommentsAndBrackets(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"herald", "x", "--reason", "a b", "--data", `{"k":"v"}`, "--limit", "5", "ID/ROUTE"},
		shellWords(`herald x --reason "a b" --data '{"k":"v"}' [--limit 5] ID/ROUTE ...  # why`))
	require.Equal(t, []string{"herald", "dead-letters", "show", "NOTIFICATION_ID[/ROUTE_ID"},
		shellWords(`herald dead-letters show NOTIFICATION_ID[/ROUTE_ID]`))
}

// TestGuides_GoProgramsCompile builds each Go code block of the README and
// the guides that is a whole file (it starts with a package clause)
// against this module.
func TestGuides_GoProgramsCompile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds programs")
	}
	built := 0
	for name, md := range docs(t) {
		for _, b := range codeBlocks(md) {
			if b.lang != "go" || len(b.lines) == 0 || !strings.HasPrefix(b.lines[0], "package ") {
				continue
			}
			dir := t.TempDir()
			file := filepath.Join(dir, "doc.go")
			require.NoError(t, os.WriteFile(file, []byte(strings.Join(b.lines, "\n")+"\n"), 0o600))
			cmd := exec.Command("go", "build", "-o", os.DevNull, file)
			cmd.Dir = ".." + string(filepath.Separator) + ".." // the module, whose requirements the program uses
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s:%d: the Go program does not build:\n%s", name, b.first, out)
			built++
		}
	}
	require.GreaterOrEqual(t, built, 2, "the README's first notification and the producers guide's SubmitTx")
}

func TestHelp_ListsCommandsThenGuides(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := execute(t, nil, "help")
	require.Equal(t, 0, code, stderr)
	commandsAt := strings.Index(stdout, "\nCommands:\n")
	guidesAt := strings.Index(stdout, "\nGuides (herald help TOPIC):\n")
	require.Positive(t, commandsAt)
	require.Greater(t, guidesAt, commandsAt)
	for _, tp := range guide.Topics() {
		require.Contains(t, stdout[guidesAt:], "  "+tp.Name+" ")
		require.Contains(t, stdout[guidesAt:], tp.Summary)
	}
	require.Contains(t, stdout[commandsAt:guidesAt], "  dead-letters ")
}

func TestHelp_TopicPrintsItsGuide(t *testing.T) {
	t.Parallel()
	for _, n := range guide.Names() {
		stdout, stderr, code := execute(t, nil, "help", n)
		require.Equal(t, 0, code, stderr)
		want, err := guide.Text(n)
		require.NoError(t, err)
		require.Equal(t, want, stdout)
		require.Empty(t, stderr)
	}
	// A command is still a command: its usage, not a guide.
	stdout, stderr, code := execute(t, nil, "help", "dead-letters", "list")
	require.Equal(t, 0, code, stderr)
	require.True(t, strings.HasPrefix(stdout, "Usage: herald dead-letters list "), stdout)
}

func TestHelp_UnknownTopicIsAUsageErrorNamingTheTopics(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := execute(t, nil, "help", "nosuchtopic")
	requireUsageError(t, stdout, stderr, code, `unknown command "nosuchtopic"`)
	for _, n := range guide.Names() {
		require.Contains(t, stderr, n)
	}
}
