package demo

import (
	"embed"
	"html/template"
	"io/fs"
	"net/http"

	"github.com/vwr-go/vwr/services/queue"
	"github.com/vwr-go/vwr/services/queue/gate"
	"github.com/vwr-go/vwr/static"
)

//go:embed web
var web embed.FS

var seatPage = template.Must(template.ParseFS(web, "web/seats.html"))

func assetHandler() http.Handler {
	sub, err := fs.Sub(web, "web")
	if err != nil {
		panic("demo: embedded web folder missing: " + err.Error())
	}
	files := http.StripPrefix("/demo/assets", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
}

type seatPageData struct {
	EventID string
	Name    string
	// SlotEndsAt (unix ms) is when the visit ends: the slot's end, up to
	// which the page renews its short entry token through heartbeat.
	SlotEndsAt int64
	// TokenExpiresAt (unix ms) is when the entry token the page was served
	// with expires: the first renewal is due well before.
	TokenExpiresAt int64
	Lang           string
	T              map[string]string
}

// eventPage is /events/{event}: the Tier 2 queue page until the visitor has
// a valid entry token for the event, then the seat page. The edge check in
// front has already demanded a Tier 1 pass.
func (s *Site) eventPage(w http.ResponseWriter, r *http.Request) {
	event := r.PathValue("event")
	if !queue.ValidID(event) {
		writeError(w, errBadEvent)
		return
	}
	// The answer depends on the visitor's cookies: never cache it.
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Vary", "Cookie")
	if l, ok := knownLang(r.URL.Query().Get("lang")); ok {
		// The switch link: remember the choice for every page, as the waiting pages do.
		http.SetCookie(w, &http.Cookie{Name: LangCookie, Value: l, Path: "/", MaxAge: 365 * 24 * 3600, SameSite: http.SameSiteLaxMode})
	}
	c, err := r.Cookie(gate.TokenCookie)
	if err != nil || c.Value == "" {
		static.ServeFile(w, r, "queue.html")
		return
	}
	e, err := s.cfg.EntryKeys.VerifyEntry(c.Value, event, s.cfg.Clock.Now())
	if err != nil {
		static.ServeFile(w, r, "queue.html")
		return
	}
	name := event
	if v, ok := s.cfg.Venues[event]; ok && v.Name != "" {
		name = v.Name
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// The seat page loads only its own assets and calls only its origin, like the waiting pages.
	h.Set("Content-Security-Policy", static.ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	// The language follows the visitor from the waiting pages (cookie or ?lang=).
	h.Set("Vary", "Cookie, Accept-Language")
	lang := pageLang(r)
	slot := e.SlotEndsAt
	if slot.IsZero() {
		slot = e.ExpiresAt
	}
	data := seatPageData{EventID: event, Name: name, SlotEndsAt: slot.UnixMilli(), TokenExpiresAt: e.ExpiresAt.UnixMilli(), Lang: lang, T: pageText[lang]}
	if err := seatPage.Execute(w, data); err != nil {
		s.cfg.Logger.Error("seat page render failed", "event", event, "err", err)
	}
}
