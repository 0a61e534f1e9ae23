package operator

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/internal/store"
)

// FindNotification returns what Status returns for the notification that
// holds producer's idempotency key: what a support ticket carries. It
// looks the key up along herald.idempotency_keys' primary key, so it finds
// the notification for as long as the key is held (its idempotency
// window). It returns ErrNotFound when no notification holds the key.
func (o *Operator) FindNotification(ctx context.Context, producer, key string) (*Status, error) {
	k, err := o.q.IdempotencyKeyFind(ctx, o.pool, store.IdempotencyKeyFindParams{Producer: producer, IdempotencyKey: key})
	if err != nil {
		return nil, notFound(err, fmt.Sprintf("no notification of producer %q holds idempotency key %q (keys are held for their idempotency window)", producer, key))
	}
	return o.Status(ctx, k.NotificationID)
}
