package webhook

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
)

// referenceBody is the request body as json.Marshal makes it: what body
// must produce byte for byte (receivers verify signatures over the exact
// bytes, and the body's form is part of what herald sends).
func referenceBody(typ string, at time.Time, content []byte) ([]byte, error) {
	data := json.RawMessage(content)
	if len(bytes.TrimSpace(content)) == 0 {
		data = json.RawMessage("null")
	} else if !json.Valid(data) {
		return nil, json.Unmarshal(data, new(any))
	}
	return json.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{typ, at.UTC().Format(time.RFC3339), data})
}

func checkBody(t *testing.T, typ string, content []byte) {
	t.Helper()
	d := &Deliverer{now: time.Now}
	at := time.Date(2025, 3, 1, 12, 30, 0, 0, time.FixedZone("x", 3600))
	msg := &channel.Message{NotificationType: typ, Content: content, AcceptedAt: at}
	got, err := d.body(msg)
	want, werr := referenceBody(typ, at, content)
	if werr != nil {
		require.Error(t, err)
		require.Equal(t, werr.Error(), err.Error(), "the same error json.Unmarshal gives")
		return
	}
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

func TestBody_MatchesJSONMarshal(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		typ     string
		content string
	}{
		"Compact":        {"order.shipped", `{"order_id":9,"carrier":"DHL"}`},
		"JSONBSpacing":   {"order.shipped", `{"a": 1, "b": [1, 2, {"c": null}]}`},
		"Indented":       {"order.shipped", "{\n  \"a\": \"x y\",\n  \"b\": true\n}\n"},
		"HTMLInStrings":  {"order.shipped", `{"html":"<b>Tom & Jerry</b>","k<>":1}`},
		"LineSeparators": {"order.shipped", "{\"s\":\"a\u2028b\u2029c\",\"e\":\"é€\"}"},
		"Escapes":        {"order.shipped", `{"s":"q\"b\\n\n\u0001\u00e9"}`},
		"Scalar":         {"order.shipped", `"just a string"`},
		"Number":         {"order.shipped", ` 12.5e3 `},
		"Empty":          {"order.shipped", ``},
		"Whitespace":     {"order.shipped", " \n\t"},
		"Invalid":        {"order.shipped", `{"a":`},
		"TrailingJunk":   {"order.shipped", `{"a":1} x`},
		"TypeWithHTML":   {"a<b>&c", `{}`},
		"TypeWithQuote":  {`say "hi"\now`, `{}`},
		"TypeNonASCII":   {"commande.expédiée", `{}`},
		"TypeInvalidUTF": {"bad\xffutf", `{}`},
		"TypeControl":    {"tab\there", `{}`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkBody(t, c.typ, []byte(c.content))
		})
	}
}

func FuzzBody(f *testing.F) {
	f.Add("order.shipped", []byte(`{"a": "<x>", "b": [1, 2]}`))
	f.Add("t\u2028", []byte("\"\u2029\""))
	f.Add("", []byte(`{"a":`))
	f.Fuzz(func(t *testing.T, typ string, content []byte) {
		checkBody(t, typ, content)
	})
}

func TestSign_PooledMatchesSign(t *testing.T) {
	t.Parallel()
	secrets := []string{newSecret(t), newSecret(t)}
	d, err := New(Config{Secrets: secrets})
	require.NoError(t, err)
	var keys [][]byte
	for _, s := range secrets {
		k, err := ParseSecret(s)
		require.NoError(t, err)
		keys = append(keys, k)
	}
	body := []byte(`{"type":"x","timestamp":"2025-03-01T12:30:00Z","data":{}}`)
	for range 3 { // a pooled HMAC used again signs afresh
		got := d.sign("msg_abc", 1740832200, body)
		require.Equal(t, Sign(keys, "msg_abc", 1740832200, body), got)
		h := make(map[string][]string)
		h["Webhook-Id"] = []string{"msg_abc"}
		h["Webhook-Timestamp"] = []string{"1740832200"}
		h["Webhook-Signature"] = []string{got}
		for _, s := range secrets {
			require.NoError(t, verifySignature(s, h, body, time.Unix(1740832200, 0)))
		}
	}
}
