package receipt

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// groupMax bounds the receipts (or inbound messages) one group-commit
// statement stores.
const groupMax = 500

// groupLingerMax bounds how long a receipts group waits for more receipts
// (see batcher.write).
const groupLingerMax = 5 * time.Millisecond

// groupTimeout bounds one group's statement: it runs on behalf of several
// requests, so no one request's context may cancel it.
const groupTimeout = 10 * time.Second

// Group stores receipts from concurrent callers (the endpoint's requests,
// an SMPP bind's deliver_sm handlers) together: one INSERT and one commit
// (one WAL flush) for every receipt that arrived while the previous group
// was being written, as Postgres's own group commit does
// for WAL. A caller still answers its sender only once its own receipt is
// stored: Store returns when the group holding it has committed. Receipt
// at a time, each paid a commit and a NOTIFY of its own, and every
// listening connection woke for each. Inbound messages (StoreInbound) are
// grouped the same way, in groups of their own.
//
// No goroutine outlives its work: the first item to find no writer at
// work starts one, which writes groups until none is waiting.
//
// With a matcher (MatchWith), a group's receipts are matched as they are
// stored, in the same transaction (Matcher.StoreMatched); if that fails,
// they are stored as they arrived, for the matcher to take.
type Group struct {
	receipts *batcher[Receipt]
	inbound  *batcher[Inbound]
	matcher  atomic.Pointer[Matcher]
}

// NewGroup returns a Group storing into db. The receipts endpoint keeps
// one; so does an engine, for its SMPP binds' receipts and inbound
// messages.
func NewGroup(db store.DBTX) *Group {
	g := &Group{
		receipts: &batcher[Receipt]{db: db, many: insertReceipts, one: storeReceipt, linger: true,
			enough: make(chan struct{}, 1)},
		inbound: &batcher[Inbound]{db: db, many: insertInbound, one: storeInbound},
	}
	g.receipts.first = g.storeMatched
	return g
}

// MatchWith makes g match the receipts it stores with m, in the
// transaction that stores them; nil stops it. Safe to call while g stores.
func (g *Group) MatchWith(m *Matcher) { g.matcher.Store(m) }

// storeMatched stores and matches a group with the matcher, if g has one.
func (g *Group) storeMatched(ctx context.Context, rs []Receipt) bool {
	m := g.matcher.Load()
	if m == nil {
		return false
	}
	if err := m.StoreMatched(ctx, rs); err != nil {
		m.log.Warn("receipts not matched as they were stored; storing them for the matcher", "receipts", len(rs), "err", err)
		return false
	}
	return true
}

func storeReceipt(ctx context.Context, db store.DBTX, r Receipt) error {
	_, err := Store(ctx, db, r)
	return err
}

func storeInbound(ctx context.Context, db store.DBTX, m Inbound) error {
	_, err := StoreInbound(ctx, db, m)
	return err
}

// Store stores rec with whatever receipts are waiting alongside it and
// returns once it is stored, or with the error that kept it out (then
// nothing of it is stored). If ctx ends first it returns ctx's error; the
// receipt may still be stored (the caller, having given up, answers as if
// it was not, and a receipt sent again is matched as a duplicate).
func (g *Group) Store(ctx context.Context, rec Receipt) error { return g.receipts.store(ctx, rec) }

// StoreInbound stores m as Store stores a receipt: with whatever inbound
// messages are waiting alongside it, returning once it is stored. If ctx
// ends first it returns ctx's error and m may still be stored (the SMSC,
// answered with an error, sends it again, and it is kept twice).
func (g *Group) StoreInbound(ctx context.Context, m Inbound) error { return g.inbound.store(ctx, m) }

func insertReceipts(ctx context.Context, db store.DBTX, rs []Receipt) error {
	var p store.ReceiptInsertManyParams
	for _, r := range rs {
		r = r.clipped()
		p.Providers = append(p.Providers, r.Provider)
		p.ProviderMessageIds = append(p.ProviderMessageIds, r.ProviderMessageID)
		p.Statuses = append(p.Statuses, r.Status)
		p.ErrorCodes = append(p.ErrorCodes, r.ErrorCode)
		p.Raws = append(p.Raws, r.Raw)
		p.Sources = append(p.Sources, r.Source)
	}
	_, err := store.New().ReceiptInsertMany(ctx, db, p)
	return err
}

func insertInbound(ctx context.Context, db store.DBTX, ms []Inbound) error {
	var p store.InboundMessageInsertManyParams
	for _, m := range ms {
		m = m.clipped()
		p.Providers = append(p.Providers, m.Provider)
		p.FromAddrs = append(p.FromAddrs, m.From)
		p.ToAddrs = append(p.ToAddrs, m.To)
		p.Bodies = append(p.Bodies, m.Body)
		p.DataCodings = append(p.DataCodings, int16(m.DataCoding))
	}
	_, err := store.New().InboundMessageInsertMany(ctx, db, p)
	return err
}

// batcher is Group's machinery for one kind of item: many stores a group
// in one statement, one stores an item alone (a group of one, and each
// item of a group that failed) and names it in its error.
type batcher[T any] struct {
	db   store.DBTX
	many func(context.Context, store.DBTX, []T) error
	one  func(context.Context, store.DBTX, T) error
	// first, when set, is tried on a group before many: true when it
	// stored the whole group.
	first func(context.Context, []T) bool
	// linger makes the writer wait, before a group, for the callers of
	// the group it just wrote (see write); enough tells it they are back.
	linger bool
	enough chan struct{}
	// want is how many waiting items end the writer's wait; 0 while it
	// does not wait.
	want int

	// queuedFunc, when set, is called as each item joins the waiting
	// group: the signal tests wait on to know every caller has arrived.
	queuedFunc func()

	mu      sync.Mutex
	waiting []*groupEntry[T]
	writing bool
}

type groupEntry[T any] struct {
	item T
	err  error
	done chan struct{}
}

func (b *batcher[T]) store(ctx context.Context, item T) error {
	e := &groupEntry[T]{item: item, done: make(chan struct{})}
	b.mu.Lock()
	b.waiting = append(b.waiting, e)
	if !b.writing {
		b.writing = true
		go b.write()
	}
	if b.want > 0 && len(b.waiting) >= b.want {
		select {
		case b.enough <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()
	if b.queuedFunc != nil {
		b.queuedFunc()
	}
	select {
	case <-e.done:
		return e.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// write stores groups until none is waiting.
//
// With linger, after a group of several items it waits for that group's
// callers to come back before it takes the next: until as many items wait
// as that group held and were waiting, for at most as long as the group
// took to write (and groupLingerMax). Concurrent callers that each wait
// for their item (a provider's connections, each posting its next receipt
// once the last is answered) otherwise split into two cohorts that
// alternate, each written while the other waits: twice the groups, each
// paying a transaction's fixed cost (its commit, its statements' start-up
// and their CHECK constraints), which is most of what a receipt costs
// Postgres in groups of a few. A caller's answer waits at most that long
// more; an item alone is written at once.
func (b *batcher[T]) write() {
	last, took := 0, time.Duration(0)
	for {
		b.mu.Lock()
		if want := min(last+len(b.waiting), groupMax); b.linger && last > 1 && len(b.waiting) < want {
			b.want = want
			b.mu.Unlock()
			t := time.NewTimer(min(took, groupLingerMax))
			select {
			case <-b.enough:
			case <-t.C:
			}
			t.Stop()
			b.mu.Lock()
			b.want = 0
			select {
			case <-b.enough:
			default:
			}
		}
		batch := b.waiting[:min(len(b.waiting), groupMax)]
		b.waiting = b.waiting[len(batch):]
		if len(batch) == 0 {
			b.writing = false
			b.waiting = nil
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		began := time.Now()
		b.flush(batch)
		last, took = len(batch), time.Since(began)
	}
}

// flush stores one group: through first, when b has one and it takes the
// group; else in one statement. If the group's statement fails, each item is
// stored again on its own, so that one item Postgres refuses (a
// constraint it breaks, say: none is refused for its bytes, which clipped
// makes storable) is the only one refused rather than failing every
// caller that shared its group. A group of one is stored alone to begin
// with.
func (b *batcher[T]) flush(batch []*groupEntry[T]) {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	items := make([]T, len(batch))
	for i, e := range batch {
		items[i] = e.item
	}
	if b.first != nil && b.first(ctx, items) {
		for _, e := range batch {
			close(e.done)
		}
		return
	}
	if len(batch) > 1 {
		if err := b.many(ctx, b.db, items); err == nil {
			for _, e := range batch {
				close(e.done)
			}
			return
		}
	}
	for _, e := range batch {
		e.err = b.one(ctx, b.db, e.item)
		close(e.done)
	}
}
