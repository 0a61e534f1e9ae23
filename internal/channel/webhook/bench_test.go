package webhook

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
)

// BenchmarkDeliver delivers to a loopback receiver that answers 204 at
// once, as the bench's sink does: the driver's cost per delivery (request
// building, signing, the transport), with the receiver's in the same
// process.
func BenchmarkDeliver(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	d, err := New(Config{Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, AllowPrivate: true, Concurrency: 100})
	require.NoError(b, err)
	defer d.Close()
	msg := testMessage(srv.URL + "/hook/rte_456")
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if out := d.Deliver(b.Context(), msg); out.Class != channel.Delivered {
				b.Fatal(out.Message)
			}
		}
	})
}
