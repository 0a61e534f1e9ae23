package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/store"
)

// KeyPrefix starts every API key, so that a key is recognisable in a
// secret scanner's findings or a leaked log.
const KeyPrefix = "hk_"

// keyDisplayLen is how many characters of a key are stored and shown to
// tell keys apart: the prefix and 8 random characters (48 bits).
const keyDisplayLen = len(KeyPrefix) + 8

// ErrKeyNotFound is returned by RevokeKey when the producer has no key of
// that id.
var ErrKeyNotFound = errors.New("no such api key")

// Key is one API key as an operator sees it: never its secret, which only
// CreateKey returns, once.
type Key struct {
	ID         int64      `json:"id"`
	Producer   string     `json:"producer"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	CreatedBy  string     `json:"created_by"`
	RevokedAt  *time.Time `json:"revoked_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	// Secret is the whole key: set only in CreateKey's answer.
	Secret string `json:"secret,omitempty"`
}

// NewSecret returns a fresh key: KeyPrefix and 32 random bytes in
// unpadded base64url.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// displayPrefix returns the part of secret that is stored and shown.
func displayPrefix(secret string) string {
	if len(secret) < keyDisplayLen {
		return secret
	}
	return secret[:keyDisplayLen]
}

// CreateKey makes a new key for producer, stores its SHA-256 and display
// prefix through herald.api_key_create (which writes the audit row with
// actor and reason), and returns it with its Secret: the only time the key
// is ever shown. db must be an operator's login (or the engine's).
func CreateKey(ctx context.Context, db store.DBTX, producer, actor, reason string) (*Key, error) {
	secret := NewSecret()
	sum := sha256.Sum256([]byte(secret))
	row, err := store.New().APIKeyCreate(ctx, db, store.APIKeyCreateParams{
		Producer: producer, KeyHash: sum[:], KeyPrefix: displayPrefix(secret), Actor: actor, Reason: reason,
	})
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.CheckViolation {
			return nil, fmt.Errorf("create api key: producer %q: want 1 to 128 of A-Za-z0-9._:-", producer)
		}
		return nil, fmt.Errorf("create api key: %w", err)
	}
	return &Key{ID: row.ID, Producer: producer, Prefix: displayPrefix(secret), CreatedAt: row.CreatedAt,
		Secret: secret}, nil
}

// RevokeKey revokes producer's key id through herald.api_key_revoke
// (audited) and returns when it was revoked: now, or when it was revoked
// before. It returns ErrKeyNotFound when producer has no key id.
func RevokeKey(ctx context.Context, db store.DBTX, producer string, id int64, actor, reason string) (time.Time, error) {
	at, err := store.New().APIKeyRevoke(ctx, db, store.APIKeyRevokeParams{
		Producer: producer, ID: id, Actor: actor, Reason: reason,
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.NoDataFound {
		return time.Time{}, ErrKeyNotFound
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("revoke api key: %w", err)
	}
	return at, nil
}

// ListKeys returns the keys of producer ("" for every producer's), by
// producer and then oldest first.
func ListKeys(ctx context.Context, db store.DBTX, producer string) ([]Key, error) {
	var p *string
	if producer != "" {
		p = &producer
	}
	rows, err := store.New().APIKeyList(ctx, db, p)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	keys := make([]Key, len(rows))
	for i, r := range rows {
		keys[i] = Key{ID: r.ID, Producer: r.Producer, Prefix: r.KeyPrefix, CreatedAt: r.CreatedAt,
			CreatedBy: r.CreatedBy, RevokedAt: r.RevokedAt, LastUsedAt: r.LastUsedAt}
	}
	return keys, nil
}

// authenticate sets the transaction tx's key and returns the producer it
// acts as, "" for a key that is unknown or revoked.
func authenticate(ctx context.Context, tx pgx.Tx, secret string) (string, error) {
	return store.New().APIKeyAuthenticate(ctx, tx, secret)
}

// bearer returns the key of an Authorization header, "" when there is
// none.
func bearer(header string) string {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}
