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

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/sqldoor"
)

// senderCase is one intent with a sender or a message type, and the
// failure code every door refuses it with ("" : accepted).
type senderCase struct {
	name string
	in   func(producer string) *herald.Intent
	want herald.Code
}

func withSenderIntent(producer, key, sender string, mt herald.MessageType) *herald.Intent {
	in := smsIntent(producer, key, "your code is 1234")
	in.FromSender, in.MessageType = sender, mt
	return in
}

var senderCases = []senderCase{
	{"Approved", func(p string) *herald.Intent { return withSenderIntent(p, "approved", "ACME", "") }, ""},
	{"ApprovedFlash", func(p string) *herald.Intent {
		return withSenderIntent(p, "flash", "ACME", herald.MessageTypeFlashSMS)
	}, ""},
	{"FlashWithoutSender", func(p string) *herald.Intent {
		return withSenderIntent(p, "flash-default", "", herald.MessageTypeFlashSMS)
	}, ""},
	{"NotApproved", func(p string) *herald.Intent { return withSenderIntent(p, "unknown", "NOPE", "") }, herald.CodeSenderNotApproved},
	{"AnotherProducersSender", func(p string) *herald.Intent { return withSenderIntent(p, "theirs", "THEIRS", "") }, herald.CodeSenderNotApproved},
	{"Overlong", func(p string) *herald.Intent { return withSenderIntent(p, "long", "ACMEACMEACME", "") }, herald.CodeInvalidField},
	{"ControlCharacters", func(p string) *herald.Intent { return withSenderIntent(p, "ctl", "AC\u0007ME", "") }, herald.CodeInvalidField},
	{"UnknownMessageType", func(p string) *herald.Intent { return withSenderIntent(p, "mms", "ACME", "MMS") }, herald.CodeInvalidField},
}

// Every door takes from_sender and message_type, and refuses the same
// intents with the same codes; nothing of a refused intent is stored.
// The approvals are an operator's, through the audited function.
func TestDoors_SendersAreCheckedTheSameThroughEveryDoor(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, b *accessBundle, submit func(t *testing.T, in *herald.Intent) herald.Code) {
		t.Helper()
		ctx := context.Background()
		_, err := b.asOp.Exec(ctx, `SELECT herald.sender_id_approve($1, 'ACME', $2, 'registered with the carrier')`, b.nameA, b.opName)
		require.NoError(t, err)
		_, err = b.asOp.Exec(ctx, `SELECT herald.sender_id_approve($1, 'THEIRS', $2, '')`, b.nameB, b.opName)
		require.NoError(t, err)
		for _, c := range senderCases {
			require.Equal(t, c.want, submit(t, c.in(b.nameA)), c.name)
		}
		var keys []string
		rows, err := b.admin.Query(ctx, `SELECT idempotency_key || ' ' || (payload_json::jsonb -> 'sms')::text
			FROM herald.records WHERE producer = $1 ORDER BY 1`, b.nameA)
		require.NoError(t, err)
		for rows.Next() {
			var k string
			require.NoError(t, rows.Scan(&k))
			keys = append(keys, k)
		}
		require.NoError(t, rows.Err())
		require.Equal(t, []string{
			`approved {"body": "your code is 1234", "from": "ACME"}`,
			`flash {"body": "your code is 1234", "from": "ACME", "flash": true}`,
			`flash-default {"body": "your code is 1234", "flash": true}`,
		}, keys, "the refused ones stored nothing")
	}
	codeOf := func(err error) herald.Code {
		var ve *herald.ValidationError
		if errors.As(err, &ve) {
			return ve.Code()
		}
		return herald.Code("unexpected: " + err.Error())
	}

	t.Run("GoClient", func(t *testing.T) {
		t.Parallel()
		b := accessSetup(t)
		run(t, b, func(t *testing.T, in *herald.Intent) herald.Code {
			_, err := b.clientA.Submit(context.Background(), in)
			if err != nil {
				return codeOf(err)
			}
			return ""
		})
	})
	t.Run("HTTPAPI", func(t *testing.T) {
		t.Parallel()
		b := apiSetup(t)
		key, err := api.CreateKey(context.Background(), b.admin, b.nameA, "test", "senders")
		require.NoError(t, err)
		srv, err := api.New(&api.Config{Pool: b.asAPI})
		require.NoError(t, err)
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		run(t, b.accessBundle, func(t *testing.T, in *herald.Intent) herald.Code {
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
			if resp.StatusCode == http.StatusCreated {
				return ""
			}
			var answer struct {
				Code string `json:"code"`
			}
			require.NoError(t, json.Unmarshal(out, &answer), "%s", out)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", out)
			return herald.Code(answer.Code)
		})
	})
	t.Run("SQLIntake", func(t *testing.T) {
		t.Parallel()
		b := accessSetup(t)
		var result string
		w, err := sqldoor.NewWorker(b.admin, &sqldoor.WorkerConfig{ContentRulesMaxAge: -1,
			ResultFunc: func(_, r string) { result = r }})
		require.NoError(t, err)
		run(t, b, func(t *testing.T, in *herald.Intent) herald.Code {
			ctx := context.Background()
			body, err := json.Marshal(in)
			require.NoError(t, err)
			_, err = b.asA.Exec(ctx, `INSERT INTO herald.intake (body) VALUES ($1)`, body)
			require.NoError(t, err)
			result = ""
			_, _, err = w.DrainOnce(ctx)
			require.NoError(t, err)
			if result != sqldoor.ResultMalformed {
				return ""
			}
			var code string
			require.NoError(t, b.admin.QueryRow(ctx, `SELECT failure_code FROM herald.malformed_intents
				WHERE idempotency_key = $1`, in.IdempotencyKey).Scan(&code))
			return herald.Code(code)
		})
	})
}

// Operators approve and revoke through the audited functions; a producer
// reads its own senders and writes none; an auditor reads them all and
// can neither approve nor write.
func TestSenderIDsAccessAsEachRole(t *testing.T) {
	t.Parallel()
	b := accessSetup(t)
	ctx := context.Background()
	_, err := b.asOp.Exec(ctx, `SELECT herald.sender_id_approve($1, 'ACME', $2, 'ticket 7')`, b.nameA, b.opName)
	require.NoError(t, err)
	_, err = b.asOp.Exec(ctx, `SELECT herald.sender_id_approve($1, 'BEE', $2, '')`, b.nameB, b.opName)
	require.NoError(t, err)
	var again bool
	require.NoError(t, b.asOp.QueryRow(ctx, `SELECT herald.sender_id_approve($1, 'ACME', $2, '')`, b.nameA, b.opName).Scan(&again))
	require.False(t, again, "approving twice changes nothing")

	require.Equal(t, 1, countAs(t, b.asA, `SELECT count(*) FROM herald.sender_ids`), "a producer reads its own")
	require.Equal(t, 2, countAs(t, b.asAud, `SELECT count(*) FROM herald.sender_ids`))
	require.Equal(t, 2, countAs(t, b.asOp, `SELECT count(*) FROM herald.sender_ids`))

	denied := func(db interface {
		Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	}, sql string, args ...any) {
		t.Helper()
		_, err := db.Exec(ctx, sql, args...)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, sql)
		require.Equal(t, "42501", pgErr.Code, sql)
	}
	for _, db := range []*struct {
		name string
		exec interface {
			Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
		}
	}{{"producer", b.asA}, {"auditor", b.asAud}, {"operator", b.asOp}} {
		denied(db.exec, `INSERT INTO herald.sender_ids (producer, sender, approved_by) VALUES ($1, 'FORGED', 'me')`, b.nameA)
		denied(db.exec, `DELETE FROM herald.sender_ids`)
		denied(db.exec, `UPDATE herald.sender_ids SET sender = 'X'`)
	}
	denied(b.asA, `SELECT herald.sender_id_approve($1, 'SELF', 'me', '')`, b.nameA)
	denied(b.asAud, `SELECT herald.sender_id_approve($1, 'AUD', 'me', '')`, b.nameA)
	denied(b.asAud, `SELECT herald.sender_id_revoke($1, 'ACME', 'me', '')`, b.nameA)

	// An operator's malformed sender is refused by the table's check.
	_, err = b.asOp.Exec(ctx, `SELECT herald.sender_id_approve($1, 'TOOLONGSENDER', $2, '')`, b.nameA, b.opName)
	require.ErrorContains(t, err, "sender_ids_sender_check")

	var revoked bool
	require.NoError(t, b.asOp.QueryRow(ctx, `SELECT herald.sender_id_revoke($1, 'ACME', $2, 'carrier withdrew it')`, b.nameA, b.opName).Scan(&revoked))
	require.True(t, revoked)
	require.Zero(t, countAs(t, b.asA, `SELECT count(*) FROM herald.sender_ids`))
	require.Equal(t, 1, countAs(t, b.admin, `SELECT count(*) FROM herald.audit_log WHERE action = 'sender_revoke'
		AND filter = jsonb_build_object('producer', $1::text, 'sender', 'ACME') AND details ->> 'note' = 'ticket 7'
		AND login = $2`, b.nameA, b.opName))
	require.Equal(t, 2, countAs(t, b.admin, `SELECT count(*) FROM herald.audit_log WHERE action = 'sender_approve'`))
}
