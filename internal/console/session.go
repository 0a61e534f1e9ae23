package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/operator"
)

// cookieName names the session cookie.
const cookieName = "herald_console"

// session is one person signed in: their login's pool and operator, and
// the synchronizer token every form of theirs carries.
type session struct {
	id    string
	csrf  string
	login operator.Login
	pool  *pgxpool.Pool
	op    *operator.Operator

	mu       sync.Mutex
	lastSeen time.Time
}

// role names what the login may do, for the page's header.
func (s *session) role() string {
	if s.login.Operator {
		return "operator"
	}
	return "auditor"
}

// sessions holds the sessions by id, ending those idle longer than idle.
type sessions struct {
	idle time.Duration
	max  int

	mu   sync.Mutex
	byID map[string]*session
}

func newSessions(idle time.Duration, max int) *sessions {
	return &sessions{idle: idle, max: max, byID: map[string]*session{}}
}

// randomToken returns 32 random bytes, base64url: a session id or a token.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// add stores a new session for login over pool, ending the oldest-used one
// first when max are open, and returns it.
func (ss *sessions) add(login operator.Login, pool *pgxpool.Pool, op *operator.Operator) *session {
	s := &session{id: randomToken(), csrf: randomToken(), login: login, pool: pool, op: op, lastSeen: time.Now()}
	ss.mu.Lock()
	var oldest *session
	if len(ss.byID) >= ss.max {
		for _, o := range ss.byID {
			if oldest == nil || o.seen().Before(oldest.seen()) {
				oldest = o
			}
		}
		delete(ss.byID, oldest.id)
	}
	ss.byID[s.id] = s
	ss.mu.Unlock()
	if oldest != nil {
		oldest.pool.Close()
	}
	return s
}

func (s *session) seen() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastSeen
}

// get returns the live session named id and marks it used, or nil (an
// unknown id, or one idle too long, which it ends).
func (ss *sessions) get(id string) *session {
	ss.mu.Lock()
	s := ss.byID[id]
	ss.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	expired := time.Since(s.lastSeen) > ss.idle
	if !expired {
		s.lastSeen = time.Now()
	}
	s.mu.Unlock()
	if expired {
		ss.end(id)
		return nil
	}
	return s
}

// end removes the session named id and closes its pool.
func (ss *sessions) end(id string) {
	ss.mu.Lock()
	s := ss.byID[id]
	delete(ss.byID, id)
	ss.mu.Unlock()
	if s != nil {
		s.pool.Close()
	}
}

// expireLoop ends idle sessions every minute (or every idle period, if
// shorter) until stop closes.
func (ss *sessions) expireLoop(stop <-chan struct{}) {
	t := time.NewTicker(min(time.Minute, ss.idle))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ss.mu.Lock()
			var idle []string
			for id, s := range ss.byID {
				if time.Since(s.seen()) > ss.idle {
					idle = append(idle, id)
				}
			}
			ss.mu.Unlock()
			for _, id := range idle {
				ss.end(id)
			}
		}
	}
}

// closeAll ends every session.
func (ss *sessions) closeAll() {
	ss.mu.Lock()
	all := ss.byID
	ss.byID = map[string]*session{}
	ss.mu.Unlock()
	for _, s := range all {
		s.pool.Close()
	}
}

// count returns how many sessions are open.
func (ss *sessions) count() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.byID)
}

// validCSRF reports whether token is the session's, in constant time.
func (s *session) validCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.csrf)) == 1
}
