package bench

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/intake"
)

// benchProducer is the producer name of the measured intents; the idle
// probes use another, so the measured figures exclude them.
const (
	benchProducer = "herald-bench"
	idleProducer  = "herald-bench-idle"
	benchType     = "bench.ping"
)

// payload returns a JSON object of exactly n bytes (n >= 16), the content
// every notification carries.
func payload(n int) json.RawMessage {
	const frame = `{"pad":""}` // 10 bytes
	if n < len(frame) {
		n = len(frame)
	}
	return json.RawMessage(`{"pad":"` + strings.Repeat("x", n-len(frame)) + `"}`)
}

// workload builds the intents of a run.
type workload struct {
	runID string
	// producer is the measured intents' producer: one per phase, so a
	// phase's summary reads only its own routes.
	producer string
	routes   int
	content  json.RawMessage
	// probe is the content of idle probes: the same size, marked.
	probe json.RawMessage
	// dest is the webhook destination prefix; route j of an intent goes to
	// dest + "/" + j.
	dest string
	// sms makes the intents SMS ones (the provider and receipts modes):
	// route j of an intent goes to smsNumber(j), with smsBody (or
	// smsProbe) as its text.
	sms               bool
	smsBody, smsProbe string
	// smsContent is smsBody as an SMS route's content.
	smsContent json.RawMessage
}

// smsContent returns an SMS route's content of text body.
func smsContent(body string) json.RawMessage {
	c, _ := json.Marshal(intake.SMSContent{Body: body}) // one string field: cannot fail
	return c
}

// smsNumber is the phone number of an SMS intent's route j: UK mobile
// numbers (07911 000000 onwards), which the intake's validation takes as
// valid (the range Ofcom sets aside for drama is not, to libphonenumber).
// They go only to the bench's loopback sink.
func smsNumber(j int) string { return fmt.Sprintf("+447911%06d", j) }

// smsProbeMarker starts an SMS probe's text, so the sink can tell a probe
// from the workload in the provider's request.
const smsProbeMarker = "bench-probe-"

// benchHookURL is the bench's webhook destination prefix: the in-process
// engine never dials it, and serve processes get the sink's URL instead.
const benchHookURL = "https://bench.example.com/hook"

// newWorkload returns the workload of run id: routes webhook routes per
// intent, content of c's payload size, a producer of its own.
func newWorkload(c *Config, id string, routes int) *workload {
	w := &workload{runID: id, producer: benchProducer + "-" + id, routes: routes,
		content: payload(c.PayloadBytes), probe: probePayload(c.PayloadBytes), dest: benchHookURL,
		smsBody:  strings.Repeat("x", c.PayloadBytes),
		smsProbe: smsProbeMarker + strings.Repeat("x", max(c.PayloadBytes-len(smsProbeMarker), 0))}
	w.smsContent = smsContent(w.smsBody)
	return w
}

// intent returns intent number i of producer.
func (w *workload) intent(producer string, i int) intake.Intent {
	if w.sms {
		nums := make([]string, w.routes)
		for j := range nums {
			nums[j] = smsNumber(j)
		}
		return intake.Intent{
			NotificationType: benchType,
			Producer:         producer,
			IdempotencyKey:   fmt.Sprintf("%s-%d", w.runID, i),
			Audience:         intake.Audience{SMS: nums},
			Channels:         []string{channel.SMS},
			Content:          intake.Content{SMS: &intake.SMSContent{Body: w.smsBody}},
		}
	}
	hooks := make([]string, w.routes)
	for j := range hooks {
		hooks[j] = fmt.Sprintf("%s/%d", w.dest, j)
	}
	return intake.Intent{
		NotificationType: benchType,
		Producer:         producer,
		IdempotencyKey:   fmt.Sprintf("%s-%d", w.runID, i),
		Audience:         intake.Audience{Webhook: hooks},
		Channels:         []string{channel.Webhook},
		Content:          intake.Content{Webhook: w.content},
	}
}

// routeJob returns where route j of an intent goes and the content it
// carries, as herald stores them for the route's delivery: what River's
// job holds. probe asks for a probe's.
func (w *workload) routeJob(j int, probe bool) (dest string, content json.RawMessage) {
	if w.sms {
		if probe {
			return smsNumber(j), smsContent(w.smsProbe)
		}
		return smsNumber(j), w.smsContent
	}
	if probe {
		return fmt.Sprintf("%s/%d", w.dest, j), w.probe
	}
	return fmt.Sprintf("%s/%d", w.dest, j), w.content
}

// probeIntent returns probe intent i: marked content, its own producer.
func (w *workload) probeIntent(i int) intake.Intent {
	in := w.intent(idleProducer, i)
	if w.sms {
		in.Content.SMS = &intake.SMSContent{Body: w.smsProbe}
		in.Audience.SMS = in.Audience.SMS[:1]
		return in
	}
	in.Content.Webhook = w.probe
	in.Audience.Webhook = in.Audience.Webhook[:1]
	return in
}

// batch returns intents [from, to) of producer.
func (w *workload) batch(producer string, from, to int) []intake.Intent {
	b := make([]intake.Intent, 0, to-from)
	for i := from; i < to; i++ {
		b = append(b, w.intent(producer, i))
	}
	return b
}
