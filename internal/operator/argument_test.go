package operator_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/routing"
)

func TestRoutingTestArgs_GuessChannelCheckPriority(t *testing.T) {
	t.Parallel()
	a := operator.RoutingTestArgs{Destination: "+14155550100", Producer: "shop", NotificationType: "otp", Priority: "bulk", Tried: "sms/a,sms/b"}
	in, err := a.PickInput()
	require.NoError(t, err)
	require.Equal(t, routing.PickInput{Channel: "sms", Destination: "+14155550100", Producer: "shop", NotificationType: "otp",
		Priority: "bulk", Tried: []string{"sms/a", "sms/b"}}, in)

	for _, tt := range []struct {
		a    operator.RoutingTestArgs
		want string
	}{
		{operator.RoutingTestArgs{Destination: "somebody", Priority: "bulk"}, `cannot tell the channel of "somebody": give -channel`},
		{operator.RoutingTestArgs{Channel: "fax", Destination: "+1", Priority: "bulk"}, `invalid -channel "fax"`},
		{operator.RoutingTestArgs{Destination: "+1", Priority: "urgent"}, `invalid -priority "urgent": want transactional or bulk`},
	} {
		_, err := tt.a.PickInput()
		require.ErrorContains(t, err, tt.want)
	}
}

func TestDeadLetterArgs_RefuseAnUnknownClassification(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"", "transient", "permanent", "timeout", "http_503", "smtp_550", "smpp_0x00000058"} {
		a := operator.DeadLetterArgs{Filter: operator.Filter{Classification: c}, BatchSize: 1, All: true}
		_, err := a.ListFilter(time.Now())
		require.NoError(t, err, c)
		_, err = a.ReplayFilter(time.Now())
		require.NoError(t, err, c)
	}
	for _, c := range []string{"exhausted", "http_200", "http_999", "smpp_58"} {
		a := operator.DeadLetterArgs{Filter: operator.Filter{Classification: c}, BatchSize: 1}
		_, err := a.ListFilter(time.Now())
		require.ErrorContains(t, err, `invalid -classification "`+c+`": want transient, permanent, `, c)
		_, err = a.ReplayFilter(time.Now())
		require.ErrorContains(t, err, `invalid -classification "`+c+`"`, c)
	}
}
