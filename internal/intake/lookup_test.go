package intake_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/intake"
)

func TestRecipientRefs_WhatAnOperatorTypes(t *testing.T) {
	t.Parallel()
	for typed, want := range map[string][]string{
		"+14155550123":                 {"+14155550123", "user:+14155550123"},
		" +1 (415) 555-0123 ":          {"+14155550123", "user:+1 (415) 555-0123"},
		"1.415.555.0123":               {"+14155550123", "user:1.415.555.0123"},
		"+44 7911 123456":              {"+447911123456", "user:+44 7911 123456"},
		"12345":                        {"user:12345"}, // no valid number: a user id
		"Ana.Lee@Example.COM":          {"Ana.Lee@example.com", "user:Ana.Lee@Example.COM"},
		"HTTPS://Hooks.Example.com/B7": {"https://hooks.example.com/B7", "user:HTTPS://Hooks.Example.com/B7"},
		"u-42":                         {"user:u-42"},
		"user:u-42":                    {"user:u-42"},
		"not an @address":              {"user:not an @address"},
		"  ":                           nil,
	} {
		require.Equal(t, want, intake.RecipientRefs(typed), "%q", typed)
	}
}

// TestRecipientRefs_FindWhatValidateStores: the first ref of an address
// as typed is the recipient_ref Validate gives its route.
func TestRecipientRefs_FindWhatValidateStores(t *testing.T) {
	t.Parallel()
	for channel, typed := range map[string]string{"sms": "+1 415 555 0123", "email": "Bob@EXAMPLE.org", "webhook": "http://Example.com:8080/x"} {
		in := &intake.Intent{NotificationType: "t", Producer: "p", IdempotencyKey: "k", Channels: []string{channel}}
		switch channel {
		case "sms":
			in.Audience.SMS = []string{typed}
			in.Content.SMS = &intake.SMSContent{Body: "hi"}
		case "email":
			in.Audience.Email = []string{typed}
			in.Content.Email = &intake.EmailContent{Subject: "s", Text: "hi"}
		case "webhook":
			in.Audience.Webhook = []string{typed}
			in.Content.Webhook = []byte(`{"a":1}`)
		}
		v, err := intake.Validate(in, intake.Limits{}, time.Now())
		require.NoError(t, err, channel)
		require.Equal(t, v.Routes[0].RecipientRef, intake.RecipientRefs(typed)[0], channel)
	}
}
