package heraldtype

import "time"

// Campaigns: a producer's intents grouped under one
// campaign id (Intent.Campaign), scheduled, shown and canceled as one.

// Campaign is one campaign with its progress: its schedule, the state of
// a cancel, and its routes counted by where they stand. Pending counts the
// routes not gone out yet (pending, claimed, failed), Published those that
// went out, Delivered those of them a delivery receipt says reached the
// recipient, Dead the dead letters.
type Campaign struct {
	// Producer is the campaign's producer; Campaign its id.
	Producer string `json:"producer"`
	Campaign string `json:"campaign"`
	// State is where the campaign stands as a whole.
	State CampaignState `json:"state"`
	// SendAt is the campaign's schedule; zero means at once.
	SendAt time.Time `json:"send_at,omitzero"`
	// CreatedAt is when its first intent was accepted.
	CreatedAt time.Time `json:"created_at"`
	// Notifications and Routes count what it holds; the other counts split
	// Routes by where each stands.
	Notifications int64 `json:"notifications"`
	Routes        int64 `json:"routes"`
	Pending       int64 `json:"pending"`
	Published     int64 `json:"published"`
	Delivered     int64 `json:"delivered"`
	Dead          int64 `json:"dead"`
	Canceled      int64 `json:"canceled"`
	Skipped       int64 `json:"skipped"`
	// CancelRequestedAt is when its cancel was first asked for, by
	// CanceledBy with CancelReason; CanceledAt when it was done (no route
	// left to cancel). Zero and "" when it was never canceled.
	CancelRequestedAt time.Time `json:"cancel_requested_at,omitzero"`
	CanceledBy        string    `json:"canceled_by,omitempty"`
	CancelReason      string    `json:"cancel_reason,omitempty"`
	CanceledAt        time.Time `json:"canceled_at,omitzero"`
}

// CampaignState is where a campaign stands as a whole: Campaign.State,
// the state seed 002's campaigns go through.
type CampaignState string

// Campaign states.
const (
	// CampaignScheduled: its send_at is ahead and nothing of it has been
	// attempted yet.
	CampaignScheduled CampaignState = "scheduled"
	// CampaignSending: routes of it are due or being delivered.
	CampaignSending CampaignState = "sending"
	// CampaignCompleted: every route of it is final (published, dead,
	// skipped or canceled one by one).
	CampaignCompleted CampaignState = "completed"
	// CampaignCanceling: its cancel was requested and is under way (or was
	// interrupted: running it again resumes it); nothing more joins it.
	CampaignCanceling CampaignState = "canceling"
	// CampaignCanceled: its cancel is done: every route of it that had not
	// gone out is canceled.
	CampaignCanceled CampaignState = "canceled"
)
