package canonjson_test

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/canonjson"
	"github.com/heraldhq/herald/internal/harness/canonjsonref"
)

// benchContent is the content of internal/harness/bench's payload(256): a JSON
// object of exactly 256 bytes.
func benchContent() []byte {
	const frame = `{"pad":""}`
	return []byte(`{"pad":"` + strings.Repeat("x", 256-len(frame)) + `"}`)
}

// BenchmarkCanonicalJSON compares the scanner with the encoding/json
// reference (canonjsonref) on the bench's content.
func BenchmarkCanonicalJSON(b *testing.B) {
	raw := benchContent()
	for _, impl := range []struct {
		name string
		fn   func([]byte) ([]byte, error)
	}{{"reference", canonjsonref.Canonical}, {"scanner", canonjson.Canonical}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := impl.fn(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFingerprint compares Fingerprint with the encoding/json
// reference on the request of the bench's validated intent.
func BenchmarkFingerprint(b *testing.B) {
	r := &canonjson.Request{
		NotificationType: "bench.notify",
		Producer:         "bench-run",
		IdempotencyKey:   "run-7",
		Channels:         []string{"webhook"},
		Webhook:          []string{"https://bench.example.com/hook/0"},
		Content:          []byte(`{"webhook":` + string(benchContent()) + `}`),
		Priority:         "transactional",
	}
	for _, impl := range []struct {
		name string
		fn   func(*canonjson.Request) string
	}{{"reference", canonjsonref.Fingerprint}, {"direct", canonjson.Fingerprint}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				impl.fn(r)
			}
		})
	}
}
