package routing_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/routing"
)

const receiptsFile = `
providers:
  - name: sms/acme
    driver: sms-http
    sms_http: {url: "https://api.acme.example/sms", api_key: {env: ACME_KEY}}
    receipts:
      method: GET
      id_field: msgid
      status_field: stat
      error_field: err
      token: {env: ACME_RECEIPTS_TOKEN}
      statuses: {OK: delivered, NOPE: undelivered}
      temporary_errors: ["T1"]
      window: 30s
`

func TestReceipts_SettingsRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.apply(t, receiptsFile, nil)
	table, err := routing.Load(context.Background(), b.pool)
	require.NoError(t, err)
	r := table.Providers["sms/acme"].Receipts
	require.NotNil(t, r)
	require.Equal(t, "GET", r.Method)
	id, status, errField := r.Fields()
	require.Equal(t, []string{"msgid", "stat", "err"}, []string{id, status, errField})
	require.Equal(t, "ACME_RECEIPTS_TOKEN", r.Token.Env)
	require.Equal(t, 30*time.Second, r.WindowOrDefault())
	require.Equal(t, routing.DeliveryDelivered, r.MapStatus("ok"))
	require.Equal(t, routing.DeliveryUndelivered, r.MapStatus("NOPE"))
	require.Equal(t, routing.DeliveryDelivered, r.MapStatus("DELIVRD"), "the defaults still apply")
	require.Equal(t, routing.DeliveryExpired, r.MapStatus("EXPIRED"))
	require.Equal(t, routing.DeliveryUnknown, r.MapStatus("whatever"))
	require.False(t, r.Permanent("T1"))
	require.True(t, r.Permanent("P9"))
	// Applying the same file again changes nothing.
	require.Empty(t, b.apply(t, receiptsFile, nil))
}

func TestReceipts_SettingsRefusedNamingField(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ receipts, want string }{
		"NoToken":   {`{method: POST}`, "providers[0].receipts.token: required"},
		"BadMethod": {`{method: PUT, token: {env: X}}`, `providers[0].receipts.method: "PUT" is not POST or GET`},
		"BadFormat": {`{format: xml, token: {env: X}}`, `providers[0].receipts.format: "xml" is not json or form`},
		"BadStatus": {`{token: {env: X}, statuses: {OK: fine}}`, `providers[0].receipts.statuses.OK: "fine" is not delivered`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := routing.Parse([]byte(`
providers:
  - name: sms/acme
    driver: sms-http
    sms_http: {url: "https://api.acme.example/sms", api_key: {env: ACME_KEY}}
    receipts: ` + tc.receipts + "\n"))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestReceipts_SMPPNeedsNoHTTPToken: an SMPP provider's receipts
// arrive on its binds, so its receipts settings stand without the HTTP
// endpoint's token.
func TestReceipts_SMPPNeedsNoHTTPToken(t *testing.T) {
	t.Parallel()
	tbl, err := routing.Parse([]byte(`
providers:
  - name: sms/smsc
    driver: smpp
    smpp: {host: smsc.example, system_id: herald, password: {env: P}}
    receipts: {retry_temporary: true, temporary_errors: ["088"]}
`))
	require.NoError(t, err)
	rc := tbl.Providers[0].Receipts
	require.True(t, rc.RetryTemporary)
	require.True(t, rc.Retries(routing.DeliveryUndelivered, "088"))
}
