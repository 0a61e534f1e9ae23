// Package guide holds herald's guides: one Markdown file per job, embedded
// in the binary so that `herald help TOPIC` prints the one its reader
// needs, and written to be read as they are in the repository, where the
// README links to each.
//
// A topic is a file NAME.md of this directory listed in Topics; a test
// keeps the two lists equal, and cmd/herald's tests keep every command
// line the guides show working.
package guide

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"strings"
)

//go:embed *.md
var files embed.FS

// Topic is one guide: its name (the file's, without .md) and the one line
// `herald help` shows for it.
type Topic struct {
	Name    string
	Summary string
}

// topics are the guides, in the order a newcomer reads them.
var topics = []Topic{
	{"producers", "submit notifications: the Go client, the SQL door and the HTTP API"},
	{"channels", "providers and routing rules, SMPP, senders and flash SMS"},
	{"receipts", "delivery receipts and status callbacks to producers"},
	{"content", "templates, the content blocklist, and campaigns"},
	{"operating", "the CLI, psql views, roles and the access policy, metrics and traces"},
	{"production", "deploying, upgrading, sizing, backups, retention and alerting"},
	{"performance", "what herald delivers on a 2-core machine, and the commands that measure it"},
}

// ErrUnknownTopic is matched (with errors.Is) by the *UnknownTopicError
// that Text and Write return for a name that is no topic.
var ErrUnknownTopic = errors.New("no such guide topic")

// UnknownTopicError reports a name that is no topic; its message names
// the topics. `herald help NAME` shows it when NAME is no command either,
// so it says both.
type UnknownTopicError struct{ Name string }

func (e *UnknownTopicError) Error() string {
	return fmt.Sprintf("unknown command %q, nor a guide topic: the topics are %s", e.Name, strings.Join(Names(), ", "))
}

// Is reports whether target is ErrUnknownTopic.
func (e *UnknownTopicError) Is(target error) bool { return target == ErrUnknownTopic }

// Topics returns the guides in reading order.
func Topics() []Topic { return append([]Topic(nil), topics...) }

// Names returns the topics' names in reading order.
func Names() []string {
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	return names
}

// Text returns the guide named name, as Markdown. For a name that is no
// topic it returns an *UnknownTopicError.
func Text(name string) (string, error) {
	for _, t := range topics {
		if t.Name == name {
			b, err := files.ReadFile(name + ".md")
			if err != nil {
				return "", fmt.Errorf("guide %s: %w", name, err)
			}
			return string(b), nil
		}
	}
	return "", &UnknownTopicError{Name: name}
}

// Write writes the guide named name to w, as Markdown; for a name that is
// no topic it writes nothing and returns Text's error.
func Write(w io.Writer, name string) error {
	text, err := Text(name)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, text)
	return err
}

// WriteTopics writes the list of guides that `herald help` ends with: a
// heading, then each topic's name and summary on a line.
func WriteTopics(w io.Writer) {
	fmt.Fprintln(w, "\nGuides (herald help TOPIC):")
	for _, t := range topics {
		fmt.Fprintf(w, "  %-14s %s\n", t.Name, t.Summary)
	}
}
