package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/heraldhq/herald/internal/operator"
)

// DeadLetterCounts is what `herald dead-letters count` prints: the
// dimensions counted by, and the counts.
type DeadLetterCounts struct {
	By     []string                   `json:"by"`
	Groups []operator.DeadLetterGroup `json:"groups"`
}

// DeadLetterGroups writes the counts of `herald dead-letters count`, one
// column per dimension counted by, and the total.
func DeadLetterGroups(w io.Writer, c *DeadLetterCounts) error {
	var total int64
	for _, g := range c.Groups {
		total += g.DeadLetters
	}
	header := strings.ToUpper(strings.Join(c.By, "\t")) + "\tDEAD LETTERS\tNEWEST"
	if err := table(w, header, c.Groups, true, func(g operator.DeadLetterGroup) string {
		var cells []string
		for _, by := range c.By {
			switch by {
			case operator.GroupProducer:
				cells = append(cells, g.Producer)
			case operator.GroupChannel:
				cells = append(cells, g.Channel)
			case operator.GroupProvider:
				cells = append(cells, dash(g.Provider))
			case operator.GroupClassification:
				cells = append(cells, g.Classification)
			}
		}
		return fmt.Sprintf("%s\t%d\t%s", strings.Join(cells, "\t"), g.DeadLetters, stamp(g.NewestAt))
	}); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "total: %d\n", total)
	return err
}

// ProviderHealth writes each provider's state, circuit, failing streak,
// outcomes over the window and failovers, one row each.
func ProviderHealth(w io.Writer, ps []operator.ProviderHealth) error {
	return table(w, "PROVIDER\tSTATE\tCIRCUIT\tFAILING SINCE\tDELIVERED\tTRANSIENT\tPERMANENT\tTHROTTLED\tFAILED OVER TO/FROM\tMEAN LATENCY\tCAP/S", ps, false,
		func(p operator.ProviderHealth) string {
			circuit, capacity, latency, state := p.Circuit, "none", "-", p.State
			if p.OpenUntil != nil && p.Circuit == "open" {
				circuit = "open until " + stamp(*p.OpenUntil)
			}
			if p.UnavailableReason != "" {
				circuit += "; cannot send: " + clip(p.UnavailableReason, 120)
			}
			if p.StateReason != "" {
				state += " (" + clip(p.StateReason, 60) + ")"
			}
			if p.CapPerSecond > 0 {
				capacity = fmt.Sprint(p.CapPerSecond)
			}
			o := p.Window
			if o.MeanLatencySeconds != nil {
				latency = seconds(*o.MeanLatencySeconds)
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d/%d\t%s\t%s", p.Provider, state, circuit, stampPtr(p.FailingSince),
				o.Delivered, o.Transient, o.Permanent, o.Throttled, o.FailedOverTo, o.FailedOverFrom, latency, capacity)
		})
}

// ProviderStateChange writes what `herald providers disable`, `drain` or
// `enable` did.
func ProviderStateChange(w io.Writer, c *operator.ProviderStateChange) error {
	if !c.Changed {
		_, err := fmt.Fprintf(w, "%s was %s already: nothing changed.\n", c.Provider, c.State)
		return err
	}
	what := map[string]string{
		operator.ProviderEnabled:  "routing sends it new attempts again",
		operator.ProviderDraining: "routing sends it no new attempt and fails over to the next provider; what it holds finishes there",
		operator.ProviderDisabled: "it gets nothing at all; its routes go to the next provider",
	}[c.State]
	_, err := fmt.Fprintf(w, "%s: %s -> %s at %s (audited): %s; every serve follows within seconds.\n",
		c.Provider, c.PreviousState, c.State, stamp(c.At), what)
	return err
}
