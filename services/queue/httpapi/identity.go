package httpapi

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/vwr-go/vwr/services/queue"
)

// identify resolves who is asking, in the order:
//  1. a verified Tier 1 pass (Authorization: Bearer, else cookie urr-vwr-token):
//     user = sub, queue score = pos;
//  2. otherwise the configured trusted user header (position 0: arrival order);
//  3. otherwise 401.
//
// A pass that is presented but fails verification is a 401 even when the
// header is configured: falling through would let a forged or stale pass be
// "upgraded" to header identity. Positions never come from the client.
func (a *API) identify(r *http.Request, eventID string) (queue.Identity, error) {
	// Without Tier 1 keys nothing can be a pass, so an Authorization header
	// (perhaps the site's own bearer token, behind the trusted gateway) is
	// not taken for one.
	if raw, ok := tier1Token(r); ok && a.cfg.Tier1Keys != nil {
		pass, err := a.cfg.Tier1Keys.VerifyTier1(raw, eventID, a.now())
		if err != nil {
			return queue.Identity{}, errInvalidToken
		}
		if !queue.ValidUser(pass.Subject) {
			return queue.Identity{}, errInvalidToken
		}
		return queue.Identity{UserID: pass.Subject, Position: pass.Position, EntryToken: entryToken(r)}, nil
	}
	if a.cfg.UserHeader != "" {
		if uid := r.Header.Get(a.cfg.UserHeader); uid != "" {
			if !queue.ValidUser(uid) {
				return queue.Identity{}, queue.ErrInvalidUser
			}
			return queue.Identity{UserID: uid, EntryToken: entryToken(r)}, nil
		}
	}
	return queue.Identity{}, errUnauthenticated
}

// entryToken is the entry-token cookie, if any; the Service verifies it.
func entryToken(r *http.Request) string {
	if c, err := r.Cookie(EntryCookie); err == nil {
		return c.Value
	}
	return ""
}

// tier1Token finds a presented Tier 1 pass: an Authorization Bearer value,
// else the urr-vwr-token cookie. Other Authorization schemes are ignored.
func tier1Token(r *http.Request) (string, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		if raw, ok := bearer(h); ok {
			return raw, true
		}
	}
	if c, err := r.Cookie(Tier1Cookie); err == nil && c.Value != "" {
		return c.Value, true
	}
	return "", false
}

func bearer(h string) (string, bool) {
	scheme, raw, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	raw = strings.TrimSpace(raw)
	return raw, raw != ""
}

// authorizeAdmin demands Authorization: Bearer <QUEUE_ADMIN_TOKEN>, compared
// in constant time. Routes are only registered when a token is configured.
func (a *API) authorizeAdmin(r *http.Request) error {
	raw, ok := bearer(r.Header.Get("Authorization"))
	if !ok || a.cfg.AdminToken == "" ||
		subtle.ConstantTimeCompare([]byte(raw), []byte(a.cfg.AdminToken)) != 1 {
		return errAdminAuth
	}
	return nil
}
