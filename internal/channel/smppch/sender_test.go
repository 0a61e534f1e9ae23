package smppch_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/smppch"
	"github.com/heraldhq/herald/internal/channel/sms"
	"github.com/heraldhq/herald/internal/smpp"
)

func msgWith(to string, c sms.Content) *channel.Message {
	raw, _ := json.Marshal(c)
	return &channel.Message{NotificationID: "n1", RouteID: "r1", Attempt: 1, Address: to, Content: raw}
}

// The intent's sender replaces the provider's source_addr, with the TON
// and NPI of its form; a flash SMS carries message class 0 in data_coding
// (0x10 for GSM-7, 0x18 for UCS-2) in every part; a message without them
// goes as before: the provider's sender, no class.
func TestTheIntentsSenderAndFlashReachTheSMSC(t *testing.T) {
	t.Parallel()
	b := setup(t, smppch.Config{})
	ctx := ctxT(t)
	for _, m := range []sms.Content{
		{Body: "plain"},
		{Body: "from acme", From: "ACME"},
		{Body: "from a number", From: "+447700900123"},
		{Body: "flash", From: "ACME", Flash: true},
		{Body: "Код 1234", Flash: true},
		{Body: strings.Repeat("long flash ", 20), Flash: true},
	} {
		out := b.d.Deliver(ctx, msgWith("+254711000001", m))
		require.Equal(t, channel.Delivered, out.Class, out.Message)
	}
	type seen struct {
		Source   string
		TON, NPI uint8
		Coding   uint8
		Parts    int
	}
	var got []seen
	for _, m := range b.smsc.Messages() {
		got = append(got, seen{m.Source, m.SourceTON, m.SourceNPI, m.DataCoding, m.Parts})
	}
	require.Equal(t, []seen{
		{"HERALD", smpp.TONAlphanumeric, smpp.NPIUnknown, smpp.CodingDefault, 1},
		{"ACME", 5, 0, smpp.CodingDefault, 1},
		{"447700900123", 1, 1, smpp.CodingDefault, 1},
		{"ACME", 5, 0, 0x10, 1},
		{"HERALD", smpp.TONAlphanumeric, smpp.NPIUnknown, 0x18, 1},
		{"HERALD", smpp.TONAlphanumeric, smpp.NPIUnknown, 0x10, 2},
	}, got)
	for _, s := range b.smsc.Submits()[len(b.smsc.Submits())-2:] {
		require.Equal(t, uint8(0x10), s.SM.DataCoding, "every part of a long flash SMS")
	}
	require.Equal(t, strings.Repeat("long flash ", 20), b.smsc.Messages()[5].Body)
}
