package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/internal/operator"
)

// RecipientSearch writes what `herald find -recipient` found: the refs
// looked up, the newest routes to them (each with the notification
// `herald status` shows), the command for older ones, and the recipient's
// newest dead letters.
func RecipientSearch(w io.Writer, s *operator.RecipientSearch) error {
	fmt.Fprintf(w, "recipient %s, looked up as %s\n\n", strconv.Quote(s.Query), strings.Join(s.Refs, " or "))
	if len(s.Routes) == 0 {
		fmt.Fprintln(w, "no notifications to this recipient that this login may see")
	} else {
		fmt.Fprintf(w, "newest %d notifications, newest first (herald status NOTIFICATION shows one):\n", len(s.Routes))
		err := table(w, "ACCEPTED\tNOTIFICATION\tROUTE\tPRODUCER\tTYPE\tRECIPIENT\tSTATUS\tATTEMPTS\tDELIVERY", s.Routes, false,
			func(r operator.RecipientRoute) string {
				return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s", stamp(r.AcceptedAt), r.NotificationID, r.RouteID,
					r.Producer, r.NotificationType, clip(r.RecipientRef, 40), r.Status, r.Attempts, r.MaxAttempts, dash(r.DeliveryStatus))
			})
		if err != nil {
			return err
		}
		if s.Next != "" {
			fmt.Fprintf(w, "\nmore: herald find -recipient %s --after %s\n", strconv.Quote(s.Query), s.Next)
		}
	}
	fmt.Fprintln(w)
	if len(s.DeadLetters) == 0 {
		fmt.Fprintln(w, "no dead letters of this recipient")
		return nil
	}
	more := ""
	if s.MoreDeadLetters {
		more = fmt.Sprintf(" (the newest %d; it has more)", len(s.DeadLetters))
	}
	fmt.Fprintf(w, "dead letters%s:\n", more)
	return table(w, "DEAD LETTERED\tROUTE\tPRODUCER\tTYPE\tPROVIDER\tCLASS\tMESSAGE", s.DeadLetters, false,
		func(d operator.RecipientDeadLetter) string {
			return fmt.Sprintf("%s\t%s/%s\t%s\t%s\t%s\t%s\t%s", stamp(d.DeadLetteredAt), d.NotificationID, d.RouteID,
				d.Producer, d.NotificationType, dash(d.Provider), d.Classification, clip(d.Message, 60))
		})
}
