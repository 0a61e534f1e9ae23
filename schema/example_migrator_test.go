package schema_test

import (
	"context"
	"fmt"
	"log"

	"github.com/heraldhq/herald/schema"
	"github.com/heraldhq/herald/schema/heraldtest"
)

// A service migrates at start-up with the code `herald migrate` runs:
// herald's migrations, then River's, inside the Postgres schema "herald".
// Many processes may do so at once; one applies, the others find nothing
// to do.
func ExampleMigrator() {
	ctx := context.Background()
	// An empty database for the example; a service passes its own pool,
	// as a login allowed to create the schema.
	db, err := heraldtest.NewDatabase(ctx, &heraldtest.Opts{Empty: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	migrator := schema.NewMigrator(db.Pool, nil)
	steps, err := migrator.Up(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// Every migration is a step; the first is the core schema.
	fmt.Println(steps[0].Component, steps[0].Direction, steps[0].Name)
	current, err := migrator.Current(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("current:", current)

	steps, err = migrator.Up(ctx) // again: nothing to do
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("steps:", len(steps))
	// Output:
	// herald up 00001_create_core.sql
	// current: true
	// steps: 0
}
