package config

import (
	"log/slog"
	"strings"
)

func replace(s, old, new string) string { return strings.ReplaceAll(s, old, new) }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
