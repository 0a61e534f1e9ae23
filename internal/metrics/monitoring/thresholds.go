package monitoring

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// Windows the counting alerts look back over: an alert fires when more
// than its threshold happened within its window.
const (
	DeadLetterWindow = 10 * time.Minute
	UnmatchedWindow  = time.Hour
	MalformedWindow  = 10 * time.Minute
)

// Thresholds are the values the alert rules compare against; the zero
// value is not useful: start from DefaultThresholds.
type Thresholds struct {
	// Job is the Prometheus job label of the targets that scrape `herald
	// serve`'s metrics endpoint: HeraldDown watches their up series.
	Job string
	// Lag is how late the most overdue route of a channel may be.
	Lag time.Duration
	// Backlog is how many routes a channel may have waiting or in flight.
	Backlog int
	// DeadLetters is how many routes of one channel may be dead-lettered
	// within DeadLetterWindow.
	DeadLetters int
	// UnmatchedReceipts is how many receipts of one provider may match no
	// route within UnmatchedWindow.
	UnmatchedReceipts int
	// Malformed is how many SQL-door entries of one producer may be
	// refused as malformed within MalformedWindow.
	Malformed int
}

// DefaultThresholds returns the thresholds the rules use unless told
// otherwise: sized for a herald delivering steadily, so that an alert
// means someone should look now.
func DefaultThresholds() Thresholds {
	return Thresholds{
		Job:               "herald",
		Lag:               5 * time.Minute,
		Backlog:           50000,
		DeadLetters:       10,
		UnmatchedReceipts: 10,
		Malformed:         0,
	}
}

// Bind registers a flag for each threshold on fs, t's values as defaults.
func (t *Thresholds) Bind(fs *flag.FlagSet) {
	fs.StringVar(&t.Job, "job", t.Job, "the Prometheus job label of the targets scraping herald serve (HeraldDown watches their up)")
	fs.DurationVar(&t.Lag, "lag", t.Lag, "HeraldLag: fire when a channel's most overdue route is later than this")
	fs.IntVar(&t.Backlog, "backlog", t.Backlog, "HeraldBacklog: fire when a channel has more routes than this waiting or in flight")
	fs.IntVar(&t.DeadLetters, "dead-letters", t.DeadLetters,
		fmt.Sprintf("HeraldDeadLetters: fire when more routes than this of one channel are dead-lettered within %s", promDuration(DeadLetterWindow)))
	fs.IntVar(&t.UnmatchedReceipts, "unmatched-receipts", t.UnmatchedReceipts,
		fmt.Sprintf("HeraldReceiptsUnmatched: fire when more receipts than this of one provider match no route within %s", promDuration(UnmatchedWindow)))
	fs.IntVar(&t.Malformed, "malformed", t.Malformed,
		fmt.Sprintf("HeraldIntakeMalformed: fire when more SQL-door entries than this of one producer are malformed within %s", promDuration(MalformedWindow)))
}

// Validate returns an error naming the first threshold out of range.
func (t *Thresholds) Validate() error {
	switch {
	case t.Job == "":
		return errors.New("invalid -job: must not be empty")
	case t.Lag <= 0:
		return fmt.Errorf("invalid -lag %s: must be positive", t.Lag)
	case t.Backlog < 0:
		return fmt.Errorf("invalid -backlog %d: must not be negative", t.Backlog)
	case t.DeadLetters < 0:
		return fmt.Errorf("invalid -dead-letters %d: must not be negative", t.DeadLetters)
	case t.UnmatchedReceipts < 0:
		return fmt.Errorf("invalid -unmatched-receipts %d: must not be negative", t.UnmatchedReceipts)
	case t.Malformed < 0:
		return fmt.Errorf("invalid -malformed %d: must not be negative", t.Malformed)
	}
	return nil
}
