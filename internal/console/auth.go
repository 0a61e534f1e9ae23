package console

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/operator"
)

// handlerFunc is a page or action of a signed-in session.
type handlerFunc func(w http.ResponseWriter, r *http.Request, s *session)

// auth wraps h: without a live session, a GET goes to the sign-in page
// and anything else is refused; a POST must carry the session's token and,
// if the browser names the page's origin, name this console's.
func (c *Console) auth(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var s *session
		if ck, err := r.Cookie(cookieName); err == nil {
			s = c.sessions.get(ck.Value)
		}
		if s == nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			c.refuse(w, r, http.StatusUnauthorized, "Your session has ended: sign in again.")
			return
		}
		if r.Method == http.MethodPost {
			if !sameOrigin(r) {
				c.logger.Warn("console: cross-origin POST refused", "login", s.login.Name, "origin", r.Header.Get("Origin"), "path", r.URL.Path)
				c.refuse(w, r, http.StatusForbidden, "Refused: this request came from another site.")
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
			if !s.validCSRF(r.PostFormValue("csrf")) {
				c.logger.Warn("console: POST without a valid form token refused", "login", s.login.Name, "path", r.URL.Path)
				c.refuse(w, r, http.StatusForbidden, "Refused: the form's security token is missing or stale. Reload the page and try again.")
				return
			}
		}
		h(w, r, s)
	}
}

// sameOrigin reports whether a POST's Origin header, if any, names the
// host the request was sent to. Browsers send Origin with every POST;
// one from another site is a forgery even with a token.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true // the token decides
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// refuse answers status with a plain page saying msg.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.render(w, r, status, "message", nil, &pageData{Title: http.StatusText(status), Message: msg})
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "login", nil, &pageData{Title: "Sign in", Next: safeNext(r.URL.Query().Get("next"))})
}

// safeNext keeps a post-sign-in destination only when it is a path of
// this console ("/held?x"), never another site ("//evil", "https://").
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}

// login signs a person in: it connects as the login and password given
// and, if the login is an operator's or an auditor's, starts a session.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	data := &pageData{Title: "Sign in", Next: safeNext(r.PostFormValue("next"))}
	if !sameOrigin(r) {
		c.refuse(w, r, http.StatusForbidden, "Refused: this request came from another site.")
		return
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	if !c.logins.allow(host) {
		c.logger.Warn("console: sign-in rate limit", "client", host)
		data.Error = "Too many sign-in attempts from your address: wait a minute and try again."
		c.render(w, r, http.StatusTooManyRequests, "login", nil, data)
		return
	}
	user, password := strings.TrimSpace(r.PostFormValue("user")), r.PostFormValue("password")
	data.User = user
	if user == "" || password == "" {
		data.Error = "Enter your database login and its password."
		c.render(w, r, http.StatusBadRequest, "login", nil, data)
		return
	}
	pool, op, login, err := c.connect(r.Context(), user, password)
	if err != nil {
		c.logger.Info("console: sign-in refused", "login", user, "client", host, "err", err)
		data.Error = signInError(err)
		c.render(w, r, http.StatusUnauthorized, "login", nil, data)
		return
	}
	if !login.Operator && !login.Auditor {
		pool.Close()
		c.logger.Info("console: sign-in refused: neither operator nor auditor", "login", user, "client", host)
		data.Error = fmt.Sprintf("The login %s is neither an operator's (herald_operator) nor an auditor's (herald_auditor): "+
			"the console is for the people who run herald. A producer reads its own notifications through the API or the client.", user)
		c.render(w, r, http.StatusForbidden, "login", nil, data)
		return
	}
	s := c.sessions.add(*login, pool, op)
	c.logger.Info("console: signed in", "login", login.Name, "role", s.role(), "client", host)
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: s.id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || c.cfg.SecureCookies,
	})
	http.Redirect(w, r, data.Next, http.StatusSeeOther)
}

// errBadLogin is connect's error for a login or password the server
// refused.
var errBadLogin = errors.New("the database refused this login and password")

// signInError is what the sign-in page says of a failed connection: the
// same words for an unknown login and a wrong password.
func signInError(err error) string {
	if errors.Is(err, errBadLogin) {
		return "Wrong login or password."
	}
	return "Could not connect to the database; try again, and tell whoever runs herald if it persists."
}

// connect opens a pool as user with password, checks the password by
// connecting once, and reads the login's roles.
func (c *Console) connect(ctx context.Context, user, password string) (*pgxpool.Pool, *operator.Operator, *operator.Login, error) {
	cfg := c.base.Copy()
	cfg.ConnConfig.User, cfg.ConnConfig.Password = user, password
	cfg.MaxConns, cfg.MinConns, cfg.MinIdleConns = SessionConns, 0, 0
	cfg.MaxConnIdleTime = time.Minute
	params := cfg.ConnConfig.RuntimeParams
	params["application_name"] = "herald console"
	params["statement_timeout"] = fmt.Sprintf("%dms", c.cfg.StatementTimeout.Milliseconds())
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && (pgErr.Code == "28P01" || pgErr.Code == "28000") {
			return nil, nil, nil, fmt.Errorf("%w (%s)", errBadLogin, pgErr.Code)
		}
		return nil, nil, nil, err
	}
	op, err := operator.New(pool, &operator.Config{Logger: c.logger})
	if err != nil {
		pool.Close()
		return nil, nil, nil, err
	}
	login, err := op.Login(ctx)
	if err != nil {
		pool.Close()
		return nil, nil, nil, err
	}
	return pool, op, login, nil
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) {
	c.sessions.end(s.id)
	c.logger.Info("console: signed out", "login", s.login.Name)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || c.cfg.SecureCookies})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
