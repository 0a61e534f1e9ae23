package render

import (
	"fmt"
	"io"

	"github.com/heraldhq/herald/internal/operator"
)

// Senders writes `herald senders list`: one row per approved sender.
func Senders(w io.Writer, ss []operator.Sender) error {
	if len(ss) == 0 {
		fmt.Fprintln(w, "no approved senders")
		return nil
	}
	return table(w, "PRODUCER\tSENDER\tAPPROVED\tBY\tNOTE", ss, false, func(s operator.Sender) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", s.Producer, s.Sender, stamp(s.ApprovedAt), s.ApprovedBy, s.Note)
	})
}

// SenderChange writes what `herald senders approve` or `revoke` did.
func SenderChange(w io.Writer, c *operator.SenderChange) error {
	switch {
	case c.Action == "approve" && !c.Changed:
		fmt.Fprintf(w, "sender %s was already approved for %s: nothing changed\n", c.Sender, c.Producer)
	case c.Action == "approve":
		fmt.Fprintf(w, "approved sender %s for %s (audited)\n", c.Sender, c.Producer)
	default:
		fmt.Fprintf(w, "revoked sender %s of %s (audited)\n", c.Sender, c.Producer)
	}
	return nil
}
