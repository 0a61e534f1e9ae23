package demo_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/content"
	"github.com/heraldhq/herald/internal/harness/demo"
)

// The demo's evasions hide the blocked word from a byte-wise match, and
// the blocklist's folding finds it in each.
func TestEvasions_HideWordButNotFromBlocklist(t *testing.T) {
	t.Parallel()
	bl := content.Compile([]content.Rule{{ID: 1, Producer: demo.ContentProducer, Kind: content.KindWord, Pattern: "jackpot", Mode: content.ModeRefuse}})
	for _, e := range demo.Evasions {
		require.NotContains(t, strings.ToLower(e.Text), "jackpot", e.Name)
		require.NotNil(t, bl.Match(e.Text), e.Name)
	}
}

// The summary prints each door's figures, the hostile templates' verdicts
// and measurements, the long SMS's parts and receipts, and the isolation
// refusals, as the Summary holds them.
func TestWriteSummary_ShowsDoorsTemplatesSMS(t *testing.T) {
	t.Parallel()
	s := &demo.Summary{RunID: "demo-x",
		Content: &demo.ContentPart{Producer: demo.ContentProducer, Template: "welcome", Version: 1, Rule: "rule 1", Blocked: "blocked",
			Doors: []demo.DoorCount{
				{Door: demo.DoorClient, Tried: 3, Refused: 3, How: "content_blocked"},
				{Door: demo.DoorSQL, Tried: 3, Refused: 2, How: "malformed"},
				{Door: demo.DoorByHand, Tried: 3, Refused: 3, Delivered: 1, How: "vetter"},
			},
			Hostile: []demo.HostileTemplate{
				{What: "{{range 100000000000}}x{{end}}", Where: "validation", Refused: true, Error: "never a number", Asks: 100e9, Allocated: 7 << 10, Micros: 110},
				{What: "printf", Where: "submit", Error: "", Asks: 110e6, Allocated: 3 << 20, Micros: 900},
			}},
		LongSMS: &demo.LongSMSPart{To: "+353851119901", Parts: 3, Provider: "sms/operator", Providers: []string{"sms/operator"},
			Status: "published", DeliveryStatus: "delivered", PartStatuses: []string{"", "", "delivered"}, Receipts: map[string]int64{"matched": 1},
			PassedOver: "sms/legacy", PassedOverReason: "refused"},
	}
	var out bytes.Buffer
	require.NoError(t, demo.WriteSummary(&out, s))
	text := out.String()
	for _, line := range []string{
		"  Go client      3 of 3 refused: content_blocked\n",
		"  SQL door       2 of 3 refused: malformed\n",
		"  by hand        3 of 3 refused, 1 delivered: vetter\n",
		"hostile template {{range 100000000000}}x{{end}}: refused at validation in 110µs; the process allocated 7 KiB meanwhile (would have built 100 GB)\n",
		"hostile template printf: ACCEPTED in 900µs; the process allocated 3072 KiB meanwhile (would have built 110 MB)\n",
		"long SMS over SMPP to +353851119901: 3 parts through sms/operator (attempts' providers: sms/operator), published; the SMSC sent one receipt, for the part that completed it\n",
		"  delivery status delivered, decided from its parts (part 1: none, part 2: none, part 3: delivered); receipts: 1 matched, 0 duplicate, 0 unmatched\n",
		"  passed over sms/legacy, whose binds the SMSC refuses: 0 attempts; its health says \"refused\"\n",
	} {
		require.Contains(t, text, line)
	}
}

// The summary shows the intent's own callback_url and the metadata its
// callback carried, or why it was not shown.
func TestWriteSummary_ShowsTheCallbackURLWithMetadata(t *testing.T) {
	t.Parallel()
	s := &demo.Summary{RunID: "demo-x", DirectCallback: &demo.DirectCallback{NotificationID: "01a2", Event: "published",
		Path: "/herald/callbacks/order-9", FromSender: "HERALDSHOP", Metadata: map[string]string{"tenant": "acme", "order_id": "9"}}}
	var out bytes.Buffer
	require.NoError(t, demo.WriteSummary(&out, s))
	require.Contains(t, out.String(),
		"callback_url with metadata and an approved sender: notification 01a2 (SMS from HERALDSHOP) — its published callback reached /herald/callbacks/order-9, signed, with metadata order_id=9 tenant=acme\n")

	s.DirectCallback = &demo.DirectCallback{Skipped: "no producer login"}
	out.Reset()
	require.NoError(t, demo.WriteSummary(&out, s))
	require.Contains(t, out.String(), "callback_url with metadata: not shown (no producer login)\n")
}

// The summary prints the console's address and who signs in (the password
// only when the demo holds one, on its own cluster), and the on-call
// drain with its failovers and the provider's state.
func TestWriteSummary_ShowsConsoleAndOnCall(t *testing.T) {
	t.Parallel()
	s := &demo.Summary{RunID: "demo-x",
		Console: &demo.ConsolePart{URL: "http://127.0.0.1:8089", Login: "a member of herald_operator", Status: 200},
		OnCall: &demo.OnCallPart{Provider: "sms/acme", Backup: "sms/backup", Actor: "demo", Reason: "acme is down",
			DeliveredBefore: 139, Sent: 4, ToBackup: 3, StateDrained: "draining", StateNow: "enabled", Failovers: 55, Processes: 2, Ready: 1,
			Recipient: "+254 720 009 000", Found: 1, FoundStatus: "published"}}
	var out bytes.Buffer
	require.NoError(t, demo.WriteSummary(&out, s))
	text := out.String()
	for _, line := range []string{
		"console: http://127.0.0.1:8089 (sign in as a member of herald_operator); its sign-in page answered 200\n",
		"on call: demo set sms/acme draining (\"acme is down\", audited) after 139 deliveries; 3 of 4 SMS for +254 then went straight to sms/backup;\n",
		"  provider health counted 55 failovers from sms/acme over the run; sms/acme is enabled again\n",
		"  herald find -recipient '+254 720 009 000': 1 route(s), the newest published\n",
		"  serve processes: 2 running, 1 ready at their last heartbeat (`herald status`; the console's overview)\n",
	} {
		require.Contains(t, text, line)
	}
	require.NotContains(t, text, "password")

	s.Console.Login, s.Console.Password = demo.ConsoleLogin, "pw-of-the-cluster"
	s.OnCall = &demo.OnCallPart{Skipped: "the database holds providers of its own"}
	out.Reset()
	require.NoError(t, demo.WriteSummary(&out, s))
	require.Contains(t, out.String(), "(sign in as demo_operator, password pw-of-the-cluster (this throwaway cluster's only))")
	require.Contains(t, out.String(), "on call: not shown (the database holds providers of its own)\n")
}
