package intake

import (
	"runtime"
	"sync"
	"time"
)

// parallelMin is the batch size from which ValidateMany and the intake
// worker validate on several goroutines. Validation is CPU-bound (parsing
// phone numbers with libphonenumber dominates), so a large batch finishes
// sooner on every core; below this size the goroutines cost more than they
// save.
const parallelMin = 64

// forEach calls fn(i) for every i in [0, n), on up to GOMAXPROCS goroutines
// when n is at least parallelMin. fn must be safe for concurrent use on
// distinct i.
func forEach(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n/(parallelMin/2))
	if n < parallelMin || workers < 2 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// ValidateMany validates each of ins as Validate does, on several
// goroutines for a large batch, and returns, per intent, either its
// *Validated or its error.
func ValidateMany(ins []*Intent, lim Limits, now time.Time) ([]*Validated, []error) {
	vs := make([]*Validated, len(ins))
	errs := make([]error, len(ins))
	lim = lim.WithDefaults()
	forEach(len(ins), func(i int) {
		vs[i], errs[i] = Validate(ins[i], lim, now)
	})
	return vs, errs
}
