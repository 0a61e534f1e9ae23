package intake

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// benchContent is the content of internal/harness/bench's payload(256): a JSON
// object of exactly 256 bytes.
func benchContent() json.RawMessage {
	const frame = `{"pad":""}`
	return json.RawMessage(`{"pad":"` + strings.Repeat("x", 256-len(frame)) + `"}`)
}

// benchIntent is shaped like internal/harness/bench's workload.intent with one
// route per intent: one webhook address, 256-byte JSON content.
func benchIntent(i int) *Intent {
	return &Intent{
		NotificationType: "bench.notify",
		Producer:         "bench-run",
		IdempotencyKey:   "run-" + strconv.Itoa(i),
		Audience:         Audience{Webhook: []string{"https://bench.example.com/hook/0"}},
		Channels:         []string{channel.Webhook},
		Content:          Content{Webhook: benchContent()},
	}
}

// BenchmarkValidate validates intents shaped like herald bench's.
func BenchmarkValidate(b *testing.B) {
	in := benchIntent(7)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Validate(in, Limits{}, testNow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNormalizeURL compares normalizeURL with the reference on the
// bench's webhook address.
func BenchmarkNormalizeURL(b *testing.B) {
	for _, impl := range []struct {
		name string
		fn   func(string) (string, heraldtype.Code, string)
	}{{"reference", refNormalizeURL}, {"fastpath", normalizeURL}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				impl.fn("https://bench.example.com/hook/0")
			}
		})
	}
}
