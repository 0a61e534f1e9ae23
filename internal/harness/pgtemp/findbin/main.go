// Command findbin prints the directory of the PostgreSQL server binaries the
// test harness would use, or says what to install and exits 1.
package main

import (
	"fmt"
	"os"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

func main() {
	dir, err := pgtemp.FindBinDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(dir)
}
