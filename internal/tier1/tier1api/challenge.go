package tier1api

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/vwr-go/vwr/internal/jsonhttp"
	"github.com/vwr-go/vwr/internal/tier1"
)

// errInvalidChallengeNonce is a ?nonce= that is not 16 bytes.
var errInvalidChallengeNonce = &jsonhttp.Error{Status: http.StatusBadRequest, Code: "invalid_nonce", Message: "nonce must be 16 bytes: 32 hex digits or 22 base64url characters"}

// ViewerAddressHeader is the header CloudFront sets to the viewer's
// address and port ("198.51.100.10:46532", IPv6 without brackets).
const ViewerAddressHeader = "CloudFront-Viewer-Address"

// challenge serves GET /vwr/challenge/{eventId}: a proof-of-work challenge
// in the ALTCHA widget's shape. With ?nonce=<16 bytes> it is the nonce's
// challenge for the current window, the same all window long, so the CDN
// keeps it (on the path and the nonce) until the window ends; without, a
// fresh one that nobody may cache. Either way nothing is stored.
func (a *API) challenge(w http.ResponseWriter, r *http.Request, eventID string) error {
	q := r.URL.Query()
	if !q.Has("nonce") {
		ch, err := a.d.Service.Challenge(r.Context(), eventID)
		if err != nil {
			return err
		}
		jsonhttp.WriteJSON(w, http.StatusOK, ch)
		return nil
	}
	nonce, err := tier1.ParseNonce(q.Get("nonce"))
	if err != nil || len(q["nonce"]) != 1 {
		return errInvalidChallengeNonce
	}
	ch, until, err := a.d.Service.WindowChallenge(r.Context(), eventID, nonce)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", ChallengeCacheControl(until.Sub(a.d.Clock.Now())))
	jsonhttp.WriteJSON(w, http.StatusOK, ch)
	return nil
}

// ChallengeCacheControl lets shared caches keep a window's challenge for
// the rest of the window (at least a second).
func ChallengeCacheControl(left time.Duration) string {
	return fmt.Sprintf("public, max-age=%d", max(int(left/time.Second), 1))
}

// arrival reads POST /vwr/assign/{eventId}'s door headers: the Altcha
// solution and, when the deployment names one, the client-address header.
func (a *API) arrival(r *http.Request, eventID, key string, nonce []byte) tier1.Arrival {
	ar := tier1.Arrival{EventID: eventID, IdempotencyKey: key, Nonce: nonce, Altcha: r.Header.Get("Altcha")}
	if h := a.d.ClientHeader; h != "" {
		ar.HasClient, ar.Client = true, r.Header.Get(h)
		ar.ClientWithPort = strings.EqualFold(h, ViewerAddressHeader)
	}
	return ar
}
