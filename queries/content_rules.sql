-- name: ContentRuleList :many
-- Every content rule the caller may read (a producer: the global ones and
-- its own; the engine and operators: all), for package content to compile
-- into its matcher.
SELECT id, producer, kind, pattern, mode
FROM herald.content_rules
ORDER BY id;

-- name: ContentRuleInsert :one
-- Adds one content rule (herald demo; operators type the INSERT in psql).
INSERT INTO herald.content_rules (producer, kind, pattern, mode, note)
VALUES (@producer, @kind, @pattern, @mode, @note)
RETURNING id;

-- name: ContentRuleDelete :exec
-- Deletes one content rule.
DELETE FROM herald.content_rules WHERE id = @id;
