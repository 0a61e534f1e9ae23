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
	for _, s := range steps {
		if s.Component == "herald" {
			fmt.Println(s.Direction, s.Name)
		}
	}
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
	// up 00001_create_core.sql
	// up 00002_add_dispatch_intake.sql
	// up 00003_create_operator_views.sql
	// up 00004_tune_hot_tables.sql
	// up 00005_drop_routes_record_fkey.sql
	// up 00006_confine_producers.sql
	// up 00007_create_providers.sql
	// up 00008_name_providers_in_timeline.sql
	// up 00009_add_provider_to_dead_letter_view.sql
	// current: true
	// steps: 0
}
