package metrics

// Names of herald's metric families. New and the collectors register them
// under these constants, and the alert rules and the dashboard
// (internal/metrics/monitoring) build their queries from the same
// constants, so a family renamed or removed here cannot leave a rule or a
// panel reading a series that no longer exists.
const (
	NameIntents             = "herald_intents_total"
	NameRouteAttempts       = "herald_route_attempts_total"
	NameDeliveryLatency     = "herald_delivery_latency_seconds"
	NameDeadLetters         = "herald_dead_letters_total"
	NameMaintenanceRuns     = "herald_maintenance_runs_total"
	NameMaintenanceRows     = "herald_maintenance_rows_total"
	NameRoutesInFlight      = "herald_routes_in_flight"
	NameDispatchDBTimeouts  = "herald_dispatch_db_timeouts_total"
	NameProviderAttempts    = "herald_provider_attempts_total"
	NameProviderLatency     = "herald_provider_latency_seconds"
	NameProviderCircuitOpen = "herald_provider_circuit_open"
	NameProviderUnavailable = "herald_provider_unavailable"
	NameProviderThrottled   = "herald_provider_throttled_waits_total"
	NameReceiptsReceived    = "herald_receipts_received_total"
	NameReceiptsDecided     = "herald_receipts_total"
	NameReceiptLag          = "herald_receipt_lag_seconds"
	NameAPIRequests         = "herald_api_requests_total"
	NameAPIRequestDuration  = "herald_api_request_duration_seconds"
	NameBacklogRoutes       = "herald_backlog_routes"
	NameLagSeconds          = "herald_lag_seconds"
	NameBacklogUp           = "herald_backlog_up"
	NameBacklogQuerySeconds = "herald_backlog_query_seconds"
	NameReady               = "herald_ready"
)
