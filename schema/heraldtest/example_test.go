package heraldtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/schema/heraldtest"
)

// A producer's test submits through the real client to a database of its
// own, then reads back what herald stored. In a test function,
// heraldtest.NewTestDatabase(t, nil) does the same and drops the database
// when the test passes.
func ExampleNewDatabase() {
	ctx := context.Background()
	db, err := heraldtest.NewDatabase(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	client, err := herald.NewClient(db.Pool, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	receipt, err := client.Submit(ctx, &herald.Intent{
		NotificationType: "order.shipped",
		Producer:         "shop",
		IdempotencyKey:   "order-9-shipped",
		Audience:         herald.Audience{Webhook: []string{"https://hooks.example.com/orders"}},
		Channels:         []string{"webhook"},
		Content:          herald.Content{Webhook: json.RawMessage(`{"order": 9}`)},
	})
	if err != nil {
		log.Fatal(err)
	}
	n, err := client.Get(ctx, receipt.NotificationID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n.Type, n.Producer, n.Channels)
	// Output:
	// order.shipped shop [webhook]
}
