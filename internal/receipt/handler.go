package receipt

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tidwall/gjson"

	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/routing"
)

// HandlerConfig configures the receipts endpoint.
type HandlerConfig struct {
	// Pool stores the receipts. Required.
	Pool *pgxpool.Pool
	// ReceiptsFunc returns the receipts settings of a provider, nil when
	// it has none (or is unknown): the engine's current providers.
	// Required.
	ReceiptsFunc func(provider string) *routing.Receipts
	// GetenvFunc reads the environment variables tokens name.
	GetenvFunc func(string) string
	// Logger receives the endpoint's records. Default: discard.
	Logger *slog.Logger
	// Metrics counts receipts received; nil counts nothing.
	Metrics *metrics.Metrics
	// Matcher, when set, matches the receipts in the transaction that
	// stores them (Group.MatchWith); nil leaves them to a Matcher's rounds.
	Matcher *Matcher
	// Group, when set, is the Group the endpoint stores through (its
	// matcher is set to Matcher); nil makes one on Pool.
	Group *Group
}

// Path is where the endpoint serves: Path + the provider's name, e.g.
// POST /receipts/sms/acme.
const Path = "/receipts/"

// Handler is serve's receipts endpoint: POST or GET /receipts/<provider>,
// as the provider's receipts settings say. It answers 200 only once the
// receipt is stored; a receipt it could not read (no id, no status) is
// stored all the same, as malformed, and answered 200, so the provider
// does not send it again. It answers 401 to a request without the
// provider's token, 404 for a provider that sends no receipts, 405 for
// the wrong method, 408 for a body that did not arrive within the
// server's read timeout (engine.Config.ReceiptsServer), 413 for a body
// over 64 KiB, and 503 when it could not store the receipt (the provider
// will send it again).
func Handler(cfg HandlerConfig) http.Handler {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	getenv := cfg.GetenvFunc
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	// Concurrent requests store their receipts together (group.go).
	grp := cfg.Group
	if grp == nil {
		grp = NewGroup(cfg.Pool)
	}
	grp.MatchWith(cfg.Matcher)
	mux := http.NewServeMux()
	mux.HandleFunc(Path+"{provider...}", func(w http.ResponseWriter, r *http.Request) {
		provider := r.PathValue("provider")
		rc := cfg.ReceiptsFunc(provider)
		if rc == nil {
			http.Error(w, "no such provider, or it sends no receipts", http.StatusNotFound)
			return
		}
		method := rc.Method
		if method == "" {
			method = http.MethodPost
		}
		if r.Method != method {
			w.Header().Set("Allow", method)
			http.Error(w, "method not allowed: this provider's receipts come by "+method, http.StatusMethodNotAllowed)
			return
		}
		token, err := rc.Token.Resolve(getenv)
		if err != nil {
			log.Error("receipts token unavailable; refusing receipts", "provider", provider, "err", err)
			http.Error(w, "receipts are not configured on this server", http.StatusServiceUnavailable)
			return
		}
		if !authorized(r, token) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		rec, err := read(r, rc)
		if errors.Is(err, errTooLarge) {
			http.Error(w, "receipt too large", http.StatusRequestEntityTooLarge)
			return
		}
		var netErr net.Error
		if errors.As(err, &netErr) && netErr.Timeout() {
			log.Warn("client too slow: the receipt's body did not arrive within the read timeout", "provider", provider)
			http.Error(w, "client too slow: the body did not arrive in time", http.StatusRequestTimeout)
			return
		}
		if err != nil {
			http.Error(w, "could not read the receipt", http.StatusBadRequest)
			return
		}
		rec.Provider = provider
		if err := grp.Store(r.Context(), rec); err != nil {
			log.Error("receipt not stored; answering 503 so the provider sends it again", "provider", provider, "err", err)
			w.Header().Set("Retry-After", "5")
			http.Error(w, "receipt not stored; send it again", http.StatusServiceUnavailable)
			return
		}
		cfg.Metrics.ReceiptReceived(provider, SourceHTTP)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"stored":true}`+"\n")
	})
	return mux
}

// authorized reports whether r carries token, as a bearer token or the
// token query parameter, compared in constant time.
func authorized(r *http.Request, token string) bool {
	got := r.URL.Query().Get("token")
	if h := r.Header.Get("Authorization"); h != "" {
		got, _ = strings.CutPrefix(h, "Bearer ")
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

var errTooLarge = errors.New("receipt too large")

// read takes the receipt's fields out of r as rc says, and its raw form
// without the token.
func read(r *http.Request, rc *routing.Receipts) (Receipt, error) {
	idField, statusField, errField := rc.Fields()
	var raw string
	var get func(string) string
	if r.Method == http.MethodGet {
		q := r.URL.Query()
		q.Del("token")
		raw = q.Encode()
		get = q.Get
	} else {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRaw+1))
		if err != nil {
			return Receipt{}, err
		}
		if len(body) > maxRaw {
			return Receipt{}, errTooLarge
		}
		raw = string(body)
		switch rc.Format {
		case "form":
			v, err := url.ParseQuery(raw)
			if err != nil {
				v = url.Values{} // kept as malformed, with its raw body
			}
			v.Del("token")
			raw = v.Encode()
			get = v.Get
		default:
			doc := gjson.Parse(raw)
			get = func(k string) string {
				if !gjson.Valid(raw) {
					return ""
				}
				v := doc.Get(gjson.Escape(k))
				if v.Type == gjson.JSON {
					b, _ := json.Marshal(v.Raw)
					return string(b)
				}
				return v.String()
			}
		}
	}
	return Receipt{
		ProviderMessageID: strings.TrimSpace(get(idField)),
		Status:            strings.TrimSpace(get(statusField)),
		ErrorCode:         strings.TrimSpace(get(errField)),
		Raw:               raw,
		Source:            SourceHTTP,
	}, nil
}
