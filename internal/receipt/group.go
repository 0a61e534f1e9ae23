package receipt

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// groupMax bounds the receipts one group-commit statement stores.
const groupMax = 500

// groupTimeout bounds one group's statement: it runs on behalf of several
// requests, so no one request's context may cancel it.
const groupTimeout = 10 * time.Second

// Group stores receipts from concurrent callers (the endpoint's requests,
// an SMPP bind's deliver_sm handlers) together: one INSERT, one commit
// (one WAL flush) and one NOTIFY for every receipt that arrived while the
// previous group was being written, as Postgres's own group commit does
// for WAL. A caller still answers its sender only once its own receipt is
// stored: Store returns when the group holding it has committed. Receipt
// at a time, each paid a commit and a NOTIFY of its own, and every
// listening connection woke for each.
//
// No goroutine outlives its work: the first receipt to find no writer at
// work starts one, which writes groups until none is waiting.
type Group struct {
	db store.DBTX

	mu      sync.Mutex
	waiting []*groupEntry
	writing bool
}

type groupEntry struct {
	rec  Receipt
	err  error
	done chan struct{}
}

// NewGroup returns a Group storing into db. The receipts endpoint keeps
// one; so does an engine, for its SMPP binds' receipts.
func NewGroup(db store.DBTX) *Group { return &Group{db: db} }

// Store stores rec with whatever receipts are waiting alongside it and
// returns once it is stored, or with the error that kept it out (then
// nothing of it is stored). If ctx ends first it returns ctx's error; the
// receipt may still be stored (the caller, having given up, answers as if
// it was not, and a receipt sent again is matched as a duplicate).
func (g *Group) Store(ctx context.Context, rec Receipt) error {
	e := &groupEntry{rec: rec, done: make(chan struct{})}
	g.mu.Lock()
	g.waiting = append(g.waiting, e)
	if !g.writing {
		g.writing = true
		go g.write()
	}
	g.mu.Unlock()
	select {
	case <-e.done:
		return e.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// write stores groups until none is waiting.
func (g *Group) write() {
	for {
		g.mu.Lock()
		batch := g.waiting[:min(len(g.waiting), groupMax)]
		g.waiting = g.waiting[len(batch):]
		if len(batch) == 0 {
			g.writing = false
			g.waiting = nil
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		g.flush(batch)
	}
}

// flush stores one group. If the group's statement fails, each receipt is
// stored again on its own, so that one receipt Postgres refuses (a
// constraint it breaks, say: no receipt is refused for its bytes, which
// clipped makes storable) is the only one refused rather than failing
// every request that shared its group.
func (g *Group) flush(batch []*groupEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	var p store.ReceiptInsertManyParams
	for _, e := range batch {
		r := e.rec.clipped()
		p.Providers = append(p.Providers, r.Provider)
		p.ProviderMessageIds = append(p.ProviderMessageIds, r.ProviderMessageID)
		p.Statuses = append(p.Statuses, r.Status)
		p.ErrorCodes = append(p.ErrorCodes, r.ErrorCode)
		p.Raws = append(p.Raws, r.Raw)
		p.Sources = append(p.Sources, r.Source)
	}
	_, err := store.New().ReceiptInsertMany(ctx, g.db, p)
	if err != nil && len(batch) > 1 {
		for _, e := range batch {
			_, e.err = Store(ctx, g.db, e.rec)
			close(e.done)
		}
		return
	}
	if err != nil {
		err = fmt.Errorf("store receipt of %s: %w", batch[0].rec.Provider, err)
	}
	for _, e := range batch {
		e.err = err
		close(e.done)
	}
}
