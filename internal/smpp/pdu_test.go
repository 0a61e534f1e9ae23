package smpp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// samplePDUs are one PDU of every kind the codec knows, with every
// optional field it keeps.
func samplePDUs() []*PDU {
	return []*PDU{
		{Command: BindTransceiver, Sequence: 1, Body: &Bind{SystemID: "herald", Password: "secret", SystemType: "OTP", InterfaceVersion: InterfaceVersion34}},
		{Command: BindTransmitter, Sequence: 2, Body: &Bind{SystemID: "a", AddrTON: 1, AddrNPI: 1, AddressRange: "^254"}},
		{Command: BindReceiver, Sequence: 3, Body: &Bind{SystemID: "b"}},
		{Command: BindTransceiverResp, Sequence: 1, Body: &BindResp{SystemID: "SMSC"}},
		{Command: BindTransmitterResp, Status: StatusInvPaswd, Sequence: 2, Body: &BindResp{}},
		{Command: BindReceiverResp, Sequence: 3, Body: &BindResp{SystemID: "x"}},
		{Command: SubmitSM, Sequence: 4, Body: &SM{
			SourceAddrTON: 5, SourceAddr: "HERALD", DestAddrTON: 1, DestAddrNPI: 1, DestinationAddr: "254711000000",
			ESMClass: ESMClassUDHI, RegisteredDelivery: 1, DataCoding: CodingUCS2,
			ShortMessage: []byte{5, 0, 3, 7, 2, 1, 0, 'h', 0, 'i'},
		}},
		{Command: SubmitSM, Sequence: 5, Body: &SM{DestinationAddr: "1", MessagePayload: []byte("a long payload"), SAR: &SAR{Ref: 0x1234, Total: 3, Seq: 2}}},
		{Command: SubmitSMResp, Sequence: 4, Body: &SMResp{MessageID: "7f3a"}},
		{Command: SubmitSMResp, Status: StatusThrottled, Sequence: 5, Body: &SMResp{}},
		{Command: DeliverSM, Sequence: 6, Body: &SM{
			SourceAddr: "254711000000", DestinationAddr: "HERALD", ESMClass: ESMClassReceipt,
			ShortMessage:       []byte("id:7f3a sub:001 dlvrd:001 submit date:2401021504 done date:2401021505 stat:DELIVRD err:000 text:"),
			ReceiptedMessageID: "7f3a", MessageState: MessageDelivered, NetworkErrorCode: NetworkErrorCode{Type: 3, Code: 0x0101},
		}},
		{Command: DeliverSMResp, Sequence: 6, Body: &SMResp{}},
		{Command: DeliverSMResp, Status: StatusXTAppn, Sequence: 7, Body: &SMResp{}},
		{Command: EnquireLink, Sequence: 8},
		{Command: EnquireLinkResp, Sequence: 8},
		{Command: Unbind, Sequence: 9},
		{Command: UnbindResp, Sequence: 9},
		{Command: GenericNack, Status: StatusInvCmdID, Sequence: 10},
	}
}

func TestPDU_EveryOneRoundTrips(t *testing.T) {
	t.Parallel()
	for _, p := range samplePDUs() {
		t.Run(p.Command.String(), func(t *testing.T) {
			t.Parallel()
			b, err := p.Encode()
			require.NoError(t, err)
			require.Equal(t, uint32(len(b)), binary.BigEndian.Uint32(b))
			got, err := Decode(b)
			require.NoError(t, err)
			require.Equal(t, p, got)
			read, err := ReadPDU(bytes.NewReader(b))
			require.NoError(t, err)
			require.Equal(t, p, read)
		})
	}
}

func TestPDU_SubmitSMMatchesTheSpec(t *testing.T) {
	t.Parallel()
	p := &PDU{Command: SubmitSM, Sequence: 2, Body: &SM{SourceAddr: "A", DestAddrTON: 1, DestAddrNPI: 1, DestinationAddr: "12", ShortMessage: []byte("hi")}}
	b, err := p.Encode()
	require.NoError(t, err)
	want := []byte{
		0, 0, 0, 38, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 2, // header
		0,            // service_type
		0, 0, 'A', 0, // source ton, npi, addr
		1, 1, '1', '2', 0, // dest ton, npi, addr
		0, 0, 0, // esm_class, protocol_id, priority_flag
		0, 0, // schedule_delivery_time, validity_period
		0, 0, 0, 0, // registered_delivery, replace_if_present, data_coding, sm_default_msg_id
		2, 'h', 'i', // sm_length, short_message
	}
	require.Equal(t, want, b)
}

func TestPDU_UnknownTLVsAreSkipped(t *testing.T) {
	t.Parallel()
	p := &PDU{Command: DeliverSM, Sequence: 1, Body: &SM{SourceAddr: "1", ShortMessage: []byte("x"), MessageState: MessageExpired}}
	b, err := p.Encode()
	require.NoError(t, err)
	// Append a vendor TLV (0x1400, 3 octets) and a user_message_reference.
	b = append(b, 0x14, 0x00, 0, 3, 'a', 'b', 'c', 0x02, 0x04, 0, 2, 0, 9)
	binary.BigEndian.PutUint32(b, uint32(len(b)))
	got, err := Decode(b)
	require.NoError(t, err)
	require.Equal(t, p, got)
}

func TestPDU_MalformedIsErrorNotPanic(t *testing.T) {
	t.Parallel()
	valid, err := (&PDU{Command: SubmitSM, Sequence: 1, Body: &SM{SourceAddr: "1", DestinationAddr: "2", ShortMessage: []byte("hello")}}).Encode()
	require.NoError(t, err)
	withLen := func(b []byte) []byte {
		b = bytes.Clone(b)
		binary.BigEndian.PutUint32(b, uint32(len(b)))
		return b
	}
	header := func(cmd CommandID, body ...byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(HeaderLen+len(body)))
		b = binary.BigEndian.AppendUint32(b, uint32(cmd))
		b = append(b, 0, 0, 0, 0, 0, 0, 0, 1)
		return append(b, body...)
	}
	sm := func(tlvs ...byte) []byte {
		body := []byte{0, 0, 0, '1', 0, 0, 0, '2', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		return header(SubmitSM, append(body, tlvs...)...)
	}
	for name, tc := range map[string]struct {
		b      []byte
		status Status // 0: a header error, not a DecodeError
		field  string
	}{
		"Empty":                   {nil, 0, ""},
		"ShortHeader":             {valid[:10], 0, ""},
		"LengthBelowHeader":       {withLen(valid)[:0:0], 0, ""},
		"LengthDisagrees":         {append(bytes.Clone(valid), 0), 0, ""},
		"TruncatedBody":           {withLen(valid[:len(valid)-3]), StatusInvCmdLen, "short_message"},
		"UnknownCommand":          {header(0x00000103), StatusInvCmdID, "command_id"},
		"EnquireLinkWithBody":     {header(EnquireLink, 1, 2), StatusInvCmdLen, "body"},
		"NoNULInSystemID":         {header(BindTransceiver, 'a', 'b'), StatusInvCmdLen, "system_id"},
		"SystemIDTooLong":         {header(BindTransceiver, append(bytes.Repeat([]byte{'a'}, 16), 0)...), StatusInvCmdLen, "system_id"},
		"AddrTooLong":             {header(SubmitSM, append([]byte{0, 0, 0}, append(bytes.Repeat([]byte{'9'}, 21), 0)...)...), StatusInvCmdLen, "source_addr"},
		"SmLengthPastBody":        {header(SubmitSM, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200, 'x'), StatusInvCmdLen, "short_message"},
		"SmLengthOver254":         {header(SubmitSM, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255), StatusInvMsgLen, "sm_length"},
		"TLVHeaderCut":            {sm(0x04, 0x24, 0), StatusInvOptParStream, "tlv"},
		"TLVLengthPastBody":       {sm(0x04, 0x24, 0, 9, 'a'), StatusInvParLen, "tlv 0x0424"},
		"MessageStateTooLong":     {sm(0x04, 0x27, 0, 2, 1, 2), StatusInvParLen, "message_state"},
		"NetworkErrorTooShort":    {sm(0x04, 0x23, 0, 2, 1, 2), StatusInvParLen, "network_error_code"},
		"SARRefWrongLength":       {sm(0x02, 0x0C, 0, 1, 1), StatusInvParLen, "sar_msg_ref_num"},
		"SARIncomplete":           {sm(0x02, 0x0C, 0, 2, 0, 1, 0x02, 0x0E, 0, 1, 3), StatusMissingOptParam, "sar_*"},
		"ReceiptedIDWithNUL":      {sm(0x00, 0x1E, 0, 3, 'a', 0, 'b'), StatusInvOptParamVal, "receipted_message_id"},
		"ReceiptedIDTooLong":      {sm(append([]byte{0x00, 0x1E, 0, 70}, bytes.Repeat([]byte{'a'}, 70)...)...), StatusInvParLen, "receipted_message_id"},
		"BindRespTrailingGarbage": {header(BindTransceiverResp, 'x', 0, 1), StatusInvOptParStream, "tlv"},
		"SubmitRespIDTooLong":     {header(SubmitSMResp, append(bytes.Repeat([]byte{'1'}, 65), 0)...), StatusInvCmdLen, "message_id"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode(tc.b)
			require.Error(t, err)
			var de *DecodeError
			if tc.status == 0 {
				require.ErrorIs(t, err, ErrCommandLength)
				return
			}
			require.ErrorAs(t, err, &de)
			require.Equal(t, tc.status, de.Status, de.Error())
			require.Equal(t, tc.field, de.Field)
			require.Equal(t, uint32(1), de.Sequence)
		})
	}
}

func TestReadPDU_RefusesHugeLength(t *testing.T) {
	t.Parallel()
	h := []byte{0xFF, 0xFF, 0xFF, 0xF0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 1}
	r := &countingReader{r: io.MultiReader(bytes.NewReader(h), zeros{})}
	_, err := ReadPDU(r)
	require.ErrorIs(t, err, ErrCommandLength)
	require.Equal(t, HeaderLen, r.n, "nothing past the header is read")

	_, err = ReadPDU(bytes.NewReader([]byte{0, 0, 0, 20, 0, 0, 0, 0x15, 0, 0, 0, 0, 0, 0, 0, 1, 0}))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	_, err = ReadPDU(bytes.NewReader(nil))
	require.ErrorIs(t, err, io.EOF)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestPDU_EncodeRefusesUncarriable(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]*PDU{
		"LongSystemID":     {Command: BindTransceiver, Body: &Bind{SystemID: "sixteen-octets!!"}},
		"LongPassword":     {Command: BindTransceiver, Body: &Bind{SystemID: "a", Password: "123456789"}},
		"NULInAddr":        {Command: SubmitSM, Body: &SM{DestinationAddr: "1\x002"}},
		"LongShortMessage": {Command: SubmitSM, Body: &SM{ShortMessage: make([]byte, 255)}},
		"LongPayload":      {Command: SubmitSM, Body: &SM{MessagePayload: make([]byte, 70000)}},
		"LongMessageID":    {Command: SubmitSMResp, Body: &SMResp{MessageID: string(bytes.Repeat([]byte{'1'}, 65))}},
	} {
		_, err := p.Encode()
		require.Error(t, err, name)
	}
}

func TestStatus_NamesAndStrings(t *testing.T) {
	t.Parallel()
	require.Equal(t, "ESME_RTHROTTLED (0x00000058)", StatusThrottled.String())
	require.Equal(t, "0x00000401", Status(0x401).String())
	require.Len(t, Statuses(), len(statusNames))
	require.Equal(t, "submit_sm_resp", SubmitSMResp.String())
	require.Equal(t, SubmitSMResp, SubmitSM.Response())
	var se error = &StatusError{Command: BindTransceiver, Status: StatusInvPaswd}
	require.Equal(t, "bind_transceiver: ESME_RINVPASWD (0x0000000E)", se.Error())
	require.True(t, errors.As(se, new(*StatusError)))
}
