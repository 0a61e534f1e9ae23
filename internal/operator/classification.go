package operator

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/internal/callback"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/email"
	"github.com/heraldhq/herald/internal/channel/smppch"
	"github.com/heraldhq/herald/internal/channel/sms"
	"github.com/heraldhq/herald/internal/channel/webhook"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/smpp"
)

// failureClasses maps each fixed classification a dead letter can carry to
// the outcome classes (channel.Transient, channel.Permanent) it comes with:
// the class each constant's definition documents, and that
// TestClassifications_CoverEveryDefinedClass checks. A route
// dead-letters at once on a Permanent outcome, and on a Transient one once
// its attempts run out. The dispatcher's own classifications dead-letter
// without retrying (Permanent), but for attempts_exhausted.
var failureClasses = map[string][]channel.Class{
	channel.ClassBadContent:         {channel.Permanent},
	channel.ClassInvalidDestination: {channel.Permanent},
	channel.ClassTimeout:            {channel.Transient},
	channel.ClassCanceled:           {channel.Transient},
	channel.ClassConnectionRefused:  {channel.Transient},
	channel.ClassConnectionReset:    {channel.Transient},
	channel.ClassDNS:                {channel.Transient},
	channel.ClassTLSCertificate:     {channel.Transient, channel.Permanent}, // Permanent for webhooks
	channel.ClassTLS:                {channel.Transient},
	channel.ClassNetwork:            {channel.Transient},
	webhook.ClassDestinationDenied:  {channel.Permanent},
	sms.ClassProviderAuth:           {channel.Transient},
	sms.ClassProviderThrottled:      {channel.Transient},
	sms.ClassProviderRejected:       {channel.Permanent},
	sms.ClassProviderConfig:         {channel.Transient},
	sms.ClassFlashUnsupported:       {channel.Permanent},
	email.ClassAuth:                 {channel.Transient},
	email.ClassTLSRequired:          {channel.Transient},
	email.ClassProtocol:             {channel.Transient},
	"smtp_utf8_unsupported":         {channel.Permanent},
	smppch.ClassThrottled:           {channel.Transient},
	smppch.ClassQueueFull:           {channel.Transient},
	smppch.ClassNotBound:            {channel.Transient},
	smppch.ClassConnectionLost:      {channel.Transient},
	smppch.ClassResponseTimeout:     {channel.Transient},
	smppch.ClassBadResponse:         {channel.Transient},
	smppch.ClassClosed:              {channel.Transient},
	smppch.ClassTooLong:             {channel.Permanent},
	callback.ClassOrder:             {channel.Transient},
	callback.ClassNoSubscription:    {channel.Permanent},
	callback.ClassLookup:            {channel.Transient, channel.Permanent},
	callback.ClassBadSecret:         {channel.Permanent},
	dispatch.ClassNoRoute:           {channel.Permanent},
	dispatch.ClassExpired:           {channel.Permanent},
	dispatch.ClassAttemptsExhausted: {channel.Transient},
	dispatch.ClassDelivererPanic:    {channel.Permanent},
	dispatch.ClassTemplateError:     {channel.Permanent},
}

// statusClassification matches the classifications that carry a status:
// an HTTP answer (webhook, SMS providers), an SMTP reply, an SMPP
// command_status.
var statusClassification = regexp.MustCompile(`^(?:(http|smtp)_([1-5][0-9][0-9])|smpp_0x([0-9a-f]{8}))$`)

// classesOf returns the outcome classes a dead letter of classification c
// comes with; none for a classification no channel gives a dead letter.
func classesOf(c string) []channel.Class {
	if cl, ok := failureClasses[c]; ok {
		return cl
	}
	m := statusClassification.FindStringSubmatch(c)
	switch {
	case m == nil:
		return nil
	case m[3] != "":
		st, _ := strconv.ParseUint(m[3], 16, 32)
		return []channel.Class{smppch.StatusOutcome(smpp.Status(st)).Class}
	}
	code, _ := strconv.Atoi(m[2])
	switch {
	case code < 300:
		return nil // delivered
	case m[1] == "smtp" && code < 500, m[1] == "http" && (code == 408 || code == 429 || code >= 500):
		return []channel.Class{channel.Transient} // the channels' rules (webhook, sms, email)
	}
	return []channel.Class{channel.Permanent}
}

// classificationGroups are the outcome classes a filter's Classification
// takes as well as one classification.
var classificationGroups = map[string]channel.Class{
	channel.Transient.String(): channel.Transient,
	channel.Permanent.String(): channel.Permanent,
}

// ClassificationHelp is the help of `herald dead-letters` -classification:
// the valid values.
func ClassificationHelp() string {
	return "only this failure classification, or every one of an outcome class: " + validClassifications()
}

func validClassifications() string {
	fixed := make([]string, 0, len(failureClasses))
	for c := range failureClasses {
		fixed = append(fixed, c)
	}
	slices.Sort(fixed)
	return "transient, permanent, " + strings.Join(fixed, ", ") + ", http_NNN, smtp_NNN or smpp_0xXXXXXXXX"
}

// checkClassification refuses a classification no dead letter can have;
// c may list several, comma-separated.
func checkClassification(c string) error {
	if c == "" {
		return nil
	}
	for one := range strings.SplitSeq(c, ",") {
		if _, group := classificationGroups[one]; group || len(classesOf(one)) > 0 {
			continue
		}
		return fmt.Errorf("invalid -classification %q: want %s (several comma-separated)", one, validClassifications())
	}
	return nil
}

// presentClassifications returns the classifications the database's dead
// letters have.
func (o *Operator) presentClassifications(ctx context.Context) ([]string, error) {
	rows, err := o.q.DeadLetterCountByClassification(ctx, o.pool)
	if err != nil {
		return nil, fmt.Errorf("count dead letters by classification: %w", err)
	}
	present := make([]string, len(rows))
	for i, r := range rows {
		present[i] = r.Classification
	}
	return present, nil
}

// ExpandClassification turns each group (transient, permanent) among f's
// Classification (one, or several comma-separated) into the
// classifications of that class the database's dead letters have (see
// expandClassification); any other it leaves as it is.
func (o *Operator) ExpandClassification(ctx context.Context, f *Filter) error {
	if !slices.ContainsFunc(strings.Split(f.Classification, ","), func(c string) bool {
		_, group := classificationGroups[c]
		return group
	}) {
		return nil
	}
	present, err := o.presentClassifications(ctx)
	if err != nil {
		return err
	}
	var all []string
	for one := range strings.SplitSeq(f.Classification, ",") {
		for c := range strings.SplitSeq(expandClassification(one, present), ",") {
			if !slices.Contains(all, c) {
				all = append(all, c)
			}
		}
	}
	f.Classification = strings.Join(all, ",")
	return nil
}

// LeavePermanentOut narrows f, when it names no classification, to the
// dead letters that did not fail permanently (a classification whose only
// outcome class is permanent: an invalid number, HTTP 400), which a replay
// would only dead-letter again; a classification it does not know stays
// in. It returns how many dead letters it left out of f. A filter that
// names classifications is left as asked.
func (o *Operator) LeavePermanentOut(ctx context.Context, f *Filter) (int64, error) {
	if f.Classification != "" {
		return 0, nil
	}
	present, err := o.presentClassifications(ctx)
	if err != nil {
		return 0, err
	}
	keep := slices.DeleteFunc(slices.Clone(present), permanentOnly)
	if len(keep) == len(present) {
		return 0, nil
	}
	all, err := o.CountDeadLetters(ctx, *f)
	if err != nil {
		return 0, err
	}
	// A group name no dead letter has matches nothing.
	f.Classification = cmp.Or(strings.Join(keep, ","), channel.Transient.String())
	kept, err := o.CountDeadLetters(ctx, *f)
	if err != nil {
		return 0, err
	}
	return all - kept, nil
}

// permanentOnly reports whether classification c comes with a permanent
// outcome only.
func permanentOnly(c string) bool {
	cl := classesOf(c)
	return len(cl) > 0 && !slices.Contains(cl, channel.Transient)
}

// expandClassification returns the filter value for classification c: c
// itself, or for a group the classifications of that class among present
// (those the dead letters have), comma-separated as the dead-letter
// queries take a set. A group none of present belongs to stays itself,
// which matches nothing.
func expandClassification(c string, present []string) string {
	class, group := classificationGroups[c]
	if !group {
		return c
	}
	var in []string
	for _, p := range present {
		if slices.Contains(classesOf(p), class) && !slices.Contains(in, p) {
			in = append(in, p)
		}
	}
	if len(in) == 0 {
		return c
	}
	return strings.Join(in, ",")
}
