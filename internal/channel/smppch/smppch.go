// Package smppch delivers SMS over SMPP 3.4 straight to an SMSC, through
// internal/smpp's client: one or more transceiver binds kept up in the
// background, a window of submit_sm per bind, delivery receipts and
// mobile-originated messages received on the same binds.
//
// The body is encoded as intake counted it: GSM-7 (data_coding 0, packed
// or not) when every character is in the GSM 03.38 alphabet, else UCS-2
// (data_coding 8); a body longer than one SMS is sent in the parts intake
// counted, each with a concatenation header, or with the sar_* TLVs, or
// whole in message_payload, as configured.
// A flash SMS (the intent's message_type FLASH_SMS) carries message class
// 0 in every part's data_coding (0x10, 0x18); the intent's sender, when it
// names one, replaces SourceAddr, with the TON and NPI of its form.
//
// Outcomes follow the HTTP SMS driver's rule: what is about the message
// (an invalid destination, source or data) is Permanent with a recovery
// hint; what is about herald's settings or the SMSC's state (a protocol
// disagreement, throttling, a lost connection) is Transient, so fixing it
// lets the retries succeed. Throttling is marked Throttled. With no bind
// up (refused, or the SMSC unreachable) nothing is sent: the outcome is
// Transient and Unsent, and Ready says so before any attempt, so routes
// wait for a bind without spending attempts. Every command_status
// has a classification: "smpp_throttled", "smpp_queue_full", or
// "smpp_0x" and the status in eight hex digits ("smpp_0x0000000b").
package smppch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/channel/sms"
	"github.com/heraldhq/herald/internal/smpp"
)

// Classifications specific to SMPP, besides "smpp_0x…" for a
// command_status.
const (
	// ClassThrottled: ESME_RTHROTTLED (Transient, RetryAfter set).
	ClassThrottled = "smpp_throttled"
	// ClassQueueFull: ESME_RMSGQFUL (Transient, RetryAfter set).
	ClassQueueFull = "smpp_queue_full"
	// ClassNotBound: no bind to the SMSC is up; nothing was sent
	// (Transient, Unsent).
	ClassNotBound = "smpp_not_bound"
	// ClassConnectionLost: the connection ended with the submit_sm
	// outstanding; the SMSC may have accepted it (Transient).
	ClassConnectionLost = "smpp_connection_lost"
	// ClassResponseTimeout: no submit_sm_resp in time; the SMSC may have
	// accepted it (Transient).
	ClassResponseTimeout = "smpp_response_timeout"
	// ClassBadResponse: the submit_sm_resp did not decode (Transient).
	ClassBadResponse = "smpp_bad_response"
	// ClassClosed: the driver was closed, at shutdown or reload
	// (Transient).
	ClassClosed = "smpp_closed"
	// ClassTooLong: the body needs more than 255 parts (Permanent).
	ClassTooLong = "smpp_too_long"
)

// Config configures a Deliverer.
type Config struct {
	// Provider names the provider (receipts and inbound messages carry
	// it).
	Provider string
	// Host and Port are the SMSC's; Port defaults to 2775.
	Host string
	Port int
	// SystemID, Password and SystemType are the bind's credentials.
	SystemID   string
	Password   string
	SystemType string
	// Binds, Window and SubmitsPerSecond (per bind) are the client's; see
	// smpp.ClientConfig.
	Binds            int
	Window           int
	SubmitsPerSecond int
	// SourceAddr is the sender: "+" and digits, a short code, or an
	// alphanumeric id; SourceTON and SourceNPI override the TON and NPI
	// chosen from its form (names as smpp.ParseTON and ParseNPI take).
	SourceAddr string
	SourceTON  string
	SourceNPI  string
	// ServiceType is submit_sm's service_type; usually empty.
	ServiceType string
	// GSM7Packed packs GSM-7 septets (default: one per octet).
	GSM7Packed bool
	// LongMessages is "udh" (default), "sar" or "payload".
	LongMessages string
	// Receipts asks for delivery receipts: "final" (default), "failure"
	// or "none".
	Receipts string
	// Timings; zero values take smpp.ClientConfig's defaults.
	EnquireLinkInterval time.Duration
	DeadPeerTimeout     time.Duration
	ResponseTimeout     time.Duration
	BindTimeout         time.Duration
	ReconnectMax        time.Duration
	ThrottleWait        time.Duration
	// ReceiptFunc and InboundFunc take receipts and mobile-originated
	// messages before they are acknowledged; nil logs and accepts.
	ReceiptFunc smpp.ReceiptFunc
	InboundFunc smpp.InboundFunc
	// Logger receives the binds' lifecycle and a debug record per attempt;
	// default discard.
	Logger *slog.Logger
}

// Deliverer sends SMS over SMPP. It is safe for concurrent use; Close
// unbinds.
type Deliverer struct {
	client   *smpp.Client
	base     smpp.SM
	opts     smpp.MessageOpts
	ref      atomic.Uint32
	logger   *slog.Logger
	provider string
}

// New validates cfg and returns a Deliverer whose binds connect in the
// background, or an error naming the Config field that is wrong (never
// quoting the password).
func New(cfg Config) (*Deliverer, error) {
	wrap := func(err error) error { return fmt.Errorf("smpp config: %w", err) }
	if cfg.Host == "" {
		return nil, wrap(errors.New("Host is required"))
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, wrap(errors.New("Port must be between 1 and 65535"))
	}
	if cfg.SubmitsPerSecond < 0 {
		return nil, wrap(errors.New("SubmitsPerSecond must not be negative"))
	}
	long, err := smpp.ParseLongMode(cfg.LongMessages)
	if err != nil {
		return nil, wrap(fmt.Errorf("LongMessages: %w", err))
	}
	receipts, err := smpp.ParseReceipts(cfg.Receipts)
	if err != nil {
		return nil, wrap(fmt.Errorf("Receipts: %w", err))
	}
	src, ton, npi := smpp.SourceAddress(cfg.SourceAddr)
	if len(src) >= smpp.MaxAddrLen {
		return nil, wrap(fmt.Errorf("SourceAddr must be at most %d characters", smpp.MaxAddrLen-1))
	}
	if v, ok, err := smpp.ParseTON(cfg.SourceTON); err != nil {
		return nil, wrap(fmt.Errorf("SourceTON: %w", err))
	} else if ok {
		ton = v
	}
	if v, ok, err := smpp.ParseNPI(cfg.SourceNPI); err != nil {
		return nil, wrap(fmt.Errorf("SourceNPI: %w", err))
	} else if ok {
		npi = v
	}
	if len(cfg.ServiceType) >= smpp.MaxServiceTypeLen {
		return nil, wrap(fmt.Errorf("ServiceType must be at most %d characters", smpp.MaxServiceTypeLen-1))
	}
	logger := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	client, err := smpp.NewClient(smpp.ClientConfig{
		Addr:                net.JoinHostPort(cfg.Host, strconv.Itoa(cmp.Or(cfg.Port, 2775))),
		SystemID:            cfg.SystemID,
		Password:            cfg.Password,
		SystemType:          cfg.SystemType,
		Provider:            cfg.Provider,
		Binds:               cfg.Binds,
		Window:              cfg.Window,
		SubmitsPerSecond:    float64(cfg.SubmitsPerSecond),
		ResponseTimeout:     cfg.ResponseTimeout,
		EnquireLinkInterval: cfg.EnquireLinkInterval,
		DeadPeerTimeout:     cfg.DeadPeerTimeout,
		BindTimeout:         cfg.BindTimeout,
		ReconnectMax:        cfg.ReconnectMax,
		ThrottleWait:        cfg.ThrottleWait,
		Packed:              cfg.GSM7Packed,
		ReceiptFunc:         cfg.ReceiptFunc,
		InboundFunc:         cfg.InboundFunc,
		Logger:              logger,
	})
	if err != nil {
		return nil, err
	}
	return &Deliverer{
		client: client,
		base: smpp.SM{
			ServiceType:   cfg.ServiceType,
			SourceAddrTON: ton, SourceAddrNPI: npi, SourceAddr: src,
			DestAddrTON: smpp.TONInternational, DestAddrNPI: smpp.NPIISDN,
			RegisteredDelivery: receipts,
		},
		opts:     smpp.MessageOpts{Long: long, Packed: cfg.GSM7Packed},
		logger:   logger,
		provider: cfg.Provider,
	}, nil
}

// Client returns the SMPP client, for its Stats.
func (d *Deliverer) Client() *smpp.Client { return d.client }

// Ready returns nil while the driver can send, and otherwise why not: no
// bind is up (see smpp.Client.Ready), said as an operator reads it.
func (d *Deliverer) Ready() error {
	err := d.client.Ready()
	if err == nil {
		return nil
	}
	if se, ok := errors.AsType[*smpp.StatusError](err); ok {
		return fmt.Errorf("the SMSC refuses herald's bind: %s (check system_id, password and system_type)", se.Status)
	}
	return fmt.Errorf("no bind to the SMSC is up: %s", strings.TrimPrefix(err.Error(), "smpp: no bind is up: "))
}

// Close unbinds gracefully (see smpp.Client.Close).
func (d *Deliverer) Close() error { return d.client.Close() }

// Deliver submits msg's body to the SMSC, in as many parts as it needs,
// and classifies the answer. Accepted, its ProviderMessageID is the first
// part's message_id and PartMessageIDs every part's (each part asks for a
// delivery receipt). It
// never panics and never returns an outcome quoting the full number or
// the body.
func (d *Deliverer) Deliver(ctx context.Context, msg *channel.Message) channel.Outcome {
	return channel.Attempt(ctx, d.logger, channel.SMS, msg, d.deliver)
}

func (d *Deliverer) deliver(ctx context.Context, msg *channel.Message) channel.Outcome {
	c, refused, ok := sms.Decode(msg)
	if !ok {
		return refused
	}
	base := d.base
	base.DestinationAddr = strings.TrimPrefix(msg.Address, "+")
	if c.From != "" {
		// The intent's sender, approved at intake, instead of the
		// provider's: its TON and NPI follow its form (alphanumeric 5/0,
		// international 1/1), as for source_addr.
		base.SourceAddr, base.SourceAddrTON, base.SourceAddrNPI = smpp.SourceAddress(c.From)
	}
	opts := d.opts
	opts.Ref = uint16(d.ref.Add(1))
	opts.Flash = c.Flash
	parts, err := smpp.Message(base, c.Body, opts)
	if err != nil {
		return channel.Outcome{
			Class: channel.Permanent, Classification: ClassTooLong,
			Message:      "the body needs more than 255 SMS parts",
			RecoveryHint: "shorten the body and submit a new intent",
		}
	}
	// Every part asks for a receipt and every part's id is recorded: SMSCs
	// differ in which part's registered_delivery they read and which
	// part's receipt they send (the one that completed the message, or one
	// per part), and the route's delivery status follows from its parts'.
	ids := make([]string, 0, len(parts))
	for i, sm := range parts {
		res, err := d.client.Submit(ctx, sm)
		var out channel.Outcome
		switch {
		case err != nil:
			out = ErrorOutcome(ctx, err)
		case res.Status != smpp.StatusOK:
			out = StatusOutcome(res.Status)
			out.RetryAfter = res.RetryAfter
		}
		if out.Classification != "" {
			if i > 0 {
				out.Unsent = false // the parts before it were sent
			}
			if len(parts) > 1 {
				out.Message = fmt.Sprintf("part %d of %d: %s", i+1, len(parts), out.Message)
				if i > 0 && out.Class == channel.Transient {
					out.Message += fmt.Sprintf(" (the %d part(s) before it were accepted and are sent again by the retry)", i)
				}
			}
			return out
		}
		ids = append(ids, res.MessageID)
	}
	first := ids[0]
	out := channel.Outcome{
		Class: channel.Delivered, Classification: "smpp_ok",
		Message: "accepted by the SMSC", ProviderMessageID: first,
	}
	if len(parts) > 1 {
		out.Message = fmt.Sprintf("accepted by the SMSC in %d parts", len(parts))
		out.PartMessageIDs = ids
	}
	if first == "" {
		out.Message += " (no message_id in submit_sm_resp)"
	}
	return out
}

// ErrorOutcome classifies an error of smpp.Client.Submit: every one is
// Transient.
func ErrorOutcome(ctx context.Context, err error) channel.Outcome {
	maybe := "; the SMSC may have accepted it, so the retry may repeat it"
	switch {
	case errors.Is(err, smpp.ErrNotBound):
		out := channel.Outcome{Class: channel.Transient, Classification: ClassNotBound, Unsent: true,
			Message: channel.Redact(strings.TrimPrefix(err.Error(), "smpp: "), 200)}
		if se, ok := errors.AsType[*smpp.StatusError](err); ok {
			switch se.Status {
			case smpp.StatusInvPaswd, smpp.StatusInvSysID, smpp.StatusBindFail, smpp.StatusInvSysTyp:
				out.RecoveryHint = "the SMSC refused herald's bind: check the provider's system_id, password and system_type; messages wait for a bind without spending attempts"
			}
		}
		return out
	case errors.Is(err, smpp.ErrConnectionLost):
		return channel.Outcome{Class: channel.Transient, Classification: ClassConnectionLost,
			Message: "the connection to the SMSC was lost with the submit outstanding" + maybe}
	case errors.Is(err, smpp.ErrResponseTimeout):
		return channel.Outcome{Class: channel.Transient, Classification: ClassResponseTimeout,
			Message: "the SMSC did not answer the submit in time" + maybe}
	case errors.Is(err, smpp.ErrBadResponse):
		return channel.Outcome{Class: channel.Transient, Classification: ClassBadResponse,
			Message: "the SMSC's answer to the submit did not decode" + maybe}
	case errors.Is(err, smpp.ErrClosed):
		return channel.Outcome{Class: channel.Transient, Classification: ClassClosed, Unsent: true,
			Message: "the SMPP driver was closed (shutdown or provider reload)"}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), ctx.Err() != nil:
		return channel.NetworkOutcome(ctx, err, "")
	}
	return channel.Outcome{Class: channel.Permanent, Classification: channel.ClassBadContent,
		Message:      "the message cannot be encoded for SMPP: " + channel.Redact(err.Error(), 200),
		RecoveryHint: "fix the provider's source_addr or the content, then replay the dead letter"}
}

// statusHints are the command_status values about the message itself:
// Permanent, with what to do.
var statusHints = map[smpp.Status]string{
	smpp.StatusInvDstAdr:      hintDestination,
	smpp.StatusInvDstTON:      hintDestination,
	smpp.StatusInvDstNPI:      hintDestination,
	smpp.StatusInvSrcAdr:      hintSource,
	smpp.StatusInvSrcTON:      hintSource,
	smpp.StatusInvSrcNPI:      hintSource,
	smpp.StatusInvMsgLen:      hintData,
	smpp.StatusInvOptParamVal: hintData,
	smpp.StatusInvDftMsgID:    hintData,
	smpp.StatusInvExpiry:      hintData,
	smpp.StatusInvSched:       hintData,
	smpp.StatusXPAppn:         hintRejected,
	smpp.StatusXRAppn:         hintRejected,
}

const (
	hintDestination = "the SMSC says the destination number is invalid: correct the recipient's number, then replay the dead letter"
	hintSource      = "the SMSC refused the sender: fix the provider's source_addr (or source_ton/source_npi) with herald providers apply, then replay the dead letters"
	hintData        = "the SMSC refused the message's data: check the body and the provider's gsm7_packed and long_messages settings, then replay the dead letter"
	hintRejected    = "the SMSC rejected the message for good: ask the provider why, then replay or resubmit"
	hintSettings    = "herald's SMPP settings and the SMSC disagree (binds, long_messages, service_type, receipts): fix the provider with herald providers apply; queued messages retry by themselves"
)

// settingsStatuses are about the provider's settings or the protocol:
// Transient with a hint.
var settingsStatuses = map[smpp.Status]bool{
	smpp.StatusInvCmdLen: true, smpp.StatusInvCmdID: true, smpp.StatusInvBndSts: true, smpp.StatusAlyBnd: true,
	smpp.StatusInvPrtFlg: true, smpp.StatusInvRegDlvFlg: true, smpp.StatusBindFail: true, smpp.StatusInvPaswd: true,
	smpp.StatusInvSysID: true, smpp.StatusInvSerTyp: true, smpp.StatusInvESMClass: true, smpp.StatusInvSysTyp: true,
	smpp.StatusInvRepFlag: true, smpp.StatusInvOptParStream: true, smpp.StatusOptParNotAllwd: true,
	smpp.StatusInvParLen: true, smpp.StatusMissingOptParam: true,
}

// Classification returns the classification of a refused submit's
// command_status: "smpp_throttled", "smpp_queue_full" or
// "smpp_0x0000000b".
func Classification(st smpp.Status) string {
	switch st {
	case smpp.StatusThrottled:
		return ClassThrottled
	case smpp.StatusMsgQFul:
		return ClassQueueFull
	}
	return fmt.Sprintf("smpp_0x%08x", uint32(st))
}

// StatusOutcome classifies a submit_sm_resp's non-zero command_status:
// destination, source and data errors and the ESME application
// rejections are Permanent with a recovery hint; everything else,
// vendor-specific codes included, is Transient (with a hint when it is
// about herald's settings). StatusOK is Delivered.
func StatusOutcome(st smpp.Status) channel.Outcome {
	out := channel.Outcome{
		Class:          channel.Transient,
		Classification: Classification(st),
		Message:        "the SMSC answered " + st.String(),
	}
	if st.Name() == "" {
		out.Message += " (vendor-specific)"
	}
	switch {
	case st == smpp.StatusOK:
		out.Class, out.Message = channel.Delivered, "accepted by the SMSC"
	case st == smpp.StatusThrottled, st == smpp.StatusMsgQFul:
		out.Throttled = true
	case statusHints[st] != "":
		out.Class, out.RecoveryHint = channel.Permanent, statusHints[st]
	case settingsStatuses[st]:
		out.RecoveryHint = hintSettings
	}
	return out
}
