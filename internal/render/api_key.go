package render

import (
	"fmt"
	"io"
	"time"

	"github.com/heraldhq/herald/internal/api"
)

// APIKeyCreated writes a new key as `herald api-keys create` shows it: its
// secret once, and that it is never shown again.
func APIKeyCreated(w io.Writer, k *api.Key) error {
	fmt.Fprintf(w, "api key %d of producer %s (%s…), created %s\n\n    %s\n\n", k.ID, k.Producer, k.Prefix, stamp(k.CreatedAt), k.Secret)
	fmt.Fprintln(w, "Store it now: herald keeps only its SHA-256 and will never show it again.")
	fmt.Fprintln(w, "Requests send it as: Authorization: Bearer <key>")
	return nil
}

// APIKeys writes keys as `herald api-keys list` shows them.
func APIKeys(w io.Writer, keys []api.Key) error {
	return list(w, "api keys", "", "", "ID\tPRODUCER\tPREFIX\tCREATED\tBY\tLAST USED\tREVOKED", keys, func(k api.Key) string {
		return fmt.Sprintf("%d\t%s\t%s…\t%s\t%s\t%s\t%s", k.ID, k.Producer, k.Prefix, stamp(k.CreatedAt), dash(k.CreatedBy),
			stampPtr(k.LastUsedAt), stampPtr(k.RevokedAt))
	})
}

// APIKeyRevoked is what `herald api-keys revoke` did. Its JSON form is the
// command's --json output.
type APIKeyRevoked struct {
	ID        int64     `json:"id"`
	Producer  string    `json:"producer"`
	RevokedAt time.Time `json:"revoked_at"`
}

// Revoked writes r as `herald api-keys revoke` shows it.
func Revoked(w io.Writer, r *APIKeyRevoked) error {
	fmt.Fprintf(w, "api key %d of producer %s revoked at %s: requests with it get 401 from now on\n", r.ID, r.Producer, stamp(r.RevokedAt))
	return nil
}
