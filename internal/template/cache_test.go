package template

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/store"
)

func TestTemplateCache_BoundedKeepsRefusals(t *testing.T) {
	t.Parallel()
	pool := pgtemp.NewPool(t)
	ctx := context.Background()
	shop := "shop"
	publish := func(name, locales string) {
		_, err := store.New().TemplateInsertNext(ctx, pool, store.TemplateInsertNextParams{Producer: &shop, Name: name, DefaultLocale: "en", Locales: []byte(locales)})
		require.NoError(t, err)
	}
	// The largest a version may be in parse nodes: a webhook of 3,900
	// strings, 5 nodes each.
	var parts []string
	for i := range 3900 {
		parts = append(parts, fmt.Sprintf(`"k%d":"{{.a}}"`, i))
	}
	big := `{"en":{"webhook":{` + strings.Join(parts, ",") + `}}}`
	const versions = 30
	for range versions {
		publish("big", big)
	}
	var c TemplateCache
	for v := 1; v <= versions; v++ {
		tpl, err := c.Get(ctx, pool, shop, "big", v)
		require.NoError(t, err)
		require.Greater(t, tpl.nodes, 19_000)
	}
	require.LessOrEqual(t, c.nodes, maxCachedNodes)
	require.Less(t, len(c.parsed), versions, "the cache started again rather than hold every version")
	again, err := c.Get(ctx, pool, shop, "big", versions)
	require.NoError(t, err)
	last, _ := c.cached(templateKey{shop, "big", versions})
	require.Same(t, last.t, again, "the last version is served from the cache")

	// A refused version is refused again without being parsed again.
	publish("loop", `{"en":{"sms":{"body":"{{range 100000000000}}{{end}}"}}}`)
	_, err1 := c.Get(ctx, pool, shop, "loop", 1)
	var pe *ParseError
	require.ErrorAs(t, err1, &pe)
	require.ErrorContains(t, err1, "is not allowed")
	_, err2 := c.Get(ctx, pool, shop, "loop", 1)
	require.Same(t, err1, err2)
}
