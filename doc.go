// Package herald is the Go client of herald, a durable notification-intent
// engine that keeps all of its state in PostgreSQL.
//
// A service hands herald an intent ("tell user 42, by SMS and e-mail, that
// order 9 shipped"); herald stores it exactly once, fans it out into one
// route per channel and recipient, delivers every route through a real
// channel, retries what fails for a transient reason, and parks what cannot
// be delivered in herald.dead_letters, where an operator finds it with psql.
package herald
