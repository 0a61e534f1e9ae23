// Package smpp is herald's own SMPP 3.4 implementation, ESME side: a PDU
// codec, the text encodings and part splitting of SMS, and a Client that
// keeps transceiver binds to an SMSC. No third-party SMPP library is used;
// the test SMSC is in smsctest.
//
// # Codec
//
// ReadPDU and Decode read the PDUs herald sends or may receive: the three
// binds and their responses, submit_sm, deliver_sm and their responses,
// enquire_link, unbind and generic_nack, with the optional parameters
// message_payload, sar_msg_ref_num, sar_total_segments, sar_segment_seqnum,
// receipted_message_id, message_state and network_error_code; any other
// TLV is skipped. Every length is checked before it is trusted: a
// command_length outside [HeaderLen, MaxCommandLength] is ErrCommandLength
// before a byte of the body is read or allocated, and a body that does not
// decode is a *DecodeError carrying the command_status to answer with. A
// malformed PDU is an error, never a panic. Encode refuses fields SMPP
// cannot carry. The fuzzers (FuzzDecode and friends, corpus in testdata)
// check decode → encode → decode.
//
// # Text
//
// Split encodes a body as gsm7.Encoding counts it — GSM-7 when every
// character is in the GSM 03.38 alphabet, else UCS-2 — and cuts it into
// the same number of parts, never inside an escape sequence or a surrogate
// pair. Message turns the parts into submit_sm bodies: one part plain,
// longer bodies with an 8-bit-reference concatenation header (LongUDH),
// the sar_* TLVs (LongSAR), or whole in message_payload (LongPayload);
// GSM-7 packed or one septet per octet.
//
// # Client
//
// NewClient starts Binds transceiver binds that connect in the background
// and reconnect with jittered exponential backoff. Submit sends a
// submit_sm on a bind with room in its window (Window outstanding per
// bind, matched to responses by sequence number, each waiting at most
// ResponseTimeout), paced per bind if SubmitsPerSecond is set. A bind
// answered ESME_RTHROTTLED or ESME_RMSGQFUL rests ThrottleWait. Each bind
// sends enquire_link every EnquireLinkInterval and is dropped when
// nothing arrives for DeadPeerTimeout. When a connection ends, each
// submit outstanding on it gets ErrConnectionLost — never silence — and
// ClientStats.Lost counts them: those, and only those, may be repeated by
// a retry. Close unbinds gracefully.
//
// A deliver_sm is a delivery receipt (IsReceipt of its esm_class) or a
// mobile-originated message. Receipts are parsed (ParseReceipt: the
// "id:… stat:… err:…" text and the receipted_message_id, message_state and
// network_error_code TLVs) and handed to ReceiptFunc, inbound messages to
// InboundFunc, before deliver_sm_resp is sent: ESME_ROK if the func
// returned nil, ESME_RX_T_APPN if it failed, so the SMSC delivers it
// again and nothing it saw acknowledged is lost.
package smpp
