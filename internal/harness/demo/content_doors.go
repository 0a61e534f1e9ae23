package demo

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/benchstore"
	"github.com/heraldhq/herald/internal/template"
)

// Evasions hide the demo's blocked word from a byte-wise match; the
// blocklist folds text before matching, so every door refuses each.
var Evasions = []struct{ Name, Text string }{
	{"zero-width space", "Win the jack\u200Bpot tonight!"},
	{"Cyrillic homoglyph", "Win the j\u0430ckpot tonight!"},                      // а, U+0430
	{"fullwidth", "Win the \uFF4A\uFF41\uFF43\uFF4B\uFF50\uFF4F\uFF54 tonight!"}, // ｊａｃｋｐｏｔ
}

// Doors the demo's evasions go through, as DoorCount.Door names them.
const (
	DoorClient = "Go client"
	DoorSQL    = "SQL door"
	DoorByHand = "by hand"
)

// DoorCount is what one door did with the evasions: Tried of them, Refused
// refused (Delivered, for rows written by hand, reached the receiver), How
// the first refusal's words.
type DoorCount struct {
	Door      string `json:"door"`
	Tried     int    `json:"tried"`
	Refused   int    `json:"refused"`
	Delivered int    `json:"delivered"`
	How       string `json:"how"`
}

// HostileTemplate is a template built to exhaust the engine, and where and
// how it was refused. Allocated is what the whole process (the engine
// included) allocated while the check ran (runtime.MemStats.TotalAlloc),
// an upper bound of what the check held; Asks is what the template would
// have built without the budget.
type HostileTemplate struct {
	What      string `json:"what"`
	Where     string `json:"where"`
	Refused   bool   `json:"refused"`
	Error     string `json:"error"`
	Asks      int64  `json:"asks_bytes"`
	Allocated uint64 `json:"allocated_bytes"`
	Micros    int64  `json:"micros"`
}

// amplifyLevels is how many printf levels the amplification template
// nests, each ten times the one before, from 990 bytes.
const amplifyLevels = 6

// amplifyTemplate returns a webhook template whose printf calls would
// build ten times more at each level: about 110 MB in all.
func amplifyTemplate() (string, int64) {
	var b strings.Builder
	b.WriteString(`{{$v0 := printf "` + strings.Repeat("%99s", 10) + `"` + strings.Repeat(` "x"`, 10) + `}}`)
	asks, size := int64(990), int64(990)
	for i := 1; i < amplifyLevels; i++ {
		fmt.Fprintf(&b, `{{$v%d := printf "%s"%s}}`, i, strings.Repeat("%s", 10), strings.Repeat(fmt.Sprintf(" $v%d", i-1), 10))
		size *= 10
		asks += size
	}
	fmt.Fprintf(&b, `{{$v%d}}`, amplifyLevels-1)
	locales, _ := json.Marshal(map[string]any{"en": map[string]any{"webhook": map[string]string{"text": b.String()}}})
	return string(locales), asks
}

// measure runs f and returns what the process allocated meanwhile and how
// long it took.
func measure(f func()) (uint64, time.Duration) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, took
}

// hostileTemplates shows the two places a template meets its limits: a
// range over a number, refused by the check `herald templates apply` runs
// before it stores a version, and a printf amplification, which passes that
// check, is stored, and is refused when an intent that uses it is
// submitted, its rendering stopped by the budget before it builds.
func (c *contentDemo) hostileTemplates(ctx context.Context, pool *pgxpool.Pool, client Client, runID string) ([]HostileTemplate, error) {
	var out []HostileTemplate
	rangeLocales := `{"en": {"webhook": {"text": "{{range 100000000000}}x{{end}}"}}}`
	h := HostileTemplate{What: "{{range 100000000000}}x{{end}}", Where: "validation (herald templates apply)", Asks: 100_000_000_000}
	var err error
	alloc, took := measure(func() { _, err = template.Parse(ContentProducer, "loop", 1, "en", []byte(rangeLocales)) })
	h.Allocated, h.Micros = alloc, took.Microseconds()
	if err != nil {
		h.Refused, h.Error = true, err.Error()
	}
	out = append(out, h)

	locales, asks := amplifyTemplate()
	producer := ContentProducer
	row, err := store.New().TemplateInsertNext(ctx, pool, store.TemplateInsertNextParams{
		Producer: &producer, Name: "amplify", DefaultLocale: "en", Locales: []byte(locales)})
	if err != nil {
		return nil, fmt.Errorf("store the amplification template: %w", err)
	}
	h = HostileTemplate{What: fmt.Sprintf("printf nested %d deep, each ten times the last (version %d, stored)", amplifyLevels, row.Version),
		Where: "submit", Asks: asks}
	var res []Result
	alloc, took = measure(func() {
		res, err = client.SubmitMany(ctx, []*intake.Intent{{
			NotificationType: "amplify", Producer: ContentProducer, IdempotencyKey: runID + "/amplify", RequestID: runID + "/content",
			Audience: intake.Audience{Webhook: []string{c.url + "/amplify"}}, Channels: []string{channel.Webhook},
			Template: &heraldtype.TemplateRef{Name: row.Name},
		}})
	})
	if err != nil {
		return nil, fmt.Errorf("submit with the amplification template: %w", err)
	}
	h.Allocated, h.Micros = alloc, took.Microseconds()
	if res[0].Err != nil {
		h.Refused, h.Error = true, res[0].Err.Error()
	}
	return append(out, h), nil
}

// evasions submits the evasions through the Go client and as raw JSON
// into herald.intake, and waits (up to timeout) for the intake worker's
// verdicts on the raw ones.
func (c *contentDemo) evasions(ctx context.Context, pool *pgxpool.Pool, client Client, runID string, timeout time.Duration) ([]DoorCount, error) {
	var intents []*intake.Intent
	var bodies []string
	for i, e := range Evasions {
		in := &intake.Intent{
			NotificationType: "promo", Producer: ContentProducer, IdempotencyKey: runID + "/evasion-" + strconv.Itoa(i), RequestID: runID + "/content",
			Audience: intake.Audience{SMS: []string{"+14155550123"}}, Channels: []string{channel.SMS},
			Content: intake.Content{SMS: &intake.SMSContent{Body: e.Text}},
		}
		intents = append(intents, in)
		raw := *in
		raw.IdempotencyKey += "-sql"
		b, err := json.Marshal(&raw)
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, string(b))
	}
	client1 := DoorCount{Door: DoorClient, Tried: len(intents)}
	res, err := client.SubmitMany(ctx, intents)
	if err != nil {
		return nil, fmt.Errorf("submit the evasions: %w", err)
	}
	for _, r := range res {
		if r.Err != nil {
			client1.Refused++
			client1.How = cmp.Or(client1.How, r.Err.Error())
		}
	}
	ids, err := benchstore.New().IntakeInsertReturning(ctx, pool, bodies)
	if err != nil {
		return nil, fmt.Errorf("insert the evasions into herald.intake: %w", err)
	}
	refs := make([]string, len(ids))
	for i, id := range ids {
		refs[i] = "intake:" + strconv.FormatInt(id, 10)
	}
	sql := DoorCount{Door: DoorSQL, Tried: len(bodies)}
	deadline := time.Now().Add(timeout)
	for {
		// The intake first: the worker takes an entry off it and records its
		// verdict in one transaction, so verdicts read after an empty intake
		// are all of them.
		waiting, err := benchstore.New().IntakeCount(ctx, pool)
		if err != nil {
			return nil, fmt.Errorf("read the intake: %w", err)
		}
		counts, err := benchstore.New().MalformedIntentCountByEntryIDs(ctx, pool, refs)
		if err != nil {
			return nil, fmt.Errorf("read the evasions' verdicts: %w", err)
		}
		var done int64
		sql.Refused = 0
		for _, m := range counts {
			done += m.Malformed
			if m.FailureCode == string(heraldtype.CodeContentBlocked) {
				sql.Refused += int(m.Malformed)
			}
		}
		if done >= int64(len(refs)) || waiting == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	sql.How = fmt.Sprintf("herald.malformed_intents, failure_code %s", heraldtype.CodeContentBlocked)
	return []DoorCount{client1, sql}, nil
}
