package herald_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/sqldoor"
)

// Every door runs one intake pipeline: the same hostile and odd intents,
// fed through the Go client, the HTTP API and the SQL intake one after the
// other, come out the same way at each. The SQL here is the test's own:
// an operator's blocklist, and the rows a door's outcome leaves.

// doorCase is one intent, in order: later ones replay earlier keys.
type doorCase struct {
	name string
	in   func(producer string) *herald.Intent
	want string // accepted, duplicate, conflict, refused, held or invalid
}

var doorCases = []doorCase{
	{"Valid", func(p string) *herald.Intent { return smsIntent(p, "valid", "your order shipped") }, "accepted"},
	{"Duplicate", func(p string) *herald.Intent { return smsIntent(p, "valid", "your order shipped") }, "duplicate"},
	{"ConflictingReplay", func(p string) *herald.Intent { return smsIntent(p, "valid", "your order is lost") }, "conflict"},
	{"Blocked", func(p string) *herald.Intent { return smsIntent(p, "blocked", "Big CASINO night") }, "refused"},
	{"BlockedBehindAZeroWidthSpace", func(p string) *herald.Intent { return smsIntent(p, "evasion", "big cas\u200Bino night") }, "refused"},
	{"BlockedBehindHomoglyphs", func(p string) *herald.Intent { return smsIntent(p, "homoglyph", "big c\u0430sino night") }, "refused"},
	{"Held", func(p string) *herald.Intent { return smsIntent(p, "held", "Free   money inside") }, "held"},
	{"InvalidFields", func(p string) *herald.Intent {
		in := smsIntent(p, "invalid", "hello")
		in.Audience.SMS = []string{"12345"}
		in.Channels = append(in.Channels, "fax")
		return in
	}, "invalid"},
	{"InvalidAndBlocked", func(p string) *herald.Intent {
		in := smsIntent(p, "invalid-blocked", "casino")
		in.Priority = "urgent"
		return in
	}, "invalid"},
	{"ValidAfterTheOthers", func(p string) *herald.Intent { return smsIntent(p, "valid-2", "see you soon") }, "accepted"},
}

// doorOutcomes submits doorCases through submitFunc, one by one, and
// returns each one's outcome.
func doorOutcomes(t *testing.T, b *accessBundle, submitFunc func(t *testing.T, in *herald.Intent) string) map[string]string {
	t.Helper()
	ctx := context.Background()
	_, err := b.asOp.Exec(ctx, `INSERT INTO herald.content_rules (kind, pattern, mode) VALUES
		('word', 'casino', 'refuse'), ('regex', '(?i)free\s+money', 'review')`)
	require.NoError(t, err)
	got := map[string]string{}
	for _, c := range doorCases {
		got[c.name] = submitFunc(t, c.in(b.nameA))
	}
	return got
}

func wantedOutcomes() map[string]string {
	want := map[string]string{}
	for _, c := range doorCases {
		want[c.name] = c.want
	}
	return want
}

func TestDoors_TheSameIntentsComeOutTheSameThroughEveryDoor(t *testing.T) {
	t.Parallel()
	t.Run("GoClient", func(t *testing.T) {
		t.Parallel()
		b := accessSetup(t)
		got := doorOutcomes(t, b, func(t *testing.T, in *herald.Intent) string {
			r, err := b.clientA.Submit(context.Background(), in)
			var ve *herald.ValidationError
			switch {
			case errors.Is(err, herald.ErrIdempotencyConflict):
				return "conflict"
			case errors.As(err, &ve) && ve.Code() == herald.CodeContentBlocked:
				return "refused"
			case errors.As(err, &ve):
				return "invalid"
			case err != nil:
				return err.Error()
			case r.Held:
				return "held"
			case r.Duplicate:
				return "duplicate"
			}
			return "accepted"
		})
		require.Equal(t, wantedOutcomes(), got)
	})
	t.Run("HTTPAPI", func(t *testing.T) {
		t.Parallel()
		b := apiSetup(t)
		key, err := api.CreateKey(context.Background(), b.admin, b.nameA, "test", "doors")
		require.NoError(t, err)
		srv, err := api.New(&api.Config{Pool: b.asAPI})
		require.NoError(t, err)
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		got := doorOutcomes(t, b.accessBundle, func(t *testing.T, in *herald.Intent) string {
			body, err := json.Marshal(in)
			require.NoError(t, err)
			req, err := http.NewRequest("POST", ts.URL+"/v1/notifications", bytes.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+key.Secret)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			out, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			var answer struct {
				Held bool   `json:"held"`
				Code string `json:"code"`
			}
			require.NoError(t, json.Unmarshal(out, &answer), "%s", out)
			switch {
			case resp.StatusCode == http.StatusCreated && answer.Held:
				return "held"
			case resp.StatusCode == http.StatusCreated:
				return "accepted"
			case resp.StatusCode == http.StatusOK:
				return "duplicate"
			case resp.StatusCode == http.StatusConflict:
				return "conflict"
			case resp.StatusCode == http.StatusBadRequest && answer.Code == string(herald.CodeContentBlocked):
				return "refused"
			case resp.StatusCode == http.StatusBadRequest:
				return "invalid"
			}
			return string(out)
		})
		require.Equal(t, wantedOutcomes(), got)
	})
	t.Run("SQLIntake", func(t *testing.T) {
		t.Parallel()
		b := accessSetup(t)
		var result string
		w, err := sqldoor.NewWorker(b.admin, &sqldoor.WorkerConfig{ContentRulesMaxAge: -1,
			ResultFunc: func(_, r string) { result = r }})
		require.NoError(t, err)
		got := doorOutcomes(t, b, func(t *testing.T, in *herald.Intent) string {
			ctx := context.Background()
			body, err := json.Marshal(in)
			require.NoError(t, err)
			_, err = b.asA.Exec(ctx, `INSERT INTO herald.intake (body) VALUES ($1)`, body)
			require.NoError(t, err)
			blocked := countAs(t, b.admin, `SELECT count(*) FROM herald.malformed_intents WHERE failure_code = 'content_blocked'`)
			result = ""
			_, _, err = w.DrainOnce(ctx)
			require.NoError(t, err)
			switch result {
			case sqldoor.ResultMalformed:
				if countAs(t, b.admin, `SELECT count(*) FROM herald.malformed_intents WHERE failure_code = 'content_blocked'`) > blocked {
					return "refused"
				}
				return "invalid"
			}
			return result
		})
		require.Equal(t, wantedOutcomes(), got)
	})
}

// The Go client's Get and the HTTP API's GET read a notification with one
// loader: the campaign, the template with its version and data, the
// priority and the routes come out the same.
func TestDoors_GetShowsTheSameNotificationThroughTheClientAndTheAPI(t *testing.T) {
	t.Parallel()
	b := apiSetup(t)
	ctx := context.Background()
	// The SQL is the test's own: producer A publishing a template.
	_, err := b.admin.Exec(ctx, `INSERT INTO herald.templates (producer, name, version, default_locale, locales)
		VALUES ($1, 'hello', 1, 'en', '{"en": {"sms": {"body": "Hello {{.name}}"}}}')`, b.nameA)
	require.NoError(t, err)
	in := &herald.Intent{
		NotificationType: "promo", Producer: b.nameA, IdempotencyKey: "tpl", Priority: herald.PriorityBulk,
		Audience: herald.Audience{SMS: []string{"+14155550123"}}, Channels: []string{"sms"},
		Template: &herald.TemplateRef{Name: "hello"}, Data: map[string]any{"name": "Ana"}, Campaign: "spring",
	}
	r, err := b.clientA.Submit(ctx, in)
	require.NoError(t, err)
	viaClient, err := b.clientA.Get(ctx, r.NotificationID)
	require.NoError(t, err)

	key, err := api.CreateKey(ctx, b.admin, b.nameA, "test", "doors")
	require.NoError(t, err)
	srv, err := api.New(&api.Config{Pool: b.asAPI})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	req, err := http.NewRequest("GET", ts.URL+"/v1/notifications/"+r.NotificationID, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key.Secret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var viaAPI api.Notification
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&viaAPI))

	require.Equal(t, "spring", viaClient.Campaign)
	require.Equal(t, viaClient.Campaign, viaAPI.Campaign)
	require.Equal(t, &herald.TemplateRef{Name: "hello", Version: 1}, viaClient.Template)
	require.Equal(t, viaClient.Template, viaAPI.Template)
	require.Equal(t, map[string]any{"name": "Ana"}, viaClient.Data)
	require.Equal(t, viaClient.Data, viaAPI.Data)
	require.Equal(t, herald.PriorityBulk, viaClient.Priority)
	require.Equal(t, string(viaClient.Priority), viaAPI.Priority)
	require.Len(t, viaAPI.Routes, len(viaClient.Routes))
	for i, rt := range viaClient.Routes {
		require.Equal(t, rt.ID, viaAPI.Routes[i].ID)
		require.Equal(t, string(rt.Status), viaAPI.Routes[i].Status)
	}
}
