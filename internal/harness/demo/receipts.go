package demo

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
)

// receiptSend is what an HTTP SMS provider sends about one message it
// accepted: its statuses in order (ENROUTE, then a final one, moves the
// route from unknown to final), early (posted before the provider's
// answer, so before herald has written the message id: the matcher finds
// it on a later try), twice (the last status posted again: a duplicate),
// after (the delay of a receipt that is not early), and unknownID (one
// more receipt, for a message id the provider never gave: unmatched once
// its window is over).
type receiptSend struct {
	statuses  []string
	errCode   string
	early     bool
	twice     bool
	after     time.Duration
	unknownID bool
}

// receiptPlan is the receipt of the k-th message a provider accepted
// (from 1): delivered mostly; undelivered (a permanent error code) one in
// ten; expired one in seventeen; left at ENROUTE (unknown) one in thirteen;
// ENROUTE then delivered one in nine; one in five early, one in seven
// twice, and an unknown id besides the 1st, 11th and 21st (early in the
// run, so that their window is over by the time the routes are done).
func receiptPlan(k int64) receiptSend {
	r := receiptSend{statuses: []string{"DELIVRD"}, after: time.Duration(k%8) * 25 * time.Millisecond}
	switch {
	case k%17 == 0:
		r.statuses = []string{"EXPIRED"}
	case k%10 == 4:
		r.statuses, r.errCode = []string{"UNDELIV"}, "011"
	case k%13 == 6:
		r.statuses = []string{"ENROUTE"}
	case k%9 == 1:
		r.statuses = []string{"ENROUTE", "DELIVRD"}
	}
	r.early = k%5 == 2
	r.twice = k%7 == 3
	r.unknownID = k%10 == 1 && k < 30
	return r
}

// SendReceiptsTo makes the provider post its receipts to url (herald's
// receipts endpoint for it, .../receipts/<provider>) from now on.
func (p *SMSProvider) SendReceiptsTo(url string) { p.receiptsURL.Store(&url) }

// ReceiptsPending returns how many receipts the provider has still to
// post.
func (p *SMSProvider) ReceiptsPending() int64 { return p.pending.Load() }

// receiptsPending returns how many receipts the providers have still to
// send: the HTTP providers' still to post, and the SMSC's still to be
// answered (one per whole message it accepted: a long one's comes with its
// last part).
func (s *Servers) receiptsPending() int64 {
	n := s.SMS.ReceiptsPending() + s.SMSBackup.ReceiptsPending()
	return n + int64(len(s.SMSC.Messages())) - int64(len(s.SMSC.DeliverResps()))
}

// later posts id's receipts after plan.after, in the background.
func (p *SMSProvider) later(id string, plan receiptSend) {
	p.pending.Add(1)
	go func() {
		defer p.pending.Add(-1)
		time.Sleep(plan.after)
		p.postReceipts(id, plan)
	}()
}

// postReceipts posts id's receipts as plan says, each as JSON {"id",
// "status", "error"} with the provider's bearer token, trying each up to
// three times; nothing before SendReceiptsTo.
func (p *SMSProvider) postReceipts(id string, plan receiptSend) {
	url := p.receiptsURL.Load()
	if url == nil {
		return
	}
	statuses := plan.statuses
	if plan.twice {
		statuses = append(statuses[:len(statuses):len(statuses)], statuses[len(statuses)-1])
	}
	for _, st := range statuses {
		body, _ := json.Marshal(map[string]string{"id": id, "status": st, "error": plan.errCode})
		if p.post(*url, body) {
			p.ReceiptsSent.Add(1)
		} else {
			p.ReceiptsLost.Add(1)
		}
	}
}

var receiptsClient = &http.Client{Timeout: 5 * time.Second}

func (p *SMSProvider) post(url string, body []byte) bool {
	for try := range 3 {
		if try > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return false
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+p.ReceiptsToken)
		resp, err := receiptsClient.Do(req)
		if err != nil {
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return true
		}
	}
	return false
}
