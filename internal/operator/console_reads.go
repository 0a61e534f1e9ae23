package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// Login is what the database login an Operator connects as may do.
type Login struct {
	Name string `json:"login"`
	// Operator is set for a member of herald_operator: it reads everything
	// and acts through the audited functions.
	Operator bool `json:"operator"`
	// Auditor is set for a member of herald_auditor: it reads everything
	// and may change nothing.
	Auditor bool `json:"auditor"`
}

// Login returns the roles of the login the Operator's pool connects as.
func (o *Operator) Login(ctx context.Context) (*Login, error) {
	r, err := o.q.ConsoleLoginRoles(ctx, o.pool)
	if err != nil {
		return nil, fmt.Errorf("read login's roles: %w", err)
	}
	return &Login{Name: r.Login, Operator: r.Operator, Auditor: r.Auditor}, nil
}

// AuditEntry is one row of herald.audit_log. Filter and Details are the
// row's JSON as stored.
type AuditEntry struct {
	ID       int64     `json:"id"`
	At       time.Time `json:"at"`
	Actor    string    `json:"actor"`
	Action   string    `json:"action"`
	Reason   string    `json:"reason"`
	Filter   string    `json:"filter"`
	Affected int       `json:"affected"`
	Details  string    `json:"details"`
	// Login is the database login that wrote the row, whatever Actor says.
	Login string `json:"login"`
}

// AuditFilter selects audit rows; zero fields select everything.
type AuditFilter struct {
	Action string
	// Actor matches the actor recorded or the database login.
	Actor string
}

// AuditEntries returns at most limit (0: DefaultPageSize) audit rows
// matching f, newest first, with ids below beforeID (0: from the newest).
func (o *Operator) AuditEntries(ctx context.Context, f AuditFilter, limit int, beforeID int64) ([]AuditEntry, error) {
	p := store.ConsoleAuditListParams{Action: optText(f.Action), Actor: optText(f.Actor), BeforeID: max(beforeID, 0), Max: pageSize(limit)}
	rows, err := o.q.ConsoleAuditList(ctx, o.pool, p)
	if err != nil {
		return nil, fmt.Errorf("list audit log: %w", err)
	}
	out := make([]AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = AuditEntry{ID: r.ID, At: r.At, Actor: r.Actor, Action: r.Action, Reason: r.Reason,
			Filter: r.Filter, Affected: int(r.Affected), Details: r.Details, Login: r.Login}
	}
	return out, nil
}

// HeldDetail is one held intent with the body it was submitted with and
// the rule that held it.
type HeldDetail struct {
	Held
	// Body is the intent as submitted (JSON).
	Body   string `json:"body"`
	RuleID int64  `json:"rule_id"`
	// RuleKind ("word" or "regex") and RulePattern are the rule's as it
	// stands; "" when it has been deleted since.
	RuleKind    string `json:"rule_kind"`
	RulePattern string `json:"rule_pattern"`
}

// HeldIntent returns one held intent. It returns ErrNotFound when none has
// the id (released, rejected, or never held).
func (o *Operator) HeldIntent(ctx context.Context, id int64) (*HeldDetail, error) {
	r, err := o.q.ConsoleHeldGet(ctx, o.pool, id)
	if err != nil {
		return nil, fmt.Errorf("held intent %d: %w", id, notFound(err, "read"))
	}
	return &HeldDetail{
		Held: Held{r.ID, r.HeldAt, r.Producer, r.NotificationType, r.IdempotencyKey, r.Rule, r.Part, r.SubmittedBy},
		Body: r.Body, RuleID: r.RuleID, RuleKind: r.RuleKind, RulePattern: r.RulePattern,
	}, nil
}

// RecentDeadLetterGroup is how many of the newest dead letters one
// producer, channel, provider and classification have.
type RecentDeadLetterGroup struct {
	Producer       string    `json:"producer"`
	Channel        string    `json:"channel"`
	Provider       string    `json:"provider"`
	Classification string    `json:"classification"`
	DeadLetters    int64     `json:"dead_letters"`
	NewestAt       time.Time `json:"newest_at"`
}

// DeadLetterGroupScan is how many of the newest matching dead letters
// DeadLetterGroups groups: enough to show what an outage is made of, few
// enough that the page costs the same with a hundred thousand dead
// letters as with a hundred. CountDeadLetters (a replay's dry run) counts
// them all.
const DeadLetterGroupScan = 2000

// DeadLetterGroups returns at most limit (0: DefaultPageSize) groups of
// the newest DeadLetterGroupScan dead letters matching f (its IDs and
// NotificationType are not used), largest first.
func (o *Operator) DeadLetterGroups(ctx context.Context, f Filter, limit int) ([]RecentDeadLetterGroup, error) {
	rows, err := o.q.ConsoleDeadLetterGroups(ctx, o.pool, store.ConsoleDeadLetterGroupsParams{
		Channel: optText(f.Channel), Producer: optText(f.Producer), Classification: optText(f.Classification),
		Since: optTime(f.Since), Until: optTime(f.Until), Scan: DeadLetterGroupScan, Max: pageSize(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("group dead letters: %w", err)
	}
	out := make([]RecentDeadLetterGroup, len(rows))
	for i, r := range rows {
		out[i] = RecentDeadLetterGroup{r.Producer, r.Channel, r.Provider, r.Classification, r.DeadLetters, r.NewestAt}
	}
	return out, nil
}

// MalformedCount is how many malformed intake entries have one failure
// code.
type MalformedCount struct {
	FailureCode string    `json:"failure_code"`
	Entries     int64     `json:"entries"`
	NewestAt    time.Time `json:"newest_at"`
}

// MalformedCounts returns the malformed entries recorded since since, per
// failure code, largest first.
func (o *Operator) MalformedCounts(ctx context.Context, since time.Time) ([]MalformedCount, error) {
	rows, err := o.q.ConsoleMalformedCountByCode(ctx, o.pool, since)
	if err != nil {
		return nil, fmt.Errorf("count malformed intents: %w", err)
	}
	out := make([]MalformedCount, len(rows))
	for i, r := range rows {
		out[i] = MalformedCount{r.FailureCode, r.Entries, r.NewestAt}
	}
	return out, nil
}
