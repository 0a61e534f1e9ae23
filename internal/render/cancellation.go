package render

import (
	"fmt"
	"io"
)

// Cancellation is what `herald cancel` did: the notification's routes it
// canceled, none when every route had finished. Its JSON form is the
// command's --json output.
type Cancellation struct {
	NotificationID string          `json:"notification_id"`
	Canceled       []CanceledRoute `json:"canceled"`
}

// CanceledRoute is one route a cancel stopped.
type CanceledRoute struct {
	RouteID string `json:"route_id"`
	Channel string `json:"channel"`
}

// Canceled writes c as `herald cancel` shows it.
func Canceled(w io.Writer, c *Cancellation) error {
	if len(c.Canceled) == 0 {
		fmt.Fprintf(w, "%s: nothing to cancel, every route had finished\n", c.NotificationID)
		return nil
	}
	fmt.Fprintf(w, "%s: canceled %d route(s)\n", c.NotificationID, len(c.Canceled))
	return table(w, "ROUTE\tCHANNEL", c.Canceled, false, func(r CanceledRoute) string {
		return r.RouteID + "\t" + r.Channel
	})
}
