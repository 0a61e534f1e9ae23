package console

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/campaign"
	"github.com/heraldhq/herald/internal/heraldtype"
	"github.com/heraldhq/herald/internal/operator"
)

// windows are the time windows the overview and providers pages offer.
var windows = []string{"5m", "15m", "1h", "6h", "24h"}

// window reads the page's ?window= (one of windows), else def.
func window(r *http.Request, def string) (string, time.Duration) {
	w := r.URL.Query().Get("window")
	if !slices.Contains(windows, w) {
		w = def
	}
	d, _ := time.ParseDuration(w)
	return w, d
}

// channelRow is one channel's backlog on the overview.
type channelRow struct {
	Channel    string
	Routes     int64
	Due        int64
	LagSeconds float64
	ByStatus   []operator.Backlog
}

// seriesRow is one provider's outcomes over the window, step by step.
type seriesRow struct {
	Provider, Channel   string
	Delivered, Failed   []int64
	DeliveredN, FailedN int64
	PerSecond           float64
}

type overviewView struct {
	Window      string
	Windows     []string
	At          time.Time
	Channels    []channelRow
	Series      []seriesRow
	DeadLetters []operator.DeadLetterCount
	Malformed   []operator.MalformedCount
	Processes   []operator.ServeProcess
}

// steps is how many points a series has over any window.
const steps = 60

func (c *Console) overview(w http.ResponseWriter, r *http.Request, s *session) {
	name, d := window(r, "15m")
	data := &pageData{Title: "Overview", Nav: "overview", Live: true}
	step := max(d/steps, 2*time.Second)
	ov, err := s.op.Overview(r.Context(), d, step)
	if err != nil {
		c.fail(w, r, s, "overview", data, err)
		return
	}
	v := &overviewView{Window: name, Windows: windows, At: ov.At, DeadLetters: ov.DeadLetters, Malformed: ov.Malformed,
		Processes: ov.Processes}
	for _, b := range ov.Backlog {
		if n := len(v.Channels); n == 0 || v.Channels[n-1].Channel != b.Channel {
			v.Channels = append(v.Channels, channelRow{Channel: b.Channel})
		}
		ch := &v.Channels[len(v.Channels)-1]
		ch.Routes += b.Routes
		ch.Due += b.Due
		ch.LagSeconds = max(ch.LagSeconds, b.LagSeconds)
		ch.ByStatus = append(ch.ByStatus, b)
	}
	since := ov.At.Add(-d)
	n := int(d / step)
	for _, p := range ov.Series {
		if k := len(v.Series); k == 0 || v.Series[k-1].Provider != p.Provider {
			v.Series = append(v.Series, seriesRow{Provider: p.Provider, Channel: p.Channel,
				Delivered: make([]int64, n), Failed: make([]int64, n)})
		}
		sr := &v.Series[len(v.Series)-1]
		i := min(max(int(p.At.Sub(since)/step), 0), n-1)
		sr.Delivered[i] += p.Delivered
		sr.Failed[i] += p.Transient + p.Permanent
		sr.DeliveredN += p.Delivered
		sr.FailedN += p.Transient + p.Permanent
	}
	for i := range v.Series {
		v.Series[i].PerSecond = float64(v.Series[i].DeliveredN) / d.Seconds()
	}
	data.Page = v
	c.render(w, r, http.StatusOK, "overview", s, data)
}

type providersView struct {
	Window  string
	Windows []string
	Report  *operator.ProviderReport
}

// States are the states a provider can be set to, the way out first.
func (providersView) States() []string {
	return []string{operator.ProviderDraining, operator.ProviderDisabled, operator.ProviderEnabled}
}

func (c *Console) providers(w http.ResponseWriter, r *http.Request, s *session) {
	name, d := window(r, "15m")
	data := &pageData{Title: "Providers", Nav: "providers", Live: true}
	rep, err := s.op.Providers(r.Context(), d)
	if err != nil {
		c.fail(w, r, s, "providers", data, err)
		return
	}
	data.Page = &providersView{Window: name, Windows: windows, Report: rep}
	c.render(w, r, http.StatusOK, "providers", s, data)
}

// providerState enables, drains or disables a provider (audited, with
// the reason given); every serve follows within seconds.
func (c *Console) providerState(w http.ResponseWriter, r *http.Request, s *session) {
	name, state := r.PostFormValue("provider"), r.PostFormValue("state")
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	data := &pageData{Title: "Providers", Nav: "providers"}
	if reason == "" {
		c.refuse(w, r, http.StatusBadRequest, "Say why: the reason goes into the audit log.")
		return
	}
	ch, err := s.op.SetProviderState(r.Context(), name, state, s.login.Name, reason)
	if err != nil {
		if rep, rerr := s.op.Providers(r.Context(), 15*time.Minute); rerr == nil {
			data.Page = &providersView{Window: "15m", Windows: windows, Report: rep}
		}
		c.fail(w, r, s, "providers", data, err)
		return
	}
	msg := "Provider " + ch.Provider + " was already " + ch.State + "."
	if ch.Changed {
		msg = "Provider " + ch.Provider + ": " + ch.PreviousState + " → " + ch.State + ", audited; every serve follows within seconds."
	}
	c.render(w, r, http.StatusOK, "message", s, &pageData{Title: "Providers", Nav: "providers", Message: msg})
}

// filterForm is the dead-letter filter as the pages' forms carry it.
type filterForm struct {
	Channel, Producer, Type, Classification, Since, Until string
	IDs                                                   []string
}

func readFilterForm(get func(string) string, ids []string) filterForm {
	return filterForm{
		Channel: strings.TrimSpace(get("channel")), Producer: strings.TrimSpace(get("producer")),
		Type: strings.TrimSpace(get("type")), Classification: strings.TrimSpace(get("classification")),
		Since: strings.TrimSpace(get("since")), Until: strings.TrimSpace(get("until")), IDs: ids,
	}
}

// filter turns the form into an operator.Filter: since and until are a
// duration back from now ("1h") or a time (RFC 3339).
func (f filterForm) filter(now time.Time) (operator.Filter, error) {
	out := operator.Filter{Channel: f.Channel, Producer: f.Producer, NotificationType: f.Type, Classification: f.Classification}
	var err error
	if f.Since != "" {
		if out.Since, err = operator.ParseSince(f.Since, now); err != nil {
			return out, err
		}
	}
	if f.Until != "" {
		if out.Until, err = operator.ParseSince(f.Until, now); err != nil {
			return out, err
		}
	}
	for _, id := range f.IDs {
		ref, err := operator.ParseRouteRef(id)
		if err != nil {
			return out, err
		}
		out.IDs = append(out.IDs, ref)
	}
	return out, nil
}

type deadLettersView struct {
	Form      filterForm
	GroupScan int
	Groups    []operator.RecentDeadLetterGroup
	Page      *operator.DeadLetterPage
	Classes   string
}

func (c *Console) deadLetters(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	form := readFilterForm(q.Get, nil)
	v := &deadLettersView{Form: form, GroupScan: operator.DeadLetterGroupScan, Classes: operator.ClassificationHelp()}
	data := &pageData{Title: "Dead letters", Nav: "dead-letters", Page: v}
	f, err := form.filter(time.Now())
	if err == nil {
		err = s.op.ExpandClassification(r.Context(), &f)
	}
	if err == nil {
		v.Groups, err = s.op.DeadLetterGroups(r.Context(), f, 20)
	}
	if err == nil {
		v.Page, err = s.op.DeadLetters(r.Context(), f, operator.DefaultPageSize, q.Get("after"))
	}
	if err != nil {
		c.fail(w, r, s, "dead_letters", data, err)
		return
	}
	c.render(w, r, http.StatusOK, "dead_letters", s, data)
}

type replayView struct {
	Form    filterForm
	Reason  string
	Outcome *operator.ReplayOutcome
}

// replay dry-runs (mode=dry: what would move, and a form to confirm) or
// runs (mode=run) a replay of the dead letters the form selects: the
// routes ticked, else every one matching the filter.
func (c *Console) replay(w http.ResponseWriter, r *http.Request, s *session) {
	form := readFilterForm(r.PostFormValue, r.PostForm["id"])
	v := &replayView{Form: form, Reason: strings.TrimSpace(r.PostFormValue("reason"))}
	data := &pageData{Title: "Replay dead letters", Nav: "dead-letters", Page: v}
	f, err := form.filter(time.Now())
	if err == nil {
		err = s.op.ExpandClassification(r.Context(), &f)
	}
	if err != nil {
		c.fail(w, r, s, "replay", data, err)
		return
	}
	dry := r.PostFormValue("mode") != "run"
	if !dry && v.Reason == "" {
		data.Error = "Say why you replay: the reason goes into the audit log."
		dry = true
	}
	opts := operator.ReplayOpts{Actor: s.login.Name, Reason: v.Reason, DryRun: dry, SampleSize: 20}
	v.Outcome, err = s.op.ReplayOrQueue(r.Context(), f, opts, false, c.cfg.AsyncThreshold)
	if err != nil {
		c.fail(w, r, s, "replay", data, err)
		return
	}
	if v.Outcome.Queued != nil {
		http.Redirect(w, r, "/replays/"+v.Outcome.Queued.ReplayID, http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "replay", s, data)
}

func (c *Console) replayProgress(w http.ResponseWriter, r *http.Request, s *session) {
	data := &pageData{Title: "Replay progress", Nav: "dead-letters", Live: true}
	id, err := operator.ParseReplayID(r.PathValue("id"))
	if err == nil {
		data.Page, err = s.op.ReplayStatus(r.Context(), id)
	}
	if err != nil {
		c.fail(w, r, s, "replay_progress", data, err)
		return
	}
	c.render(w, r, http.StatusOK, "replay_progress", s, data)
}

type notificationView struct {
	ID, Producer, Key string
	Status            *operator.Status
	// Recipient is what was typed to find notifications by recipient;
	// Found is what that found, Next the link to its older routes; Older
	// says this page follows such a link.
	Recipient string
	Found     *operator.RecipientSearch
	Next      string
	Older     bool
}

func (c *Console) notification(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	v := &notificationView{ID: strings.TrimSpace(q.Get("id")), Producer: strings.TrimSpace(q.Get("producer")), Key: q.Get("key"),
		Recipient: strings.TrimSpace(q.Get("recipient")), Older: q.Get("after") != ""}
	data := &pageData{Title: "Notification", Nav: "notification", Page: v}
	var err error
	switch {
	case v.ID != "":
		v.Status, err = s.op.Status(r.Context(), v.ID)
	case v.Producer != "" && v.Key != "":
		v.Status, err = s.op.FindNotification(r.Context(), v.Producer, v.Key)
	case v.Recipient != "":
		v.Found, err = s.op.FindByRecipient(r.Context(), v.Recipient, operator.DefaultPageSize, q.Get("after"))
		if err == nil && v.Found.Next != "" {
			v.Next = "/notification?" + url.Values{"recipient": {v.Recipient}, "after": {v.Found.Next}}.Encode()
		}
	}
	if errors.Is(err, operator.ErrNotFound) {
		data.Message, err = "No notification found: "+err.Error(), nil
	}
	if errors.Is(err, operator.ErrBadCursor) {
		data.Message, err = "That link to older notifications is not one this page made: search again.", nil
	}
	if err != nil {
		c.fail(w, r, s, "notification", data, err)
		return
	}
	c.render(w, r, http.StatusOK, "notification", s, data)
}

type heldView struct {
	List   []operator.Held
	Next   int64
	Detail *operator.HeldDetail
	Body   string
}

func (c *Console) held(w http.ResponseWriter, r *http.Request, s *session) {
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	v := &heldView{}
	data := &pageData{Title: "Held intents", Nav: "held", Page: v, Live: true}
	var err error
	if v.List, err = s.op.HeldIntents(r.Context(), operator.DefaultPageSize, after); err != nil {
		c.fail(w, r, s, "held", data, err)
		return
	}
	if len(v.List) == operator.DefaultPageSize {
		v.Next = v.List[len(v.List)-1].ID
	}
	c.render(w, r, http.StatusOK, "held", s, data)
}

func (c *Console) heldOne(w http.ResponseWriter, r *http.Request, s *session) {
	v := &heldView{}
	data := &pageData{Title: "Held intent", Nav: "held", Page: v}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err == nil {
		v.Detail, err = s.op.HeldIntent(r.Context(), id)
	}
	if err != nil {
		c.fail(w, r, s, "held_one", data, err)
		return
	}
	v.Body = redactJSON(v.Detail.Body)
	c.render(w, r, http.StatusOK, "held_one", s, data)
}

// heldDecide releases or rejects one held intent, with the reason given.
func (c *Console) heldDecide(w http.ResponseWriter, r *http.Request, s *session) {
	v := &heldView{}
	data := &pageData{Title: "Held intent", Nav: "held", Page: v}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err == nil {
		v.Detail, err = s.op.HeldIntent(r.Context(), id)
	}
	if err != nil {
		c.fail(w, r, s, "held_one", data, err)
		return
	}
	v.Body = redactJSON(v.Detail.Body)
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if reason == "" {
		data.Error = "Say why: the reason goes into the audit log."
		c.render(w, r, http.StatusBadRequest, "held_one", s, data)
		return
	}
	var d *operator.HeldDecision
	switch r.PathValue("decision") {
	case "release":
		d, err = s.op.ReleaseHeld(r.Context(), []int64{id}, s.login.Name, reason)
	case "reject":
		d, err = s.op.RejectHeld(r.Context(), []int64{id}, s.login.Name, reason)
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		c.fail(w, r, s, "held_one", data, err)
		return
	}
	msg := "Nothing done: the intent is no longer held."
	if len(d.Done) > 0 {
		msg = "Held intent " + strconv.FormatInt(id, 10) + ": " + d.Action + "d, audited."
	}
	c.render(w, r, http.StatusOK, "message", s, &pageData{Title: "Held intent", Nav: "held", Message: msg})
}

type campaignsView struct {
	Producer string
	List     []heraldtype.Campaign
}

func (c *Console) campaigns(w http.ResponseWriter, r *http.Request, s *session) {
	v := &campaignsView{Producer: strings.TrimSpace(r.URL.Query().Get("producer"))}
	data := &pageData{Title: "Campaigns", Nav: "campaigns", Page: v, Live: true}
	var err error
	if v.List, err = campaign.List(r.Context(), s.pool, v.Producer, 100); err != nil {
		c.fail(w, r, s, "campaigns", data, err)
		return
	}
	c.render(w, r, http.StatusOK, "campaigns", s, data)
}

// campaignCancel cancels a campaign's routes not gone out yet, audited.
func (c *Console) campaignCancel(w http.ResponseWriter, r *http.Request, s *session) {
	v := &campaignsView{}
	data := &pageData{Title: "Campaigns", Nav: "campaigns", Page: v}
	producer, id := r.PostFormValue("producer"), r.PostFormValue("campaign")
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	var err error
	if reason == "" {
		err = errors.New("say why you cancel: the reason goes into the audit log")
	}
	var res *campaign.CancelResult
	if err == nil {
		res, err = campaign.Cancel(r.Context(), s.pool, producer, id, campaign.CancelOpts{Actor: s.login.Name, Reason: reason})
	}
	if err != nil {
		if list, lerr := campaign.List(r.Context(), s.pool, "", 100); lerr == nil {
			v.List = list
		}
		c.fail(w, r, s, "campaigns", data, err)
		return
	}
	c.render(w, r, http.StatusOK, "message", s, &pageData{Title: "Campaign canceled", Nav: "campaigns",
		Message: "Campaign " + id + " of " + producer + ": " + strconv.FormatInt(res.Canceled, 10) + " route(s) canceled, audited."})
}

type malformedView struct {
	Producer, Code string
	Codes          []string
	Page           *operator.MalformedPage
	Entry          *operator.Malformed
	Raw            string
}

func (c *Console) malformed(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	v := &malformedView{Producer: strings.TrimSpace(q.Get("producer")), Code: q.Get("code"), Codes: operator.FailureCodes()}
	data := &pageData{Title: "Malformed entries", Nav: "malformed", Page: v}
	var err error
	v.Page, err = s.op.MalformedIntents(r.Context(), operator.MalformedFilter{Producer: v.Producer, FailureCode: v.Code},
		operator.DefaultPageSize, q.Get("after"))
	if err != nil {
		c.fail(w, r, s, "malformed", data, err)
		return
	}
	c.render(w, r, http.StatusOK, "malformed", s, data)
}

func (c *Console) malformedOne(w http.ResponseWriter, r *http.Request, s *session) {
	v := &malformedView{}
	data := &pageData{Title: "Malformed entry", Nav: "malformed", Page: v}
	var err error
	if v.Entry, err = s.op.MalformedIntent(r.Context(), r.PathValue("ref")); err != nil {
		c.fail(w, r, s, "malformed_one", data, err)
		return
	}
	v.Raw = redactJSON(string(v.Entry.RawFields))
	c.render(w, r, http.StatusOK, "malformed_one", s, data)
}

type auditView struct {
	Action, Actor string
	Entries       []operator.AuditEntry
	Next          int64
}

func (c *Console) audit(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	v := &auditView{Action: strings.TrimSpace(q.Get("action")), Actor: strings.TrimSpace(q.Get("actor"))}
	data := &pageData{Title: "Audit log", Nav: "audit", Page: v}
	before, _ := strconv.ParseInt(q.Get("before"), 10, 64)
	var err error
	if v.Entries, err = s.op.AuditEntries(r.Context(), operator.AuditFilter{Action: v.Action, Actor: v.Actor}, operator.DefaultPageSize, before); err != nil {
		c.fail(w, r, s, "audit", data, err)
		return
	}
	if len(v.Entries) == operator.DefaultPageSize {
		v.Next = v.Entries[len(v.Entries)-1].ID
	}
	c.render(w, r, http.StatusOK, "audit", s, data)
}
