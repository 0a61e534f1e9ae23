package config

import "strings"

func replace(s, old, new string) string { return strings.ReplaceAll(s, old, new) }
