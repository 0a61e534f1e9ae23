package config

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "herald.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

const fullFile = `
dispatch:
  batch_size: 50
  poll_interval: 250ms
intake:
  batch_size: 200
channels:
  email:
    driver: smtp
    concurrency: 4
    max_attempts: 5
    backoff: {base: 2s, cap: 1m}
    timeout: 10s
    lease: 40s
    smtp:
      host: smtp.example.com
      from: noreply@example.com
      username: herald
      password: {env: SMTP_PASSWORD}
  sms:
    driver: sms-http
    sms_http:
      url: https://sms.example.com/send
      api_key: {file: KEYFILE}
  webhook:
    driver: webhook
    webhook:
      secrets: {env: WEBHOOK_SECRETS}
`

func TestLoad_ReadsFileAndResolvesSecrets(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyFile, []byte("sk-123\n"), 0o600))
	path := writeFile(t, replace(fullFile, "KEYFILE", keyFile))
	getenv := env(map[string]string{"SMTP_PASSWORD": "pw", "WEBHOOK_SECRETS": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
	c, err := Load(path, getenv)
	require.NoError(t, err)
	require.Equal(t, 50, c.Dispatch.BatchSize)
	require.Equal(t, 250*time.Millisecond, c.Dispatch.PollInterval)
	require.Equal(t, []string{"email", "sms", "webhook"}, c.ChannelNames())
	require.Equal(t, 4, c.Channels["email"].Concurrency)
	require.Equal(t, 2*time.Second, c.Channels["email"].Backoff.Base)
}

func TestLoad_EnvironmentOverridesFile(t *testing.T) {
	t.Parallel()
	c, err := Load("", env(map[string]string{
		"HERALD_CHANNELS_WEBHOOK_DRIVER":      "discard",
		"HERALD_CHANNELS_WEBHOOK_CONCURRENCY": "64",
		"HERALD_CHANNELS_SMS_DRIVER":          "log",
		"HERALD_DISPATCH_POLL_INTERVAL":       "2s",
		"HERALD_DISPATCH_LOCK_TIMEOUT":        "500ms",
		"HERALD_DISPATCH_STATEMENT_TIMEOUT":   "5s",
		"HERALD_DISPATCH_STALL_TIMEOUT":       "30s",
		"HERALD_INTAKE_IDEMPOTENCY_WINDOW":    "72h",
		"HERALD_INTAKE_MAX_PAYLOAD_BYTES":     "1024",
		"HERALD_HEARTBEAT_INTERVAL":           "2s",
	}))
	require.NoError(t, err)
	require.Equal(t, []string{"sms", "webhook"}, c.ChannelNames())
	require.Equal(t, 64, c.Channels["webhook"].Concurrency)
	require.Equal(t, 2*time.Second, c.Dispatch.PollInterval)
	require.Equal(t, 2*time.Second, c.Heartbeat.Interval)
}

func TestLoad_RefusesMistakesNamingField(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		file string
		env  map[string]string
		want string
	}{
		"NoChannels":     {"", nil, "channels: none configured"},
		"UnknownField":   {"channels:\n  sms:\n    driver: log\n    concurency: 3\n", nil, "field concurency not found"},
		"BadDriver":      {"channels:\n  sms:\n    driver: pigeon\n", nil, `channels.sms.driver: "pigeon"`},
		"MissingDriver":  {"channels:\n  sms:\n    concurrency: 2\n", nil, "channels.sms.driver: required"},
		"SMTPHost":       {"channels:\n  email:\n    driver: smtp\n    smtp: {from: a@b.c}\n", nil, "channels.email.smtp.host: required"},
		"UnsetSecretEnv": {"channels:\n  webhook:\n    driver: webhook\n    webhook: {secrets: {env: NOPE}}\n", nil, "channels.webhook.webhook.secrets: environment variable NOPE is empty or unset"},
		"LeaseTooShort":  {"channels:\n  sms:\n    driver: log\n    timeout: 10s\n    lease: 5s\n", nil, "channels.sms.lease: 5s must exceed timeout 10s"},
		"BadEnvDuration": {"", map[string]string{"HERALD_CHANNELS_SMS_DRIVER": "log", "HERALD_CHANNELS_SMS_TIMEOUT": "soon"}, "HERALD_CHANNELS_SMS_TIMEOUT"},
		"BadDuration":    {"dispatch:\n  poll_interval: 1us\nchannels:\n  sms: {driver: log}\n", nil, "dispatch.poll_interval"},
		"ShortWindow":    {"intake:\n  idempotency_window: 1s\nchannels:\n  sms: {driver: log}\n", nil, "intake.idempotency_window"},
		"TinyLockWait":   {"dispatch:\n  lock_timeout: 10us\nchannels:\n  sms: {driver: log}\n", nil, "dispatch.lock_timeout: must be at least 1ms"},
		"NegativeStall":  {"", map[string]string{"HERALD_CHANNELS_SMS_DRIVER": "log", "HERALD_DISPATCH_STALL_TIMEOUT": "-1s"}, "dispatch.stall_timeout"},
		"TinyHeartbeat":  {"", map[string]string{"HERALD_CHANNELS_SMS_DRIVER": "log", "HERALD_HEARTBEAT_INTERVAL": "1ms"}, "heartbeat.interval"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := ""
			if tc.file != "" {
				path = writeFile(t, tc.file)
			}
			_, err := Load(path, env(tc.env))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestSecret_NeverPrintsItsValue(t *testing.T) {
	t.Parallel()
	s := Secret{Env: "SMTP_PASSWORD"}
	v, err := s.Resolve(env(map[string]string{"SMTP_PASSWORD": "hunter2"}))
	require.NoError(t, err)
	require.Equal(t, "hunter2", v)
	require.Equal(t, "env SMTP_PASSWORD", s.String())
	require.NotContains(t, s.String(), "hunter2")
}

func TestLoad_DocumentedExampleLoads(t *testing.T) {
	t.Parallel()
	getenv := env(map[string]string{
		"HERALD_SMTP_PASSWORD":    "pw",
		"HERALD_SMS_API_KEY":      "sk",
		"HERALD_WEBHOOK_SECRETS":  "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw whsec_dGhpcyBpcyBhbiBvbGRlciBrZXk=",
		"HERALD_API_DATABASE_URL": "postgres://api@db/herald",
	})
	c, err := Load("example.yaml", getenv)
	require.NoError(t, err)
	require.Equal(t, []string{"email", "sms", "webhook"}, c.ChannelNames())
	require.Empty(t, c.API.Listen, "the API is off unless configured")
	require.Equal(t, 500, c.API.MaxBatch)
}

func TestLoad_APINeedsOwnDatabaseURL(t *testing.T) {
	t.Parallel()
	base := map[string]string{"HERALD_CHANNELS_SMS_DRIVER": "log", "HERALD_API_LISTEN": "127.0.0.1:0"}
	_, err := Load("", env(base))
	require.ErrorContains(t, err, "api.database_url: required with api.listen")
	base["HERALD_API_DATABASE_URL"] = "postgres://api@db/herald"
	base["HERALD_API_RATE_LIMIT"] = "2.5"
	base["HERALD_API_MAX_BATCH"] = "100"
	c, err := Load("", env(base))
	require.NoError(t, err)
	require.Equal(t, Secret{Env: "HERALD_API_DATABASE_URL"}, c.API.DatabaseURL)
	require.Equal(t, 2.5, c.API.RateLimit)
	require.Equal(t, 100, c.API.MaxBatch)
	base["HERALD_API_RATE_LIMIT"] = "fast"
	_, err = Load("", env(base))
	require.ErrorContains(t, err, "HERALD_API_RATE_LIMIT")
}

func TestLoad_ListenerBoundsFromFileAndEnv(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "receipts:\n  listen: \":0\"\n  read_timeout: 5s\n  max_client_conns: 7\n"+
		"api:\n  listen: \":0\"\n  database_url: {env: API_URL}\n  idle_timeout: 9s\n  auth_failure_burst: 3\n"+
		"channels:\n  sms: {driver: log}\n")
	c, err := Load(file, env(map[string]string{
		"API_URL":                          "postgres://api@db/herald",
		"HERALD_RECEIPTS_WRITE_TIMEOUT":    "6s",
		"HERALD_RECEIPTS_IDLE_TIMEOUT":     "8s",
		"HERALD_RECEIPTS_MAX_CLIENT_CONNS": "70",
		"HERALD_API_IDLE_TIMEOUT":          "90s",
		"HERALD_API_MAX_CLIENT_CONNS":      "11",
		"HERALD_API_AUTH_FAILURE_RATE":     "0.5",
		"HERALD_API_AUTH_FAILURE_ADDRS":    "99",
	}))
	require.NoError(t, err)
	require.Equal(t, Receipts{Listen: ":0", ReadTimeout: 5 * time.Second, WriteTimeout: 6 * time.Second,
		IdleTimeout: 8 * time.Second, MaxClientConns: 70}, c.Receipts)
	require.Equal(t, 90*time.Second, c.API.IdleTimeout)
	require.Equal(t, 11, c.API.MaxClientConns)
	require.Equal(t, 0.5, c.API.AuthFailureRate)
	require.Equal(t, 3, c.API.AuthFailureBurst)
	require.Equal(t, 99, c.API.AuthFailureAddrs)

	for key, want := range map[string]string{
		"HERALD_RECEIPTS_IDLE_TIMEOUT":     "receipts: timeouts",
		"HERALD_RECEIPTS_MAX_CLIENT_CONNS": "receipts.max_client_conns",
		"HERALD_API_MAX_CLIENT_CONNS":      "api.max_client_conns",
		"HERALD_API_AUTH_FAILURE_BURST":    "api.auth_failure_rate",
	} {
		value := "-1"
		if strings.HasSuffix(key, "TIMEOUT") {
			value = "-1s"
		}
		_, err := Load("", env(map[string]string{"HERALD_CHANNELS_SMS_DRIVER": "log", key: value}))
		require.ErrorContains(t, err, want, key)
	}
}

func TestValidateDriver_ChecksCredentialsUnread(t *testing.T) {
	t.Parallel()
	ch := Channel{Driver: DriverSMSHTTP, SMSHTTP: SMSHTTPDriver{URL: "https://sms.example.com", APIKey: Secret{File: "/nonexistent/key"}}}
	require.NoError(t, ch.ValidateDriver(), "a file that is not here is fine: serve reads it")
	require.Error(t, ch.validate(env(nil)), "validate reads it")

	ch.SMSHTTP.APIKey = Secret{}
	require.EqualError(t, ch.ValidateDriver(), "sms_http.api_key: required: set env or file")
	ch.SMSHTTP.APIKey = Secret{Env: "K", File: "/k"}
	require.EqualError(t, ch.ValidateDriver(), "sms_http.api_key: set env or file, not both")
	require.EqualError(t, Channel{Driver: DriverSMTP, SMTP: SMTPDriver{Host: "h"}}.ValidateDriver(), "smtp.from: required")
	require.EqualError(t, Channel{Driver: "fax"}.ValidateDriver(), `driver: "fax" is not webhook, smtp, sms-http, smpp, log or discard`)
}

func TestValidateDriver_SMPPNamesTheField(t *testing.T) {
	t.Parallel()
	ok := SMPPDriver{Host: "smsc.example.com", SystemID: "herald", Password: Secret{Env: "SMSC_PASSWORD"}}
	require.NoError(t, Channel{Driver: DriverSMPP, SMPP: ok}.ValidateDriver())
	for want, mutate := range map[string]func(*SMPPDriver){
		"smpp.host: required":                                               func(s *SMPPDriver) { s.Host = "" },
		"smpp.system_id: required":                                          func(s *SMPPDriver) { s.SystemID = "" },
		"smpp.system_id: must be at most 15 characters":                     func(s *SMPPDriver) { s.SystemID = "a-very-long-system-id" },
		"smpp.password: required: set env or file":                          func(s *SMPPDriver) { s.Password = Secret{} },
		"smpp.port: must be between 1 and 65535":                            func(s *SMPPDriver) { s.Port = 70000 },
		"smpp.binds: must be between 1 and 64":                              func(s *SMPPDriver) { s.Binds = 65 },
		"smpp.window: must be between 1 and 1000":                           func(s *SMPPDriver) { s.Window = -1 },
		`smpp.long_messages: "split" is not udh, sar or payload`:            func(s *SMPPDriver) { s.LongMessages = "split" },
		`smpp.receipts: "always" is not final, failure or none`:             func(s *SMPPDriver) { s.Receipts = "always" },
		"smpp.source_addr: must be at most 20 characters":                   func(s *SMPPDriver) { s.SourceAddr = "ABCDEFGHIJKLMNOPQRSTUVWXYZ" },
		"smpp.dead_peer_timeout: 10s must exceed enquire_link_interval 30s": func(s *SMPPDriver) { s.DeadPeerTimeout = 10 * time.Second },
	} {
		s := ok
		mutate(&s)
		require.EqualError(t, Channel{Driver: DriverSMPP, SMPP: s}.ValidateDriver(), want)
	}
	require.ErrorContains(t, Channel{Driver: DriverSMPP, SMPP: SMPPDriver{Host: "h", SystemID: "x", Password: Secret{}, SourceTON: "intl"}}.ValidateDriver(),
		`smpp.source_ton: "intl" is not one of`)
}

func TestLoad_SMPPChannelFromFile(t *testing.T) {
	t.Parallel()
	path := writeFile(t, `
channels:
  sms:
    driver: smpp
    smpp:
      host: 127.0.0.1
      port: 2775
      system_id: herald
      password: {env: SMSC_PASSWORD}
      binds: 2
      window: 20
      long_messages: sar
      enquire_link_interval: 15s
`)
	c, err := Load(path, env(map[string]string{"SMSC_PASSWORD": "pw"}))
	require.NoError(t, err)
	s := c.Channels["sms"].SMPP
	require.Equal(t, 2, s.Binds)
	require.Equal(t, 15*time.Second, s.EnquireLinkInterval)
	_, err = Load(path, env(nil))
	require.EqualError(t, err, "channels.sms.smpp.password: environment variable SMSC_PASSWORD is empty or unset")
}

// TestAPISettings_EachHasAnEnvironmentVariable walks the api section's
// settings: each has HERALD_API_<SETTING>, which wins over the file, is
// named in example.yaml, and names itself when its value does not parse.
func TestAPISettings_EachHasAnEnvironmentVariable(t *testing.T) {
	t.Parallel()
	example, err := os.ReadFile("example.yaml")
	require.NoError(t, err)
	var file strings.Builder
	file.WriteString("channels:\n  sms: {driver: log}\napi:\n  database_url: {env: API_URL}\n")
	envs := map[string]string{"API_URL": "postgres://api@db/herald"}
	bad := map[string]string{}
	typ := reflect.TypeFor[API]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := f.Tag.Get("yaml")
		key := "HERALD_API_" + strings.ToUpper(name)
		require.Contains(t, string(example), key, "example.yaml names %s", key)
		if name == "database_url" { // the variable holds the URL itself
			continue
		}
		var inFile, inEnv string
		switch {
		case f.Type == reflect.TypeFor[time.Duration]():
			inFile, inEnv, bad[key] = fmt.Sprintf("%ds", 10+i), fmt.Sprintf("%ds", 20+i), "soon"
		case f.Type.Kind() == reflect.String:
			inFile, inEnv = fmt.Sprintf("127.0.0.1:%d", 8000+i), fmt.Sprintf("127.0.0.1:%d", 9000+i)
		case f.Type.Kind() == reflect.Float64:
			inFile, inEnv, bad[key] = fmt.Sprintf("%d.5", 10+i), fmt.Sprintf("%d.5", 20+i), "NaN"
		default:
			inFile, inEnv, bad[key] = fmt.Sprint(10+i), fmt.Sprint(20+i), "1.5"
		}
		fmt.Fprintf(&file, "  %s: %s\n", name, inFile)
		envs[key] = inEnv
	}
	path := writeFile(t, file.String())

	fromFile, err := Load(path, env(map[string]string{"API_URL": envs["API_URL"]}))
	require.NoError(t, err)
	c, err := Load(path, env(envs))
	require.NoError(t, err)
	got, was := reflect.ValueOf(c.API), reflect.ValueOf(fromFile.API)
	for i := range typ.NumField() {
		name := typ.Field(i).Tag.Get("yaml")
		if name == "database_url" {
			continue
		}
		key := "HERALD_API_" + strings.ToUpper(name)
		require.NotEqual(t, was.Field(i).Interface(), got.Field(i).Interface(), "%s overrides api.%s", key, name)
		require.Equal(t, envs[key], fmt.Sprint(envValue(got.Field(i))), "%s overrides api.%s", key, name)
	}

	for key, v := range bad {
		e := maps.Clone(envs)
		e[key] = v
		_, err := Load(path, env(e))
		require.ErrorContains(t, err, key+": ", "a bad %s names it", key)
	}
}

// envValue formats a setting as the test's environment wrote it.
func envValue(v reflect.Value) string {
	if d, ok := v.Interface().(time.Duration); ok {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	if f, ok := v.Interface().(float64); ok {
		return fmt.Sprintf("%.1f", f)
	}
	return fmt.Sprint(v.Interface())
}
