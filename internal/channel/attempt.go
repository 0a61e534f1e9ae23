package channel

import (
	"context"
	"errors"
	"log/slog"
	"strings"
)

// Attempt runs one delivery attempt of msg on channel ch through deliver,
// with what every channel does around it: a nil message is bad content, an
// empty address is NoAddress (deliver is not called), and the outcome is
// logged at debug level with the address masked, never the content.
func Attempt(ctx context.Context, logger *slog.Logger, ch string, msg *Message,
	deliver func(context.Context, *Message) Outcome) Outcome {
	if msg == nil {
		return BadContent(ch, errors.New("no message"))
	}
	var out Outcome
	if strings.TrimSpace(msg.Address) == "" {
		out = NoAddress(ch)
	} else {
		out = deliver(ctx, msg)
	}
	if !logger.Enabled(ctx, slog.LevelDebug) {
		// The record's attributes (the masked address above all) cost a
		// delivery more than the rest of this function; unlogged, skip them.
		return out
	}
	logger.DebugContext(ctx, ch+" attempt",
		slog.String("notification_id", msg.NotificationID),
		slog.String("route_id", msg.RouteID),
		slog.String("channel", ch),
		slog.Int("attempt", msg.Attempt),
		slog.String("address", MaskAddress(msg.Address)),
		slog.String("class", out.Class.String()),
		slog.String("classification", out.Classification),
	)
	return out
}
