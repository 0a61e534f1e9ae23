package smpp

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/gsm7"
)

func TestSplit_CutsWhereEncodingCounts(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		body  string
		parts []int // each part's size in units (septets or code units)
	}{
		"OneGSM7":           {strings.Repeat("a", 160), []int{160}},
		"TwoGSM7":           {strings.Repeat("a", 161), []int{153, 8}},
		"EscapeNotSplit":    {strings.Repeat("a", 152) + "€" + strings.Repeat("b", 10), []int{152, 12}},
		"OneUCS2":           {strings.Repeat("ж", 70), []int{70}},
		"TenUCS2":           {strings.Repeat("ж", 670), []int{67, 67, 67, 67, 67, 67, 67, 67, 67, 67}},
		"SurrogateNotSplit": {strings.Repeat("ж", 66) + "😀" + strings.Repeat("ж", 10), []int{66, 12}},
		"Empty":             {"", []int{0}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			seg := Split(tc.body)
			_, n := gsm7.Encoding(tc.body)
			require.Len(t, seg.Parts, n)
			var sizes []int
			for _, p := range seg.Parts {
				if seg.DataCoding == CodingUCS2 {
					sizes = append(sizes, len(p)/2)
				} else {
					sizes = append(sizes, len(p))
				}
			}
			require.Equal(t, tc.parts, sizes)
		})
	}
}

func TestMessage_BuildsEachLongMode(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("ж", 134)
	udh, err := Message(SM{DestinationAddr: "1", RegisteredDelivery: 1}, body, MessageOpts{Ref: 0x1FF})
	require.NoError(t, err)
	require.Len(t, udh, 2)
	require.Equal(t, []byte{5, 0, 3, 0xFF, 2, 2}, udh[1].ShortMessage[:6], "8-bit reference, total, sequence")
	require.Equal(t, uint8(ESMClassUDHI), udh[1].ESMClass)
	require.Equal(t, uint8(CodingUCS2), udh[0].DataCoding)
	require.Len(t, udh[0].ShortMessage, 140)

	sar, err := Message(SM{}, body, MessageOpts{Long: LongSAR, Ref: 0x1FF})
	require.NoError(t, err)
	require.Equal(t, &SAR{Ref: 0x1FF, Total: 2, Seq: 1}, sar[0].SAR)
	require.Zero(t, sar[0].ESMClass)

	payload, err := Message(SM{}, body, MessageOpts{Long: LongPayload})
	require.NoError(t, err)
	require.Len(t, payload, 1)
	require.Nil(t, payload[0].ShortMessage)
	require.Len(t, payload[0].MessagePayload, 268)

	packed, err := Message(SM{}, strings.Repeat("a", 306), MessageOpts{Packed: true})
	require.NoError(t, err)
	require.Len(t, packed, 2)
	require.Len(t, packed[0].ShortMessage, 140, "6 octets of header and 153 packed septets")

	_, err = Message(SM{}, strings.Repeat("ж", 67*256), MessageOpts{})
	require.ErrorIs(t, err, ErrTooManyParts)
}

func TestParseReceipt_Text(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		text string
		want map[string]string
	}{
		"Standard": {"id:0123456789 sub:001 dlvrd:001 submit date:2401021504 done date:2401021505 stat:DELIVRD err:000 text:Hello id:x",
			map[string]string{"id": "0123456789", "sub": "001", "dlvrd": "001", "submit date": "2401021504", "done date": "2401021505", "stat": "DELIVRD", "err": "000", "text": "Hello id:x"}},
		"UpperCaseAndReordered": {"STAT:UNDELIV ID:abc ERR:034", map[string]string{"stat": "UNDELIV", "id": "abc", "err": "034"}},
		"NotAReceipt":           {"hello there", map[string]string{}},
		"KeyInsideAWord":        {"id:1 grid:2 stat:EXPIRED", map[string]string{"id": "1 grid:2", "stat": "EXPIRED"}},
	} {
		require.Equal(t, tc.want, ParseReceiptText(tc.text), name)
	}
}

func TestParseReceipt_PrefersTLVs(t *testing.T) {
	t.Parallel()
	at := time.Now()
	sm := &SM{ESMClass: ESMClassReceipt, ShortMessage: []byte("id:12 stat:DELIVRD"),
		ReceiptedMessageID: "0C", MessageState: MessageUndeliverable, NetworkErrorCode: NetworkErrorCode{Type: 3, Code: 11}}
	r := ParseReceipt("sms/a", sm, at)
	require.Equal(t, Receipt{Provider: "sms/a", ProviderMessageID: "0C", Status: "UNDELIV", ErrorCode: "3:11", Raw: "id:12 stat:DELIVRD", ReceivedAt: at}, r)
	require.True(t, IsReceipt(ESMClassReceipt))
	require.True(t, IsReceipt(ESMClassIntermediate|ESMClassUDHI))
	require.False(t, IsReceipt(0))
	require.False(t, IsReceipt(ESMClassUDHI))
}

func TestSourceAddress_ChoosesTONAndNPI(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]struct {
		addr     string
		ton, npi uint8
	}{
		"+254711000000": {"254711000000", TONInternational, NPIISDN},
		"22555":         {"22555", TONNetworkSpecific, NPIUnknown},
		"HERALD":        {"HERALD", TONAlphanumeric, NPIUnknown},
		"":              {"", TONUnknown, NPIUnknown},
	} {
		addr, ton, npi := SourceAddress(in)
		require.Equal(t, want.addr, addr, in)
		require.Equal(t, want.ton, ton, in)
		require.Equal(t, want.npi, npi, in)
	}
}
