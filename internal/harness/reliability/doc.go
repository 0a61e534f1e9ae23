// Package reliability holds herald's reliability suites, as Go tests: a
// crash suite (`herald serve` SIGKILLed at random moments while routes
// flow), a database restart suite (the suite's own cluster restarted and
// crashed mid-run), a connection-killing suite (pg_terminate_backend on
// herald's connections in a loop) and a provider chaos suite (timeouts,
// resets, 429 with Retry-After, 5xx bursts, permanent refusals), each
// against real loopback receivers that count every delivery.
//
// Each suite prints its counts (routes, kills or restarts, duplicates,
// lost) and requires lost = 0, every route terminal, and duplicates no more
// than the deliveries in flight when things broke. They are quick enough
// for CI; set HERALD_LONG=1 (or pass -long) for longer runs with more
// routes and more kills.
//
// The package has no code of its own: everything is in its tests.
package reliability
