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
//
// A renewal (status or heartbeat), or a leave, needs no live pass: the slot
// is the slot. When no pass verifies, a valid entry token for this event
// (cookie urr-entry-token) names its holder, so a visitor who waited at
// Tier 2 longer than the pass lives keeps renewing up to the slot's end,
// and can give the slot back.
func (a *API) identify(r *http.Request, eventID string, renewal bool) (queue.Identity, error) {
	// Without Tier 1 keys nothing can be a pass, so an Authorization header
	// (perhaps the site's own bearer token, behind the trusted gateway) is
	// not taken for one.
	if raw, ok := tier1Token(r); ok && a.cfg.Tier1Keys != nil {
		pass, err := a.cfg.Tier1Keys.VerifyTier1(raw, eventID, a.now())
		if err == nil && queue.ValidUser(pass.Subject) {
			return queue.Identity{UserID: pass.Subject, Position: pass.Position, Pass: true, EntryToken: entryToken(r)}, nil
		}
		if who, ok := a.holder(r, eventID, renewal); ok {
			return who, nil
		}
		return queue.Identity{}, errInvalidToken
	}
	if a.cfg.UserHeader != "" {
		if uid := r.Header.Get(a.cfg.UserHeader); uid != "" {
			if !queue.ValidUser(uid) {
				return queue.Identity{}, queue.ErrInvalidUser
			}
			return queue.Identity{UserID: uid, EntryToken: entryToken(r)}, nil
		}
	}
	if who, ok := a.holder(r, eventID, renewal); ok {
		return who, nil
	}
	return queue.Identity{}, errUnauthenticated
}

// holder is the identity of a renewal's entry token, when it is valid for
// eventID: that token was minted for a Tier 1 pass or a header identity
// the API already verified, and a holder named by it never joins the line
// (queue.Service.Status). Entry tokens only ever come from Tier 1 passes
// when Tier 1 keys are configured, so the holder counts as one (Pass).
func (a *API) holder(r *http.Request, eventID string, renewal bool) (queue.Identity, bool) {
	raw := entryToken(r)
	if !renewal || raw == "" || a.cfg.EntryKeys == nil {
		return queue.Identity{}, false
	}
	e, err := a.cfg.EntryKeys.VerifyEntry(raw, eventID, a.now())
	if err != nil || !queue.ValidUser(e.UserID) {
		return queue.Identity{}, false
	}
	return queue.Identity{UserID: e.UserID, Pass: a.cfg.Tier1Keys != nil, EntryToken: raw}, true
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
