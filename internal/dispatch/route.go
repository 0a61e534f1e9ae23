package dispatch

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/routing"
)

// ClassNoRoute: the route's channel has routing rules and none matches its
// destination, producer, type and priority (or the channel has no provider
// at all); dead-lettered with a hint naming the rule set to fix.
const ClassNoRoute = "no_route"

// parking is where a claimed route goes instead of delivery.
type parking struct {
	lane  string
	delay time.Duration
}

func (j *job) providerName() string {
	if j.provider == nil {
		return ""
	}
	return j.provider.Name
}

// priorityName is routing's word for a route's priority.
func priorityName(p int16) string {
	if p == 0 {
		return "transactional"
	}
	return "bulk"
}

// route picks each deliverable job's provider: it sets job.provider, or
// job.park (the provider is capped, or every provider of its rule has an
// open circuit), or job.outcome (no route). A channel without providers
// leaves job.provider nil: the channel's Deliverer delivers.
func (l *channelLoop) route(jobs []job) {
	p := l.d.plane.cur.Load()
	if !p.hasChannel(l.name) {
		return
	}
	for i := range jobs {
		j := &jobs[i]
		if j.outcome != nil {
			continue
		}
		if l.lane != "" {
			// A lane's routes were routed when they entered it: its provider
			// delivers them (a draining one too: they are what it holds
			// already), unless its circuit opened meanwhile, it was
			// disabled or it is gone, when they go back to the channel's
			// queue to be routed afresh.
			pr := p.Providers[l.lane]
			if pr == nil || pr.State == routing.StateDisabled || l.d.cannotSend(pr.Name) {
				j.park = &parking{}
				if pr != nil && l.d.unready(pr.Name) != nil {
					j.park.delay = unavailableWait
				}
				continue
			}
			j.provider = pr
			continue
		}
		res := l.pick(p, j, j.row.Providers)
		switch {
		case res.noRoute:
			j.outcome = l.settle(j, "dead_letter", ClassNoRoute, res.message, res.hint)
		case res.allOpen:
			j.park = &parking{delay: l.untilFirstClose(p)}
		default:
			pr := p.Providers[res.provider]
			switch {
			case pr == nil:
				j.outcome = l.settle(j, "dead_letter", ClassNoRoute,
					fmt.Sprintf("routing chose %q, which is not a provider", res.provider),
					"fix the rules with `herald providers apply`, then replay")
			case pr.CapPerSecond > 0:
				l.countFailover(j, pr.Name)
				j.park = &parking{lane: pr.Name}
			default:
				l.countFailover(j, pr.Name)
				j.provider = pr
			}
		}
	}
}

// countFailover counts, for provider health, a route whose last attempt
// was another provider's and whose next one routing gave to provider.
func (l *channelLoop) countFailover(j *job, provider string) {
	if n := len(j.row.Providers); n > 0 && j.row.Providers[n-1] != provider {
		l.d.health.failover(j.row.Providers[n-1], provider)
	}
}

// pickResult is what the dispatcher makes of routing's answer for one
// route.
type pickResult struct {
	// provider is the provider to use ("" with noRoute).
	provider string
	// noRoute: no rule matches; message and hint say why and what to fix.
	noRoute       bool
	message, hint string
	// allOpen: every provider the matching rule names has an open
	// circuit; provider is the one that would be used.
	allOpen bool
	// wrapAround: every provider of the rule has been tried since the
	// route's last success; a retry after this pick waits its backoff
	// rather than failing over at once.
	wrapAround bool
}

// pick asks routing (the plane's PickFunc) for a job's provider, given the
// providers tried.
func (l *channelLoop) pick(p *Plane, j *job, tried []string) pickResult {
	d := routing.Decision{NoRules: true}
	if p.PickFunc != nil {
		var err error
		d, err = p.PickFunc(routing.PickInput{
			Channel:          l.name,
			Destination:      j.msg.Address,
			Producer:         j.row.Producer,
			NotificationType: j.row.NotificationType,
			Priority:         priorityName(j.row.Priority),
			Tried:            tried,
			IsOpenFunc:       l.d.isOpen,
		})
		if err != nil {
			var nr *routing.NoRouteError
			if errors.As(err, &nr) {
				return pickResult{noRoute: true, message: nr.Error(), hint: nr.Hint()}
			}
			return pickResult{noRoute: true, message: err.Error(),
				hint: "fix channel " + l.name + "'s rules with herald providers apply"}
		}
	}
	if d.NoRules {
		// A channel without rules uses its one provider; with several and
		// no rules there is nothing to choose by.
		names := p.channelProviders(l.name)
		if len(names) == 1 {
			return pickResult{provider: names[0], allOpen: l.d.isOpen(names[0]), wrapAround: true}
		}
		return pickResult{noRoute: true,
			message: fmt.Sprintf("channel %s has %d providers and no routing rules", l.name, len(names)),
			hint:    "give channel " + l.name + " routing rules (a catch-all rule without matchers will do) with `herald providers apply`, then replay"}
	}
	return pickResult{provider: d.Provider, allOpen: d.AllOpen, wrapAround: d.Wrap}
}

// failsOver reports whether a transient failure of j at its provider
// sends the next attempt to another provider of its rule at once.
func (l *channelLoop) failsOver(j *job) bool {
	if j.provider == nil {
		return false
	}
	p := l.d.plane.cur.Load()
	res := l.pick(p, j, append(slices.Clip(j.row.Providers), j.provider.Name))
	return !res.noRoute && !res.allOpen && !res.wrapAround && res.provider != j.provider.Name
}
