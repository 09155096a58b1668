package edge

import (
	"strings"
)

// maxReturnLen bounds a return path, as the pages do.
const maxReturnLen = 2048

// SafeReturn reports whether raw is a return path the waiting room may send
// a visitor back to for event: a canonical path under /events/{event} on
// this site. It is static/vwr/common.js's safeReturn on the server, and
// testdata/return-paths.json is the battery both pass: printable ASCII
// without backslashes or the characters a URL parser would re-encode, no
// encoded dots, slashes or backslashes, no dot segments, no "//" in the
// path, and nothing but /events/{event} itself or below it.
func SafeReturn(raw, event string) bool {
	if len(raw) == 0 || len(raw) > maxReturnLen {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c < 0x21 || c > 0x7e || strings.IndexByte("\\\"'<>`{}^|[]", c) >= 0 {
			return false
		}
	}
	lower := strings.ToLower(raw)
	for _, enc := range []string{"%2e", "%2f", "%5c"} {
		if strings.Contains(lower, enc) {
			return false
		}
	}
	home := ProtectedPrefix + event
	path, rest := raw, ""
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		path, rest = raw[:i], raw[i:]
	}
	if rest == "?" || rest == "#" {
		return false // a URL parser drops an empty query or fragment
	}
	if path != home && !strings.HasPrefix(path, home+"/") {
		return false
	}
	if strings.Contains(path, "//") {
		return false
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}
