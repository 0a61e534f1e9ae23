package herald_test

import (
	"context"
	"fmt"
	"log"

	"github.com/heraldhq/herald/internal/sqldoor"
)

// The SQL door: any language, or a person with psql, INSERTs the intent's
// JSON (the Intent type's JSON form) into herald.intake; `herald serve`'s
// intake worker accepts it or records it in herald.malformed_intents.
func Example_sqlIntake() {
	ctx := context.Background()
	pool, done := exampleDB("Example_sqlIntake")
	defer done()

	// What a producer runs (shown as SQL in Go; from psql it is the same).
	_, err := pool.Exec(ctx, `INSERT INTO herald.intake (body) VALUES
		('{"notification_type": "otp", "producer": "auth", "idempotency_key": "login-77",
		   "channels": ["sms"], "audience": {"sms": ["+14155550123"]},
		   "content": {"sms": {"body": "Your code is 123456"}},
		   "expires_at": "2099-01-01T00:00:00Z"}'),
		('{"notification_type": "otp", "producer": "auth", "idempotency_key": "login-78",
		   "channels": ["fax"], "audience": {"sms": ["+14155550123"]}}'),
		('not json at all')`)
	if err != nil {
		log.Fatal(err)
	}

	// What herald serve runs.
	worker, err := sqldoor.NewWorker(pool, nil)
	if err != nil {
		log.Fatal(err)
	}
	accepted, malformed, err := worker.DrainOnce(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("accepted:", accepted, "malformed:", malformed)

	// What an operator reads.
	rows, err := pool.Query(ctx, `SELECT stream_entry_id, failure_code
		FROM herald.malformed_intents ORDER BY stream_entry_id`)
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, code string
		if err := rows.Scan(&id, &code); err != nil {
			log.Fatal(err)
		}
		fmt.Println(id, code)
	}
	// Output:
	// accepted: 1 malformed: 2
	// intake:2 unknown_channel
	// intake:3 not_json
}
