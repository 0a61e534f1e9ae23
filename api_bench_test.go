package herald_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

// BenchmarkHTTPAPI compares the HTTP API with the Go client in one run, on
// one database: single submits from 16 goroutines over keep-alive
// connections against Submit from as many, and batches of 500 against
// SubmitMany of 500. The client connects as a producer's login and the API
// as its own (herald_api), so both pay row-level security; each pool has
// pgx's default size. Each intent is one SMS route. Compare req/s and
// intents/s between the HTTP and Client lines:
//
//	go run ./internal/harness/pgtemp/withpg go test -run '^$' -bench HTTPAPI -benchtime 3s .
func BenchmarkHTTPAPI(b *testing.B) {
	ctx := context.Background()
	admin := pgtemp.NewPool(b)
	producer, asProducer := pgtemp.Login(b, admin, "shop", "herald_producer")
	_, asAPI := pgtemp.Login(b, admin, "api", "herald_api")
	key, err := api.CreateKey(ctx, admin, producer, "bench", "bench")
	require.NoError(b, err)
	srv, err := api.New(&api.Config{Pool: asAPI})
	require.NoError(b, err)
	ts := httptest.NewServer(srv.Handler())
	b.Cleanup(ts.Close)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	client, err := herald.NewClient(asProducer, nil)
	require.NoError(b, err)
	b.Cleanup(client.Close)

	var seq atomic.Int64
	intent := func() *herald.Intent {
		in := smallIntent(int(seq.Add(1)))
		in.Producer = producer
		return in
	}
	post := func(path string, body any, want int) {
		j, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", ts.URL+path, bytes.NewReader(j))
		req.Header.Set("Authorization", "Bearer "+key.Secret)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			b.Error(err)
			return
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			b.Errorf("%s: %d %s", path, resp.StatusCode, out)
		}
	}
	perSecond := func(b *testing.B, perOp int) {
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "intents/s")
	}
	b.Run("Single/HTTP", func(b *testing.B) {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				post("/v1/notifications", intent(), http.StatusCreated)
			}
		})
		perSecond(b, 1)
	})
	b.Run("Single/Client", func(b *testing.B) {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := client.Submit(ctx, intent()); err != nil {
					b.Error(err)
				}
			}
		})
		perSecond(b, 1)
	})
	const batch = 500
	b.Run(fmt.Sprintf("Batch%d/HTTP", batch), func(b *testing.B) {
		for b.Loop() {
			ins := make([]*herald.Intent, batch)
			for i := range ins {
				ins[i] = intent()
			}
			post("/v1/notifications/batch", map[string]any{"intents": ins}, http.StatusOK)
		}
		perSecond(b, batch)
	})
	b.Run(fmt.Sprintf("Batch%d/Client", batch), func(b *testing.B) {
		for b.Loop() {
			ins := make([]*herald.Intent, batch)
			for i := range ins {
				ins[i] = intent()
			}
			res, err := client.SubmitMany(ctx, ins)
			if err != nil || res[0].Err != nil {
				b.Error(err, res[0].Err)
			}
		}
		perSecond(b, batch)
	})
}
