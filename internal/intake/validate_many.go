package intake

import (
	"runtime"
	"sync"
	"time"
)

// parallelMin is the batch size from which ValidateMany and
// DecodeValidateMany validate on several goroutines. Validation is
// CPU-bound (parsing phone numbers with libphonenumber dominates), so a
// large batch finishes sooner on every core; below this size the
// goroutines cost more than they save.
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

// DecodeValidateMany decodes each raw intake entry as DecodeRaw does and
// validates it as Validate does, on several goroutines for a large batch,
// and returns, per entry, either its *Validated or its error. sizes[i] is
// entry i's whole size in bytes; bodies[i] is the entry or, when sizes[i]
// exceeds lim.MaxEntryBytes, only its start: such an entry is refused as
// too_large, as DecodeRaw refuses it, without being decoded.
func DecodeValidateMany(bodies []string, sizes []int, lim Limits, now time.Time) ([]*Validated, []error) {
	vs := make([]*Validated, len(bodies))
	errs := make([]error, len(bodies))
	lim = lim.WithDefaults()
	forEach(len(bodies), func(i int) {
		if sizes[i] > lim.MaxEntryBytes {
			errs[i] = tooLarge(sizes[i], lim.MaxEntryBytes)
			return
		}
		in, err := DecodeRaw([]byte(bodies[i]), lim)
		if err == nil {
			vs[i], err = Validate(in, lim, now)
		}
		errs[i] = err
	})
	return vs, errs
}
