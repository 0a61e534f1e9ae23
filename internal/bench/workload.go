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
}

// benchHookURL is the bench's webhook destination prefix: the in-process
// engine never dials it, and serve processes get the sink's URL instead.
const benchHookURL = "https://bench.example.com/hook"

// newWorkload returns the workload of run id: routes webhook routes per
// intent, content of c's payload size, a producer of its own.
func newWorkload(c *Config, id string, routes int) *workload {
	return &workload{runID: id, producer: benchProducer + "-" + id, routes: routes,
		content: payload(c.PayloadBytes), probe: probePayload(c.PayloadBytes), dest: benchHookURL}
}

// intent returns intent number i of producer.
func (w *workload) intent(producer string, i int) intake.Intent {
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

// probeIntent returns probe intent i: marked content, its own producer.
func (w *workload) probeIntent(i int) intake.Intent {
	in := w.intent(idleProducer, i)
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
