package smpp

import (
	"fmt"
	"slices"
	"strings"
)

// Type of number (TON) values.
const (
	TONUnknown         = 0
	TONInternational   = 1
	TONNational        = 2
	TONNetworkSpecific = 3
	TONSubscriber      = 4
	TONAlphanumeric    = 5
	TONAbbreviated     = 6
)

// Numbering plan indicator (NPI) values.
const (
	NPIUnknown  = 0
	NPIISDN     = 1 // E.163/E.164
	NPIData     = 3
	NPITelex    = 4
	NPILand     = 6
	NPINational = 8
	NPIPrivate  = 9
	NPIERMES    = 10
	NPIInternet = 14
	NPIWAP      = 18
)

var tonNames = map[string]uint8{
	"unknown": TONUnknown, "international": TONInternational, "national": TONNational,
	"network_specific": TONNetworkSpecific, "subscriber": TONSubscriber,
	"alphanumeric": TONAlphanumeric, "abbreviated": TONAbbreviated,
}

var npiNames = map[string]uint8{
	"unknown": NPIUnknown, "isdn": NPIISDN, "data": NPIData, "telex": NPITelex, "land_mobile": NPILand,
	"national": NPINational, "private": NPIPrivate, "ermes": NPIERMES, "internet": NPIInternet, "wap": NPIWAP,
}

func names(m map[string]uint8) string {
	k := make([]string, 0, len(m))
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return strings.Join(k, ", ")
}

// ParseTON returns the TON a name stands for ("international",
// "alphanumeric", ...); ok is false for "" (choose by the address).
func ParseTON(name string) (ton uint8, ok bool, err error) {
	if name == "" {
		return 0, false, nil
	}
	v, found := tonNames[name]
	if !found {
		return 0, false, fmt.Errorf("%q is not one of %s", name, names(tonNames))
	}
	return v, true, nil
}

// ParseNPI returns the NPI a name stands for ("isdn", "unknown", ...); ok
// is false for "" (choose by the address).
func ParseNPI(name string) (npi uint8, ok bool, err error) {
	if name == "" {
		return 0, false, nil
	}
	v, found := npiNames[name]
	if !found {
		return 0, false, fmt.Errorf("%q is not one of %s", name, names(npiNames))
	}
	return v, true, nil
}

// SourceAddress returns how to send a sender: "+" and digits is an
// international E.164 number (the "+" dropped; TON 1, NPI 1); digits
// alone, a short code (TON 3, NPI 0) when at most 8 long, else an
// international number without its "+"; anything else an alphanumeric
// sender id (TON 5, NPI 0).
func SourceAddress(s string) (addr string, ton, npi uint8) {
	digits := strings.TrimPrefix(s, "+")
	allDigits := digits != ""
	for _, r := range digits {
		if r < '0' || r > '9' {
			allDigits = false
			break
		}
	}
	switch {
	case s == "":
		return "", TONUnknown, NPIUnknown
	case allDigits && strings.HasPrefix(s, "+"):
		return digits, TONInternational, NPIISDN
	case allDigits && len(digits) <= 8:
		return digits, TONNetworkSpecific, NPIUnknown
	case allDigits:
		return digits, TONInternational, NPIISDN
	}
	return s, TONAlphanumeric, NPIUnknown
}

// registered_delivery values for SMSC delivery receipts.
const (
	ReceiptsNone    = 0x00
	ReceiptsFinal   = 0x01 // a receipt for success or failure
	ReceiptsFailure = 0x02 // a receipt for failure only
)

// ParseReceipts returns the registered_delivery for "final" (the
// default, also ""), "failure" or "none".
func ParseReceipts(name string) (uint8, error) {
	switch name {
	case "", "final":
		return ReceiptsFinal, nil
	case "failure":
		return ReceiptsFailure, nil
	case "none":
		return ReceiptsNone, nil
	}
	return 0, fmt.Errorf("%q is not final, failure or none", name)
}
