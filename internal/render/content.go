package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/internal/operator"
)

// TemplatesApplied writes what `herald templates apply` did, one line per
// file.
func TemplatesApplied(w io.Writer, applied []operator.TemplateApplied) error {
	return table(w, "TEMPLATE\tPRODUCER\tVERSION\tCHANGE\tFILE", applied, false, func(a operator.TemplateApplied) string {
		change := "unchanged"
		if a.Published {
			change = "published"
		}
		return fmt.Sprintf("%s\t%s\t%d\t%s\t%s", a.Name, a.Producer, a.Version, change, a.File)
	})
}

// Templates writes `herald templates list`.
func Templates(w io.Writer, ts []operator.TemplateSummary) error {
	return list(w, "templates", "herald templates list", "", "PRODUCER\tTEMPLATE\tVERSION\tDEFAULT\tLOCALES\tPUBLISHED\tBY", ts,
		func(t operator.TemplateSummary) string {
			return fmt.Sprintf("%s\t%s\t%d\t%s\t%s\t%s\t%s", t.Producer, t.Name, t.Version, t.DefaultLocale,
				strings.Join(t.Locales, ","), stamp(t.CreatedAt), t.CreatedBy)
		})
}

// Template writes `herald templates show`: the version, its channels and
// variables, and its text indented.
func Template(w io.Writer, t *operator.TemplateDetail) error {
	if err := fields(w, [][2]string{
		{"template", t.Name}, {"producer", t.Producer}, {"version", strconv.Itoa(t.Version)},
		{"default locale", t.DefaultLocale}, {"locales", strings.Join(t.Locales, ", ")},
		{"channels", strings.Join(t.Channels, ", ")}, {"variables", dash(strings.Join(t.Variables, ", "))},
	}); err != nil {
		return err
	}
	var v any
	if json.Unmarshal(t.Text, &v) == nil {
		b, _ := json.MarshalIndent(v, "  ", "  ")
		fmt.Fprintf(w, "text:\n  %s\n", b)
	}
	return nil
}

// Renderings writes `herald templates render`: each channel's content as
// it would be sent, and the locale used.
func Renderings(w io.Writer, rs []operator.Rendering) error {
	for _, r := range rs {
		var v map[string]any
		fmt.Fprintf(w, "%s (locale %s):\n", r.Channel, r.Locale)
		if r.Channel == "webhook" || json.Unmarshal(r.Content, &v) != nil {
			fmt.Fprintf(w, "  %s\n", r.Content)
			continue
		}
		for _, k := range []string{"subject", "body", "text", "html"} {
			if s, ok := v[k].(string); ok {
				fmt.Fprintf(w, "  %s: %s\n", k, strings.ReplaceAll(s, "\n", "\n    "))
			}
		}
	}
	return nil
}

// HeldList writes `herald held list`.
func HeldList(w io.Writer, hs []operator.Held) error {
	return list(w, "held intents", "herald held list", "", "HELD\tID\tPRODUCER\tTYPE\tKEY\tPART\tRULE", hs,
		func(h operator.Held) string {
			return fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s\t%s", stamp(h.HeldAt), h.ID, h.Producer, dash(h.NotificationType),
				clip(h.IdempotencyKey, 40), h.Part, clip(h.Rule, 70))
		})
}

// HeldDecision writes what `herald held release|reject` did.
func HeldDecision(w io.Writer, d *operator.HeldDecision) error {
	if len(d.Done) == 0 {
		fmt.Fprintln(w, "nothing to "+d.Action+": no such held intent (released or rejected already?)")
		return nil
	}
	for i, id := range d.Done {
		switch {
		case d.Action == "release" && d.IntakeIDs[i] == 0:
			fmt.Fprintf(w, "released held intent %d: its stored notification's routes are back in their queue\n", id)
		case d.Action == "release":
			fmt.Fprintf(w, "released held intent %d: intake entry %d, accepted by the intake worker\n", id, d.IntakeIDs[i])
		default:
			fmt.Fprintf(w, "rejected held intent %d: malformed intent held:%d (content_blocked)\n", id, id)
		}
	}
	return nil
}

// TemplatesAnswer writes what operator.TemplatesCommand returned.
func TemplatesAnswer(w io.Writer, v any) error {
	switch v := v.(type) {
	case []operator.TemplateApplied:
		return TemplatesApplied(w, v)
	case []operator.TemplateSummary:
		return Templates(w, v)
	case *operator.TemplateDetail:
		return Template(w, v)
	case []operator.Rendering:
		return Renderings(w, v)
	}
	return fmt.Errorf("render templates: unexpected %T", v)
}

// HeldAnswer writes what operator.HeldCommand returned.
func HeldAnswer(w io.Writer, v any) error {
	switch v := v.(type) {
	case []operator.Held:
		return HeldList(w, v)
	case *operator.HeldDecision:
		return HeldDecision(w, v)
	}
	return fmt.Errorf("render held: unexpected %T", v)
}
