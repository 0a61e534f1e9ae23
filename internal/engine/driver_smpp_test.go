package engine

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/harness/smsctest"
)

func TestFromConfig_SMPPPasswordFromEnv(t *testing.T) {
	t.Parallel()
	smsc, err := smsctest.Start(t, smsctest.Config{SystemID: "herald", Password: "s3cret"})
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(smsc.Addr())
	require.NoError(t, err)
	p, _ := strconv.Atoi(port)
	ch := config.Channel{Driver: config.DriverSMPP, SMPP: config.SMPPDriver{
		Host: host, Port: p, SystemID: "herald", Password: config.Secret{Env: "SMSC_PASSWORD"}, SourceAddr: "HERALD",
	}}
	_, err = deliverer("sms/smsc", ch, driverEnv{getenv: env(nil), logger: discardLogger()})
	require.EqualError(t, err, "smpp.password: environment variable SMSC_PASSWORD is empty or unset")

	d, err := deliverer("sms/smsc", ch, driverEnv{getenv: env(map[string]string{"SMSC_PASSWORD": "s3cret"}), logger: discardLogger()})
	require.NoError(t, err)
	defer closeQuietly(d)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	content, _ := json.Marshal(map[string]string{"body": "hello"})
	out := d.Deliver(ctx, &channel.Message{Address: "+254711000001", Content: content})
	require.Equal(t, channel.Delivered, out.Class, out.Message)
	require.NotEmpty(t, out.ProviderMessageID)
	require.Equal(t, "hello", smsc.Messages()[0].Body)
}
