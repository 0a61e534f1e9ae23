package connstr

import "errors"

// targetVars are the libpq variables that name a server or a database. One
// of them set is as explicit as a URL; the others (PGUSER, PGPASSWORD,
// PGSSLMODE, ...) only say how to reach a server named elsewhere.
var targetVars = []string{"PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGSERVICE"}

// ErrNoTarget refuses to connect given no database: libpq would otherwise
// pick its default socket and the OS user, and `herald migrate up` would
// create herald's schema and cluster-wide roles on whatever server answers
// there.
var ErrNoTarget = errors.New("no database given: set --database-url, HERALD_DATABASE_URL or DATABASE_URL (or PGHOST, PGDATABASE or PGSERVICE)")

// Named reports whether a database is named: by the connection string s,
// or, when s is empty, by one of the libpq variables that name a server or
// a database (PGHOST, PGHOSTADDR, PGPORT, PGDATABASE, PGSERVICE), read
// with getenv. Without one, Connect would reach whatever answers on
// libpq's default socket.
func Named(s string, getenv func(string) string) bool {
	if s != "" {
		return true
	}
	for _, v := range targetVars {
		if getenv(v) != "" {
			return true
		}
	}
	return false
}
