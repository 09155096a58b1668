package demo

import (
	"net/http"
	"strings"
)

// LangCookie is where the waiting pages keep the visitor's language choice
// (static/vwr/i18n.js), so the seat page speaks the language the visitor
// chose in the waiting room.
const LangCookie = "urr-lang"

// pageLang picks the seat page's language: ?lang=, then the urr-lang
// cookie, then the first of ko or en in Accept-Language, else English, as
// the waiting pages do.
func pageLang(r *http.Request) string {
	if l, ok := knownLang(r.URL.Query().Get("lang")); ok {
		return l
	}
	if c, err := r.Cookie(LangCookie); err == nil {
		if l, ok := knownLang(c.Value); ok {
			return l
		}
	}
	for _, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		tag, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		if l, ok := knownLang(tag); ok {
			return l
		}
	}
	return "en"
}

func knownLang(tag string) (string, bool) {
	base, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
	if _, ok := pageText[base]; ok {
		return base, true
	}
	return "", false
}

// pageText is the seat page's server-rendered text; seats.js has the rest.
var pageText = map[string]map[string]string{
	"en": {
		"title":     "Choose your seat",
		"timeLeft":  "Time left",
		"timerAria": "Time left to choose",
		"youAreIn":  "You are in",
		"lead":      "Pick a free seat and hold it. A held seat is yours for the next few minutes while you pay.",
		"stage":     "STAGE",
		"map":       "Seat map",
		"legend":    "Legend",
		"available": "Available",
		"taken":     "Taken",
		"yours":     "Yours",
		"selected":  "Selected seat",
		"none":      "None",
		"left":      "Seats left",
		"hold":      "Hold seat",
		"requeue":   "Back to the queue",
		"footer":    "Demo ticketing site protected by vwr. Seats are held for five minutes, then released.",
		"switch":    "한국어",
		"other":     "ko",
	},
	"ko": {
		"title":     "좌석을 선택하세요",
		"timeLeft":  "남은 시간",
		"timerAria": "좌석 선택 남은 시간",
		"youAreIn":  "입장 완료",
		"lead":      "빈 좌석을 골라 선점하세요. 선점한 좌석은 결제하는 몇 분 동안 내 좌석으로 유지됩니다.",
		"stage":     "무대",
		"map":       "좌석 배치도",
		"legend":    "범례",
		"available": "선택 가능",
		"taken":     "선택됨",
		"yours":     "내 좌석",
		"selected":  "선택한 좌석",
		"none":      "없음",
		"left":      "남은 좌석",
		"hold":      "좌석 선점",
		"requeue":   "대기열로 돌아가기",
		"footer":    "vwr로 보호되는 데모 예매 사이트입니다. 좌석은 5분 동안 선점된 뒤 해제됩니다.",
		"switch":    "English",
		"other":     "en",
	},
}
