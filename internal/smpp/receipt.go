package smpp

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Receipt is a delivery receipt an SMSC sent as a deliver_sm.
type Receipt struct {
	// Provider is the provider whose bind received it.
	Provider string
	// ProviderMessageID is the message_id the SMSC gave the submit_sm:
	// the receipted_message_id TLV when present, else the text's id:.
	ProviderMessageID string
	// Status is the message's state as the receipt's stat: word says it
	// ("DELIVRD", "UNDELIV", "EXPIRED", "REJECTD", "DELETED", "UNKNOWN",
	// "ACCEPTD", "ENROUTE"), upper-cased; the message_state TLV when
	// present wins. Empty if neither says.
	Status string
	// ErrorCode is the text's err: value ("000"), else the
	// network_error_code TLV as "<type>:<code>", else "".
	ErrorCode string
	// Raw is the receipt's text as received.
	Raw string
	// ReceivedAt is when the deliver_sm was read.
	ReceivedAt time.Time
}

// Inbound is a mobile-originated message: a deliver_sm that is not a
// receipt. Parts of a long message are handed over one by one, each with
// its own text; reassembling them is the receiver's choice.
type Inbound struct {
	Provider string
	// From is the sender (source_addr), To the number it was sent to
	// (destination_addr), as the SMSC wrote them.
	From string
	To   string
	// Body is the text, decoded from DataCoding, without a user data
	// header.
	Body       string
	DataCoding uint8
	ReceivedAt time.Time
}

// ReceiptFunc takes a receipt before its deliver_sm_resp is sent; an
// error makes the answer ESME_RX_T_APPN, so the SMSC sends it again.
type ReceiptFunc func(ctx context.Context, r Receipt) error

// InboundFunc takes a mobile-originated message before its
// deliver_sm_resp is sent; an error makes the answer ESME_RX_T_APPN.
type InboundFunc func(ctx context.Context, m Inbound) error

// IsReceipt reports whether a deliver_sm with esm_class esm is a delivery
// receipt or an intermediate delivery notification rather than a message.
func IsReceipt(esm uint8) bool {
	t := esm & ESMClassTypeMask
	return t == ESMClassReceipt || t == ESMClassIntermediate
}

// receiptKeys are the fields of the de facto receipt text (SMPP 3.4
// appendix B), in their usual order.
var receiptKeys = []string{"id", "sub", "dlvrd", "submit date", "done date", "stat", "err", "text"}

// ParseReceiptText returns the fields of a receipt text such as
// "id:7a1 sub:001 dlvrd:001 submit date:2401021504 done date:2401021505
// stat:DELIVRD err:000 text:Hello", keyed by their lower-cased names. Keys
// are found wherever they start a word, in any case, in any order; a
// field's value runs to the next key ("text" to the end). Unknown words
// stay in the value before them. A text with none of the keys gives an
// empty map.
func ParseReceiptText(s string) map[string]string {
	lower := strings.ToLower(s)
	type at struct {
		key        string
		start, val int
	}
	var found []at
	for i := 0; i < len(lower); i++ {
		if i > 0 && lower[i-1] != ' ' && lower[i-1] != '\t' {
			continue
		}
		for _, k := range receiptKeys {
			if strings.HasPrefix(lower[i:], k+":") {
				found = append(found, at{k, i, i + len(k) + 1})
				if k == "text" {
					i = len(lower) // the text runs to the end
				}
				break
			}
		}
	}
	m := make(map[string]string, len(found))
	for j, f := range found {
		end := len(s)
		if j+1 < len(found) {
			end = found[j+1].start
		}
		if _, dup := m[f.key]; !dup {
			v := s[f.val:end]
			if f.key != "text" {
				v = strings.TrimSpace(v)
			}
			m[f.key] = v
		}
	}
	return m
}

// ParseReceipt builds the Receipt a deliver_sm carries: from its text and
// from the receipted_message_id, message_state and network_error_code
// TLVs when present. It does not check esm_class (see IsReceipt).
// SMSCs write receipt texts in ASCII whatever data_coding says, so only
// UCS-2 is decoded; other codings are read as ASCII (ISO-8859-1 beyond).
func ParseReceipt(provider string, sm *SM, receivedAt time.Time) Receipt {
	text := receiptText(sm)
	f := ParseReceiptText(text)
	r := Receipt{
		Provider:          provider,
		ProviderMessageID: f["id"],
		Status:            strings.ToUpper(f["stat"]),
		ErrorCode:         f["err"],
		Raw:               text,
		ReceivedAt:        receivedAt,
	}
	if sm.ReceiptedMessageID != "" {
		r.ProviderMessageID = sm.ReceiptedMessageID
	}
	if st := sm.MessageState.Stat(); st != "" {
		r.Status = st
	}
	if r.ErrorCode == "" && !sm.NetworkErrorCode.IsZero() {
		r.ErrorCode = fmt.Sprintf("%d:%d", sm.NetworkErrorCode.Type, sm.NetworkErrorCode.Code)
	}
	return r
}

// FormatReceiptText writes a receipt text in the de facto format, for
// test SMSCs: dates as YYMMDDhhmm, text cut to 20 characters.
func FormatReceiptText(id, stat, errCode string, submitted, done time.Time, text string) string {
	dlvrd := "000"
	if stat == "DELIVRD" {
		dlvrd = "001"
	}
	if r := []rune(text); len(r) > 20 {
		text = string(r[:20])
	}
	return fmt.Sprintf("id:%s sub:001 dlvrd:%s submit date:%s done date:%s stat:%s err:%s text:%s",
		id, dlvrd, submitted.Format("0601021504"), done.Format("0601021504"), stat, errCode, text)
}

// receiptText returns a receipt's text: its user data (message_payload
// when present) without a header, decoded as ASCII, or UCS-2.
func receiptText(sm *SM) string {
	ud := sm.ShortMessage
	if sm.MessagePayload != nil {
		ud = sm.MessagePayload
	}
	if sm.ESMClass&ESMClassUDHI != 0 && len(ud) > 0 && int(ud[0]) < len(ud) {
		ud = ud[1+int(ud[0]):]
	}
	if sm.DataCoding == CodingUCS2 {
		return DecodeUCS2(ud)
	}
	return decodeLatin1(ud)
}
