package bench

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// CheckCommandLine checks what `herald bench` was given before a cluster
// starts: cfg (cfg.Vs set from -vs), -mode, -trace-sample (negative:
// tracing off) and the modes' settings. Its error is one line naming the
// flag. Config takes a zero count as its default; on the command line a
// zero is a mistake. (Negative values and the finer bounds are Config's to
// refuse.)
func CheckCommandLine(cfg *Config, mode string, traceSample float64, p ModeParams) error {
	if cfg.Vs != "" && cfg.Vs != "river" {
		return fmt.Errorf("invalid -vs %q: want river", cfg.Vs)
	}
	if !slices.Contains(Modes, mode) {
		return fmt.Errorf("invalid -mode %q: want %s", mode, strings.Join(Modes, ", "))
	}
	for _, c := range []struct {
		name string
		v    int
	}{
		{"intents", cfg.Intents}, {"routes-per-intent", cfg.RoutesPerIntent}, {"payload-bytes", cfg.PayloadBytes},
		{"batch", cfg.Batch}, {"producers", cfg.Producers}, {"concurrency", cfg.Concurrency},
		{"processes", cfg.Processes}, {"rounds", cfg.Rounds}, {"backlog", p.Backlog},
		{"history", p.Retention.History}, {"retention-batch", p.Retention.BatchSize},
	} {
		if c.v < 1 {
			return fmt.Errorf("invalid -%s %d: must be positive", c.name, c.v)
		}
	}
	switch {
	case cfg.IdleSamples == 0:
		return errors.New("invalid -idle-samples 0: want a count, or a negative number for none")
	case cfg.DispatchBatch < 0:
		return fmt.Errorf("invalid -dispatch-batch %d: want 0 (the dispatcher's default) or more", cfg.DispatchBatch)
	case (cfg.Provider || cfg.Receipts) && (mode != "compare" || cfg.Processes > 1 || cfg.Serve || cfg.ServeDiscard):
		return errors.New("-provider and -receipts run the compare mode with the engine in this process: not with -mode " + mode + ", -processes, -serve or -serve-discard")
	case traceSample > 1:
		return fmt.Errorf("invalid -trace-sample %g: want a ratio from 0 to 1, or negative for tracing off", traceSample)
	case cfg.ReceiptDelay < 0:
		return fmt.Errorf("invalid -receipt-delay %s: must not be negative", cfg.ReceiptDelay)
	case p.Duration <= 0 || p.Hold <= 0 || p.Retention.Window <= 0:
		return fmt.Errorf("invalid -duration %s, -hold %s or -window %s: must be positive", p.Duration, p.Hold, p.Retention.Window)
	}
	return nil
}

// KeyValues is the Set of a repeatable name=value flag (-engine-set,
// -pg-set): each value goes into dst.
func KeyValues(dst map[string]string) func(string) error {
	return func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return fmt.Errorf("want name=value, not %q", v)
		}
		dst[k] = val
		return nil
	}
}
