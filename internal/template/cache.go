package template

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/store"
)

// ErrTemplateNotFound is returned by TemplateCache.Get for a template (or
// a version of it) the producer does not have, or the login may not read.
var ErrTemplateNotFound = errors.New("template not found")

// ParseError is TemplateCache.Get's error for a stored version Parse
// refuses: one a producer INSERTed that does not parse or does what a
// template may not (`herald templates apply` parses first, and publishes
// nothing it refuses).
type ParseError struct{ Err error }

func (e *ParseError) Error() string { return e.Err.Error() }

// Unwrap returns the parse error.
func (e *ParseError) Unwrap() error { return e.Err }

// maxCachedTemplates and maxCachedNodes bound a TemplateCache: past
// either (the number of versions, their parse nodes in all) the cache
// starts again empty (versions are immutable, so a reload only costs a
// query and a parse). A parsed version holds about 250 bytes a node, so
// the nodes bound the cache to about 128 MiB whatever producers publish;
// a template of a few dozen actions is a few hundred nodes.
const (
	maxCachedTemplates = 4096
	maxCachedNodes     = 500_000
)

// templateKey identifies one version of one producer's template.
type templateKey struct {
	producer, name string
	version        int
}

// TemplateCache holds parsed template versions. A version never changes
// once published (no role but the owner may update herald.templates), so
// a parsed version is cached for as long as the process runs. Safe for
// concurrent use; the zero value is ready.
type TemplateCache struct {
	mu     sync.Mutex
	parsed map[templateKey]parsed
	nodes  int // of the versions in parsed
}

// parsed is one version parsed, or Parse's refusal of it: a version is
// immutable, so a refused one is not parsed again.
type parsed struct {
	t   *Template
	err error
}

// Get returns version of producer's template name, parsed; version 0
// means the current (highest) one, which costs a query each call (a new
// version may have been published), as a version not yet cached does. It
// returns ErrTemplateNotFound if there is none, and a *ParseError for a
// stored version Parse refuses (kept, as a parsed one is).
func (c *TemplateCache) Get(ctx context.Context, db store.DBTX, producer, name string, version int) (*Template, error) {
	if version > 0 {
		if p, ok := c.cached(templateKey{producer, name, version}); ok {
			return p.t, p.err
		}
	}
	var (
		row store.TemplateGetRow
		err error
	)
	if version > 0 {
		row, err = store.New().TemplateGet(ctx, db, store.TemplateGetParams{Producer: producer, Name: name, Version: int32(version)})
	} else {
		var cur store.TemplateGetCurrentRow
		cur, err = store.New().TemplateGetCurrent(ctx, db, store.TemplateGetCurrentParams{Producer: producer, Name: name})
		row = store.TemplateGetRow(cur)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrTemplateNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get template %s: %w", name, err)
	}
	key := templateKey{row.Producer, row.Name, int(row.Version)}
	if p, ok := c.cached(key); ok {
		return p.t, p.err
	}
	var p parsed
	if p.t, p.err = Parse(row.Producer, row.Name, int(row.Version), row.DefaultLocale, []byte(row.Locales)); p.err != nil {
		p.t, p.err = nil, &ParseError{Err: p.err}
	}
	n := 1
	if p.t != nil {
		n = max(p.t.nodes, 1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parsed == nil || len(c.parsed) >= maxCachedTemplates || c.nodes+n > maxCachedNodes {
		c.parsed, c.nodes = map[templateKey]parsed{}, 0
	}
	c.parsed[key] = p
	c.nodes += n
	return p.t, p.err
}

func (c *TemplateCache) cached(k templateKey) (parsed, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.parsed[k]
	return p, ok
}
