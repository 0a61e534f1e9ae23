package routing_test

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/routing"
)

func writeFile(path, body string) error { return os.WriteFile(path, []byte(body), 0o600) }

// table parses file and returns its table.
func table(t *testing.T, file string) *routing.Table {
	t.Helper()
	f, err := routing.Parse([]byte(file))
	require.NoError(t, err)
	return f.Table()
}

// openSet returns an IsOpenFunc saying the named providers are open.
func openSet(names ...string) func(string) bool {
	return func(p string) bool {
		for _, n := range names {
			if n == p {
				return true
			}
		}
		return false
	}
}

const pickFile = `
providers:
  - {name: sms/a, driver: log}
  - {name: sms/b, driver: log}
  - {name: sms/c, driver: log}
  - {name: email/x, driver: log}
  - {name: email/y, driver: log}
  - {name: webhook/h, driver: log}
  - {name: webhook/g, driver: log}
rules:
  sms:
    - name: kenya-otp
      match: {prefixes: ["+254", "+255"], types: [otp.sent]}
      providers: [sms/c]
    - name: shop-transactional
      match: {producers: [shop], priorities: [transactional]}
      providers: [sms/a, sms/b, sms/c]
    - name: shop-bulk
      match: {producers: [shop]}
      strategy: weighted
      providers: [sms/a, sms/b, sms/c]
      weights: [70, 20, 10]
  email:
    - name: internal
      match: {prefixes: ["@Shop.Example", "ops-"]}
      providers: [email/x]
    - name: rest
      providers: [email/y]
  webhook:
    - name: partner
      match: {prefixes: ["https://partner.example/"]}
      providers: [webhook/h]
`

func TestPick_TakesFirstFullMatch(t *testing.T) {
	t.Parallel()
	tab := table(t, pickFile)
	tests := []struct {
		name           string
		in             routing.PickInput
		rule, provider string
		skipped        int
	}{
		{"PrefixAndType", routing.PickInput{Channel: "sms", Destination: "+254712345678", NotificationType: "otp.sent", Producer: "shop", Priority: "transactional"}, "kenya-otp", "sms/c", 0},
		{"SecondPrefix", routing.PickInput{Channel: "sms", Destination: "+255712345678", NotificationType: "otp.sent"}, "kenya-otp", "sms/c", 0},
		{"PrefixButNotType", routing.PickInput{Channel: "sms", Destination: "+254712345678", NotificationType: "order.shipped", Producer: "shop", Priority: "transactional"}, "shop-transactional", "sms/a", 1},
		{"TypeButNotPrefix", routing.PickInput{Channel: "sms", Destination: "+441234567890", NotificationType: "otp.sent", Producer: "shop", Priority: "transactional"}, "shop-transactional", "sms/a", 1},
		{"ProducerAndPriority", routing.PickInput{Channel: "sms", Destination: "+441234567890", Producer: "shop", Priority: "bulk"}, "shop-bulk", "", 2},
		{"EmailDomainIgnoringCase", routing.PickInput{Channel: "email", Destination: "Ann@shop.example"}, "internal", "email/x", 0},
		{"EmailDomainExactly", routing.PickInput{Channel: "email", Destination: "ann@notshop.example"}, "rest", "email/y", 1},
		{"EmailSubdomainIsAnother", routing.PickInput{Channel: "email", Destination: "ann@mail.shop.example"}, "rest", "email/y", 1},
		{"EmailAddressPrefix", routing.PickInput{Channel: "email", Destination: "ops-alerts@elsewhere.example"}, "internal", "email/x", 0},
		{"WebhookURLPrefix", routing.PickInput{Channel: "webhook", Destination: "https://partner.example/hooks/1"}, "partner", "webhook/h", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := tab.Pick(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.rule, d.Rule)
			if tc.provider != "" {
				require.Equal(t, tc.provider, d.Provider)
			}
			require.Len(t, d.Explanation.Skipped, tc.skipped)
			require.False(t, d.NoRules)
			require.False(t, d.AllOpen)
		})
	}
}

func TestPick_SaysNoRules(t *testing.T) {
	t.Parallel()
	tab := table(t, "providers:\n  - {name: sms/a, driver: log}\n")
	d, err := tab.Pick(routing.PickInput{Channel: "sms", Destination: "+254712345678"})
	require.NoError(t, err)
	require.True(t, d.NoRules)
	require.Empty(t, d.Provider)
}

func TestPick_NoMatchRefusedWithHint(t *testing.T) {
	t.Parallel()
	tab := table(t, pickFile)
	_, err := tab.Pick(routing.PickInput{Channel: "webhook", Destination: "https://other.example/hook?token=secret"})
	require.ErrorIs(t, err, routing.ErrNoRoute)
	require.EqualError(t, err, "no rule of channel webhook matches https://other.example: add a rule (or a catch-all rule without matchers) with herald providers apply")
	var nr *routing.NoRouteError
	require.ErrorAs(t, err, &nr)
	require.Equal(t, []routing.SkippedRule{{Rule: "partner", Reason: "destination https://other.example does not match prefixes https://partner.example/"}}, nr.Skipped)

	_, err = tab.Pick(routing.PickInput{Channel: "sms", Destination: "+441234567890", Producer: "bank"})
	require.ErrorIs(t, err, routing.ErrNoRoute)
	require.NotContains(t, err.Error(), "+441234567890", "the number is masked")
	require.Contains(t, err.Error(), "no rule of channel sms matches +441")
}

// failover returns the providers rule shop-transactional (a, b, c) gives
// for tried, with open circuits.
func pickFailover(t *testing.T, tab *routing.Table, open []string, tried ...string) routing.Decision {
	t.Helper()
	d, err := tab.Pick(routing.PickInput{
		Channel: "sms", Destination: "+441234567890", Producer: "shop", Priority: "transactional",
		Tried: tried, IsOpenFunc: openSet(open...),
	})
	require.NoError(t, err)
	require.Equal(t, "shop-transactional", d.Rule)
	return d
}

func TestPick_FailoverWrapsWithBackoff(t *testing.T) {
	t.Parallel()
	tab := table(t, pickFile)
	tests := []struct {
		tried    []string
		provider string
		wrap     bool
	}{
		{nil, "sms/a", false},
		{[]string{"sms/a"}, "sms/b", false},
		{[]string{"sms/a", "sms/b"}, "sms/c", false},
		{[]string{"sms/a", "sms/b", "sms/c"}, "sms/a", true},
		{[]string{"sms/a", "sms/b", "sms/c", "sms/a"}, "sms/b", false},
		{[]string{"sms/a", "sms/b", "sms/c", "sms/a", "sms/b", "sms/c"}, "sms/a", true},
		// A provider of another rule (the rules changed): start over.
		{[]string{"sms/zzz"}, "sms/a", false},
		{[]string{"sms/b"}, "sms/c", false},
	}
	for _, tc := range tests {
		d := pickFailover(t, tab, nil, tc.tried...)
		require.Equal(t, tc.provider, d.Provider, "tried %v", tc.tried)
		require.Equal(t, tc.wrap, d.Wrap, "tried %v", tc.tried)
		require.NotEmpty(t, d.Explanation.Reason)
	}
	d := pickFailover(t, tab, nil, "sms/a")
	require.Equal(t, []routing.Candidate{{Provider: "sms/b"}, {Provider: "sms/c"}, {Provider: "sms/a", Last: true}}, d.Explanation.Candidates)
}

func TestPick_FailoverSkipsOpenCircuits(t *testing.T) {
	t.Parallel()
	tab := table(t, pickFile)
	d := pickFailover(t, tab, []string{"sms/a"})
	require.Equal(t, "sms/b", d.Provider)
	require.Contains(t, d.Explanation.Reason, "sms/a (circuit open)")

	d = pickFailover(t, tab, []string{"sms/c"}, "sms/b")
	require.Equal(t, "sms/a", d.Provider, "past c, wrapping to a")

	// With c open, a round is a and b: backoff after both.
	d = pickFailover(t, tab, []string{"sms/c"}, "sms/a")
	require.False(t, d.Wrap)
	d = pickFailover(t, tab, []string{"sms/c"}, "sms/a", "sms/b")
	require.Equal(t, "sms/a", d.Provider)
	require.True(t, d.Wrap, "every provider with a closed circuit was tried")
}

func TestPick_AllOpenNamesProvider(t *testing.T) {
	t.Parallel()
	tab := table(t, pickFile)
	d := pickFailover(t, tab, []string{"sms/a", "sms/b", "sms/c"}, "sms/a")
	require.True(t, d.AllOpen)
	require.Equal(t, "sms/b", d.Provider)

	d, err := tab.Pick(routing.PickInput{Channel: "sms", Destination: "+441234567890", Producer: "shop", Priority: "bulk",
		IsOpenFunc: openSet("sms/a", "sms/b", "sms/c"), Rand: rand.New(rand.NewPCG(1, 2))})
	require.NoError(t, err)
	require.True(t, d.AllOpen)
	require.Contains(t, []string{"sms/a", "sms/b", "sms/c"}, d.Provider)
}

func TestPick_WeightedFollowsWeights(t *testing.T) {
	t.Parallel()
	tab := table(t, pickFile)
	rnd := rand.New(rand.NewPCG(12, 34))
	pick := func(open []string, tried ...string) map[string]int {
		counts := map[string]int{}
		for range 10000 {
			d, err := tab.Pick(routing.PickInput{Channel: "sms", Destination: "+441234567890", Producer: "shop", Priority: "bulk",
				Tried: tried, IsOpenFunc: openSet(open...), Rand: rnd})
			require.NoError(t, err)
			require.Equal(t, "shop-bulk", d.Rule)
			require.False(t, d.AllOpen)
			counts[d.Provider]++
		}
		return counts
	}
	within := func(got, want int) { require.InDelta(t, want, got, 300, "got %d, want about %d", got, want) }

	c := pick(nil)
	within(c["sms/a"], 7000)
	within(c["sms/b"], 2000)
	within(c["sms/c"], 1000)

	// An open circuit's share goes to the others, in proportion.
	c = pick([]string{"sms/a"})
	require.Zero(t, c["sms/a"])
	within(c["sms/b"], 6667)
	within(c["sms/c"], 3333)

	// After a failure on a, a is avoided.
	c = pick(nil, "sms/a")
	require.Zero(t, c["sms/a"])
	within(c["sms/b"], 6667)

	// ... unless it is the only one with a closed circuit.
	c = pick([]string{"sms/b", "sms/c"}, "sms/a")
	require.Equal(t, 10000, c["sms/a"])
}

func TestGuessChannel_ByDestinationForm(t *testing.T) {
	t.Parallel()
	for dest, want := range map[string]string{
		"+14155550123":               "sms",
		"https://hooks.example.com/": "webhook",
		"http://hooks.example.com/x": "webhook",
		"user@example.com":           "email",
		"https://u@example.com/":     "webhook", // a URL first, though it holds an @
		"14155550123":                "",
		"+1 415":                     "",
		"ftp://example.com":          "",
	} {
		require.Equal(t, want, routing.GuessChannel(dest), dest)
	}
}
