package smpp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// CommandID is a PDU's command_id. Responses have bit 31 set.
type CommandID uint32

// The commands herald sends or may receive (SMPP 3.4 section 5.1.2).
const (
	GenericNack         CommandID = 0x80000000
	BindReceiver        CommandID = 0x00000001
	BindReceiverResp    CommandID = 0x80000001
	BindTransmitter     CommandID = 0x00000002
	BindTransmitterResp CommandID = 0x80000002
	SubmitSM            CommandID = 0x00000004
	SubmitSMResp        CommandID = 0x80000004
	DeliverSM           CommandID = 0x00000005
	DeliverSMResp       CommandID = 0x80000005
	Unbind              CommandID = 0x00000006
	UnbindResp          CommandID = 0x80000006
	BindTransceiver     CommandID = 0x00000009
	BindTransceiverResp CommandID = 0x80000009
	EnquireLink         CommandID = 0x00000015
	EnquireLinkResp     CommandID = 0x80000015
)

var commandNames = map[CommandID]string{
	GenericNack:         "generic_nack",
	BindReceiver:        "bind_receiver",
	BindReceiverResp:    "bind_receiver_resp",
	BindTransmitter:     "bind_transmitter",
	BindTransmitterResp: "bind_transmitter_resp",
	SubmitSM:            "submit_sm",
	SubmitSMResp:        "submit_sm_resp",
	DeliverSM:           "deliver_sm",
	DeliverSMResp:       "deliver_sm_resp",
	Unbind:              "unbind",
	UnbindResp:          "unbind_resp",
	BindTransceiver:     "bind_transceiver",
	BindTransceiverResp: "bind_transceiver_resp",
	EnquireLink:         "enquire_link",
	EnquireLinkResp:     "enquire_link_resp",
}

// String returns the command's SMPP name, or its value in hex for a
// command this package does not know.
func (c CommandID) String() string {
	if n, ok := commandNames[c]; ok {
		return n
	}
	return fmt.Sprintf("command 0x%08X", uint32(c))
}

// IsResponse reports whether c is a response (bit 31 set).
func (c CommandID) IsResponse() bool { return c&0x80000000 != 0 }

// Response returns the response command of request c (c with bit 31
// set); generic_nack for a response.
func (c CommandID) Response() CommandID {
	if c.IsResponse() {
		return GenericNack
	}
	return c | 0x80000000
}

// Sizes and limits.
const (
	// HeaderLen is the length of a PDU header: command_length,
	// command_id, command_status and sequence_number, four octets each.
	HeaderLen = 16
	// MaxCommandLength is the largest command_length accepted. It leaves
	// room for a message_payload of 64 KiB, the most its TLV length can
	// say, plus the mandatory fields; anything longer is refused before a
	// byte of its body is read or allocated.
	MaxCommandLength = 70 * 1024
	// MaxShortMessage is the most octets short_message may hold.
	MaxShortMessage = 254
	// MaxSequence is the largest sequence_number; sequence numbers run
	// from 1 to MaxSequence and wrap.
	MaxSequence = 0x7FFFFFFF
)

// Field lengths in octets, counting the terminating NUL of C-octet
// strings (SMPP 3.4 section 4).
const (
	MaxSystemIDLen     = 16
	MaxPasswordLen     = 9
	MaxSystemTypeLen   = 13
	MaxAddressRangeLen = 41
	MaxServiceTypeLen  = 6
	MaxAddrLen         = 21
	MaxTimeLen         = 17
	MaxMessageIDLen    = 65
)

// Interface version herald binds with: 3.4.
const InterfaceVersion34 = 0x34

// esm_class bits.
const (
	// ESMClassUDHI says short_message (or message_payload) begins with a
	// user data header.
	ESMClassUDHI = 0x40
	// ESMClassTypeMask selects esm_class's message type bits.
	ESMClassTypeMask = 0x3C
	// ESMClassReceipt is the message type of an SMSC delivery receipt.
	ESMClassReceipt = 0x04
	// ESMClassIntermediate is the message type of an intermediate
	// delivery notification.
	ESMClassIntermediate = 0x20
)

// data_coding values herald uses.
const (
	// CodingDefault is the SMSC default alphabet, taken as GSM 03.38.
	CodingDefault = 0x00
	// CodingLatin1 is ISO-8859-1, only ever received.
	CodingLatin1 = 0x03
	// CodingUCS2 is UCS-2 (UTF-16 big-endian in practice).
	CodingUCS2 = 0x08
	// CodingFlashDefault and CodingFlashUCS2 are GSM 03.38's general data
	// coding group with message class 0 (a flash SMS: shown at once, not
	// stored) in the GSM-7 default alphabet and in UCS-2. SMPP 3.4 passes
	// data_coding values from 0x10 on through as GSM 03.38 coding schemes.
	CodingFlashDefault = 0x10
	CodingFlashUCS2    = 0x18
)

// Flash returns data_coding dc (CodingDefault or CodingUCS2) with message
// class 0: CodingFlashDefault or CodingFlashUCS2.
func Flash(dc uint8) uint8 { return dc | 0x10 }

// Alphabet returns the SMPP data_coding of dc's alphabet: dc itself, but
// for a GSM 03.38 general data coding scheme with a message class (0x10
// to 0x1F, uncompressed), CodingDefault, CodingUCS2, or 0x04 (8-bit data)
// from its alphabet bits.
func Alphabet(dc uint8) uint8 {
	if dc&0xF0 != 0x10 {
		return dc
	}
	switch dc >> 2 & 0x03 {
	case 0:
		return CodingDefault
	case 2:
		return CodingUCS2
	}
	return 0x04
}

// Optional parameter (TLV) tags this package reads and writes; others are
// skipped on decoding.
const (
	TagReceiptedMessageID uint16 = 0x001E
	TagSARMsgRefNum       uint16 = 0x020C
	TagSARTotalSegments   uint16 = 0x020E
	TagSARSegmentSeqnum   uint16 = 0x020F
	TagNetworkErrorCode   uint16 = 0x0423
	TagMessagePayload     uint16 = 0x0424
	TagMessageState       uint16 = 0x0427
)

// PDU is one SMPP protocol data unit.
type PDU struct {
	Command  CommandID
	Status   Status
	Sequence uint32
	// Body is the command's body: *Bind for the three binds, *BindResp for
	// their responses, *SM for submit_sm and deliver_sm, *SMResp for their
	// responses, and nil for enquire_link, unbind, their responses and
	// generic_nack, which have none.
	Body Body
}

// Body is a PDU body: *Bind, *BindResp, *SM or *SMResp.
type Body interface {
	appendTo(b []byte) ([]byte, error)
	decode(r *reader) error
}

// Bind is the body of bind_transmitter, bind_receiver and
// bind_transceiver.
type Bind struct {
	SystemID         string
	Password         string
	SystemType       string
	InterfaceVersion uint8
	AddrTON          uint8
	AddrNPI          uint8
	AddressRange     string
}

// BindResp is the body of the bind responses. A refused bind may come
// without one, which decodes as an empty SystemID.
type BindResp struct {
	SystemID string
}

// SM is the body of submit_sm and deliver_sm, which share their layout,
// with the optional parameters herald uses; a zero optional field is
// absent from the PDU.
type SM struct {
	ServiceType          string
	SourceAddrTON        uint8
	SourceAddrNPI        uint8
	SourceAddr           string
	DestAddrTON          uint8
	DestAddrNPI          uint8
	DestinationAddr      string
	ESMClass             uint8
	ProtocolID           uint8
	PriorityFlag         uint8
	ScheduleDeliveryTime string
	ValidityPeriod       string
	RegisteredDelivery   uint8
	ReplaceIfPresentFlag uint8
	DataCoding           uint8
	SMDefaultMsgID       uint8
	// ShortMessage is at most MaxShortMessage octets; nil when empty.
	ShortMessage []byte

	// MessagePayload (TLV message_payload) is present when not nil; it
	// replaces ShortMessage, which is then empty.
	MessagePayload []byte
	// SAR (TLVs sar_msg_ref_num, sar_total_segments, sar_segment_seqnum)
	// is present when not nil; the three come together or not at all.
	SAR *SAR
	// ReceiptedMessageID (TLV receipted_message_id), in a receipt: the
	// message_id the SMSC gave the submit_sm.
	ReceiptedMessageID string
	// MessageState (TLV message_state), in a receipt: MessageDelivered,
	// MessageUndeliverable and so on.
	MessageState MessageState
	// NetworkErrorCode (TLV network_error_code), in a receipt.
	NetworkErrorCode NetworkErrorCode
}

// SAR is the segmentation and reassembly TLVs of one part of a long
// message.
type SAR struct {
	Ref   uint16 // sar_msg_ref_num: the same in every part of a message
	Total uint8  // sar_total_segments
	Seq   uint8  // sar_segment_seqnum, from 1
}

// NetworkErrorCode is the TLV network_error_code: the network type (1
// ANSI-136, 2 IS-95, 3 GSM, ...) and its error code.
type NetworkErrorCode struct {
	Type uint8
	Code uint16
}

// IsZero reports whether n is absent.
func (n NetworkErrorCode) IsZero() bool { return n == NetworkErrorCode{} }

// MessageState is the TLV message_state of a receipt.
type MessageState uint8

// Message states (SMPP 3.4 section 5.2.28).
const (
	MessageEnroute       MessageState = 1
	MessageDelivered     MessageState = 2
	MessageExpired       MessageState = 3
	MessageDeleted       MessageState = 4
	MessageUndeliverable MessageState = 5
	MessageAccepted      MessageState = 6
	MessageUnknown       MessageState = 7
	MessageRejected      MessageState = 8
)

// Stat returns the state as a receipt's stat: word ("DELIVRD",
// "UNDELIV"), or "" for 0 or an unknown value.
func (s MessageState) Stat() string {
	switch s {
	case MessageEnroute:
		return "ENROUTE"
	case MessageDelivered:
		return "DELIVRD"
	case MessageExpired:
		return "EXPIRED"
	case MessageDeleted:
		return "DELETED"
	case MessageUndeliverable:
		return "UNDELIV"
	case MessageAccepted:
		return "ACCEPTD"
	case MessageUnknown:
		return "UNKNOWN"
	case MessageRejected:
		return "REJECTD"
	}
	return ""
}

// SMResp is the body of submit_sm_resp and deliver_sm_resp. A response
// with a non-zero status may come without one, which decodes as an empty
// MessageID; deliver_sm_resp's MessageID is always empty.
type SMResp struct {
	MessageID string
}

// Errors of the codec.
var (
	// ErrCommandLength is returned by ReadPDU and Decode for a
	// command_length below HeaderLen or above MaxCommandLength: the
	// stream cannot be trusted past it, so a session drops the connection.
	ErrCommandLength = errors.New("smpp: command_length out of bounds")
)

// DecodeError is a PDU whose header was sound but whose body was not. The
// stream is still in step (the whole command_length was consumed), so a
// session answers it with Status (generic_nack or the command's response)
// and carries on.
type DecodeError struct {
	Command  CommandID
	Sequence uint32
	// Status is the command_status to answer with.
	Status Status
	// Field names what was wrong, e.g. "source_addr".
	Field  string
	Reason string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("smpp: decode %s: %s: %s", e.Command, e.Field, e.Reason)
}

// ReadPDU reads one PDU from r. The body is not read, nor its buffer
// allocated, unless command_length is within bounds: a length out of
// bounds is ErrCommandLength. A body that does not decode is a
// *DecodeError, after which the next PDU may be read. io.EOF means r
// ended cleanly between PDUs.
func ReadPDU(r io.Reader) (*PDU, error) {
	var h [HeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[0:4])
	if n < HeaderLen || n > MaxCommandLength {
		return nil, fmt.Errorf("%w: %d", ErrCommandLength, n)
	}
	buf := make([]byte, n)
	copy(buf, h[:])
	if _, err := io.ReadFull(r, buf[HeaderLen:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return Decode(buf)
}

// Decode decodes one PDU that is exactly b: its command_length must be
// len(b) (else ErrCommandLength); a body that does not decode is a
// *DecodeError. Decode never keeps a reference to b.
func Decode(b []byte) (*PDU, error) {
	if len(b) < HeaderLen || len(b) > MaxCommandLength {
		return nil, fmt.Errorf("%w: %d octets", ErrCommandLength, len(b))
	}
	if n := binary.BigEndian.Uint32(b[0:4]); int64(n) != int64(len(b)) {
		return nil, fmt.Errorf("%w: says %d, has %d", ErrCommandLength, n, len(b))
	}
	p := &PDU{
		Command:  CommandID(binary.BigEndian.Uint32(b[4:8])),
		Status:   Status(binary.BigEndian.Uint32(b[8:12])),
		Sequence: binary.BigEndian.Uint32(b[12:16]),
	}
	fail := func(st Status, field, reason string) error {
		return &DecodeError{Command: p.Command, Sequence: p.Sequence, Status: st, Field: field, Reason: reason}
	}
	body := b[HeaderLen:]
	switch p.Command {
	case BindReceiver, BindTransmitter, BindTransceiver:
		p.Body = &Bind{}
	case BindReceiverResp, BindTransmitterResp, BindTransceiverResp:
		p.Body = &BindResp{}
	case SubmitSM, DeliverSM:
		p.Body = &SM{}
	case SubmitSMResp, DeliverSMResp:
		p.Body = &SMResp{}
	case EnquireLink, EnquireLinkResp, Unbind, UnbindResp, GenericNack:
		if len(body) != 0 {
			return nil, fail(StatusInvCmdLen, "body", fmt.Sprintf("%d unexpected octets", len(body)))
		}
		return p, nil
	default:
		return nil, fail(StatusInvCmdID, "command_id", "unknown command")
	}
	r := &reader{b: body}
	if err := p.Body.decode(r); err != nil {
		var re *readError
		if errors.As(err, &re) {
			return nil, fail(re.status, re.field, re.reason)
		}
		return nil, fail(StatusSysErr, "body", err.Error())
	}
	return p, nil
}

// Encode returns p's wire form. It fails, without writing anything, on a
// field too long for SMPP or a string containing NUL.
func (p *PDU) Encode() ([]byte, error) { return p.AppendEncode(nil) }

// AppendEncode appends p's wire form to dst.
func (p *PDU) AppendEncode(dst []byte) ([]byte, error) {
	start := len(dst)
	b := binary.BigEndian.AppendUint32(dst, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(p.Command))
	b = binary.BigEndian.AppendUint32(b, uint32(p.Status))
	b = binary.BigEndian.AppendUint32(b, p.Sequence)
	if p.Body != nil && !p.omitBody() {
		var err error
		if b, err = p.Body.appendTo(b); err != nil {
			return dst, fmt.Errorf("smpp: encode %s: %w", p.Command, err)
		}
	}
	n := len(b) - start
	if n > MaxCommandLength {
		return dst, fmt.Errorf("smpp: encode %s: %d octets is over MaxCommandLength", p.Command, n)
	}
	binary.BigEndian.PutUint32(b[start:], uint32(n))
	return b, nil
}

// omitBody reports whether p is a refusal whose body SMPP 3.4 says is not
// sent (an error response with nothing to say).
func (p *PDU) omitBody() bool {
	if p.Status == StatusOK {
		return false
	}
	switch body := p.Body.(type) {
	case *SMResp:
		return body.MessageID == ""
	case *BindResp:
		return body.SystemID == ""
	}
	return false
}

// readError is a body field that did not decode.
type readError struct {
	status        Status
	field, reason string
}

func (e *readError) Error() string { return e.field + ": " + e.reason }

// reader reads a PDU body field by field; every read is bounds-checked.
type reader struct {
	b   []byte
	off int
}

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) byte(field string) (uint8, error) {
	if r.remaining() < 1 {
		return 0, &readError{StatusInvCmdLen, field, "body ends before it"}
	}
	v := r.b[r.off]
	r.off++
	return v, nil
}

// cstring reads a C-octet string of at most max octets with its NUL.
func (r *reader) cstring(field string, max int) (string, error) {
	rest := r.b[r.off:]
	limit := min(len(rest), max)
	i := bytes.IndexByte(rest[:limit], 0)
	if i < 0 {
		if len(rest) < max {
			return "", &readError{StatusInvCmdLen, field, "no NUL before the body ends"}
		}
		return "", &readError{StatusInvCmdLen, field, fmt.Sprintf("longer than %d octets", max-1)}
	}
	s := string(rest[:i])
	r.off += i + 1
	return s, nil
}

// octets reads n octets, copied; nil when n is 0.
func (r *reader) octets(field string, n int) ([]byte, error) {
	if n > r.remaining() {
		return nil, &readError{StatusInvCmdLen, field, fmt.Sprintf("says %d octets, %d left", n, r.remaining())}
	}
	if n == 0 {
		return nil, nil
	}
	v := bytes.Clone(r.b[r.off : r.off+n])
	r.off += n
	return v, nil
}

func (r *reader) end(field string) error {
	if r.remaining() != 0 {
		return &readError{StatusInvCmdLen, field, fmt.Sprintf("%d octets after the last field", r.remaining())}
	}
	return nil
}

// appendCString appends s and its NUL, checking it fits max octets.
func appendCString(b []byte, field, s string, max int) ([]byte, error) {
	if len(s) >= max {
		return b, fmt.Errorf("%s: %d octets, at most %d", field, len(s), max-1)
	}
	if bytes.IndexByte([]byte(s), 0) >= 0 {
		return b, fmt.Errorf("%s: contains NUL", field)
	}
	b = append(b, s...)
	return append(b, 0), nil
}

func (m *Bind) appendTo(b []byte) ([]byte, error) {
	var err error
	if b, err = appendCString(b, "system_id", m.SystemID, MaxSystemIDLen); err != nil {
		return b, err
	}
	if b, err = appendCString(b, "password", m.Password, MaxPasswordLen); err != nil {
		return b, err
	}
	if b, err = appendCString(b, "system_type", m.SystemType, MaxSystemTypeLen); err != nil {
		return b, err
	}
	b = append(b, m.InterfaceVersion, m.AddrTON, m.AddrNPI)
	return appendCString(b, "address_range", m.AddressRange, MaxAddressRangeLen)
}

func (m *Bind) decode(r *reader) (err error) {
	if m.SystemID, err = r.cstring("system_id", MaxSystemIDLen); err != nil {
		return err
	}
	if m.Password, err = r.cstring("password", MaxPasswordLen); err != nil {
		return err
	}
	if m.SystemType, err = r.cstring("system_type", MaxSystemTypeLen); err != nil {
		return err
	}
	if m.InterfaceVersion, err = r.byte("interface_version"); err != nil {
		return err
	}
	if m.AddrTON, err = r.byte("addr_ton"); err != nil {
		return err
	}
	if m.AddrNPI, err = r.byte("addr_npi"); err != nil {
		return err
	}
	if m.AddressRange, err = r.cstring("address_range", MaxAddressRangeLen); err != nil {
		return err
	}
	return r.end("address_range")
}

func (m *BindResp) appendTo(b []byte) ([]byte, error) {
	return appendCString(b, "system_id", m.SystemID, MaxSystemIDLen)
}

func (m *BindResp) decode(r *reader) (err error) {
	if r.remaining() == 0 {
		return nil // a refusal without a body
	}
	if m.SystemID, err = r.cstring("system_id", MaxSystemIDLen); err != nil {
		return err
	}
	// Optional parameters (sc_interface_version) are skipped.
	return skipTLVs(r)
}

func (m *SMResp) appendTo(b []byte) ([]byte, error) {
	return appendCString(b, "message_id", m.MessageID, MaxMessageIDLen)
}

func (m *SMResp) decode(r *reader) (err error) {
	if r.remaining() == 0 {
		return nil
	}
	if m.MessageID, err = r.cstring("message_id", MaxMessageIDLen); err != nil {
		return err
	}
	return skipTLVs(r)
}

func (m *SM) appendTo(b []byte) ([]byte, error) {
	var err error
	if b, err = appendCString(b, "service_type", m.ServiceType, MaxServiceTypeLen); err != nil {
		return b, err
	}
	b = append(b, m.SourceAddrTON, m.SourceAddrNPI)
	if b, err = appendCString(b, "source_addr", m.SourceAddr, MaxAddrLen); err != nil {
		return b, err
	}
	b = append(b, m.DestAddrTON, m.DestAddrNPI)
	if b, err = appendCString(b, "destination_addr", m.DestinationAddr, MaxAddrLen); err != nil {
		return b, err
	}
	b = append(b, m.ESMClass, m.ProtocolID, m.PriorityFlag)
	if b, err = appendCString(b, "schedule_delivery_time", m.ScheduleDeliveryTime, MaxTimeLen); err != nil {
		return b, err
	}
	if b, err = appendCString(b, "validity_period", m.ValidityPeriod, MaxTimeLen); err != nil {
		return b, err
	}
	b = append(b, m.RegisteredDelivery, m.ReplaceIfPresentFlag, m.DataCoding, m.SMDefaultMsgID)
	if len(m.ShortMessage) > MaxShortMessage {
		return b, fmt.Errorf("short_message: %d octets, at most %d", len(m.ShortMessage), MaxShortMessage)
	}
	b = append(b, uint8(len(m.ShortMessage)))
	b = append(b, m.ShortMessage...)

	if m.MessagePayload != nil {
		if len(m.MessagePayload) > 0xFFFF {
			return b, fmt.Errorf("message_payload: %d octets, at most 65535", len(m.MessagePayload))
		}
		b = appendTLV(b, TagMessagePayload, m.MessagePayload)
	}
	if m.SAR != nil {
		b = appendTLV(b, TagSARMsgRefNum, binary.BigEndian.AppendUint16(nil, m.SAR.Ref))
		b = appendTLV(b, TagSARTotalSegments, []byte{m.SAR.Total})
		b = appendTLV(b, TagSARSegmentSeqnum, []byte{m.SAR.Seq})
	}
	if m.ReceiptedMessageID != "" {
		v, err := appendCString(nil, "receipted_message_id", m.ReceiptedMessageID, MaxMessageIDLen)
		if err != nil {
			return b, err
		}
		b = appendTLV(b, TagReceiptedMessageID, v)
	}
	if m.MessageState != 0 {
		b = appendTLV(b, TagMessageState, []byte{uint8(m.MessageState)})
	}
	if !m.NetworkErrorCode.IsZero() {
		b = appendTLV(b, TagNetworkErrorCode, binary.BigEndian.AppendUint16([]byte{m.NetworkErrorCode.Type}, m.NetworkErrorCode.Code))
	}
	return b, nil
}

func appendTLV(b []byte, tag uint16, v []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, tag)
	b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
	return append(b, v...)
}

func (m *SM) decode(r *reader) (err error) {
	if m.ServiceType, err = r.cstring("service_type", MaxServiceTypeLen); err != nil {
		return err
	}
	if m.SourceAddrTON, err = r.byte("source_addr_ton"); err != nil {
		return err
	}
	if m.SourceAddrNPI, err = r.byte("source_addr_npi"); err != nil {
		return err
	}
	if m.SourceAddr, err = r.cstring("source_addr", MaxAddrLen); err != nil {
		return err
	}
	if m.DestAddrTON, err = r.byte("dest_addr_ton"); err != nil {
		return err
	}
	if m.DestAddrNPI, err = r.byte("dest_addr_npi"); err != nil {
		return err
	}
	if m.DestinationAddr, err = r.cstring("destination_addr", MaxAddrLen); err != nil {
		return err
	}
	for _, f := range []struct {
		dst  *uint8
		name string
	}{{&m.ESMClass, "esm_class"}, {&m.ProtocolID, "protocol_id"}, {&m.PriorityFlag, "priority_flag"}} {
		if *f.dst, err = r.byte(f.name); err != nil {
			return err
		}
	}
	if m.ScheduleDeliveryTime, err = r.cstring("schedule_delivery_time", MaxTimeLen); err != nil {
		return err
	}
	if m.ValidityPeriod, err = r.cstring("validity_period", MaxTimeLen); err != nil {
		return err
	}
	for _, f := range []struct {
		dst  *uint8
		name string
	}{{&m.RegisteredDelivery, "registered_delivery"}, {&m.ReplaceIfPresentFlag, "replace_if_present_flag"},
		{&m.DataCoding, "data_coding"}, {&m.SMDefaultMsgID, "sm_default_msg_id"}} {
		if *f.dst, err = r.byte(f.name); err != nil {
			return err
		}
	}
	n, err := r.byte("sm_length")
	if err != nil {
		return err
	}
	if int(n) > MaxShortMessage {
		return &readError{StatusInvMsgLen, "sm_length", fmt.Sprintf("%d is over %d", n, MaxShortMessage)}
	}
	if m.ShortMessage, err = r.octets("short_message", int(n)); err != nil {
		return err
	}
	return m.decodeTLVs(r)
}

// decodeTLVs reads the optional parameters: those SM has fields for are
// checked and kept, any other is skipped.
func (m *SM) decodeTLVs(r *reader) error {
	var sar SAR
	var sarSeen [3]bool
	err := eachTLV(r, func(tag uint16, v []byte) error {
		badLen := func(name string, want int) error {
			if len(v) != want {
				return &readError{StatusInvParLen, name, fmt.Sprintf("%d octets, must be %d", len(v), want)}
			}
			return nil
		}
		switch tag {
		case TagMessagePayload:
			m.MessagePayload = bytes.Clone(v)
			if m.MessagePayload == nil {
				m.MessagePayload = []byte{}
			}
		case TagSARMsgRefNum:
			if err := badLen("sar_msg_ref_num", 2); err != nil {
				return err
			}
			sar.Ref, sarSeen[0] = binary.BigEndian.Uint16(v), true
		case TagSARTotalSegments:
			if err := badLen("sar_total_segments", 1); err != nil {
				return err
			}
			sar.Total, sarSeen[1] = v[0], true
		case TagSARSegmentSeqnum:
			if err := badLen("sar_segment_seqnum", 1); err != nil {
				return err
			}
			sar.Seq, sarSeen[2] = v[0], true
		case TagReceiptedMessageID:
			s := v
			if len(s) > 0 && s[len(s)-1] == 0 {
				s = s[:len(s)-1]
			}
			switch {
			case len(s) >= MaxMessageIDLen:
				return &readError{StatusInvParLen, "receipted_message_id", fmt.Sprintf("longer than %d octets", MaxMessageIDLen-1)}
			case bytes.IndexByte(s, 0) >= 0:
				return &readError{StatusInvOptParamVal, "receipted_message_id", "contains NUL"}
			}
			m.ReceiptedMessageID = string(s)
		case TagMessageState:
			if err := badLen("message_state", 1); err != nil {
				return err
			}
			m.MessageState = MessageState(v[0])
		case TagNetworkErrorCode:
			if err := badLen("network_error_code", 3); err != nil {
				return err
			}
			m.NetworkErrorCode = NetworkErrorCode{Type: v[0], Code: binary.BigEndian.Uint16(v[1:])}
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch sarSeen {
	case [3]bool{true, true, true}:
		m.SAR = &sar
	case [3]bool{}:
	default:
		return &readError{StatusMissingOptParam, "sar_*", "sar_msg_ref_num, sar_total_segments and sar_segment_seqnum must come together"}
	}
	return nil
}

// skipTLVs checks that the rest of the body is well-formed optional
// parameters, and ignores them.
func skipTLVs(r *reader) error {
	return eachTLV(r, func(uint16, []byte) error { return nil })
}

// eachTLV calls f for every optional parameter left in r; v aliases the
// body and must be copied to be kept.
func eachTLV(r *reader, f func(tag uint16, v []byte) error) error {
	for r.remaining() > 0 {
		if r.remaining() < 4 {
			return &readError{StatusInvOptParStream, "tlv", fmt.Sprintf("%d octets left, too few for a tag and a length", r.remaining())}
		}
		tag := binary.BigEndian.Uint16(r.b[r.off:])
		n := int(binary.BigEndian.Uint16(r.b[r.off+2:]))
		r.off += 4
		if n > r.remaining() {
			return &readError{StatusInvParLen, fmt.Sprintf("tlv 0x%04X", tag), fmt.Sprintf("says %d octets, %d left", n, r.remaining())}
		}
		v := r.b[r.off : r.off+n]
		r.off += n
		if err := f(tag, v); err != nil {
			return err
		}
	}
	return nil
}
