package receipt_test

import (
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/receipt"
	"github.com/heraldhq/herald/internal/routing"
)

func secretEnv(name string) config.Secret { return config.Secret{Env: name} }

// acmeEndpoint serves the receipts endpoint, storing into pool, for one
// provider, sms/acme, whose token is s3cret.
func acmeEndpoint(t *testing.T, pool *pgxpool.Pool) *httptest.Server {
	settings := map[string]*routing.Receipts{"sms/acme": {Token: secretEnv("ACME_TOKEN")}}
	srv := httptest.NewServer(receipt.Handler(receipt.HandlerConfig{
		Pool:         pool,
		ReceiptsFunc: func(p string) *routing.Receipts { return settings[p] },
		GetenvFunc:   func(string) string { return "s3cret" },
	}))
	t.Cleanup(srv.Close)
	return srv
}
