package operator

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// What DeadLetterCounts groups by.
const (
	GroupProducer       = "producer"
	GroupChannel        = "channel"
	GroupProvider       = "provider"
	GroupClassification = "classification"
)

// Groups are the dimensions DeadLetterCounts groups by, in the order a
// group's key lists them.
var Groups = []string{GroupProducer, GroupChannel, GroupProvider, GroupClassification}

// DeadLetterGroup is how many dead letters share the values of the
// dimensions counted by (the others are empty), and the newest of them.
type DeadLetterGroup struct {
	Producer       string    `json:"producer,omitempty"`
	Channel        string    `json:"channel,omitempty"`
	Provider       string    `json:"provider,omitempty"`
	Classification string    `json:"classification,omitempty"`
	DeadLetters    int64     `json:"dead_letters"`
	NewestAt       time.Time `json:"newest_at"`
}

// ParseGroups reads -by's value: one or more of Groups, comma-separated
// ("producer", "provider,classification"), into the order of Groups.
func ParseGroups(s string) ([]string, error) {
	var by []string
	for g := range strings.SplitSeq(s, ",") {
		g = strings.TrimSpace(g)
		if !slices.Contains(Groups, g) {
			return nil, fmt.Errorf("invalid -by %q: want one or more of %s, comma-separated", s, strings.Join(Groups, ", "))
		}
		if !slices.Contains(by, g) {
			by = append(by, g)
		}
	}
	slices.SortFunc(by, func(a, b string) int { return slices.Index(Groups, a) - slices.Index(Groups, b) })
	return by, nil
}

// DeadLetterCounts counts the dead letters matching f (but for its IDs and
// Until) per distinct value of the dimensions in by (Groups), most first,
// then by key. A provider is the one of the route's last attempt ("" on a
// channel without providers). An empty result means none matched.
func (o *Operator) DeadLetterCounts(ctx context.Context, f Filter, by []string) ([]DeadLetterGroup, error) {
	rows, err := o.q.DeadLetterCountGrouped(ctx, o.pool, store.DeadLetterCountGroupedParams{
		Channel:          optText(f.Channel),
		Producer:         optText(f.Producer),
		NotificationType: optText(f.NotificationType),
		Provider:         optText(f.Provider),
		Classification:   optText(f.Classification),
		Since:            optTime(f.Since),
	})
	if err != nil {
		return nil, fmt.Errorf("count dead letters: %w", err)
	}
	byKey := map[DeadLetterGroup]*DeadLetterGroup{}
	out := []*DeadLetterGroup{}
	for _, r := range rows {
		var k DeadLetterGroup
		for _, g := range by {
			switch g {
			case GroupProducer:
				k.Producer = r.Producer
			case GroupChannel:
				k.Channel = r.Channel
			case GroupProvider:
				k.Provider = r.Provider
			case GroupClassification:
				k.Classification = r.Classification
			}
		}
		g := byKey[k]
		if g == nil {
			g = &k
			byKey[k] = g
			out = append(out, g)
		}
		g.DeadLetters += r.DeadLetters
		if r.NewestAt.After(g.NewestAt) {
			g.NewestAt = r.NewestAt
		}
	}
	slices.SortStableFunc(out, func(a, b *DeadLetterGroup) int {
		return cmp.Or(cmp.Compare(b.DeadLetters, a.DeadLetters), cmp.Compare(a.Producer, b.Producer),
			cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Classification, b.Classification))
	})
	res := make([]DeadLetterGroup, len(out))
	for i, g := range out {
		res[i] = *g
	}
	return res, nil
}
