package herald_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/heraldhq/herald"
)

// Submit stores an intent once: a retry with the same idempotency key and
// the same request gets the original notification back.
func ExampleClient_Submit() {
	ctx := context.Background()
	pool, done := exampleDB("ExampleClient_Submit")
	defer done()

	client, err := herald.NewClient(pool, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	intent := &herald.Intent{
		NotificationType: "order.shipped",
		Producer:         "shop",
		IdempotencyKey:   "order-9-shipped",
		Audience: herald.Audience{
			UserIDs: []string{"42"},                // resolved through the recipient directory
			SMS:     []string{"+1 (415) 555-0123"}, // stored as +14155550123
			Webhook: []string{"https://hooks.example.com/orders"},
		},
		Channels: []string{"sms", "webhook"},
		Content: herald.Content{
			SMS:     &herald.SMSContent{Body: "Order 9 shipped"},
			Webhook: json.RawMessage(`{"order": 9, "status": "shipped"}`),
		},
	}
	first, err := client.Submit(ctx, intent)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("duplicate:", first.Duplicate, "routes:", len(first.RouteIDs))

	again, err := client.Submit(ctx, intent) // a retry
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("duplicate:", again.Duplicate, "same id:", again.NotificationID == first.NotificationID)

	intent.Content.SMS.Body = "Order 9 delayed" // same key, different request
	_, err = client.Submit(ctx, intent)
	var conflict *herald.ConflictError
	if errors.As(err, &conflict) {
		fmt.Println("conflict:", errors.Is(err, herald.ErrIdempotencyConflict),
			"names the original:", conflict.ExistingID == first.NotificationID)
	}
	// Output:
	// duplicate: false routes: 4
	// duplicate: true same id: true
	// conflict: true names the original: true
}

// A refused intent names each field and the rule it broke.
func ExampleValidationError() {
	ctx := context.Background()
	pool, done := exampleDB("ExampleValidationError")
	defer done()
	client, err := herald.NewClient(pool, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	_, err = client.Submit(ctx, &herald.Intent{
		NotificationType: "otp",
		Producer:         "auth",
		IdempotencyKey:   "login-77",
		Audience:         herald.Audience{SMS: []string{"555-0123"}},
		Channels:         []string{"sms", "pager"},
		Content:          herald.Content{SMS: &herald.SMSContent{Body: "Your code is 123456"}},
	})
	var verr *herald.ValidationError
	if errors.As(err, &verr) {
		for _, fe := range verr.Errors {
			fmt.Println(fe.Field, fe.Code)
		}
	}
	// Output:
	// channels[1] unknown_channel
	// audience.sms[0] invalid_phone
}

// SubmitMany stores a batch in one round trip; a bad intent gets its own
// error and does not keep the others out.
func ExampleClient_SubmitMany() {
	ctx := context.Background()
	pool, done := exampleDB("ExampleClient_SubmitMany")
	defer done()
	client, err := herald.NewClient(pool, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	otp := func(key, phone string) *herald.Intent {
		return &herald.Intent{
			NotificationType: "otp",
			Producer:         "auth",
			IdempotencyKey:   key,
			Audience:         herald.Audience{SMS: []string{phone}},
			Channels:         []string{"sms"},
			Content:          herald.Content{SMS: &herald.SMSContent{Body: "Your code is 123456"}},
		}
	}
	results, err := client.SubmitMany(ctx, []*herald.Intent{
		otp("login-1", "+14155550123"),
		otp("login-2", "+1415"),
		otp("login-3", "+442071838750"),
	})
	if err != nil {
		log.Fatal(err) // the statement failed: nothing was stored
	}
	for i, r := range results {
		if r.Err != nil {
			fmt.Println(i, "refused:", r.Err.(*herald.ValidationError).Code())
			continue
		}
		fmt.Println(i, "accepted")
	}
	// Output:
	// 0 accepted
	// 1 refused: invalid_phone
	// 2 accepted
}
