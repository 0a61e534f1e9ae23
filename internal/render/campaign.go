package render

import (
	"fmt"
	"io"
	"strconv"

	"github.com/heraldhq/herald/internal/heraldtype"
)

// Campaigns writes `herald campaigns list`: one row per campaign with its
// state, schedule and routes by where they stand.
func Campaigns(w io.Writer, cs []heraldtype.Campaign) error {
	if len(cs) == 0 {
		fmt.Fprintln(w, "no campaigns")
		return nil
	}
	return table(w, "PRODUCER\tCAMPAIGN\tSTATE\tSEND_AT\tROUTES\tPENDING\tPUBLISHED\tDELIVERED\tDEAD\tCANCELED", cs, false,
		func(c heraldtype.Campaign) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d", c.Producer, c.Campaign, c.State, sendAt(c),
				c.Routes, c.Pending, c.Published, c.Delivered, c.Dead, c.Canceled)
		})
}

// Campaign writes `herald campaigns show`: one campaign as a record.
func Campaign(w io.Writer, c *heraldtype.Campaign) error {
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	kvs := [][2]string{
		{"producer", c.Producer},
		{"campaign", c.Campaign},
		{"state", string(c.State)},
		{"send at", sendAt(*c)},
		{"created", stamp(c.CreatedAt)},
		{"notifications", n(c.Notifications)},
		{"routes", n(c.Routes)},
		{"pending", n(c.Pending)},
		{"published", n(c.Published)},
		{"delivered", n(c.Delivered)},
		{"dead", n(c.Dead)},
		{"canceled", n(c.Canceled)},
		{"skipped", n(c.Skipped)},
	}
	if !c.CancelRequestedAt.IsZero() {
		kvs = append(kvs,
			[2]string{"cancel requested", fmt.Sprintf("%s by %s: %s", stamp(c.CancelRequestedAt), c.CanceledBy, dash(c.CancelReason))},
			[2]string{"cancel done", stamp(c.CanceledAt)})
	}
	return fields(w, kvs)
}

// CampaignCancellation is what `herald campaigns cancel` did, and the
// campaign afterwards. Its JSON form is the command's --json output.
type CampaignCancellation struct {
	// Canceled is the routes this run canceled, in Batches batches.
	Canceled int64 `json:"canceled"`
	Batches  int   `json:"batches"`
	// Campaign is the campaign after the cancel.
	Campaign *heraldtype.Campaign `json:"campaign"`
}

// CampaignCanceled writes c as `herald campaigns cancel` shows it.
func CampaignCanceled(w io.Writer, c *CampaignCancellation) error {
	fmt.Fprintf(w, "%s/%s: canceled %d route(s) in %d batch(es)\n\n", c.Campaign.Producer, c.Campaign.Campaign, c.Canceled, c.Batches)
	return Campaign(w, c.Campaign)
}

// sendAt is a campaign's schedule for a table: its time, or "now".
func sendAt(c heraldtype.Campaign) string {
	if c.SendAt.IsZero() {
		return "now"
	}
	return stamp(c.SendAt)
}
