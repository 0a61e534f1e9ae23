// Package e164 checks that a phone number is written in E.164 form, as
// libphonenumber formats a valid number: a '+', the country code and the
// national number, digits only.
//
// libphonenumber's parse and validation run dozens of regular expressions
// per number, the largest cost of accepting or sending an SMS to a number
// already seen; the numbers found valid are remembered (a bounded set,
// emptied when full), since the metadata that decided them is compiled in
// and the answer cannot change while the process runs.
package e164

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nyaruka/phonenumbers"
)

// remembered bounds the set of numbers found valid: about 2.2 MB of
// strings and map entries when full.
const remembered = 16 << 10

var (
	valid sync.Map // number (string) -> struct{}
	count atomic.Int64
)

// Valid reports whether s is a valid phone number written in E.164 form.
func Valid(s string) bool {
	if len(s) < 3 || s[0] != '+' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false // never what libphonenumber's E.164 form is
		}
	}
	if _, ok := valid.Load(s); ok {
		return true
	}
	if !parse(s) {
		return false
	}
	if count.Add(1) > remembered {
		// Emptied rather than evicted one by one: a set of distinct
		// numbers larger than the bound gains little from any policy,
		// and this keeps the hit path one lock-free load.
		valid.Clear()
		count.Store(1)
	}
	// A copy: s may be part of a larger buffer the set would keep alive.
	valid.Store(strings.Clone(s), struct{}{})
	return true
}

// parse is Valid without the remembered set: libphonenumber parses s,
// finds it valid, and formats it back as s.
func parse(s string) bool {
	n, err := phonenumbers.Parse(s, "")
	if err != nil || !phonenumbers.IsValidNumber(n) {
		return false
	}
	return phonenumbers.Format(n, phonenumbers.E164) == s
}
