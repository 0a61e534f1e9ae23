package template

import (
	"bytes"
	"encoding/json"
	"errors"
	htmltemplate "html/template"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"text/template"

	"github.com/stretchr/testify/require"
)

// sms is the locales JSON of a template whose en sms body is body.
func sms(body string) string {
	b, _ := json.Marshal(map[string]any{"en": map[string]any{"sms": map[string]string{"body": body}}})
	return string(b)
}

// html is the locales JSON of a template whose en e-mail HTML is body.
func html(body string) string {
	b, _ := json.Marshal(map[string]any{"en": map[string]any{"email": map[string]string{"subject": "s", "html": body}}})
	return string(b)
}

// zeros is JSON data {"a": [0, 0, ...], ...more} with n zeros: 2n bytes,
// within intake's 64 KiB for n up to about 30,000.
func zeros(n int, more string) string {
	return `{"a":[` + strings.TrimSuffix(strings.Repeat("0,", n), ",") + `]` + more + `}`
}

// intakeData decodes JSON data as intake does.
func intakeData(s string) (map[string]any, error) { return DecodeData([]byte(s)) }

// hostile is one hostile template, what it is rendered with, and where
// it is stopped: at publish (parse) or at render.
type hostile struct {
	name    string
	locales string
	ch      string
	data    string // JSON
	parse   string // Parse's refusal contains this, or "" if it parses
	render  string // Render's refusal contains this
}

// hostiles are templates written to hurt the engine: each is refused by
// Parse or stopped by the budget at render.
func hostiles() []hostile {
	s30k := strings.Repeat("x", 30_000)
	printfBomb := `{{$a := printf "%99s" ""}}` + strings.Repeat(`{{$a = printf "%s%s%s%s%s%s%s%s" $a $a $a $a $a $a $a $a}}`, 12) + `{{len $a}}`
	nestedPrintf := ".s"
	for range 6 {
		nestedPrintf = `(printf "%s%s%s%s" ` + strings.Repeat(nestedPrintf+" ", 4) + `)`
	}
	return []hostile{
		{name: "RangeOverALiteral", locales: sms(`{{range 100000000000}}{{end}}`), parse: "{{range 100000000000}} is not allowed"},
		{name: "RangeOverAFunction", locales: sms(`{{range len .a}}x{{end}}`), parse: "is not allowed: range goes over one field or variable"},
		{name: "RangeOverAnIntegerVariable", locales: sms(`{{$n := 100000000000}}{{range $n}}x{{end}}`), ch: "sms", data: `{}`,
			render: "{{range}} over int: only a list or an object"},
		{name: "RangeOverANumberOfTheData", locales: sms(`{{range .n}}x{{end}}`), ch: "sms", data: `{"n":100000000000}`,
			render: "only a list or an object"},
		{name: "NestedRangeOverData", locales: sms(`{{range .a}}{{range $.a}}{{range $.a}}{{end}}{{end}}{{end}}`), ch: "sms", data: zeros(30_000, ""),
			render: "more than 100000 steps"},
		{name: "NestedRangeOverAThousand", locales: sms(`{{range .a}}{{range $.a}}{{range $.a}}{{if .}}x{{end}}{{end}}{{end}}{{end}}`), ch: "sms", data: zeros(1000, ""),
			render: "more than 100000 steps"},
		{name: "RangeOverAnObjectWithLongKeys", locales: sms(`{{range .a}}{{range $.m}}{{end}}{{end}}`), ch: "sms",
			data: zeros(10_000, `,"m":{"`+s30k[:15_000]+`a":0,"`+s30k[:15_000]+`b":0}`), render: "more than 100000 steps"},
		{name: "PrintfWidth", locales: sms(`{{printf "%1000000000d" 1}}`), parse: "a width over 99 is not allowed"},
		{name: "PrintfPrecision", locales: sms(`{{printf "%.1000000000f" 1.0}}`), parse: "a precision over 99 is not allowed"},
		{name: "PrintfWidthFromAnArgument", locales: sms(`{{printf "%*d" 1000000000 1}}`), parse: "* is not allowed"},
		{name: "PrintfArgumentIndex", locales: sms(`{{printf "%[1]*d" 1000000000}}`), parse: "[ is not allowed"},
		{name: "PrintfFormatFromData", locales: sms(`{{printf .f 1}}`), parse: "printf's format must be a quoted string"},
		{name: "PrintfAmplification", locales: sms(printfBomb), ch: "sms", data: `{}`, render: "printf and urlquery would build more than"},
		{name: "NestedPrintf", locales: sms(`{{` + strings.TrimSuffix(strings.TrimPrefix(nestedPrintf, "("), ")") + `}}`), ch: "sms",
			data: `{"s":"` + s30k + `"}`, render: "printf and urlquery would build more than"},
		{name: "PrintfOfTheWholeData", locales: sms(`{{range .a}}{{$x := printf "%v" $}}{{end}}`), ch: "sms", data: zeros(1000, ""),
			render: "printf takes strings, numbers, booleans and null, not a map"},
		{name: "PrintTheWholeData", locales: sms(`{{range .a}}{{$}}{{end}}`), ch: "sms", data: zeros(30_000, ""),
			render: "the part renders longer than 262144 bytes"},
		{name: "HTMLPrintTheWholeData", locales: html(`{{range .a}}<a href="{{$}}">{{end}}`), ch: "email", data: zeros(5000, ""),
			render: "an action prints a list or an object"},
		{name: "CompareLongStrings", locales: sms(`{{range .a}}{{if eq $.s $.t}}{{end}}{{end}}`), ch: "sms",
			data: zeros(5000, `,"s":"`+s30k[:20_000]+`","t":"`+s30k[:19_999]+`y"`), render: "more than 100000 steps"},
		{name: "IndexByLongKeys", locales: sms(`{{range .a}}{{$x := index $.m $.k}}{{end}}`), ch: "sms",
			data: zeros(10_000, `,"k":"`+s30k[:20_000]+`","m":{}`), render: "more than 100000 steps"},
		{name: "PrintLongStrings", locales: html(`{{range .a}}<a href="{{$.s}}">{{end}}`), ch: "email",
			data: zeros(10_000, `,"s":"javascript:`+s30k[:20_000]+`"`), render: "more than 100000 steps"},
		{name: "OutputOfAPart", locales: sms(`{{range .a}}{{$.s}}{{end}}`), ch: "sms", data: zeros(100, `,"s":"`+s30k+`"`),
			render: "the part renders longer than 262144 bytes"},
		{name: "OutputOfAWebhook", locales: `{"en":{"webhook":{"a":"{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}","b":"{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}",
			"c":"{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}","d":"{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}","e":"{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}{{.s}}"}}}`,
			ch: "webhook", data: `{"s":"` + s30k + `"}`, render: "the rendering's parts are longer than 1048576 bytes in all"},
		{name: "Define", locales: sms(`{{define "x"}}y{{end}}{{.a}}`), parse: "{{define}} is not allowed"},
		{name: "Recursion", locales: sms(`{{define "x"}}{{template "x" .}}{{end}}{{template "x" .}}`), parse: "not allowed"},
		{name: "Block", locales: sms(`{{block "x" .}}{{template "x" .}}{{end}}`), parse: "not allowed"},
		{name: "TemplateOfNothing", locales: sms(`{{template "x" .}}`), parse: "{{template}} and {{block}} are not allowed"},
		{name: "Call", locales: sms(`{{call .f}}`), parse: "the function call is not allowed"},
		{name: "Print", locales: sms(`{{print .a .a}}`), parse: "the function print is not allowed"},
		{name: "Slice", locales: sms(`{{slice .a 1}}`), parse: "the function slice is not allowed"},
		{name: "HTMLFunction", locales: sms(`{{html (html (html .a))}}`), parse: "the function html is not allowed"},
		{name: "DeepNesting", locales: sms(strings.Repeat(`{{if .a}}`, 13) + "x" + strings.Repeat(`{{end}}`, 13)), parse: "nest more than 12 deep"},
		{name: "DeepParentheses", locales: sms(`{{` + strings.Repeat(`not (`, 13) + `.a` + strings.Repeat(`)`, 13) + `}}`), parse: "nest more than 12 deep"},
		{name: "VeryDeepNesting", locales: sms(strings.Repeat(`{{if 1}}`, 15_000) + strings.Repeat(`{{end}}`, 15_000)), parse: "nest more than 12 deep"},
		{name: "LongFieldChain", locales: sms(`{{range .a}}{{$.m` + strings.Repeat(".m", 9_000) + `}}{{end}}`), ch: "sms",
			data: zeros(1000, `,"m":`+strings.Repeat(`{"m":`, 9_001)+`0`+strings.Repeat(`}`, 9_001)), render: "more than 100000 steps"},
		{name: "ManyVariables", locales: sms(strings.Repeat(`{{$a := 0}}`, 65)), parse: "declares more than 64 variables"},
		{name: "ManyNodes", locales: sms(strings.Repeat(`{{.a}}`, 5000)), parse: "more than 20000 parse nodes"},
		{name: "VeryLongText", locales: sms(strings.Repeat("x", 300_000)), parse: "the limit is 262144"},
		{name: "HTMLRangeOverALiteral", locales: html(`<p>{{range 100000000000}}x{{end}}</p>`), parse: "is not allowed"},
		{name: "HTMLDefine", locales: html(`{{define "x"}}<p>{{end}}<b>{{.a}}</b>`), parse: "{{define}} is not allowed"},
		{name: "HTMLNestedRangeOverData", locales: html(`{{range .a}}{{range $.a}}<i>{{.}}</i>{{end}}{{end}}`), ch: "email", data: zeros(30_000, ""),
			render: "more than 100000 steps"},
		{name: "HTMLEscapingAmplification", locales: html(`{{range .a}}<p title="{{$.s}}">{{$.s}}</p>{{end}}`), ch: "email",
			data: zeros(1000, `,"s":"`+strings.Repeat(`<&`, 15_000)+`"`), render: "the part renders longer than 262144 bytes"},
		{name: "HTMLURLQuery", locales: html(`<a href="/x?q={{urlquery .a}}">x</a>`), parse: "urlquery is not allowed in HTML"},
	}
}

// TestTemplate_HostileRefusedOrStopped renders
// each hostile template, and measures what the rendering allocates (not
// its time): with the budget, a few MiB.
func TestTemplate_HostileRefusedOrStopped(t *testing.T) {
	// Not parallel: runtime.MemStats counts the whole process, and the
	// parallel tests wait until this one ends.
	for _, h := range hostiles() {
		t.Run(h.name, func(t *testing.T) {
			tpl, err := Parse("shop", "hostile", 1, "en", []byte(h.locales))
			if h.parse != "" {
				require.ErrorContains(t, err, h.parse)
				if !strings.Contains(h.name, "VeryLongText") {
					require.ErrorContains(t, err, "template hostile/en/", "the error names the template, locale and part")
				}
				return
			}
			require.NoError(t, err)
			d := data(t, h.data)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err = tpl.Render("en", h.ch, d)
			runtime.ReadMemStats(&after)
			require.True(t, errors.Is(err, ErrOverBudget) || errors.Is(err, ErrNotAllowed), "%v", err)
			require.ErrorContains(t, err, h.render)
			require.ErrorContains(t, err, "template hostile/en/", "the error names the template, locale and part")
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d KiB", alloc>>10)
			require.Less(t, alloc, uint64(64<<20), "a rendering allocates a bounded amount")
		})
	}
}

// TestTemplate_IntakeRendersLocalesOnOneBudget: a template of many locales,
// each within the budget, is refused at intake (which renders all of them
// on one) once all of them together exceed it.
func TestTemplate_IntakeRendersLocalesOnOneBudget(t *testing.T) {
	t.Parallel()
	locales := map[string]any{}
	for _, l := range []string{"en", "fr", "de", "es", "it", "pt", "nl", "pl"} {
		locales[l] = map[string]any{"sms": map[string]string{"body": `{{range .a}}x{{end}}`}}
	}
	raw, _ := json.Marshal(locales)
	tpl := parseT(t, string(raw))
	d := data(t, zeros(20_000, ""))
	_, err := tpl.Render("fr", "sms", d)
	require.NoError(t, err, "one locale is 40,000 steps")
	b := &budget{}
	for _, l := range tpl.Locales()[:2] {
		_, err := tpl.render(l, "sms", d, b)
		require.NoError(t, err)
	}
	_, err = tpl.render("it", "sms", d, b)
	require.ErrorIs(t, err, ErrOverBudget, "the third shares the first two's budget")
	require.ErrorContains(t, err, "template order.shipped/it/sms.body")
}

// TestTemplate_RendersAsStandardLibrary: the budget's
// additions (the range charge, the print check, the charged functions)
// change nothing a template within the budget renders.
func TestTemplate_RendersAsStandardLibrary(t *testing.T) {
	t.Parallel()
	d := data(t, `{"name":"Ana","n":null,"amount":10.50,"count":3,"ok":true,"tags":["a","b"],"m":{"k-1":"v","x":{"y":"z"}},
		"items":[{"sku":"A1","qty":2,"price":"9.99"},{"sku":"B2","qty":1,"price":"0.50"}],"empty":[],"q":"a b&c"}`)
	texts := []string{
		`Hi {{.name}} {{.n}} {{.amount}} {{.count}} {{.ok}} {{$.name}}`,
		`{{if .ok}}yes{{else}}no{{end}} {{if not .ok}}x{{else if .name}}{{.name}}{{end}} {{with .m.x}}{{.y}}{{end}} {{with .n}}x{{else}}none{{end}}`,
		`{{range $i, $it := .items}}{{$i}}:{{.sku}}x{{.qty}}@{{$it.price}}{{if eq .sku "B2"}}!{{end}};{{end}}{{range .empty}}x{{else}}empty{{end}}`,
		`{{range $k, $v := .m}}{{$k}}{{end}} {{index .m "k-1"}} {{index .tags 1}} {{len .tags}} {{len .name}}`,
		`{{if eq .name "Ana" "Bo"}}a{{end}}{{if ne .name "x"}}b{{end}}{{if lt .name "B"}}c{{end}}{{if le (len .tags) 3}}d{{end}}{{if gt (len .tags) 1}}e{{end}}{{if ge (len .tags) 4}}f{{end}}`,
		`{{if and .ok .name}}{{or .n .name}}{{end}} {{eq .n nil}}`,
		`{{printf "%.2f|%5s|%-3d|%v|%q" 10.5 .name 7 .amount .name}} {{.name | printf "<%s>"}} {{urlquery .q}} {{.q | urlquery}}`,
		`{{range .tags}}{{if eq . "a"}}{{continue}}{{end}}{{.}}{{break}}{{end}} {{$x := .name}}{{$x = "B"}}{{$x}}{{/* comment */}}`,
		`{{(index .items 0).sku}} {{$.m.x.y}}`,
	}
	for _, src := range texts {
		want := &bytes.Buffer{}
		require.NoError(t, template.Must(template.New("").Option("missingkey=error").Parse(src)).Execute(want, d), src)
		tpl := parseT(t, sms(src))
		r, err := tpl.Render("en", "sms", d)
		require.NoError(t, err, src)
		require.Equal(t, want.String(), r.Body, src)

		want.Reset()
		hsrc := "<p title=\"" + src + "\">" + src + "</p>"
		if strings.Contains(src, "urlquery") {
			continue
		}
		require.NoError(t, htmltemplate.Must(htmltemplate.New("").Option("missingkey=error").Parse(hsrc)).Execute(want, d), hsrc)
		r, err = parseT(t, html(hsrc)).Render("en", "email", d)
		require.NoError(t, err, hsrc)
		require.Equal(t, want.String(), r.HTML, hsrc)
	}
	// Errors are the standard library's too.
	for _, src := range []string{`{{eq .name 1}}`, `{{lt .ok .ok}}`, `{{index .tags 5}}`, `{{.nope}}`} {
		err := template.Must(template.New("").Option("missingkey=error").Parse(src)).Execute(&bytes.Buffer{}, d)
		require.Error(t, err)
		_, err2 := parseT(t, sms(src)).Render("en", "sms", d)
		require.Error(t, err2)
		msg := err.Error()
		require.Contains(t, err2.Error(), msg[strings.LastIndex(msg, ": ")+2:], src)
	}
}

// TestTemplate_HostileTemplatesPeakRSS renders the whole hostile suite many times
// and logs the process's peak resident set (VmHWM): run it alone to read
// the figure, e.g. go test -run HostilePeakRSS -v ./internal/content/.
func TestTemplate_HostileTemplatesPeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement")
	}
	var tpls []*Template
	var ds []map[string]any
	var chs []string
	for _, h := range hostiles() {
		if h.parse == "" {
			tpls = append(tpls, parseT(t, h.locales))
			ds = append(ds, data(t, h.data))
			chs = append(chs, h.ch)
		}
	}
	for range 20 {
		for i, tpl := range tpls {
			_, err := tpl.Render("en", chs[i], ds[i])
			require.Error(t, err)
		}
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc")
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmHWM") {
			t.Log(l)
		}
	}
}

// BenchmarkHostileTemplates renders each hostile template that parses:
// the allocation per rendering is what the budget lets it take.
func BenchmarkHostileTemplates(b *testing.B) {
	for _, h := range hostiles() {
		if h.parse != "" {
			continue
		}
		b.Run(h.name, func(b *testing.B) {
			tpl, err := Parse("shop", "hostile", 1, "en", []byte(h.locales))
			require.NoError(b, err)
			m, err := intakeData(h.data)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tpl.Render("en", h.ch, m); err == nil {
					b.Fatal("rendered")
				}
			}
		})
	}
}

// withinBudget are the costliest renderings the budget lets through:
// what one rendering may cost at most.
func withinBudget() []hostile {
	return []hostile{
		{name: "NestedRanges", locales: sms(`{{range .a}}{{range $.b}}{{if .}}x{{end}}{{end}}{{end}}`), ch: "sms",
			data: `{"a":[` + strings.TrimSuffix(strings.Repeat("0,", 200), ",") + `],"b":[` + strings.TrimSuffix(strings.Repeat("0,", 100), ",") + `]}`},
		{name: "Compares", locales: sms(`{{range .a}}{{if eq $.s $.t}}{{end}}{{if lt $.s $.t}}{{end}}{{end}}`), ch: "sms",
			data: zeros(70, `,"s":"`+strings.Repeat("x", 20_000)+`","t":"`+strings.Repeat("x", 19_999)+`y"`)},
		{name: "Printf", locales: sms(`{{range .a}}{{$x := printf "%s%s" $.s $.s}}{{end}}`), ch: "sms",
			data: zeros(15, `,"s":"`+strings.Repeat("x", 4_000)+`"`)},
		{name: "HTMLOutput", locales: html(`{{range .a}}<p title="{{$.s}}">{{$.s}}</p>{{end}}`), ch: "email",
			data: zeros(3, `,"s":"`+strings.Repeat(`<&`, 4_000)+`"`)},
		{name: "Continue", locales: sms(`{{range .a}}{{range $.b}}{{continue}}{{end}}{{end}}`), ch: "sms",
			data: `{"a":[` + strings.TrimSuffix(strings.Repeat("0,", 100), ",") + `],"b":[` + strings.TrimSuffix(strings.Repeat("0,", 100), ",") + `]}`},
		{name: "Variables", locales: sms(strings.Repeat(`{{$a := 0}}`, 63) + `{{range .a}}{{range $.b}}{{$.c}}{{end}}{{end}}`), ch: "sms",
			data: `{"c":"","a":[` + strings.TrimSuffix(strings.Repeat("0,", 200), ",") + `],"b":[` + strings.TrimSuffix(strings.Repeat("0,", 100), ",") + `]}`},
	}
}

func TestTemplate_WithinBudgetSucceeds(t *testing.T) {
	t.Parallel()
	for _, h := range withinBudget() {
		_, err := parseT(t, h.locales).Render("en", h.ch, data(t, h.data))
		require.NoError(t, err, h.name)
	}
}

func BenchmarkWithinBudget(b *testing.B) {
	for _, h := range withinBudget() {
		b.Run(h.name, func(b *testing.B) {
			tpl, err := Parse("shop", "costly", 1, "en", []byte(h.locales))
			require.NoError(b, err)
			d, err := intakeData(h.data)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tpl.Render("en", h.ch, d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestTemplate_RenderSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	tpl := parseT(t, shipped)
	d := data(t, `{"name":"Ana","order":9}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				for _, ch := range []string{"sms", "email", "webhook"} {
					r, err := tpl.Render("en", ch, d)
					if err != nil || (ch == "sms" && r.Body != "Hi Ana, order 9 shipped") {
						t.Errorf("%s: %v %v", ch, r, err)
					}
				}
			}
		})
	}
	wg.Wait()
}
