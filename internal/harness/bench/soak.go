package bench

import (
	"context"
	"fmt"
	"io"
	"time"
)

// RSSReader is implemented by engines that can report their processes'
// current resident set size.
type RSSReader interface {
	// RSS returns each engine process's current RSS in bytes.
	RSS() []int64
}

// SoakSample is one interval of a soak run.
type SoakSample struct {
	At        float64 `json:"at"`
	Delivered int64   `json:"delivered"`
	RSS       []int64 `json:"rss_bytes"`
}

// SoakReport is the soak mode's result: memory over a long steady run.
type SoakReport struct {
	Duration  string       `json:"duration"`
	Delivered int64        `json:"delivered"`
	PeakRSS   []int64      `json:"peak_rss_bytes"`
	Samples   []SoakSample `json:"samples"`
}

// RunSoak runs a steady workload (producers about 20,000 routes ahead of
// deliveries) for d, sampling the engine processes' RSS every 10 seconds.
func RunSoak(ctx context.Context, db *Database, cfg *Config, d time.Duration) (*SoakReport, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	sk := newSink(c.Latency, c.FailShare)
	id := fmt.Sprintf("soak%d", time.Now().UnixNano())
	w := newWorkload(&c, id, c.RoutesPerIntent)
	h := newHeraldSubject(&c, db, sk, w)
	ResetPeakRSS()
	if err := h.start(ctx); err != nil {
		return nil, err
	}
	defer h.stop()
	pctx, stopProducers := context.WithCancel(ctx)
	defer stopProducers()
	prodErr := steadyProducer(pctx, h, sk, &c)
	rep := &SoakReport{Duration: d.String()}
	start := time.Now()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	var last int64
	for time.Since(start) < d {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-prodErr:
			return nil, fmt.Errorf("producer: %w", err)
		case <-tick.C:
		}
		s := SoakSample{At: time.Since(start).Seconds()}
		n := sk.delivered.Load()
		s.Delivered, last = n-last, n
		if r, ok := h.engine.(RSSReader); ok {
			s.RSS = r.RSS()
		} else {
			s.RSS = []int64{RSS(0)}
		}
		rep.Samples = append(rep.Samples, s)
		c.Logger.Info("bench: soak sample", "at", s.At, "delivered", s.Delivered, "rss", s.RSS)
	}
	stopProducers()
	rep.Delivered = sk.delivered.Load()
	rep.PeakRSS = h.peakRSS()
	return rep, nil
}

// WriteSoak prints the soak report: RSS per sample, in MiB.
func WriteSoak(w io.Writer, r *SoakReport) error {
	fmt.Fprintf(w, "soak: %s, %d routes delivered\n", r.Duration, r.Delivered)
	for _, s := range r.Samples {
		fmt.Fprintf(w, "  t=%4.0fs delivered/s %6.0f RSS MiB", s.At, float64(s.Delivered)/10)
		for _, v := range s.RSS {
			fmt.Fprintf(w, " %.1f", float64(v)/(1<<20))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "peak RSS MiB:")
	for _, v := range r.PeakRSS {
		fmt.Fprintf(w, " %.1f", float64(v)/(1<<20))
	}
	fmt.Fprintln(w)
	return nil
}
