package receipt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/routing"
	"github.com/heraldhq/herald/internal/store"
)

// The matcher's decisions on their own, without a database: each case is
// a batch of receipts, the routes their keys find, and what becomes of
// every receipt and route.

var decisionNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// decisionReceipts is the providers' settings these tests use: sms/acme
// has a window of a minute and resends on temporary error "T1"; any
// other provider has the defaults.
func decisionReceipts(provider string) *routing.Receipts {
	if provider == "sms/acme" {
		return &routing.Receipts{Window: time.Minute, TemporaryErrors: []string{"T1"}, RetryTemporary: true}
	}
	return nil
}

// rcpt is a receipt from sms/acme for message id, arrived ago before
// decisionNow.
func rcpt(id, status string, ago time.Duration) store.ReceiptClaimDueRow {
	return store.ReceiptClaimDueRow{Provider: "sms/acme", ProviderMessageID: id, Status: status,
		ReceivedAt: decisionNow.Add(-ago)}
}

// route is route rid of notification n given key "sms/acme <id>" keyedAgo
// before decisionNow, with delivery status status (nil: none yet).
func route(n, rid, id string, keyedAgo time.Duration, status *string) store.RouteListByReceiptKeysRow {
	at := decisionNow.Add(-keyedAgo)
	return store.RouteListByReceiptKeysRow{ReceiptKey: key("sms/acme", id), ReceiptKeyedAt: &at,
		NotificationID: n, RouteID: rid, DeliveryStatus: status, AttemptCount: 1}
}

func sp(s string) *string { return &s }

func TestClassify_MalformedReceiptsAskForNoRoute(t *testing.T) {
	t.Parallel()
	rows := []store.ReceiptClaimDueRow{
		rcpt("m1", "DELIVRD", 0),
		rcpt("", "DELIVRD", 0),
		rcpt("m3", "", 0),
		{Provider: "sms/acme", ProviderMessageID: " m4 ", Status: "UNDELIV", ErrorCode: "T1"},
		{Provider: "sms/acme", ProviderMessageID: "m5", Status: "UNDELIV", ErrorCode: "P9"},
		{Provider: "sms/other", ProviderMessageID: "m6", Status: "UNDELIV", ErrorCode: "T1"},
	}
	ds, keys, asked := classify(rows, decisionReceipts)
	require.Equal(t, []string{"sms/acme m1", "sms/acme m4", "sms/acme m5", "sms/other m6"}, keys,
		"a key's id is trimmed")
	require.Equal(t, []int{0, 3, 4, 5}, asked)
	tests := []struct {
		i                 int
		state, status     string
		permanent, resend bool
	}{
		{0, "", routing.DeliveryDelivered, true, false},
		{1, "malformed", "", false, false},
		{2, "malformed", "", false, false},
		{3, "", routing.DeliveryUndelivered, false, true},
		{4, "", routing.DeliveryUndelivered, true, false},
		{5, "", routing.DeliveryUndelivered, true, false}, // the defaults: every code permanent
	}
	for _, tt := range tests {
		d := ds[tt.i]
		require.Equal(t, rows[tt.i], d.row, "receipt %d", tt.i)
		require.Equal(t, tt.state, d.state, "receipt %d", tt.i)
		require.Equal(t, tt.status, d.status, "receipt %d", tt.i)
		require.Equal(t, tt.permanent, d.permanent, "receipt %d", tt.i)
		require.Equal(t, tt.resend, d.resend, "receipt %d", tt.i)
	}
}

func TestNewestBefore_ReceiptBelongsToTheRouteKeyedLastBeforeItArrived(t *testing.T) {
	t.Parallel()
	at := func(ago time.Duration) *time.Time { t := decisionNow.Add(-ago); return &t }
	kr := func(rid string, keyed *time.Time) keyedRoute {
		return keyedRoute{RouteListByReceiptKeysRow: store.RouteListByReceiptKeysRow{RouteID: rid, ReceiptKeyedAt: keyed}}
	}
	tests := []struct {
		name   string
		routes []keyedRoute
		want   string // "" for none
	}{
		{"None", nil, ""},
		{"One", []keyedRoute{kr("a", at(time.Hour))}, "a"},
		{"TheNewest", []keyedRoute{kr("a", at(time.Hour)), kr("b", at(time.Minute)), kr("c", at(2*time.Minute))}, "b"},
		{"NotOneKeyedAfterItArrived", []keyedRoute{kr("a", at(time.Hour)), kr("b", at(-time.Second))}, "a"},
		{"OnlyOnesKeyedAfterItArrived", []keyedRoute{kr("b", at(-time.Second))}, ""},
		{"KeyedAtExactlyItsArrival", []keyedRoute{kr("a", at(time.Hour)), kr("b", at(0))}, "b"},
		{"AnUnrecordedKeyingIsLongAgo", []keyedRoute{kr("a", nil), kr("b", at(time.Hour))}, "b"},
		{"AnUnrecordedKeyingAlone", []keyedRoute{kr("a", nil)}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := newestBefore(tt.routes, decisionNow)
			require.Equal(t, tt.want != "", ok)
			require.Equal(t, tt.want, got.RouteID)
		})
	}
}

func TestKeyedRoutes_ARouteOfPartsIsFoundByEachPartsKey(t *testing.T) {
	t.Parallel()
	one := store.RouteListByReceiptKeysRow{ReceiptKey: "p a", RouteID: "one"}
	parts := store.RouteListByReceiptKeysRow{ReceiptKey: "p b1", ReceiptParts: []string{"p b1", "p b2"}, RouteID: "parts"}
	byKey := keyedRoutes([]store.RouteListByReceiptKeysRow{one, parts})
	require.Equal(t, []keyedRoute{{one, 0}}, byKey["p a"])
	require.Equal(t, []keyedRoute{{parts, 0}}, byKey["p b1"])
	require.Equal(t, []keyedRoute{{parts, 1}}, byKey["p b2"])
	require.Len(t, byKey, 3)
}

// decided is what a test expects of one receipt.
type decided struct {
	state string
	route string // "" for none
	retry time.Duration
}

func TestDecideRoutes_EachReceiptMovesItsRouteOrChangesNothing(t *testing.T) {
	t.Parallel()
	const young, old = 100 * time.Millisecond, 10 * time.Second
	tests := []struct {
		name     string
		receipts []store.ReceiptClaimDueRow
		routes   []store.RouteListByReceiptKeysRow
		want     []decided
		// status is the route's status once decided (nil: not written).
		status map[string]*string
	}{
		{
			name:     "FirstStatusIsMatched",
			receipts: []store.ReceiptClaimDueRow{rcpt("m1", "DELIVRD", old)},
			routes:   []store.RouteListByReceiptKeysRow{route("n1", "r1", "m1", time.Hour, nil)},
			want:     []decided{{state: "matched", route: "r1"}},
			status:   map[string]*string{"r1": sp(routing.DeliveryDelivered)},
		},
		{
			name:     "FinalAfterUnknownIsMatched",
			receipts: []store.ReceiptClaimDueRow{rcpt("m1", "UNDELIV", old)},
			routes:   []store.RouteListByReceiptKeysRow{route("n1", "r1", "m1", time.Hour, sp(routing.DeliveryUnknown))},
			want:     []decided{{state: "matched", route: "r1"}},
			status:   map[string]*string{"r1": sp(routing.DeliveryUndelivered)},
		},
		{
			name:     "AnOldRepeatIsADuplicate",
			receipts: []store.ReceiptClaimDueRow{rcpt("m1", "DELIVRD", old)},
			routes:   []store.RouteListByReceiptKeysRow{route("n1", "r1", "m1", time.Hour, sp(routing.DeliveryDelivered))},
			want:     []decided{{state: "duplicate", route: "r1"}},
			status:   map[string]*string{"r1": nil},
		},
		{
			name:     "UnknownAfterFinalIsADuplicate",
			receipts: []store.ReceiptClaimDueRow{rcpt("m1", "ENROUTE", old)},
			routes:   []store.RouteListByReceiptKeysRow{route("n1", "r1", "m1", time.Hour, sp(routing.DeliveryDelivered))},
			want:     []decided{{state: "duplicate", route: "r1"}},
			status:   map[string]*string{"r1": nil},
		},
		{
			name:     "AYoungRepeatWaitsForANewerRoute",
			receipts: []store.ReceiptClaimDueRow{rcpt("m1", "DELIVRD", young)},
			routes:   []store.RouteListByReceiptKeysRow{route("n1", "r1", "m1", time.Hour, sp(routing.DeliveryDelivered))},
			want:     []decided{{state: "new", route: "r1", retry: time.Second}},
			status:   map[string]*string{"r1": nil},
		},
		{
			name:     "FinalInTheSameBatchSupersedesUnknown",
			receipts: []store.ReceiptClaimDueRow{rcpt("m1", "ENROUTE", old), rcpt("m1", "DELIVRD", old), rcpt("m1", "UNDELIV", old)},
			routes:   []store.RouteListByReceiptKeysRow{route("n1", "r1", "m1", time.Hour, nil)},
			want: []decided{{state: "duplicate", route: "r1"}, {state: "matched", route: "r1"},
				{state: "duplicate", route: "r1"}},
			status: map[string]*string{"r1": sp(routing.DeliveryDelivered)},
		},
		{
			name:     "NoRouteYetIsTriedAgain",
			receipts: []store.ReceiptClaimDueRow{rcpt("m1", "DELIVRD", old)},
			want:     []decided{{state: "new", retry: time.Second}},
		},
		{
			name:     "NoRoutePastTheWindowIsUnmatched",
			receipts: []store.ReceiptClaimDueRow{rcpt("m1", "DELIVRD", time.Minute)},
			want:     []decided{{state: "unmatched"}},
		},
		{
			name:     "ARouteKeyedAfterTheReceiptIsNotItsRoute",
			receipts: []store.ReceiptClaimDueRow{rcpt("m1", "DELIVRD", old)},
			routes: []store.RouteListByReceiptKeysRow{route("n1", "r1", "m1", time.Hour, nil),
				route("n2", "r2", "m1", time.Second, nil)},
			want:   []decided{{state: "matched", route: "r1"}},
			status: map[string]*string{"r1": sp(routing.DeliveryDelivered)},
		},
		{
			name:     "TheNewestRouteWithTheIDTakesIt",
			receipts: []store.ReceiptClaimDueRow{rcpt("m1", "DELIVRD", old)},
			routes: []store.RouteListByReceiptKeysRow{route("n1", "r1", "m1", time.Hour, nil),
				route("n2", "r2", "m1", time.Minute, nil)},
			want:   []decided{{state: "matched", route: "r2"}},
			status: map[string]*string{"r2": sp(routing.DeliveryDelivered)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ds, _, asked := classify(tt.receipts, decisionReceipts)
			order := decideRoutes(ds, asked, keyedRoutes(tt.routes), decisionNow, decisionReceipts)
			for i, w := range tt.want {
				require.Equal(t, w.state, ds[i].state, "receipt %d", i)
				require.Equal(t, w.route, ds[i].route, "receipt %d", i)
				require.Equal(t, w.retry, ds[i].retry, "receipt %d", i)
			}
			written := map[string]*string{}
			for _, st := range order {
				if st.write != nil {
					written[st.rid] = st.status
				} else {
					written[st.rid] = nil
				}
			}
			if tt.status == nil {
				tt.status = map[string]*string{}
			}
			require.Equal(t, tt.status, written)
		})
	}
}

func TestDecideRoutes_ARouteOfPartsTakesTheWorstOfItsParts(t *testing.T) {
	t.Parallel()
	const old = 10 * time.Second
	parts := func(statuses string, status *string) store.RouteListByReceiptKeysRow {
		r := route("n1", "r1", "a", time.Hour, status)
		r.ReceiptParts = []string{key("sms/acme", "a"), key("sms/acme", "b"), key("sms/acme", "c")}
		r.PartStatuses = statuses
		return r
	}
	tests := []struct {
		name      string
		receipts  []store.ReceiptClaimDueRow
		route     store.RouteListByReceiptKeysRow
		want      []string // each receipt's state
		status    *string  // nil: not written
		partsOut  string
		changedTo bool // the status itself changed
	}{
		{
			name:     "FirstPartSetsTheStatus",
			receipts: []store.ReceiptClaimDueRow{rcpt("b", "DELIVRD", old)},
			route:    parts("", nil),
			want:     []string{"matched"},
			status:   sp(routing.DeliveryDelivered), partsOut: ",delivered,", changedTo: true,
		},
		{
			name:     "AnotherDeliveredPartKeepsTheStatusButIsWritten",
			receipts: []store.ReceiptClaimDueRow{rcpt("c", "DELIVRD", old)},
			route:    parts(",delivered,", sp(routing.DeliveryDelivered)),
			want:     []string{"matched"},
			status:   sp(routing.DeliveryDelivered), partsOut: ",delivered,delivered",
		},
		{
			name:     "AnUndeliveredPartMakesTheRouteUndelivered",
			receipts: []store.ReceiptClaimDueRow{rcpt("a", "DELIVRD", old), rcpt("b", "UNDELIV", old)},
			route:    parts("", nil),
			want:     []string{"matched", "matched"},
			status:   sp(routing.DeliveryUndelivered), partsOut: "delivered,undelivered,", changedTo: true,
		},
		{
			name:     "APartReportedTwiceIsADuplicate",
			receipts: []store.ReceiptClaimDueRow{rcpt("b", "DELIVRD", old)},
			route:    parts(",delivered,", sp(routing.DeliveryDelivered)),
			want:     []string{"duplicate"},
		},
		{
			name:     "AFinalPartAfterItsUnknownIsMatched",
			receipts: []store.ReceiptClaimDueRow{rcpt("b", "EXPIRED", old)},
			route:    parts(",unknown,", sp(routing.DeliveryUnknown)),
			want:     []string{"matched"},
			status:   sp(routing.DeliveryExpired), partsOut: ",expired,", changedTo: true,
		},
		{
			name:     "PartsReadInAnotherShapeStartEmpty",
			receipts: []store.ReceiptClaimDueRow{rcpt("a", "DELIVRD", old)},
			route:    parts("delivered", nil),
			want:     []string{"matched"},
			status:   sp(routing.DeliveryDelivered), partsOut: "delivered,,", changedTo: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ds, _, asked := classify(tt.receipts, decisionReceipts)
			order := decideRoutes(ds, asked, keyedRoutes([]store.RouteListByReceiptKeysRow{tt.route}), decisionNow, decisionReceipts)
			for i, w := range tt.want {
				require.Equal(t, w, ds[i].state, "receipt %d", i)
			}
			require.Len(t, order, 1)
			st := order[0]
			if tt.status == nil {
				require.Nil(t, st.write)
				return
			}
			require.NotNil(t, st.write)
			require.Equal(t, *tt.status, *st.status)
			require.Equal(t, tt.changedTo, st.statusChanged)
			set := statusWrites(order, nil)
			require.Equal(t, []string{tt.partsOut}, set.PartStatuses)
			require.Equal(t, []string{tt.route.PartStatuses}, set.OldPartStatuses)
		})
	}
}

func TestStatusWrites_OnlyAChangeToTheResendingReceiptsStatusSendsTheRouteBack(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		receipts []store.ReceiptClaimDueRow
		status   *string
		want     []bool
	}{
		{"TemporaryUndelivered", []store.ReceiptClaimDueRow{{Provider: "sms/acme", ProviderMessageID: "m1",
			Status: "UNDELIV", ErrorCode: "T1", ReceivedAt: decisionNow.Add(-time.Minute / 2)}}, nil, []bool{true}},
		{"PermanentUndelivered", []store.ReceiptClaimDueRow{{Provider: "sms/acme", ProviderMessageID: "m1",
			Status: "UNDELIV", ErrorCode: "P9", ReceivedAt: decisionNow.Add(-time.Minute / 2)}}, nil, []bool{false}},
		{"Delivered", []store.ReceiptClaimDueRow{rcpt("m1", "DELIVRD", 10*time.Second)}, nil, []bool{false}},
		{"NothingChanged", []store.ReceiptClaimDueRow{rcpt("m1", "DELIVRD", 10*time.Second)},
			sp(routing.DeliveryDelivered), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ds, _, asked := classify(tt.receipts, decisionReceipts)
			rts := []store.RouteListByReceiptKeysRow{route("n1", "r1", "m1", time.Hour, tt.status)}
			order := decideRoutes(ds, asked, keyedRoutes(rts), decisionNow, decisionReceipts)
			now := decisionNow
			set := statusWrites(order, &now)
			require.Equal(t, tt.want, set.Retries)
			require.Equal(t, &now, set.Now)
			if tt.want != nil {
				require.Equal(t, []string{"n1"}, set.NotificationIds)
				require.Equal(t, []string{"r1"}, set.RouteIds)
				require.Equal(t, []string{""}, set.PartStatuses, "a route of one part has no parts")
			}
		})
	}
}

func TestSettle_ARouteAnotherMatcherChangedFirstTakesNoReceipt(t *testing.T) {
	t.Parallel()
	const old = 10 * time.Second
	receipts := []store.ReceiptClaimDueRow{
		rcpt("one", "DELIVRD", old),            // r1: written, changed
		rcpt("lost", "DELIVRD", old),           // r2: written, not changed
		rcpt("part", "DELIVRD", old),           // r3, of parts: written, not changed
		rcpt("none", "DELIVRD", old),           // no route: new
		rcpt("gone", "DELIVRD", 2*time.Minute), // no route, past the window
		{Provider: "sms/acme"},                 // malformed
	}
	r3 := route("n3", "r3", "part", time.Hour, nil)
	r3.ReceiptParts = []string{key("sms/acme", "part"), key("sms/acme", "part-2")}
	routes := []store.RouteListByReceiptKeysRow{route("n1", "r1", "one", time.Hour, nil),
		route("n2", "r2", "lost", time.Hour, nil), r3}
	ds, _, asked := classify(receipts, decisionReceipts)
	order := decideRoutes(ds, asked, keyedRoutes(routes), decisionNow, decisionReceipts)
	for i := range 3 {
		require.Equal(t, "matched", ds[i].state, "receipt %d", i)
	}
	settle(ds, order, map[string]store.RouteDeliveryStatusSetManyRow{routeKey("n1", "r1"): {}})
	want := []struct {
		state, route string
		attempt      int32
		retry        time.Duration
	}{
		{"matched", "r1", 1, 0},
		{"duplicate", "r2", 1, 0},
		{"new", "", 0, 0}, // at once: its parts may still be news
		{"new", "", 0, time.Second},
		{"unmatched", "", 0, 0},
		{"malformed", "", 0, 0},
	}
	for i, w := range want {
		require.Equal(t, w.state, ds[i].state, "receipt %d", i)
		require.Equal(t, w.route, ds[i].route, "receipt %d", i)
		require.Equal(t, w.attempt, ds[i].attempt, "receipt %d", i)
		require.Equal(t, w.retry, ds[i].retry, "receipt %d", i)
	}
}

func TestMarkParams_OneEntryPerDecisionInOrder(t *testing.T) {
	t.Parallel()
	now := decisionNow
	ds := []decision{
		{row: store.ReceiptClaimDueRow{ID: 7}, state: "matched", status: routing.DeliveryDelivered,
			notificationID: "n1", route: "r1", attempt: 2},
		{row: store.ReceiptClaimDueRow{ID: 8}, state: "new", retry: 4 * time.Second},
	}
	mark := markParams(ds, &now)
	require.Equal(t, store.ReceiptMarkManyParams{Now: &now, Ids: []int64{7, 8}, States: []string{"matched", "new"},
		DeliveryStatuses: []string{routing.DeliveryDelivered, ""}, NotificationIds: []string{"n1", ""},
		RouteIds: []string{"r1", ""}, RetrySeconds: []float64{0, 4}, Attempts: []int32{2, 0}}, mark)

	rs := []Receipt{{Provider: "sms/acme", ProviderMessageID: "m1", Status: "DELIVRD", Raw: "a", Source: SourceHTTP},
		{Provider: "sms/acme", ProviderMessageID: "m2", Status: "ENROUTE", ErrorCode: "E", Source: SourceSMPP}}
	p := insertDecidedParams(rs, ds, now)
	require.Equal(t, now, p.ReceivedAt)
	require.Equal(t, []string{"m1", "m2"}, p.ProviderMessageIds)
	require.Equal(t, []string{"", "E"}, p.ErrorCodes)
	require.Equal(t, []string{SourceHTTP, SourceSMPP}, p.Sources)
	require.Equal(t, []string{"matched", "new"}, p.States)
	require.Equal(t, []string{"r1", ""}, p.RouteIds)
	require.Equal(t, []float64{0, 4}, p.RetrySeconds)
}
