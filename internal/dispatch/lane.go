package dispatch

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// planeConns are the dispatcher pool's connections beyond one per channel
// loop and completer worker: the lane loops and the health flush share them.
const planeConns = 4

// wakeLanes wakes this process's lane loops of channel ch.
func (d *Dispatcher) wakeLanes(ch string) {
	d.loopsMu.RLock()
	defer d.loopsMu.RUnlock()
	for _, l := range d.loops {
		if l.name == ch && l.lane != "" {
			l.wakeUp()
		}
	}
}

// supervise keeps the loops in line with the plane: a channel loop for
// every channel with providers (beside those Config.Channels has), a lane
// loop for every capped provider, and none for a provider no longer
// capped, whose waiting routes go back to their channel's queue.
func (d *Dispatcher) supervise(ctx, deliverCtx context.Context, wg *sync.WaitGroup) {
	for {
		changed := d.planeChanged()
		d.syncLoops(ctx, deliverCtx, wg)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

func (d *Dispatcher) syncLoops(ctx, deliverCtx context.Context, wg *sync.WaitGroup) {
	p := d.plane.cur.Load()
	// What runs now: channel loops by channel, lane loops by (channel, lane).
	d.loopsMu.RLock()
	channels := map[string]ChannelConfig{}
	lanes := map[[2]string]bool{}
	for _, l := range d.loops {
		if l.lane == "" {
			channels[l.name] = l.cfg
		} else {
			lanes[[2]string{l.name, l.lane}] = true
		}
	}
	d.loopsMu.RUnlock()

	var start []*channelLoop
	wantLanes := map[[2]string]bool{}
	for _, name := range slices.Sorted(maps.Keys(p.Providers)) {
		pr := p.Providers[name]
		cfg, ok := channels[pr.Channel]
		if !ok {
			cfg = d.defaults
			channels[pr.Channel] = cfg
			start = append(start, newChannelLoop(d, pr.Channel, "", cfg))
		}
		if pr.CapPerSecond <= 0 {
			continue
		}
		key := [2]string{pr.Channel, name}
		wantLanes[key] = true
		if !lanes[key] {
			if pr.Concurrency > 0 {
				cfg.Concurrency = pr.Concurrency
			}
			start = append(start, newChannelLoop(d, pr.Channel, name, cfg))
		}
	}

	d.loopsMu.Lock()
	var stopped []*channelLoop
	kept := d.loops[:0]
	for _, l := range d.loops {
		if l.lane != "" && !wantLanes[[2]string{l.name, l.lane}] {
			stopped = append(stopped, l)
			continue
		}
		kept = append(kept, l)
	}
	d.loops = append(kept, start...)
	d.loopsMu.Unlock()

	for _, l := range start {
		lctx, cancel := context.WithCancel(ctx)
		l.stop = cancel
		wg.Go(func() { l.run(lctx, deliverCtx) })
		if l.lane != "" {
			d.log.Info("capped provider's paced loop started", "channel", l.name, "provider", l.lane)
		} else {
			d.log.Info("channel loop started for the plane's providers", "channel", l.name)
		}
	}
	resetChannels := map[string]bool{}
	for _, l := range stopped {
		l.stop()
		l.prog.retired.Store(true)
		resetChannels[l.name] = true
		d.log.Info("provider no longer capped: its waiting routes go back to the channel's queue",
			"channel", l.name, "provider", l.lane)
	}
	for ch := range resetChannels {
		keep := []string{} // not nil: lane = ANY(NULL) would keep every lane
		for key := range wantLanes {
			if key[0] == ch {
				keep = append(keep, key[1])
			}
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		n, err := d.q.RouteLaneReset(rctx, d.pool, store.RouteLaneResetParams{Now: d.now(), Channel: ch, Keep: keep})
		cancel()
		if err != nil {
			d.log.Error("move routes out of lanes no longer capped", "channel", ch, "err", err)
			continue
		}
		d.log.Info("routes moved out of lanes no longer capped", "channel", ch, "routes", n)
	}
}

// hasCappedProvider reports whether ch has a capped provider in p: its
// channel loop then claims with claimRouted.
func (p *Plane) hasCappedProvider(ch string) bool {
	for _, pr := range p.Providers {
		if pr.Channel == ch && pr.CapPerSecond > 0 {
			return true
		}
	}
	return false
}
