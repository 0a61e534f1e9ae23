package smpp

import (
	"errors"
	"fmt"
	"unicode/utf16"

	"github.com/heraldhq/herald/internal/gsm7"
)

// Segments is an SMS body encoded for SMPP and cut into the parts it is
// sent as.
type Segments struct {
	// DataCoding is CodingDefault (GSM-7) or CodingUCS2.
	DataCoding uint8
	// Parts are the parts' user data without a header: unpacked septets,
	// one per octet, for GSM-7, UTF-16 big-endian for UCS-2. A body that
	// fits one SMS has one part.
	Parts [][]byte
}

// Whole returns the user data of every part, concatenated.
func (s Segments) Whole() []byte {
	var b []byte
	for _, p := range s.Parts {
		b = append(b, p...)
	}
	return b
}

// Split encodes body as GSM-7 when every character is in the GSM 03.38
// alphabet, else as UCS-2, and cuts it where gsm7.Encoding counts its
// segments: greedily, never inside an escape sequence or a surrogate
// pair. An empty body is one empty GSM-7 part.
func Split(body string) Segments {
	if gsm7.Is(body) {
		var units [][]byte
		for _, r := range body {
			units = append(units, gsm7.Septets(r))
		}
		return Segments{DataCoding: CodingDefault, Parts: cut(units, gsm7.Single, gsm7.Multi, 1)}
	}
	var units [][]byte
	for _, r := range body {
		if utf16.RuneLen(r) < 0 {
			r = '\uFFFD'
		}
		units = append(units, EncodeUCS2(string(r)))
	}
	return Segments{DataCoding: CodingUCS2, Parts: cut(units, gsm7.UCS2Single, gsm7.UCS2Multi, 2)}
}

// cut packs characters (each one's encoded units, size octets per unit)
// into parts: all in one if they fit single units, else greedily into
// parts of multi units.
func cut(chars [][]byte, single, multi, size int) [][]byte {
	total := 0
	for _, c := range chars {
		total += len(c) / size
	}
	if total <= single {
		var b []byte
		for _, c := range chars {
			b = append(b, c...)
		}
		return [][]byte{b}
	}
	var parts [][]byte
	var cur []byte
	for _, c := range chars {
		if (len(cur)+len(c))/size > multi {
			parts = append(parts, cur)
			cur = nil
		}
		cur = append(cur, c...)
	}
	return append(parts, cur)
}

// LongMode is how a body longer than one SMS is sent.
type LongMode string

// Long-message modes.
const (
	// LongUDH sends each part as its own submit_sm whose short_message
	// starts with a concatenation user data header with an 8-bit reference
	// (esm_class UDHI set). The default.
	LongUDH LongMode = "udh"
	// LongSAR sends each part as its own submit_sm with the sar_msg_ref_num,
	// sar_total_segments and sar_segment_seqnum TLVs; the SMSC adds the
	// header.
	LongSAR LongMode = "sar"
	// LongPayload sends the whole body in one submit_sm's message_payload
	// TLV; the SMSC cuts it.
	LongPayload LongMode = "payload"
)

// ParseLongMode returns the mode s names; "" is LongUDH.
func ParseLongMode(s string) (LongMode, error) {
	switch LongMode(s) {
	case "", LongUDH:
		return LongUDH, nil
	case LongSAR, LongPayload:
		return LongMode(s), nil
	}
	return "", fmt.Errorf("%q is not udh, sar or payload", s)
}

// MessageOpts says how Message builds submits.
type MessageOpts struct {
	// Long is how a multi-part body is sent; default LongUDH.
	Long LongMode
	// Packed packs GSM-7 septets into octets; by default each septet
	// takes an octet and the SMSC packs them, which most expect.
	Packed bool
	// Ref is the concatenated message's reference: its low 8 bits in the
	// user data header, all 16 in sar_msg_ref_num. Give each long message
	// of a destination a different one.
	Ref uint16
	// Flash sends a flash SMS: the data_coding of every part carries
	// message class 0 (CodingFlashDefault, CodingFlashUCS2).
	Flash bool
}

// ErrTooManyParts is returned by Message for a body of more than 255
// parts, the most a concatenated SMS may have.
var ErrTooManyParts = errors.New("smpp: a body of more than 255 parts cannot be concatenated")

// Message returns the submit_sm bodies that send body: copies of base
// (addresses, esm_class, registered_delivery and so on) with DataCoding,
// ShortMessage, and for a long body a header, SAR or MessagePayload set as
// opts say. One part never has a header.
func Message(base SM, body string, opts MessageOpts) ([]*SM, error) {
	seg := Split(body)
	n := len(seg.Parts)
	if n > 255 {
		return nil, ErrTooManyParts
	}
	encode := func(septets []byte, fill int) []byte {
		if seg.DataCoding == CodingDefault && opts.Packed {
			return gsm7.Pack(septets, fill)
		}
		return septets
	}
	mk := func() *SM {
		sm := base
		sm.DataCoding = seg.DataCoding
		if opts.Flash {
			sm.DataCoding = Flash(seg.DataCoding)
		}
		sm.ShortMessage, sm.MessagePayload, sm.SAR = nil, nil, nil
		return &sm
	}
	if n == 1 {
		sm := mk()
		if ud := encode(seg.Parts[0], 0); len(ud) > 0 {
			sm.ShortMessage = ud
		}
		return []*SM{sm}, nil
	}
	switch opts.Long {
	case LongPayload:
		sm := mk()
		sm.MessagePayload = encode(seg.Whole(), 0)
		return []*SM{sm}, nil
	case LongSAR:
		out := make([]*SM, n)
		for i, p := range seg.Parts {
			sm := mk()
			sm.ShortMessage = encode(p, 0)
			sm.SAR = &SAR{Ref: opts.Ref, Total: uint8(n), Seq: uint8(i + 1)}
			out[i] = sm
		}
		return out, nil
	}
	out := make([]*SM, n)
	for i, p := range seg.Parts {
		sm := mk()
		sm.ESMClass |= ESMClassUDHI
		udh := []byte{0x05, 0x00, 0x03, byte(opts.Ref), byte(n), byte(i + 1)}
		// 6 octets of header are 48 bits: one fill bit brings the first
		// septet to the septet boundary at 49.
		sm.ShortMessage = append(udh, encode(p, 1)...)
		out[i] = sm
	}
	return out, nil
}

// Concat is a concatenation header's reference and position.
type Concat struct {
	Ref   uint16
	Total uint8
	Seq   uint8
}

// UserData splits sm's user data (MessagePayload if present, else
// ShortMessage) into its concatenation information and text: from a user
// data header when esm_class has UDHI (8- or 16-bit reference elements),
// else from the SAR TLVs. ok is false when it is not part of a long
// message. The text is decoded as DecodeText does, packed telling how
// GSM-7 is carried. A header that runs past the data is an error.
func UserData(sm *SM, packed bool) (c Concat, ok bool, text string, err error) {
	ud := sm.ShortMessage
	if sm.MessagePayload != nil {
		ud = sm.MessagePayload
	}
	fill := 0
	if sm.ESMClass&ESMClassUDHI != 0 {
		if len(ud) < 1 || int(ud[0])+1 > len(ud) {
			return c, false, "", errors.New("smpp: user data header longer than the user data")
		}
		hl := int(ud[0])
		h := ud[1 : 1+hl]
		for len(h) >= 2 {
			iei, l := h[0], int(h[1])
			if 2+l > len(h) {
				return c, false, "", errors.New("smpp: user data header element runs past the header")
			}
			v := h[2 : 2+l]
			switch {
			case iei == 0x00 && l == 3:
				c, ok = Concat{Ref: uint16(v[0]), Total: v[1], Seq: v[2]}, true
			case iei == 0x08 && l == 4:
				c, ok = Concat{Ref: uint16(v[0])<<8 | uint16(v[1]), Total: v[2], Seq: v[3]}, true
			}
			h = h[2+l:]
		}
		ud = ud[1+hl:]
		fill = (7 - ((hl+1)*8)%7) % 7
	} else if sm.SAR != nil {
		c, ok = Concat{Ref: sm.SAR.Ref, Total: sm.SAR.Total, Seq: sm.SAR.Seq}, true
	}
	return c, ok, DecodeText(sm.DataCoding, ud, packed, fill), nil
}
