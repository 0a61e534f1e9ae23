package intake

import (
	"fmt"
	"strings"

	"github.com/heraldhq/herald/internal/canonjson"
	"github.com/heraldhq/herald/internal/heraldtype"
)

// Sender limits: GSM 03.40's originating address holds 11 characters of
// an alphanumeric sender (7-bit packed in 10 octets), or a number of up to
// 15 digits (E.164).
const (
	maxAlphaSenderLen   = 11
	maxNumericSenderLen = 15
)

// SenderKind is the kind of a valid sender: what SMPP's source_addr_ton
// and source_addr_npi follow.
type SenderKind int

// Kinds of sender.
const (
	// SenderInvalid: not a sender CheckSender accepts.
	SenderInvalid SenderKind = iota
	// SenderAlphanumeric: letters and digits, at least one letter.
	SenderAlphanumeric
	// SenderInternational: "+" and digits, an E.164 number.
	SenderInternational
	// SenderNumeric: digits only, a short code or a national number.
	SenderNumeric
)

// SenderKindOf returns the kind of s, and why s is none (SenderInvalid).
func SenderKindOf(s string) (SenderKind, string) {
	digits, letters, other := 0, 0, false
	body := strings.TrimPrefix(s, "+")
	for _, r := range body {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z':
			letters++
		default:
			other = true
		}
	}
	switch {
	case s == "":
		return SenderInvalid, "sender is empty"
	case other:
		return SenderInvalid, "sender may hold only ASCII letters and digits, or a leading + and digits"
	case letters > 0 && body != s:
		return SenderInvalid, "an alphanumeric sender has no leading +"
	case letters > 0 && len(s) > maxAlphaSenderLen:
		return SenderInvalid, fmt.Sprintf("an alphanumeric sender is at most %d characters", maxAlphaSenderLen)
	case letters > 0:
		return SenderAlphanumeric, ""
	case digits == 0:
		return SenderInvalid, "sender has no digits after +"
	case digits > maxNumericSenderLen:
		return SenderInvalid, fmt.Sprintf("a numeric sender is at most %d digits", maxNumericSenderLen)
	case body != s:
		return SenderInternational, ""
	}
	return SenderNumeric, ""
}

// checkSMSOptions validates in's from_sender and message_type into out:
// both only for an intent listing sms. message_type SMS, the default, is
// stored as absent, so that spelling it out is the same request.
func checkSMSOptions(errs *errorList, out *Intent, in *Intent, listed map[string]bool) {
	if in.FromSender != "" {
		s := strings.TrimSpace(in.FromSender)
		if _, why := SenderKindOf(s); why != "" {
			errs.add("from_sender", heraldtype.CodeInvalidField, "%s: %s", quoteShort(s), why)
		} else if len(listed) > 0 && !listed["sms"] {
			errs.add("from_sender", heraldtype.CodeInvalidField, "from_sender is given but channels does not list sms")
		}
		out.FromSender = s
	}
	switch t := heraldtype.MessageType(strings.TrimSpace(string(in.MessageType))); t {
	case "", heraldtype.MessageTypeSMS:
	case heraldtype.MessageTypeFlashSMS:
		if len(listed) > 0 && !listed["sms"] {
			errs.add("message_type", heraldtype.CodeInvalidField, "message_type FLASH_SMS is given but channels does not list sms")
		}
		out.MessageType = t
	default:
		errs.add("message_type", heraldtype.CodeInvalidField, "message_type %s is not one of SMS, FLASH_SMS", quoteShort(string(t)))
	}
}

// TemplatePayloadOf is TemplatePayload for the normalized intent in: its
// sender and flash, when set, are the member "sms_options" ({"flash",
// "from"}, between "data" and "template" in canonical order), which the
// dispatcher adds to the SMS it renders. Not "sms": a payload with an
// "sms" entry is content, not rendered.
func TemplatePayloadOf(in *Intent, ref heraldtype.TemplateRef, data []byte) []byte {
	p := TemplatePayload(ref, data)
	if in.FromSender == "" && in.MessageType != heraldtype.MessageTypeFlashSMS {
		return p
	}
	head := len(`{"data":`) + len(data)
	members := appendSMSOptions(nil, in) // ,"flash":true,"from":...
	out := make([]byte, 0, len(p)+len(members)+len(`,"sms_options":{}`))
	out = append(out, p[:head]...)
	out = append(out, `,"sms_options":{`...)
	out = append(out, members[1:]...)
	out = append(out, '}')
	return append(out, p[head:]...)
}

// appendSMSOptions appends the members an sms content object carries
// besides its body, in canonical order: "flash" (true for FLASH_SMS) and
// "from" (the sender). An intent without them stores {"body": ...} alone,
// so its payload and fingerprint are what they were before senders.
func appendSMSOptions(out []byte, in *Intent) []byte {
	if in.MessageType == heraldtype.MessageTypeFlashSMS {
		out = append(out, `,"flash":true`...)
	}
	if in.FromSender != "" {
		out = append(out, `,"from":`...)
		out = canonjson.AppendString(out, in.FromSender)
	}
	return out
}
