package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/template"
)

// ErrTemplateNotFound is returned by Template and RenderTemplate for a
// template (or version) that does not exist or the login may not read.
var ErrTemplateNotFound = template.ErrTemplateNotFound

// TemplateFile is one file of a templates directory (`herald templates
// apply -f DIR`): DIR/NAME.json holds one template, named after the file.
type TemplateFile struct {
	// Producer owns the template; "" means the applying login's own.
	Producer string `json:"producer,omitempty"`
	// DefaultLocale is the locale rendered when no other matches.
	DefaultLocale string `json:"default_locale"`
	// Locales holds each locale's text, as herald.templates.locales.
	Locales json.RawMessage `json:"locales"`
}

// TemplateApplied is what ApplyTemplates did with one file.
type TemplateApplied struct {
	File     string `json:"file"`
	Producer string `json:"producer"`
	Name     string `json:"name"`
	Version  int    `json:"version"`
	// Published is false when the file equals the current version.
	Published bool `json:"published"`
}

// ApplyTemplates publishes each template of dir (*.json, one template per
// file, named after it) whose text differs from its current version, as
// the next version. Every file is parsed and checked first (template.Parse:
// the error names the file, locale and part); nothing is published if one
// is wrong. Row-level security lets a producer publish only its own.
func (o *Operator) ApplyTemplates(ctx context.Context, dir string) ([]TemplateApplied, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("apply templates: no *.json file in %s", dir)
	}
	files := make([]TemplateFile, len(paths))
	out := make([]TemplateApplied, len(paths))
	for i, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("apply templates: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&files[i]); err != nil {
			return nil, fmt.Errorf("apply templates: %s: %w", p, err)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		if _, err := template.Parse(files[i].Producer, name, 1, files[i].DefaultLocale, files[i].Locales); err != nil {
			return nil, fmt.Errorf("apply templates: %s: %w", p, err)
		}
		out[i] = TemplateApplied{File: p, Producer: files[i].Producer, Name: name}
	}
	err = pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
		var err error
		for i, f := range files {
			producer := optText(f.Producer)
			if f.Producer == "" {
				if out[i].Producer, err = o.q.SessionUser(ctx, tx); err != nil { // the login's own
					return err
				}
			}
			cur, err := o.q.TemplateGetCurrent(ctx, tx, store.TemplateGetCurrentParams{Producer: out[i].Producer, Name: out[i].Name})
			switch {
			case err == nil && cur.DefaultLocale == f.DefaultLocale && sameJSON(cur.Locales, f.Locales):
				out[i].Version = int(cur.Version)
				continue
			case err != nil && !errors.Is(err, pgx.ErrNoRows):
				return fmt.Errorf("%s: %w", out[i].File, err)
			}
			row, err := o.q.TemplateInsertNext(ctx, tx, store.TemplateInsertNextParams{
				Producer: producer, Name: out[i].Name, DefaultLocale: f.DefaultLocale, Locales: f.Locales,
			})
			if err != nil {
				return fmt.Errorf("%s: %w", out[i].File, err)
			}
			out[i].Version, out[i].Published = int(row.Version), true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("apply templates: %w", err)
	}
	return out, nil
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a string, b []byte) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// TemplateSummary is one template's current version, as `herald templates
// list` shows it.
type TemplateSummary struct {
	Producer      string    `json:"producer"`
	Name          string    `json:"name"`
	Version       int       `json:"version"`
	DefaultLocale string    `json:"default_locale"`
	Locales       []string  `json:"locales"`
	CreatedAt     time.Time `json:"created_at"`
	CreatedBy     string    `json:"created_by"`
}

// Templates returns the current version of every template the login may
// read, of producer only if not "".
func (o *Operator) Templates(ctx context.Context, producer string) ([]TemplateSummary, error) {
	rows, err := o.q.TemplateList(ctx, o.pool, optText(producer))
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	out := make([]TemplateSummary, len(rows))
	for i, r := range rows {
		out[i] = TemplateSummary{r.Producer, r.Name, int(r.Version), r.DefaultLocale, r.LocaleNames, r.CreatedAt, r.CreatedBy}
	}
	return out, nil
}

// TemplateDetail is one version of a template, as `herald templates show`
// shows it.
type TemplateDetail struct {
	TemplateSummary
	Channels  []string        `json:"channels"`
	Variables []string        `json:"variables"`
	Text      json.RawMessage `json:"text"`
}

// Template returns version (0: the current one) of producer's template
// name; ErrTemplateNotFound if there is none.
func (o *Operator) Template(ctx context.Context, producer, name string, version int) (*TemplateDetail, error) {
	t, text, err := o.template(ctx, producer, name, version)
	if err != nil {
		return nil, err
	}
	return &TemplateDetail{
		TemplateSummary: TemplateSummary{Producer: t.Producer, Name: t.Name, Version: t.Version, DefaultLocale: t.DefaultLocale, Locales: t.Locales()},
		Channels:        t.Channels(), Variables: t.Variables(), Text: json.RawMessage(text),
	}, nil
}

// template reads and parses one version.
func (o *Operator) template(ctx context.Context, producer, name string, version int) (*template.Template, string, error) {
	var row store.TemplateGetRow
	var err error
	if version > 0 {
		row, err = o.q.TemplateGet(ctx, o.pool, store.TemplateGetParams{Producer: producer, Name: name, Version: int32(version)})
	} else {
		var cur store.TemplateGetCurrentRow
		cur, err = o.q.TemplateGetCurrent(ctx, o.pool, store.TemplateGetCurrentParams{Producer: producer, Name: name})
		row = store.TemplateGetRow(cur)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", fmt.Errorf("template %s of producer %s: %w", name, producer, ErrTemplateNotFound)
	}
	if err != nil {
		return nil, "", fmt.Errorf("get template %s: %w", name, err)
	}
	t, err := template.Parse(row.Producer, row.Name, int(row.Version), row.DefaultLocale, []byte(row.Locales))
	if err != nil {
		return nil, "", err
	}
	return t, row.Locales, nil
}

// Rendering is one channel of a template rendered, as `herald templates
// render` shows it.
type Rendering struct {
	Channel string          `json:"channel"`
	Locale  string          `json:"locale"`
	Content json.RawMessage `json:"content"`
}

// RenderTemplate renders every channel of version (0: current) of
// producer's template name in locale with data (a JSON object), as the
// dispatcher would for a recipient of that locale. Missing data is an
// error naming the variables.
func (o *Operator) RenderTemplate(ctx context.Context, producer, name string, version int, locale string, data []byte) ([]Rendering, error) {
	t, _, err := o.template(ctx, producer, name, version)
	if err != nil {
		return nil, err
	}
	d, err := template.DecodeData(data)
	if err != nil {
		return nil, fmt.Errorf("render template: data is not a JSON object: %w", err)
	}
	if missing := t.MissingData(d); len(missing) > 0 {
		return nil, fmt.Errorf("render template: data lacks %s", strings.Join(missing, ", "))
	}
	var out []Rendering
	for _, ch := range t.Channels() {
		r, err := t.Render(locale, ch, d)
		if err != nil {
			return nil, fmt.Errorf("render template: %w", err)
		}
		out = append(out, Rendering{Channel: ch, Locale: r.Locale, Content: r.Content()})
	}
	return out, nil
}

// Held is one intent held for review, as `herald held list` shows it.
type Held struct {
	ID               int64     `json:"id"`
	HeldAt           time.Time `json:"held_at"`
	Producer         string    `json:"producer"`
	NotificationType string    `json:"type"`
	IdempotencyKey   string    `json:"idempotency_key"`
	Rule             string    `json:"rule"`
	Part             string    `json:"part"`
	SubmittedBy      string    `json:"submitted_by"`
}

// HeldIntents returns at most limit (0: DefaultPageSize) held intents,
// oldest first, with ids above after.
func (o *Operator) HeldIntents(ctx context.Context, limit int, after int64) ([]Held, error) {
	rows, err := o.q.HeldIntentList(ctx, o.pool, store.HeldIntentListParams{AfterID: after, Max: pageSize(limit)})
	if err != nil {
		return nil, fmt.Errorf("list held intents: %w", err)
	}
	out := make([]Held, len(rows))
	for i, r := range rows {
		out[i] = Held{r.ID, r.HeldAt, r.Producer, r.NotificationType, r.IdempotencyKey, r.Rule, r.Part, r.SubmittedBy}
	}
	return out, nil
}

// HeldDecision is what ReleaseHeld or RejectHeld did.
type HeldDecision struct {
	Action string `json:"action"` // "release" or "reject"
	// Done are the ids acted on; ids not held any more are left out.
	Done []int64 `json:"done"`
	// IntakeIDs are the released intents' new intake entries, in Done's
	// order; 0 for a stored notification the engine held, whose routes
	// went back into their queue.
	IntakeIDs []int64 `json:"intake_ids,omitempty"`
}

// ReleaseHeld releases held intents (herald.held_release, audited as actor
// with reason): each goes back on the intake, reviewed, or, for a stored
// notification the engine held, its routes back into their queue.
func (o *Operator) ReleaseHeld(ctx context.Context, ids []int64, actor, reason string) (*HeldDecision, error) {
	rows, err := o.q.HeldIntentRelease(ctx, o.pool, store.HeldIntentReleaseParams{Ids: ids, Actor: actor, Reason: reason})
	if err != nil {
		return nil, fmt.Errorf("release held intents: %w", err)
	}
	d := &HeldDecision{Action: "release", Done: []int64{}}
	for _, r := range rows {
		d.Done, d.IntakeIDs = append(d.Done, r.HeldID), append(d.IntakeIDs, r.IntakeID)
	}
	return d, nil
}

// RejectHeld rejects held intents (herald.held_reject, audited): each is
// recorded in malformed_intents as content_blocked.
func (o *Operator) RejectHeld(ctx context.Context, ids []int64, actor, reason string) (*HeldDecision, error) {
	done, err := o.q.HeldIntentReject(ctx, o.pool, store.HeldIntentRejectParams{Ids: ids, Actor: actor, Reason: reason})
	if err != nil {
		return nil, fmt.Errorf("reject held intents: %w", err)
	}
	slices.Sort(done)
	return &HeldDecision{Action: "reject", Done: append([]int64{}, done...)}, nil
}

// TemplatesRequest is one `herald templates` command: Command (apply,
// list, show or render) and its flags.
type TemplatesRequest struct {
	Command                           string
	Dir, Producer, Name, Data, Locale string
	Version                           int
}

// TemplatesCommand runs r: ApplyTemplates, Templates, Template or
// RenderTemplate, whose result it returns.
func (o *Operator) TemplatesCommand(ctx context.Context, r *TemplatesRequest) (any, error) {
	switch r.Command {
	case "apply":
		return o.ApplyTemplates(ctx, r.Dir)
	case "list":
		return o.Templates(ctx, r.Producer)
	case "show":
		return o.Template(ctx, r.producer(ctx, o), r.Name, r.Version)
	case "render":
		return o.RenderTemplate(ctx, r.producer(ctx, o), r.Name, r.Version, r.Locale, []byte(r.Data))
	}
	return nil, fmt.Errorf("templates: unknown command %q", r.Command)
}

// producer is r.Producer, or the login's own.
func (r *TemplatesRequest) producer(ctx context.Context, o *Operator) string {
	if r.Producer != "" {
		return r.Producer
	}
	login, _ := o.q.SessionUser(ctx, o.pool) // on error "": not found, reported as such
	return login
}

// HeldRequest is one `herald held` command, checked by NewHeldRequest.
type HeldRequest struct {
	Command       string // list, release or reject
	IDs           []int64
	Limit         int
	After         int64
	Actor, Reason string
}

// NewHeldRequest checks the arguments of `herald held list|release|reject`
// and returns the request; its error is a usage error, naming the bad
// argument.
func NewHeldRequest(command string, args []string, limit int, after, actor, reason string) (*HeldRequest, error) {
	r := &HeldRequest{Command: command, Limit: limit, Actor: actor, Reason: reason}
	if command == "list" {
		n, err := strconv.ParseInt("0"+after, 10, 64)
		if err != nil || strings.HasPrefix(after, "0") {
			return nil, fmt.Errorf("invalid -after %q: want the id of the last held intent listed", after)
		}
		r.After = n
		return r, nil
	}
	for _, a := range args {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil || id < 1 {
			return nil, fmt.Errorf("invalid id %q: want a held intent's id, as held list prints", a)
		}
		r.IDs = append(r.IDs, id)
	}
	switch {
	case len(r.IDs) == 0:
		return nil, fmt.Errorf("held %s takes one or more arguments: ID...", command)
	case reason == "":
		return nil, errors.New("invalid -reason: required, it goes into herald.audit_log")
	case actor == "":
		return nil, errors.New("invalid -actor: empty, and $USER is unset")
	}
	return r, nil
}

// HeldCommand runs r: HeldIntents, ReleaseHeld or RejectHeld, whose result
// it returns.
func (o *Operator) HeldCommand(ctx context.Context, r *HeldRequest) (any, error) {
	switch r.Command {
	case "list":
		return o.HeldIntents(ctx, r.Limit, r.After)
	case "release":
		return o.ReleaseHeld(ctx, r.IDs, r.Actor, r.Reason)
	}
	return o.RejectHeld(ctx, r.IDs, r.Actor, r.Reason)
}
