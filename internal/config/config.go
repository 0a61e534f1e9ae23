// Package config reads `herald serve`'s configuration: a YAML file (JSON is
// YAML too) overlaid by HERALD_* environment variables, validated as a
// whole at start-up so a mistake stops serve with one line naming the
// field. Credentials are never in the file itself: each names an
// environment variable or a file to read them from, and a Secret never
// prints its value.
//
// The documented example is example.yaml in this directory; in short:
//
//	dispatch:
//	  batch_size: 500          # routes per claim (at most the free slots) and per completion write
//	  poll_interval: 1s        # longest sleep without a NOTIFY or a due route
//	  shutdown_timeout: 20s    # how long deliveries in flight may finish at SIGTERM
//	  lock_timeout: 2s         # the dispatcher's statements wait no longer for a lock
//	  statement_timeout: 10s   # nor run longer
//	  stall_timeout: 10s       # /readyz fails after this long without a successful claim or completion
//	heartbeat:
//	  interval: 5s             # how often the process records its readiness in herald.serve_processes
//	intake:
//	  batch_size: 500
//	  poll_interval: 1s
//	receipts:
//	  listen: ":8081"          # providers post delivery receipts here; off when empty
//	  read_timeout: 30s        # a request, headers and body, must arrive within this
//	  write_timeout: 30s       # its answer be written within this
//	  idle_timeout: 2m         # a keep-alive connection is closed after this long idle
//	  max_client_conns: 1024   # connections open at once; more wait unaccepted
//	channels:
//	  email:
//	    driver: smtp           # webhook | smtp | sms-http | smpp | log | discard
//	    concurrency: 16        # deliveries in flight
//	    max_attempts: 10       # for routes that do not set their own
//	    backoff: {base: 1s, cap: 10m}
//	    timeout: 30s           # one attempt
//	    lease: 1m              # must exceed timeout
//	    smtp:
//	      host: smtp.example.com
//	      port: 587
//	      tls: starttls        # starttls | opportunistic | implicit | none
//	      from: "Example <noreply@example.com>"
//	      username: herald
//	      password: {env: HERALD_SMTP_PASSWORD}
//	  sms:
//	    driver: sms-http
//	    sms_http:
//	      url: https://api.provider.example/v1/messages
//	      api_key: {file: /run/secrets/sms_api_key}
//	      auth_header: Authorization
//	      from: HERALD
//	  webhook:
//	    driver: webhook
//	    webhook:
//	      secrets: {env: HERALD_WEBHOOK_SECRETS}   # whsec_… secrets, space-separated
//	      allow_private: false
//	callbacks:                 # status callbacks to producers (always on unless disabled)
//	  concurrency: 16
//	  max_attempts: 15
//	  backoff: {base: 1s, cap: 5m}
//	  timeout: 10s
//	  allow_private: false
//
// Environment overrides (they win over the file):
//
//	HERALD_DISPATCH_BATCH_SIZE, HERALD_DISPATCH_POLL_INTERVAL,
//	HERALD_DISPATCH_SHUTDOWN_TIMEOUT, HERALD_DISPATCH_LOCK_TIMEOUT,
//	HERALD_DISPATCH_STATEMENT_TIMEOUT, HERALD_DISPATCH_STALL_TIMEOUT,
//	HERALD_HEARTBEAT_INTERVAL, HERALD_INTAKE_BATCH_SIZE, HERALD_RECEIPTS_LISTEN,
//	HERALD_RECEIPTS_BATCH_SIZE, HERALD_RECEIPTS_POLL_INTERVAL,
//	HERALD_RECEIPTS_READ_TIMEOUT, HERALD_RECEIPTS_WRITE_TIMEOUT,
//	HERALD_RECEIPTS_IDLE_TIMEOUT, HERALD_RECEIPTS_MAX_CLIENT_CONNS,
//	HERALD_INTAKE_POLL_INTERVAL, HERALD_CALLBACKS_DISABLED,
//	HERALD_CALLBACKS_CONCURRENCY, HERALD_CALLBACKS_MAX_ATTEMPTS,
//	HERALD_CALLBACKS_TIMEOUT, HERALD_CALLBACKS_ALLOW_PRIVATE,
//	HERALD_API_LISTEN, HERALD_API_DATABASE_URL
//	(the URL itself), HERALD_API_MAX_CONNS, HERALD_API_MAX_BATCH,
//	HERALD_API_MAX_BODY_BYTES, HERALD_API_RATE_LIMIT, HERALD_API_RATE_BURST,
//	HERALD_API_AUTH_FAILURE_RATE, HERALD_API_AUTH_FAILURE_BURST,
//	HERALD_API_AUTH_FAILURE_ADDRS, HERALD_API_READ_TIMEOUT,
//	HERALD_API_WRITE_TIMEOUT, HERALD_API_IDLE_TIMEOUT,
//	HERALD_API_MAX_CLIENT_CONNS, HERALD_API_REQUEST_TIMEOUT,
//	HERALD_API_SHUTDOWN_TIMEOUT, the console's (Console), and per channel NAME (SMS, EMAIL, WEBHOOK):
//	HERALD_CHANNELS_NAME_DRIVER, _CONCURRENCY, _MAX_ATTEMPTS, _TIMEOUT,
//	_LEASE, _BACKOFF_BASE, _BACKOFF_CAP; webhook: _ALLOW_PRIVATE,
//	_SECRETS_ENV, _SECRETS_FILE; smtp: _HOST, _PORT, _TLS, _FROM, _USERNAME,
//	_PASSWORD_ENV, _PASSWORD_FILE; sms-http: _URL, _FROM, _API_KEY_ENV,
//	_API_KEY_FILE.
//
// Setting HERALD_CHANNELS_NAME_DRIVER configures a channel the file does
// not have, so a development serve needs no file at all.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/email"
	"github.com/heraldhq/herald/internal/channel/smppch"
	"github.com/heraldhq/herald/internal/channel/sms"
	"github.com/heraldhq/herald/internal/channel/webhook"
	"github.com/heraldhq/herald/internal/secret"
)

// Drivers a channel may use.
const (
	// DriverWebhook posts Standard Webhooks signed JSON (channel/webhook).
	DriverWebhook = "webhook"
	// DriverSMTP submits e-mail over SMTP (channel/email).
	DriverSMTP = "smtp"
	// DriverSMSHTTP calls an SMS provider's HTTP API (channel/sms).
	DriverSMSHTTP = "sms-http"
	// DriverSMPP submits SMS to an SMSC over SMPP 3.4 (channel/smppch).
	DriverSMPP = "smpp"
	// DriverLog logs each delivery, masked, for development (channel/logch).
	DriverLog = "log"
	// DriverDiscard accepts and drops every delivery (channel.Discard): for
	// benchmarks.
	DriverDiscard = "discard"
)

// channelNames are the channels HERALD_CHANNELS_* variables may name.
var channelNames = []string{"email", "sms", "webhook"}

// Config is serve's whole configuration: the file's top level.
type Config struct {
	Dispatch  Dispatch           `yaml:"dispatch"`
	Heartbeat Heartbeat          `yaml:"heartbeat"`
	Intake    Intake             `yaml:"intake"`
	API       API                `yaml:"api"`
	Channels  map[string]Channel `yaml:"channels"`
	Receipts  Receipts           `yaml:"receipts"`
	Callbacks Callbacks          `yaml:"callbacks"`
	Console   Console            `yaml:"console"`
}

// Receipts configures delivery receipts: where serve's receipts endpoint
// listens (off when empty; each provider's receipts settings say how it
// posts there) and the matcher's batch and poll.
type Receipts struct {
	Listen       string        `yaml:"listen"`
	BatchSize    int           `yaml:"batch_size"`
	PollInterval time.Duration `yaml:"poll_interval"`
	// The endpoint's server: how long a request may take to arrive, its
	// answer to be written, a keep-alive connection to stay idle, and how
	// many connections may be open at once (internal/httpserve's defaults:
	// 30s, 30s, 2m, 1024).
	ReadTimeout    time.Duration `yaml:"read_timeout"`
	WriteTimeout   time.Duration `yaml:"write_timeout"`
	IdleTimeout    time.Duration `yaml:"idle_timeout"`
	MaxClientConns int           `yaml:"max_client_conns"`
}

// Callbacks tunes channel callback, which carries status callbacks to
// producers and which every serve delivers (no driver to choose: it posts
// with each producer's own subscription secret); zero values take the
// engine's defaults (engine.DefaultCallbacks).
type Callbacks struct {
	// Disabled stops this process delivering callbacks; they wait for a
	// serve that does.
	Disabled    bool          `yaml:"disabled"`
	Concurrency int           `yaml:"concurrency"`
	MaxAttempts int           `yaml:"max_attempts"`
	Backoff     Backoff       `yaml:"backoff"`
	Timeout     time.Duration `yaml:"timeout"`
	Lease       time.Duration `yaml:"lease"`
	// AllowPrivate lets callbacks reach private and loopback addresses
	// (development); AllowHosts exempts named hosts; DenyCIDRs are never
	// connected to. As for the webhook driver.
	AllowPrivate bool     `yaml:"allow_private"`
	AllowHosts   []string `yaml:"allow_hosts"`
	DenyCIDRs    []string `yaml:"deny_cidrs"`
}

// API configures the HTTP API (internal/api): off unless Listen is set.
// Zero values take the API's defaults.
type API struct {
	// Listen is the address the API serves on, e.g. ":8080".
	Listen string `yaml:"listen"`
	// DatabaseURL is where the API's own database URL is: a login that is
	// a member of herald_api, never the engine's. Required with Listen.
	DatabaseURL Secret `yaml:"database_url"`
	// MaxConns sizes the API's pool. Default: the URL's, or pgx's.
	MaxConns int `yaml:"max_conns"`
	// MaxBatch caps the intents of one batch submit (default 500);
	// MaxBodyBytes a request body (default 16 MiB).
	MaxBatch     int   `yaml:"max_batch"`
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// RateLimit is the requests per second one API key may make in each
	// serve process, with bursts of RateBurst; 0 means no limit.
	RateLimit float64 `yaml:"rate_limit"`
	RateBurst int     `yaml:"rate_burst"`
	// AuthFailureRate is the failed authentications per second one client
	// address may make, with bursts of AuthFailureBurst, before its
	// requests get 429 without touching the database; AuthFailureAddrs
	// addresses are tracked at most. Defaults 1, 20, 10000.
	AuthFailureRate  float64 `yaml:"auth_failure_rate"`
	AuthFailureBurst int     `yaml:"auth_failure_burst"`
	AuthFailureAddrs int     `yaml:"auth_failure_addrs"`
	// The http.Server's timeouts and bound on open connections, one
	// request's database work, and how long requests in flight may finish
	// at SIGTERM.
	ReadTimeout     time.Duration `yaml:"read_timeout"`
	WriteTimeout    time.Duration `yaml:"write_timeout"`
	IdleTimeout     time.Duration `yaml:"idle_timeout"`
	MaxClientConns  int           `yaml:"max_client_conns"`
	RequestTimeout  time.Duration `yaml:"request_timeout"`
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
}

// Dispatch tunes the dispatcher; zero values take the dispatcher's
// defaults.
type Dispatch struct {
	BatchSize       int           `yaml:"batch_size"`
	PollInterval    time.Duration `yaml:"poll_interval"`
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// LockTimeout and StatementTimeout are the lock_timeout and
	// statement_timeout of the dispatcher's own connections (maintenance
	// and the intake keep the server's); StallTimeout is how long its
	// claims or completions may go without success before /readyz fails.
	LockTimeout      time.Duration `yaml:"lock_timeout"`
	StatementTimeout time.Duration `yaml:"statement_timeout"`
	StallTimeout     time.Duration `yaml:"stall_timeout"`
}

// Heartbeat tunes the process's row in herald.serve_processes, where the
// console and `herald status` read every serve's readiness: Interval is
// how often the process records what /readyz would answer (zero: the
// engine's default, 5s). A row is stale after three intervals without.
type Heartbeat struct {
	Interval time.Duration `yaml:"interval"`
}

// Intake tunes the SQL intake worker; zero values take its defaults. The
// idempotency window and limits apply to the SQL door; give producers' Go
// clients the same values so both doors agree.
type Intake struct {
	BatchSize         int           `yaml:"batch_size"`
	PollInterval      time.Duration `yaml:"poll_interval"`
	IdempotencyWindow time.Duration `yaml:"idempotency_window"`
	MaxPayloadBytes   int           `yaml:"max_payload_bytes"`
	MaxSMSSegments    int           `yaml:"max_sms_segments"`
}

// Channel is one channel's driver and delivery policy.
type Channel struct {
	// Driver is webhook, smtp, sms-http, smpp, log or discard. Required.
	Driver      string        `yaml:"driver"`
	Concurrency int           `yaml:"concurrency"`
	MaxAttempts int           `yaml:"max_attempts"`
	Backoff     Backoff       `yaml:"backoff"`
	Timeout     time.Duration `yaml:"timeout"`
	Lease       time.Duration `yaml:"lease"`

	Webhook WebhookDriver `yaml:"webhook"`
	SMTP    SMTPDriver    `yaml:"smtp"`
	SMSHTTP SMSHTTPDriver `yaml:"sms_http"`
	SMPP    SMPPDriver    `yaml:"smpp"`
}

// Backoff is a channel's retry spacing.
type Backoff struct {
	Base time.Duration `yaml:"base"`
	Cap  time.Duration `yaml:"cap"`
}

// The drivers' sections are the channel packages' own settings: each
// package defines and validates the settings it is built from.
type (
	// WebhookDriver configures the webhook driver.
	WebhookDriver = webhook.Settings
	// SMTPDriver configures the smtp driver.
	SMTPDriver = email.Settings
	// SMSHTTPDriver configures the sms-http driver.
	SMSHTTPDriver = sms.Settings
	// SMPPDriver configures the smpp driver.
	SMPPDriver = smppch.Settings
)

// Secret says where a credential is: an environment variable or a file.
type Secret = secret.Secret

// Load reads the file at path (none if path is empty), applies the
// HERALD_* overrides read through getenv and validates the result. Its
// errors name the offending field, e.g.
// "channels.email.smtp.host: required".
func Load(path string, getenv func(string) string) (*Config, error) {
	var c Config
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
	}
	if err := c.applyEnv(getenv); err != nil {
		return nil, err
	}
	if err := c.Validate(getenv); err != nil {
		return nil, err
	}
	return &c, nil
}

// applyEnv overlays HERALD_* variables.
func (c *Config) applyEnv(getenv func(string) string) error {
	var errs []error
	setInt := func(dst *int, key string) {
		if v := getenv(key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a whole number", key, v))
				return
			}
			*dst = n
		}
	}
	setDur := func(dst *time.Duration, key string) {
		if v := getenv(key); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a duration like 500ms, 30s or 5m", key, v))
				return
			}
			*dst = d
		}
	}
	setStr := func(dst *string, key string) {
		if v := getenv(key); v != "" {
			*dst = v
		}
	}
	setBool := func(dst *bool, key string) {
		if v := getenv(key); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not true or false", key, v))
				return
			}
			*dst = b
		}
	}
	setInt(&c.Dispatch.BatchSize, "HERALD_DISPATCH_BATCH_SIZE")
	setDur(&c.Dispatch.PollInterval, "HERALD_DISPATCH_POLL_INTERVAL")
	setDur(&c.Dispatch.ShutdownTimeout, "HERALD_DISPATCH_SHUTDOWN_TIMEOUT")
	setDur(&c.Dispatch.LockTimeout, "HERALD_DISPATCH_LOCK_TIMEOUT")
	setDur(&c.Dispatch.StatementTimeout, "HERALD_DISPATCH_STATEMENT_TIMEOUT")
	setDur(&c.Dispatch.StallTimeout, "HERALD_DISPATCH_STALL_TIMEOUT")
	setDur(&c.Heartbeat.Interval, "HERALD_HEARTBEAT_INTERVAL")
	setInt(&c.Intake.BatchSize, "HERALD_INTAKE_BATCH_SIZE")
	setDur(&c.Intake.PollInterval, "HERALD_INTAKE_POLL_INTERVAL")
	setDur(&c.Intake.IdempotencyWindow, "HERALD_INTAKE_IDEMPOTENCY_WINDOW")
	setInt(&c.Intake.MaxPayloadBytes, "HERALD_INTAKE_MAX_PAYLOAD_BYTES")
	setInt(&c.Intake.MaxSMSSegments, "HERALD_INTAKE_MAX_SMS_SEGMENTS")
	setStr(&c.Receipts.Listen, "HERALD_RECEIPTS_LISTEN")
	setInt(&c.Receipts.BatchSize, "HERALD_RECEIPTS_BATCH_SIZE")
	setDur(&c.Receipts.PollInterval, "HERALD_RECEIPTS_POLL_INTERVAL")
	setDur(&c.Receipts.ReadTimeout, "HERALD_RECEIPTS_READ_TIMEOUT")
	setDur(&c.Receipts.WriteTimeout, "HERALD_RECEIPTS_WRITE_TIMEOUT")
	setDur(&c.Receipts.IdleTimeout, "HERALD_RECEIPTS_IDLE_TIMEOUT")
	setInt(&c.Receipts.MaxClientConns, "HERALD_RECEIPTS_MAX_CLIENT_CONNS")
	setBool(&c.Callbacks.Disabled, "HERALD_CALLBACKS_DISABLED")
	setInt(&c.Callbacks.Concurrency, "HERALD_CALLBACKS_CONCURRENCY")
	setInt(&c.Callbacks.MaxAttempts, "HERALD_CALLBACKS_MAX_ATTEMPTS")
	setDur(&c.Callbacks.Timeout, "HERALD_CALLBACKS_TIMEOUT")
	setBool(&c.Callbacks.AllowPrivate, "HERALD_CALLBACKS_ALLOW_PRIVATE")
	setStr(&c.API.Listen, "HERALD_API_LISTEN")
	if getenv("HERALD_API_DATABASE_URL") != "" {
		c.API.DatabaseURL = Secret{Env: "HERALD_API_DATABASE_URL"}
	}
	setInt(&c.API.MaxConns, "HERALD_API_MAX_CONNS")
	setInt(&c.API.MaxBatch, "HERALD_API_MAX_BATCH")
	setInt(&c.API.RateBurst, "HERALD_API_RATE_BURST")
	setInt64 := func(dst *int64, key string) {
		if v := getenv(key); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a whole number", key, v))
				return
			}
			*dst = n
		}
	}
	setFloat := func(dst *float64, key string) {
		if v := getenv(key); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				errs = append(errs, fmt.Errorf("%s: %q is not a number", key, v))
				return
			}
			*dst = f
		}
	}
	setInt64(&c.API.MaxBodyBytes, "HERALD_API_MAX_BODY_BYTES")
	setFloat(&c.API.RateLimit, "HERALD_API_RATE_LIMIT")
	setFloat(&c.API.AuthFailureRate, "HERALD_API_AUTH_FAILURE_RATE")
	setInt(&c.API.AuthFailureBurst, "HERALD_API_AUTH_FAILURE_BURST")
	setInt(&c.API.AuthFailureAddrs, "HERALD_API_AUTH_FAILURE_ADDRS")
	setDur(&c.API.ReadTimeout, "HERALD_API_READ_TIMEOUT")
	setDur(&c.API.WriteTimeout, "HERALD_API_WRITE_TIMEOUT")
	setDur(&c.API.IdleTimeout, "HERALD_API_IDLE_TIMEOUT")
	setInt(&c.API.MaxClientConns, "HERALD_API_MAX_CLIENT_CONNS")
	setDur(&c.API.RequestTimeout, "HERALD_API_REQUEST_TIMEOUT")
	setDur(&c.API.ShutdownTimeout, "HERALD_API_SHUTDOWN_TIMEOUT")

	names := map[string]bool{}
	for _, n := range channelNames {
		names[n] = true
	}
	for n := range c.Channels {
		names[n] = true
	}
	for name := range names {
		p := "HERALD_CHANNELS_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name)) + "_"
		ch, ok := c.Channels[name]
		if !ok && getenv(p+"DRIVER") == "" {
			continue
		}
		setStr(&ch.Driver, p+"DRIVER")
		setInt(&ch.Concurrency, p+"CONCURRENCY")
		setInt(&ch.MaxAttempts, p+"MAX_ATTEMPTS")
		setDur(&ch.Timeout, p+"TIMEOUT")
		setDur(&ch.Lease, p+"LEASE")
		setDur(&ch.Backoff.Base, p+"BACKOFF_BASE")
		setDur(&ch.Backoff.Cap, p+"BACKOFF_CAP")
		setBool(&ch.Webhook.AllowPrivate, p+"ALLOW_PRIVATE")
		setStr(&ch.Webhook.Secrets.Env, p+"SECRETS_ENV")
		setStr(&ch.Webhook.Secrets.File, p+"SECRETS_FILE")
		setStr(&ch.SMTP.Host, p+"HOST")
		setInt(&ch.SMTP.Port, p+"PORT")
		setStr(&ch.SMTP.TLS, p+"TLS")
		setStr(&ch.SMTP.Username, p+"USERNAME")
		setStr(&ch.SMTP.Password.Env, p+"PASSWORD_ENV")
		setStr(&ch.SMTP.Password.File, p+"PASSWORD_FILE")
		setStr(&ch.SMSHTTP.URL, p+"URL")
		setStr(&ch.SMSHTTP.APIKey.Env, p+"API_KEY_ENV")
		setStr(&ch.SMSHTTP.APIKey.File, p+"API_KEY_FILE")
		if v := getenv(p + "FROM"); v != "" {
			ch.SMTP.From, ch.SMSHTTP.From = v, v
		}
		if c.Channels == nil {
			c.Channels = map[string]Channel{}
		}
		c.Channels[name] = ch
	}
	errs = append(errs, c.Console.applyEnv(getenv)...)
	return errors.Join(errs...)
}

// Validate checks the whole configuration, credentials included (they are
// resolved, and dropped). The error names the first bad field.
func (c *Config) Validate(getenv func(string) string) error {
	if err := c.Console.validate(); err != nil {
		return err
	}
	switch {
	case c.Dispatch.BatchSize < 0 || c.Dispatch.BatchSize > 10000:
		return errors.New("dispatch.batch_size: must be between 1 and 10000")
	case c.Dispatch.PollInterval < 0 || (c.Dispatch.PollInterval > 0 && c.Dispatch.PollInterval < time.Millisecond):
		return errors.New("dispatch.poll_interval: must be at least 1ms")
	case c.Dispatch.ShutdownTimeout < 0:
		return errors.New("dispatch.shutdown_timeout: must not be negative")
	case c.Dispatch.LockTimeout < 0 || (c.Dispatch.LockTimeout > 0 && c.Dispatch.LockTimeout < time.Millisecond):
		return errors.New("dispatch.lock_timeout: must be at least 1ms")
	case c.Dispatch.StatementTimeout < 0 || (c.Dispatch.StatementTimeout > 0 && c.Dispatch.StatementTimeout < time.Millisecond):
		return errors.New("dispatch.statement_timeout: must be at least 1ms")
	case c.Dispatch.StallTimeout < 0 || (c.Dispatch.StallTimeout > 0 && c.Dispatch.StallTimeout < time.Millisecond):
		return errors.New("dispatch.stall_timeout: must be at least 1ms")
	case c.Heartbeat.Interval < 0 || (c.Heartbeat.Interval > 0 && c.Heartbeat.Interval < 10*time.Millisecond):
		return errors.New("heartbeat.interval: must be at least 10ms")
	case c.Intake.BatchSize < 0 || c.Intake.BatchSize > 10000:
		return errors.New("intake.batch_size: must be between 1 and 10000")
	case c.Intake.PollInterval < 0 || (c.Intake.PollInterval > 0 && c.Intake.PollInterval < time.Millisecond):
		return errors.New("intake.poll_interval: must be at least 1ms")
	case c.Intake.IdempotencyWindow < 0 || (c.Intake.IdempotencyWindow > 0 && c.Intake.IdempotencyWindow < time.Minute):
		return errors.New("intake.idempotency_window: must be at least 1m")
	case c.Intake.MaxPayloadBytes < 0 || c.Intake.MaxPayloadBytes > 16<<20:
		return errors.New("intake.max_payload_bytes: must be between 1 and 16777216")
	case c.Intake.MaxSMSSegments < 0 || c.Intake.MaxSMSSegments > 255:
		return errors.New("intake.max_sms_segments: must be between 1 and 255")
	case c.Receipts.BatchSize < 0 || c.Receipts.BatchSize > 10000:
		return errors.New("receipts.batch_size: must be between 1 and 10000")
	case c.Receipts.PollInterval < 0 || (c.Receipts.PollInterval > 0 && c.Receipts.PollInterval < time.Millisecond):
		return errors.New("receipts.poll_interval: must be at least 1ms")
	case c.API.Listen != "" && c.API.DatabaseURL.IsZero():
		return errors.New("api.database_url: required with api.listen: the URL of a login in role herald_api ({env: NAME} or {file: PATH}, or HERALD_API_DATABASE_URL)")
	case c.API.MaxConns < 0 || c.API.MaxConns > 10000:
		return errors.New("api.max_conns: must be between 1 and 10000")
	case c.API.MaxBatch < 0 || c.API.MaxBatch > 10000:
		return errors.New("api.max_batch: must be between 1 and 10000")
	case c.API.MaxBodyBytes < 0:
		return errors.New("api.max_body_bytes: must not be negative")
	case c.API.RateLimit < 0 || c.API.RateBurst < 0:
		return errors.New("api.rate_limit, api.rate_burst: must not be negative")
	case c.Receipts.ReadTimeout < 0 || c.Receipts.WriteTimeout < 0 || c.Receipts.IdleTimeout < 0:
		return errors.New("receipts: timeouts must not be negative")
	case c.Receipts.MaxClientConns < 0:
		return errors.New("receipts.max_client_conns: must not be negative")
	case c.API.AuthFailureRate < 0 || c.API.AuthFailureBurst < 0 || c.API.AuthFailureAddrs < 0:
		return errors.New("api.auth_failure_rate, api.auth_failure_burst, api.auth_failure_addrs: must not be negative")
	case c.API.MaxClientConns < 0:
		return errors.New("api.max_client_conns: must not be negative")
	case c.API.ReadTimeout < 0 || c.API.WriteTimeout < 0 || c.API.IdleTimeout < 0 || c.API.RequestTimeout < 0 || c.API.ShutdownTimeout < 0:
		return errors.New("api: timeouts must not be negative")
	case len(c.Channels) == 0:
		return errors.New("channels: none configured (give a config file with -config, or set HERALD_CHANNELS_<NAME>_DRIVER)")
	}
	if c.API.Listen != "" {
		if _, err := c.API.DatabaseURL.Resolve(getenv); err != nil {
			return fmt.Errorf("api.database_url: %w", err)
		}
	}
	for _, name := range c.ChannelNames() {
		if name == "callback" {
			return errors.New("channels.callback: herald's own channel; configure it in the callbacks section")
		}
		if err := c.Channels[name].validate(getenv); err != nil {
			return fmt.Errorf("channels.%s.%w", name, err)
		}
	}
	cb := c.Callbacks
	// The delivery policy's checks are a channel's, with the log driver
	// standing in for the callback channel's own.
	if err := (Channel{Driver: DriverLog, Concurrency: cb.Concurrency, MaxAttempts: cb.MaxAttempts,
		Backoff: cb.Backoff, Timeout: cb.Timeout, Lease: cb.Lease}).validate(getenv); err != nil {
		return fmt.Errorf("callbacks.%w", err)
	}
	return nil
}

// ChannelNames returns the configured channels' names, sorted.
func (c *Config) ChannelNames() []string {
	names := make([]string, 0, len(c.Channels))
	for n := range c.Channels {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (ch Channel) validate(getenv func(string) string) error {
	return ch.check(secret.Resolver(getenv))
}

// ValidateDriver checks ch as Validate checks a channel, except that a
// credential is only checked to be given (an environment variable or a
// file, not both), never read: for settings written on a machine that
// does not have serve's environment, as `herald providers apply` does. The
// error names the field relative to the channel ("sms_http.url: required").
func (ch Channel) ValidateDriver() error { return ch.check(Secret.CheckGiven) }

// check is validate with check checking each credential.
func (ch Channel) check(check secret.CheckFunc) error {
	if err := channel.CheckPolicy(ch.Concurrency, ch.MaxAttempts, ch.Timeout, ch.Lease, ch.Backoff.Base, ch.Backoff.Cap); err != nil {
		return err
	}
	switch ch.Driver {
	case DriverWebhook:
		return section("webhook", ch.Webhook.Check(check))
	case DriverSMTP:
		return section("smtp", ch.SMTP.Check(check))
	case DriverSMSHTTP:
		return section("sms_http", ch.SMSHTTP.Check(check))
	case DriverSMPP:
		return section("smpp", ch.SMPP.Check(check))
	case DriverLog, DriverDiscard:
	case "":
		return errors.New("driver: required (webhook, smtp, sms-http, smpp, log or discard)")
	default:
		return fmt.Errorf("driver: %q is not webhook, smtp, sms-http, smpp, log or discard", ch.Driver)
	}
	return nil
}

// section names err's field under the driver's section key.
func section(key string, err error) error {
	if err != nil {
		return fmt.Errorf("%s.%w", key, err)
	}
	return nil
}
