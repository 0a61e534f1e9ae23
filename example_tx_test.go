package herald_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald"
)

// SubmitTx stores the intent in the caller's own transaction: the
// notification exists if and only if the business change commits.
func ExampleClient_SubmitTx() {
	ctx := context.Background()
	pool, done := exampleDB("ExampleClient_SubmitTx")
	defer done()
	client, err := herald.NewClient(pool, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	var receipt *herald.Receipt
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// ... the service's own writes, e.g. UPDATE orders SET status = 'shipped' ...
		receipt, err = client.SubmitTx(ctx, tx, &herald.Intent{
			NotificationType: "order.shipped",
			Producer:         "shop",
			IdempotencyKey:   "order-9-shipped",
			Audience:         herald.Audience{Email: []string{"ann@example.com"}},
			Channels:         []string{"email"},
			Content: herald.Content{Email: &herald.EmailContent{
				Subject: "Your order shipped",
				Text:    "Order 9 is on its way.",
			}},
			ExpiresAt: time.Now().Add(24 * time.Hour),
		})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	n, err := client.Get(ctx, receipt.NotificationID)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range n.Routes {
		fmt.Println(r.Channel, r.RecipientRef, r.Status, r.Attempts)
	}
	// Output:
	// email ann@example.com pending 0
}

// Cancel stops the routes not delivered yet and leaves an audit row.
func ExampleClient_Cancel() {
	ctx := context.Background()
	pool, done := exampleDB("ExampleClient_Cancel")
	defer done()
	client, err := herald.NewClient(pool, &herald.Config{Actor: "shop"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	receipt, err := client.Submit(ctx, &herald.Intent{
		NotificationType: "digest.weekly",
		Producer:         "newsletter",
		IdempotencyKey:   "2026-w12",
		Audience:         herald.Audience{UserIDs: []string{"42", "43"}},
		Channels:         []string{"email"},
		Content:          herald.Content{Email: &herald.EmailContent{Subject: "This week", HTML: "<p>News</p>"}},
		Priority:         herald.PriorityBulk,
		SendAt:           time.Now().Add(time.Hour),
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.Cancel(ctx, receipt.NotificationID, &herald.CancelOpts{Reason: "campaign withdrawn"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("canceled:", len(res.Canceled))

	_, err = client.Cancel(ctx, "no-such-notification", nil)
	fmt.Println(err)
	// Output:
	// canceled: 2
	// cancel notification: herald: notification not found
}

// The recipient directory resolves the user ids of an audience at delivery.
func ExampleClient_UpsertRecipient() {
	ctx := context.Background()
	pool, done := exampleDB("ExampleClient_UpsertRecipient")
	defer done()
	client, err := herald.NewClient(pool, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	err = client.UpsertRecipient(ctx, herald.Recipient{
		UserID:   "42",
		Email:    "ann@example.com",
		Phone:    "+44 20 7183 8750",
		Locale:   "en-GB",
		OptedOut: []string{"sms"},
	})
	fmt.Println(err)
	// Output:
	// <nil>
}
