-- name: TemplateGetCurrent :one
-- The current (highest) version of one producer's template: what an intent
-- naming the template without a version is accepted with. Row-level
-- security shows a producer only its own templates.
SELECT producer, name, version, default_locale, locales::text AS locales
FROM herald.templates
WHERE producer = @producer AND name = @name
ORDER BY version DESC
LIMIT 1;

-- name: TemplateGet :one
-- One version of one producer's template, by primary key: what intake
-- checks an intent naming a version against, and what the dispatcher
-- renders a waiting notification with (the version it was accepted with).
SELECT producer, name, version, default_locale, locales::text AS locales
FROM herald.templates
WHERE producer = @producer AND name = @name AND version = @version;

-- name: TemplateInsertNext :one
-- Publishes a new version of a template: one more than its highest, or 1.
-- Two publishes of one template racing compute the same version and the
-- second fails on the primary key (unique_violation), which the caller
-- reports; nothing is overwritten. producer NULL means the caller's own
-- (the column's default, herald.acting_producer()).
INSERT INTO herald.templates (producer, name, version, default_locale, locales)
SELECT
    coalesce(sqlc.narg('producer')::text, herald.acting_producer()), @name::text,
    coalesce(max(t.version), 0) + 1, @default_locale::text, @locales::jsonb
FROM herald.templates t
WHERE t.producer = coalesce(sqlc.narg('producer')::text, herald.acting_producer()) AND t.name = @name::text
RETURNING producer, name, version, created_at;

-- name: TemplateList :many
-- The current version of every template the caller may read (a producer:
-- its own; operators and auditors: all), optionally of one producer, by
-- producer and name.
SELECT DISTINCT ON (producer, name)
    producer, name, version, default_locale,
    (SELECT coalesce(array_agg(k ORDER BY k), '{}') FROM jsonb_object_keys(locales) AS k)::text[] AS locale_names,
    created_at, created_by
FROM herald.templates
WHERE sqlc.narg('producer')::text IS NULL OR producer = sqlc.narg('producer')::text
ORDER BY producer, name, version DESC;
