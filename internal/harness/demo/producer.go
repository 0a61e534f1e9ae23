package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/store"
)

// producer is the demo's own producer: a login of its own (a member of
// herald_producer) that submits the orders through the Go client and
// subscribes to status callbacks, and an API key of the same producer
// with which part of the workload goes over the HTTP API, served by the
// engine on a login of its own (a member of herald_api). Both logins are
// created for the run and dropped at its end; where the demo's login may
// not create roles, the orders go through the demo's own client and the
// summary says what was not shown.
type producer struct {
	// name is the orders' producer: its login's name, or "shop".
	name   string
	pool   *pgxpool.Pool // its login's; nil without one
	client Client        // nil: the orders go through the demo's client
	// callbacksSkipped and apiSkipped say why that part is not shown.
	callbacksSkipped, apiSkipped string

	apiLogin string
	apiPool  *pgxpool.Pool // the API's login; nil without one
	key      *api.Key
	apiURL   string // set once the engine listens

	logins []string // to drop at the end
}

// newProducer creates the run's producer and API logins (named after
// runID's random suffix), subscribes the producer to srv's callback
// receiver and makes its API key. It fails only on the demo's own
// mistakes; a login it may not create is a skipped part.
func newProducer(ctx context.Context, admin *pgxpool.Pool, srv *Servers, runID string,
	newClient func(*pgxpool.Pool, *ClientConfig) (Client, error),
) (*producer, error) {
	suffix := runID[len(runID)-6:]
	p := &producer{name: "shop"}
	name := "shop_" + suffix
	pool, err := p.createLogin(ctx, admin, name, "herald_producer")
	if err != nil {
		p.callbacksSkipped = "this login cannot create and connect as a producer login: " + err.Error()
		p.apiSkipped = p.callbacksSkipped
		return p, nil
	}
	p.name, p.pool = name, pool
	if p.client, err = newClient(pool, &ClientConfig{Actor: "shop-service"}); err != nil {
		return nil, err
	}
	if err := p.client.SetCallbackSubscription(ctx, srv.Callbacks.URL, srv.Callbacks.Secret); err != nil {
		return nil, fmt.Errorf("subscribe %s to callbacks: %w", name, err)
	}
	if p.apiPool, err = p.createLogin(ctx, admin, "demo_api_"+suffix, "herald_api"); err != nil {
		p.apiSkipped = "this login cannot create and connect as a login in herald_api: " + err.Error()
		return p, nil
	}
	p.apiLogin = "demo_api_" + suffix
	if p.key, err = api.CreateKey(ctx, admin, name, demoActor, "herald demo "+runID); err != nil {
		p.apiPool.Close()
		p.apiPool = nil
		p.apiSkipped = "this login cannot create API keys (herald_operator may): " + err.Error()
	}
	return p, nil
}

// createLogin creates a LOGIN role name in role and returns a pool
// connected as it (the cluster's local connections need no password).
// DDL: the rare SQL that has no place in queries/.
func (p *producer) createLogin(ctx context.Context, admin *pgxpool.Pool, name, role string) (*pgxpool.Pool, error) {
	pool, err := createLogin(ctx, admin, name, role)
	if err != nil {
		return nil, err
	}
	p.logins = append(p.logins, name)
	return pool, nil
}

// close removes what newProducer made: the subscription, the API key
// (revoked) and the logins. The engine must have stopped.
func (p *producer) close(ctx context.Context, admin *pgxpool.Pool) {
	ctx = context.WithoutCancel(ctx)
	if p.client != nil {
		_, _ = store.New().CallbackSubscriptionDelete(ctx, admin, &p.name)
		p.client.Close()
	}
	if p.key != nil {
		_, _ = api.RevokeKey(ctx, admin, p.name, p.key.ID, demoActor, "herald demo done")
	}
	for _, pool := range []*pgxpool.Pool{p.pool, p.apiPool} {
		if pool != nil {
			pool.Close()
		}
	}
	for _, n := range p.logins {
		dropLogin(ctx, admin, n)
	}
}

// createLogin creates a LOGIN role name, a member of role, with a random
// password (a server that asks for one gets it: the throwaway cluster
// asks every login but the superuser), and returns a pool of at most two
// connections as it.
func createLogin(ctx context.Context, admin *pgxpool.Pool, name, role string) (*pgxpool.Pool, error) {
	password := randomPassword()
	if _, err := admin.Exec(ctx, "CREATE ROLE "+pgx.Identifier{name}.Sanitize()+" LOGIN IN ROLE "+pgx.Identifier{role}.Sanitize()+
		" PASSWORD "+quoteLiteral(password)); err != nil {
		return nil, err
	}
	cfg := admin.Config().Copy()
	cfg.ConnConfig.User = name
	cfg.ConnConfig.Password = password
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		if err = pool.Ping(ctx); err != nil {
			pool.Close()
		}
	}
	if err != nil {
		dropLogin(ctx, admin, name)
		return nil, err
	}
	return pool, nil
}

// dropLogin drops the role name if it exists.
func dropLogin(ctx context.Context, admin *pgxpool.Pool, name string) {
	_, _ = admin.Exec(context.WithoutCancel(ctx), "DROP ROLE IF EXISTS "+pgx.Identifier{name}.Sanitize())
}

// submitHTTP sends the workload's HTTP part: one-time codes by SMS to the
// first users, in one batch request, then one more alone with an
// Idempotency-Key header, and that request again (answered 200 with
// Idempotent-Replayed: true, nothing stored).
func (w *workload) submitHTTP(ctx context.Context, p *producer, res *APIPart) error {
	otp := func(i int) *intake.Intent {
		return &intake.Intent{
			NotificationType: "otp.sent", Producer: p.name, IdempotencyKey: w.runID + ":otp:" + strconv.Itoa(i),
			Audience: intake.Audience{UserIDs: []string{w.userID(i)}}, Channels: []string{"sms"},
			Content:   intake.Content{SMS: &intake.SMSContent{Body: fmt.Sprintf("Your code is %06d", 104729*i%1000000)}},
			RequestID: w.reqID("api", i),
		}
	}
	n := max(5, w.users/10)
	var batch struct {
		Intents []*intake.Intent `json:"intents"`
	}
	for i := 1; i <= n; i++ {
		batch.Intents = append(batch.Intents, otp(i))
	}
	var out struct {
		Results []api.BatchResult `json:"results"`
	}
	if err := p.post(ctx, "/v1/notifications/batch", "", batch, http.StatusOK, &out); err != nil {
		return err
	}
	res.Requests++
	for _, r := range out.Results {
		res.Submitted++
		if r.Status == http.StatusCreated {
			res.Created++
		}
	}
	one := otp(n + 1)
	key := one.IdempotencyKey
	one.IdempotencyKey = "" // the header stands for it
	for i, want := range []int{http.StatusCreated, http.StatusOK} {
		if err := p.post(ctx, "/v1/notifications", key, one, want, nil); err != nil {
			return err
		}
		res.Requests++
		res.Submitted++
		if i == 0 {
			res.Created++
		} else {
			res.Replayed++
		}
	}
	return nil
}

var apiClient = &http.Client{Timeout: 10 * time.Second}

// post POSTs body as JSON to the API's path with the producer's key and
// decodes the answer into out; an answer other than want is an error
// quoting it.
func (p *producer) post(ctx context.Context, path, idempotencyKey string, body any, want int, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.apiURL+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.key.Secret)
	req.Header.Set("Content-Type", "application/json")
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		return fmt.Errorf("POST %s: %s: %s", path, resp.Status, bytes.TrimSpace(answer))
	}
	if out != nil {
		return json.Unmarshal(answer, out)
	}
	return nil
}
