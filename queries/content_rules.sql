-- name: ContentRuleList :many
-- Every content rule the caller may read (a producer: the global ones and
-- its own; the engine and operators: all), for package content to compile
-- into its matcher.
SELECT id, producer, kind, pattern, mode
FROM herald.content_rules
ORDER BY id;
