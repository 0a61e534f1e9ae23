package smpp_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/heraldhq/herald/internal/harness/smsctest"
	"github.com/heraldhq/herald/internal/smpp"
)

// BenchmarkSubmit measures submit_sm per second through one bind and
// through four to the test SMSC answering at once, for several window
// sizes; enough goroutines submit to keep every window full.
//
//	go test -run '^$' -bench BenchmarkSubmit -benchtime 3s ./internal/smpp/
func BenchmarkSubmit(b *testing.B) {
	for _, binds := range []int{1, 4} {
		for _, window := range []int{1, 10, 50, 200} {
			b.Run(fmt.Sprintf("binds=%d/window=%d", binds, window), func(b *testing.B) {
				smsc, err := smsctest.Start(b, smsctest.Config{SystemID: "bench", Password: "pw"})
				if err != nil {
					b.Fatal(err)
				}
				client, err := smpp.NewClient(smpp.ClientConfig{Addr: smsc.Addr(), SystemID: "bench", Password: "pw",
					Binds: binds, Window: window})
				if err != nil {
					b.Fatal(err)
				}
				defer client.Close()
				ctx := context.Background()
				if err := smsc.WaitBound(ctx, binds); err != nil {
					b.Fatal(err)
				}
				sm := textSM("254711000001", "Your code is 123456")
				b.SetParallelism(max(1, (2*binds*window+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0)))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						res, err := client.Submit(ctx, sm)
						if err != nil || res.Status != smpp.StatusOK {
							b.Errorf("submit: %v %v", err, res.Status)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "submits/s")
			})
		}
	}
}
