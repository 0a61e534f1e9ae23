-- records_partitions_view: records' partitions with their bounds, for
-- operators and for the partition functions (records_week_stage,
-- records_week_swap, records_weeks_create): lo NULL is MINVALUE, and
-- records_default has neither.
CREATE OR REPLACE VIEW herald.records_partitions_view AS
SELECT c.relname::text AS partition,
    CASE WHEN c.relname ~ '^records_w[0-9]{8}$' THEN 'week'
        WHEN c.relname ~ '^records_k[0-9]{8}$' OR c.relname = 'records_before' THEN 'kept'
        WHEN pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT' THEN 'default'
        ELSE 'other' END AS kind,
    (regexp_match(pg_get_expr(c.relpartbound, c.oid),
        '^FOR VALUES FROM \((?:''([^'']*)''|MINVALUE)\) TO \((?:''([^'']*)''|MAXVALUE)\)$'))[1] AS lo,
    (regexp_match(pg_get_expr(c.relpartbound, c.oid),
        '^FOR VALUES FROM \((?:''([^'']*)''|MINVALUE)\) TO \((?:''([^'']*)''|MAXVALUE)\)$'))[2] AS hi,
    greatest(c.reltuples, 0)::bigint AS rows_estimate,
    pg_total_relation_size(c.oid) AS total_bytes
FROM pg_catalog.pg_inherits i
JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'herald.records'::regclass;

COMMENT ON VIEW herald.records_partitions_view IS 'records'' partitions: week (accepted that week), kept (kept past their week''s retirement), default; their id range [lo, hi) (NULL: unbounded), the planner''s row estimate and size.';
GRANT SELECT ON TABLE herald.records_partitions_view TO herald_operator;
GRANT SELECT ON TABLE herald.records_partitions_view TO herald_auditor;
