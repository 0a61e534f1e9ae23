// Package console is herald's operator console: a web application, served
// by `herald serve` on an address of its own (off by default), for the
// on-call questions the CLI answers one at a time. Backlog, lag and
// provider outcomes over time; provider health, circuits and failure rates
// over a chosen window; dead letters filtered, grouped, dry-run and
// replayed; one notification's whole story; held intents reviewed; campaigns
// followed and canceled; malformed intake entries; the audit log.
//
// # Identity is the login
//
// A person signs in with their own database login and password. The
// console connects as that login (a small pool per session, closed at
// sign-out or after the session's idle expiry) and does everything through
// it, with package operator: the database's grants, row-level policies and
// audit rows apply unchanged, and the audit log names the login. A member
// of herald_operator reads and acts; a member of herald_auditor reads
// everything, and every action it tries is refused by the database, which
// the page says plainly. Any other login (a producer's) is refused at
// sign-in: the console is for the people who run herald.
//
// # Defences
//
// Sessions are server-side, named by a random id in an HttpOnly,
// SameSite=Strict cookie (Secure when the request came over TLS, or when
// Config.SecureCookies says a TLS proxy is in front). Every form carries the
// session's synchronizer token, checked on every POST, and a POST whose
// Origin header names another site is refused. Sign-in attempts are
// rate-limited per client address. Pages never show a secret: provider
// settings, API keys and callback secrets are not read at all, and JSON the
// console shows (audit rows, malformed entries, held intents) has the
// values of secret-looking keys masked. Every page is one bounded query on
// an index.
package console

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/httpserve"
)

// Defaults of Config.
const (
	// DefaultSessionIdle is how long a session may go unused before it
	// ends and its connections close.
	DefaultSessionIdle = 30 * time.Minute
	// DefaultMaxSessions bounds the sessions open at once (each holds a
	// pool of at most SessionConns connections).
	DefaultMaxSessions = 64
	// SessionConns is the most connections one session's pool opens.
	SessionConns = 2
	// DefaultLoginRate is how many sign-in attempts per second one client
	// address may make, after a burst of DefaultLoginBurst.
	DefaultLoginRate  = 0.2
	DefaultLoginBurst = 5
	// DefaultStatementTimeout bounds each statement a session runs.
	DefaultStatementTimeout = 30 * time.Second
	// DefaultAsyncThreshold is how many matching dead letters make a
	// replay a River job instead of running in the request.
	DefaultAsyncThreshold = 10_000
)

// Config configures a Console.
type Config struct {
	// Listen is the address to serve on, e.g. "127.0.0.1:8089". Required.
	Listen string
	// DatabaseURL says where sign-ins connect: host, port, database and
	// TLS settings ("" for the libpq PG* variables). Its user and password
	// are ignored: each person connects as the login they sign in with.
	DatabaseURL string
	// Server bounds the listener (timeouts, open connections), as for
	// herald's other listeners.
	Server httpserve.Config
	// SessionIdle is how long a session may go unused. Default 30m.
	SessionIdle time.Duration
	// MaxSessions bounds the sessions open at once. Default 64.
	MaxSessions int
	// SecureCookies marks the session cookie Secure even on a plain HTTP
	// request: for a console behind a TLS-terminating proxy. A request
	// that came over TLS gets a Secure cookie anyway.
	SecureCookies bool
	// LoginRate and LoginBurst limit sign-in attempts per client address.
	// Defaults 0.2/s and 5.
	LoginRate  float64
	LoginBurst int
	// StatementTimeout bounds each statement a session runs. Default 30s.
	StatementTimeout time.Duration
	// AsyncThreshold is how many matching dead letters make a replay a
	// River job. Default 10000.
	AsyncThreshold int64
	// Logger receives sign-ins, sign-outs and refused requests. Default:
	// discard.
	Logger *slog.Logger
}

func (c *Config) validate() error {
	switch {
	case c.Listen == "":
		return errors.New("Listen must be set")
	case c.SessionIdle < 0:
		return errors.New("SessionIdle must not be negative")
	case c.MaxSessions < 0:
		return errors.New("MaxSessions must not be negative")
	case c.LoginRate < 0 || c.LoginBurst < 0:
		return errors.New("LoginRate and LoginBurst must not be negative")
	case c.StatementTimeout < 0:
		return errors.New("StatementTimeout must not be negative")
	}
	if _, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
		return fmt.Errorf("DatabaseURL: %w", err)
	}
	return c.Server.Validate()
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Console is a running operator console. Create it with New.
type Console struct {
	cfg      Config
	logger   *slog.Logger
	base     *pgxpool.Config
	ln       net.Listener
	srv      *httpserve.Server
	sessions *sessions
	logins   *limiter
	pages    map[string]*template.Template
}

// New binds cfg.Listen and returns the console, ready to Run. It returns
// an error naming the bad Config field, or the listener's.
func New(ctx context.Context, cfg *Config) (*Console, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("console config: %w", err)
	}
	c := &Console{cfg: *cfg}
	c.cfg.SessionIdle = cmp.Or(c.cfg.SessionIdle, DefaultSessionIdle)
	c.cfg.MaxSessions = cmp.Or(c.cfg.MaxSessions, DefaultMaxSessions)
	c.cfg.LoginRate = cmp.Or(c.cfg.LoginRate, DefaultLoginRate)
	c.cfg.LoginBurst = cmp.Or(c.cfg.LoginBurst, DefaultLoginBurst)
	c.cfg.StatementTimeout = cmp.Or(c.cfg.StatementTimeout, DefaultStatementTimeout)
	c.cfg.AsyncThreshold = cmp.Or(c.cfg.AsyncThreshold, DefaultAsyncThreshold)
	c.logger = cmp.Or(c.cfg.Logger, slog.New(slog.DiscardHandler))
	c.base, _ = pgxpool.ParseConfig(c.cfg.DatabaseURL) // validated above
	var err error
	if c.pages, err = parseTemplates(); err != nil {
		return nil, err
	}
	c.sessions = newSessions(c.cfg.SessionIdle, c.cfg.MaxSessions)
	c.logins = newLimiter(c.cfg.LoginRate, c.cfg.LoginBurst)
	srvCfg := c.cfg.Server
	srvCfg.Logger = cmp.Or(srvCfg.Logger, c.logger)
	if c.srv, err = httpserve.New(c.Handler(), &srvCfg); err != nil {
		return nil, fmt.Errorf("console config: Server: %w", err)
	}
	if c.ln, err = httpserve.Listen(ctx, "console", c.cfg.Listen); err != nil {
		return nil, err
	}
	return c, nil
}

// Addr returns the address the console listens on.
func (c *Console) Addr() net.Addr { return c.ln.Addr() }

// URL returns the console's address as an http URL.
func (c *Console) URL() string { return "http://" + c.ln.Addr().String() }

// Run serves until ctx is done, then lets requests in flight finish (up to
// Server.ShutdownTimeout), ends every session and closes its connections.
func (c *Console) Run(ctx context.Context) error {
	stop := make(chan struct{})
	go c.sessions.expireLoop(stop)
	err := c.srv.Serve(ctx, c.ln)
	close(stop)
	c.sessions.closeAll()
	return err
}

// Close ends every session; for a Console that never ran (Run closes its
// listener itself).
func (c *Console) Close() {
	_ = c.ln.Close()
	c.sessions.closeAll()
}

// Handler returns the console's HTTP handler.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /login", c.loginPage)
	mux.HandleFunc("POST /login", c.login)
	mux.HandleFunc("POST /logout", c.auth(c.logout))
	mux.HandleFunc("GET /{$}", c.auth(c.overview))
	mux.HandleFunc("GET /providers", c.auth(c.providers))
	mux.HandleFunc("POST /providers/state", c.auth(c.providerState))
	mux.HandleFunc("GET /dead-letters", c.auth(c.deadLetters))
	mux.HandleFunc("POST /dead-letters/replay", c.auth(c.replay))
	mux.HandleFunc("GET /replays/{id}", c.auth(c.replayProgress))
	mux.HandleFunc("GET /notification", c.auth(c.notification))
	mux.HandleFunc("GET /held", c.auth(c.held))
	mux.HandleFunc("GET /held/{id}", c.auth(c.heldOne))
	mux.HandleFunc("POST /held/{id}/{decision}", c.auth(c.heldDecide))
	mux.HandleFunc("GET /campaigns", c.auth(c.campaigns))
	mux.HandleFunc("POST /campaigns/cancel", c.auth(c.campaignCancel))
	mux.HandleFunc("GET /malformed", c.auth(c.malformed))
	mux.HandleFunc("GET /malformed/{ref}", c.auth(c.malformedOne))
	mux.HandleFunc("GET /audit", c.auth(c.audit))
	return securityHeaders(mux)
}

// securityHeaders sets the headers every answer carries: no framing, no
// sniffing, no caching of pages, scripts and styles only from the
// console itself, and no referrer sent elsewhere.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "+
			"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		if r.URL.Path == "/" || !isStatic(r.URL.Path) {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

func isStatic(p string) bool { return len(p) > 8 && p[:8] == "/static/" }
