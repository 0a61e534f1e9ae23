// Package logch is a development channel: it writes each delivery to a
// *slog.Logger at info level, with the address masked and without the
// content, and reports every delivery as Delivered. Use it in the demo and
// on a laptop, where no SMTP server or SMS provider is at hand.
package logch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/heraldhq/herald/internal/channel"
)

// ClassLogged is the classification of every outcome of this channel.
const ClassLogged = "logged"

// Config configures a log Deliverer.
type Config struct {
	// Logger receives one info record per delivery. Required.
	Logger *slog.Logger
	// Channel names the channel this Deliverer stands in for ("sms",
	// "email", "webhook"); it is logged under the "channel" key. Default
	// "log".
	Channel string
}

func (c *Config) validate() error {
	if c.Logger == nil {
		return errors.New("Logger is required")
	}
	return nil
}

// Deliverer logs deliveries. It is safe for concurrent use.
type Deliverer struct {
	logger  *slog.Logger
	channel string
}

// New returns a log Deliverer, or an error naming the Config field that is
// wrong.
func New(cfg Config) (*Deliverer, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("logch config: %w", err)
	}
	name := cfg.Channel
	if name == "" {
		name = "log"
	}
	return &Deliverer{logger: cfg.Logger, channel: name}, nil
}

// Deliver logs msg (masked address, content size only) and returns
// Delivered, whatever msg holds.
func (d *Deliverer) Deliver(ctx context.Context, msg *channel.Message) channel.Outcome {
	if msg == nil {
		msg = &channel.Message{}
	}
	d.logger.LogAttrs(ctx, slog.LevelInfo, "notification delivered to log",
		slog.String("notification_id", msg.NotificationID),
		slog.String("route_id", msg.RouteID),
		slog.String("channel", d.channel),
		slog.Int("attempt", msg.Attempt),
		slog.String("notification_type", msg.NotificationType),
		slog.String("address", channel.MaskAddress(msg.Address)),
		slog.Int("content_bytes", len(msg.Content)),
	)
	return channel.Outcome{Class: channel.Delivered, Classification: ClassLogged, Message: "written to the log"}
}
