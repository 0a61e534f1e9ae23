package console_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// shotsDir is where the browser test leaves screenshots of the main
// pages, for the operating guide; HERALD_CONSOLE_SHOTS overrides it, and
// "" in it turns them off.
func shotsDir() string {
	if d, ok := os.LookupEnv("HERALD_CONSOLE_SHOTS"); ok {
		return d
	}
	return "/work/notes/console-shots"
}

// chromiumPath finds Chromium, failing the test when it is missing: the
// console is proven in a real browser or not at all.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	t.Fatal("chromium not found: the console's browser test needs it (.ci/run installs it: apt-get install chromium)")
	return ""
}

// browser starts one headless Chromium for the test, with a profile of
// its own and nothing that reaches the network, and returns a tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 1000),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	// Start the browser on a context without a timeout (a timeout on the
	// first call would stop the browser), then bound every later step.
	require.NoError(t, chromedp.Do(ctx))
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// page is a person at the browser.
type page struct {
	t    *testing.T
	ctx  context.Context
	base string
	// secrets must appear in no page's HTML.
	secrets []string
}

func (p *page) run(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	require.NoError(p.t, chromedp.Do(p.ctx, actions...))
}

// value runs an action that returns a value.
func value[T any](p *page, a chromedp.Action[T]) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, a)
	require.NoError(p.t, err)
	return v
}

// open navigates to path and waits for sel.
func (p *page) open(path, sel string) {
	p.t.Helper()
	p.run(chromedp.Navigate(p.base+path), chromedp.WaitVisible(chromedp.CSS(sel)))
	p.noSecret()
}

// html returns the page's HTML as the browser has it.
func (p *page) html() string {
	p.t.Helper()
	return value(p, chromedp.OuterHTML(chromedp.CSS("html")))
}

// text returns the text of sel.
func (p *page) text(sel string) string {
	p.t.Helper()
	return value(p, chromedp.Text(chromedp.CSS(sel)))
}

func (p *page) noSecret() {
	p.t.Helper()
	h := p.html()
	for _, s := range p.secrets {
		require.NotContains(p.t, h, s, "a secret is on the page")
	}
}

// shot saves a PNG of the whole page as name.png in shotsDir.
func (p *page) shot(name string) {
	p.t.Helper()
	dir := shotsDir()
	if dir == "" {
		return
	}
	png := value(p, chromedp.FullScreenshot(100))
	require.NoError(p.t, os.MkdirAll(dir, 0o755))
	require.NoError(p.t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// signIn signs in and waits for then: "#who" once signed in, "#error"
// for a refusal.
func (p *page) signIn(user, password, then string) {
	p.t.Helper()
	p.open("/login", "#user")
	p.run(chromedp.SetValue(chromedp.CSS("#user"), user), chromedp.SetValue(chromedp.CSS("#password"), password),
		chromedp.Click(chromedp.CSS("#signin")), chromedp.WaitVisible(chromedp.CSS(then)))
}

func (p *page) signOut() {
	p.t.Helper()
	p.run(chromedp.Click(chromedp.CSS(".who button")), chromedp.WaitVisible(chromedp.CSS("#user")))
}

// fetchStatus posts form from the page's own script, as a forged form
// would, and returns the answer's status.
func (p *page) fetchStatus(path, form string) int {
	p.t.Helper()
	return value(p, chromedp.Evaluate[int](`fetch(`+jsString(path)+`, {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: `+
		jsString(form)+`}).then(r => r.status)`, chromedp.EvalAwaitPromise))
}

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// TestConsole_InBrowser walks the console in headless Chromium through
// an outage: a provider answering 500 dead-letters its routes; the
// operator finds them on the overview, the providers and the dead-letter
// pages, follows one notification, dry-runs and replays the dead letters
// once the provider is back, reviews a held intent, reads a malformed
// entry (its markup shown, not run) and the audit log; an auditor reads
// everything and is refused a replay by the database; a wrong password,
// a producer's login and a form without its token are refused; no page
// holds a secret.
func TestConsole_InBrowser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.stageStory(t)
	p := &page{t: t, ctx: browser(t), base: b.console.URL(),
		secrets: []string{flakyKey, steadyKey, operatorPW, auditorPW, producerPW}}

	t.Run("WrongPasswordRefused", func(t *testing.T) {
		p.signIn(b.operator, "not-the-password", "#error")
		require.Contains(t, p.text("#error"), "Wrong login or password.")
	})
	t.Run("ProducerRefused", func(t *testing.T) {
		p.signIn(b.producer, producerPW, "#error")
		require.Contains(t, p.text("#error"), "is neither an operator's (herald_operator) nor an auditor's")
	})

	p.signIn(b.operator, operatorPW, "#who")
	t.Run("Overview", func(t *testing.T) {
		p.open("/", "#dead")
		require.Contains(t, p.text("#who"), "operator")
		dead := p.text("#dead")
		require.Contains(t, dead, "sms")
		require.Contains(t, dead, "6", "the overview shows the six dead letters")
		require.Contains(t, p.text("#throughput"), "sms/flaky")
		p.shot("overview")
	})
	t.Run("Providers", func(t *testing.T) {
		p.open("/providers", "#providers")
		row := p.text(`tr[data-provider="sms/flaky"]`)
		require.Contains(t, row, "100%", "sms/flaky failed every attempt")
		steady := p.text(`tr[data-provider="sms/steady"]`)
		require.Contains(t, steady, "0%")
		p.shot("providers")
	})
	t.Run("DeadLettersGroupedAndDryRun", func(t *testing.T) {
		p.open("/dead-letters?producer=shop", "#groups")
		groups := p.text("#groups")
		require.Contains(t, groups, "sms/flaky")
		require.Contains(t, groups, "6")
		p.shot("dead-letters")
		p.run(chromedp.Click(chromedp.CSS("#dry-run")), chromedp.WaitVisible(chromedp.CSS("#dry-result")))
		require.Equal(t, "6", p.text("#matched"))
		require.Equal(t, 6, b.count(t, `SELECT count(*) FROM herald.dead_letters`), "a dry run moved something")
		p.shot("replay-dry-run")
	})
	t.Run("Notification", func(t *testing.T) {
		p.open("/notification?producer=shop&key=ke-0", "#timeline")
		h := p.html()
		require.Contains(t, h, "sms/flaky")
		require.Contains(t, h, "dead_letter")
		p.shot("notification")
	})
	t.Run("NotificationByRecipient", func(t *testing.T) {
		// A customer in Kenya got no text: the operator types the number
		// as the customer spells it.
		p.open("/notification", "#find-recipient")
		p.run(chromedp.SetValue(chromedp.CSS("input[name=recipient]"), "+254 712 345 678"),
			chromedp.Click(chromedp.CSS("#find-recipient")), chromedp.WaitVisible(chromedp.CSS("#by-recipient")))
		rows := value(p, chromedp.Evaluate[int](`document.querySelectorAll("#by-recipient tr").length`))
		require.Equal(t, 1+6, rows, "a header and the six notifications to the number")
		require.Contains(t, p.text("#by-recipient"), "+254712345678")
		require.Contains(t, p.text("#by-recipient"), "dead_letter")
		dead := value(p, chromedp.Evaluate[int](`document.querySelectorAll("#recipient-dead-letters tr").length`))
		require.Equal(t, 1+6, dead, "and its six dead letters")
		p.shot("notification-by-recipient")
		p.run(chromedp.Click(chromedp.CSS("#by-recipient a")), chromedp.WaitVisible(chromedp.CSS("#timeline")))
		require.Contains(t, p.html(), "+254712345678", "the link opens a notification to the number")
	})
	t.Run("AuditorRefusedReplay", func(t *testing.T) {
		p.signOut()
		p.signIn(b.auditor, auditorPW, "#who")
		require.Contains(t, p.text("#who"), "auditor")
		p.open("/dead-letters?producer=shop", "#dry-run")
		p.run(chromedp.Click(chromedp.CSS("#dry-run")), chromedp.WaitVisible(chromedp.CSS("#reason")),
			chromedp.SetValue(chromedp.CSS("#reason"), "trying"), chromedp.Click(chromedp.CSS("#replay-now")),
			chromedp.WaitVisible(chromedp.CSS("#refused")))
		require.Contains(t, p.text("#refused"), "The database refused this: your login "+b.auditor+" (auditor) may not do it.")
		require.Equal(t, 6, b.count(t, `SELECT count(*) FROM herald.dead_letters`))
		p.shot("auditor-refused")
		p.signOut()
		p.signIn(b.operator, operatorPW, "#who")
	})
	t.Run("FormWithoutTokenRefused", func(t *testing.T) {
		p.open("/", "#dead")
		require.Equal(t, 403, p.fetchStatus("/dead-letters/replay", "mode=run&producer=shop&reason=forged"))
		require.Equal(t, 6, b.count(t, `SELECT count(*) FROM herald.dead_letters`))
	})
	t.Run("Replay", func(t *testing.T) {
		o.failing.Store(false) // the provider is back
		p.open("/dead-letters?producer=shop", "#dry-run")
		p.run(chromedp.Click(chromedp.CSS("#dry-run")), chromedp.WaitVisible(chromedp.CSS("#reason")),
			chromedp.SetValue(chromedp.CSS("#reason"), "sms/flaky is back"), chromedp.Click(chromedp.CSS("#replay-now")),
			chromedp.WaitVisible(chromedp.CSS("#replay-result")))
		require.Equal(t, "6", p.text("#moved"))
		p.shot("replayed")
		b.eventually(t, 9, `SELECT count(*) FROM herald.routes WHERE status = 'published'`)
	})
	t.Run("HeldHighlightedAndReleased", func(t *testing.T) {
		p.open("/held", "#held")
		p.run(chromedp.Click(chromedp.CSS("#held a")), chromedp.WaitVisible(chromedp.CSS("#held-body")))
		marked := p.text("#held-body mark")
		require.Equal(t, "LOTTERY", marked)
		p.shot("held")
		p.run(chromedp.SetValue(chromedp.CSS("#release input[name=reason]"), "a real prize draw"),
			chromedp.Click(chromedp.CSS("#release button")), chromedp.WaitVisible(chromedp.CSS("#message")))
		require.Contains(t, p.text("#message"), "released")
		require.Equal(t, 0, b.count(t, `SELECT count(*) FROM herald.held_intents`))
	})
	t.Run("Campaigns", func(t *testing.T) {
		p.open("/campaigns", "#campaigns")
		require.Contains(t, p.text("#campaigns"), "spring")
		p.shot("campaigns")
	})
	t.Run("MalformedEscaped", func(t *testing.T) {
		p.open("/malformed", "main table")
		p.run(chromedp.Click(chromedp.CSS("main table a")), chromedp.WaitVisible(chromedp.CSS("#raw")))
		require.Contains(t, p.text("#raw"), "<script>alert(1)</script>", "the raw body is shown as text")
		scripts := value(p, chromedp.Evaluate[int](`document.querySelectorAll("main script").length`))
		require.Zero(t, scripts, "the raw body's markup became part of the page")
		p.shot("malformed")
	})
	t.Run("DrainProvider", func(t *testing.T) {
		p.open("/providers", "#providers")
		row := `tr[data-provider="sms/flaky"] `
		p.run(chromedp.SetValue(chromedp.CSS(row+"select"), "draining"), chromedp.SetValue(chromedp.CSS(row+"input[name=reason]"), "sms/flaky outage"),
			chromedp.Click(chromedp.CSS(row+"button")), chromedp.WaitVisible(chromedp.CSS("#message")))
		require.Contains(t, p.text("#message"), "enabled → draining")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM herald.providers WHERE name = 'sms/flaky' AND state = 'draining'`))
		p.open("/providers", "#providers")
		require.Contains(t, p.text(`tr[data-provider="sms/flaky"]`), "sms/flaky outage")
		p.shot("providers-drained")
	})
	t.Run("AuditLog", func(t *testing.T) {
		p.open("/audit", "#audit")
		h := p.text("#audit")
		require.Contains(t, h, "dead_letter_replay")
		require.Contains(t, h, b.operator)
		require.Contains(t, h, "sms/flaky is back")
		require.Contains(t, h, "provider_state")
		p.shot("audit")
	})
}
