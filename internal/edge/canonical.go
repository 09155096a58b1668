package edge

import (
	"errors"
	"strings"
)

// ErrPath is Canonical's refusal: a malformed escape anywhere, or a path
// that is protected under some reading and carries what origins disagree
// about (an encoded slash or backslash, a control character, a path
// parameter or double encoding in front of the prefix).
var ErrPath = errors.New("edge: malformed or ambiguous path")

// maxPathLen bounds the path the edge looks at (CloudFront's URI limit).
const maxPathLen = 8192

// Canonical is the one form of a request path (as sent, percent-encoded,
// without the query) that the edge checks and forwards, so that the origin
// sees exactly the path the check saw. infra/edge/edge-check.js implements
// the same function; testdata/edge-vectors.json holds the cases both pass.
//
//  1. Escapes: %XX of an unreserved character (A-Z a-z 0-9 - . _ ~) is
//     decoded; every other escape stays, its hex digits in upper case. A
//     "%" without two hex digits is refused. Bytes a path may not hold raw
//     (controls, space, backslash, non-ASCII, "%" aside) are encoded.
//  2. Dot segments are removed (RFC 3986 §5.2.4) and runs of "/" become one.
//  3. The path is protected when it, or a lenient reading of it, lies
//     under /events/ in any ASCII case. The lenient readings decode every
//     escape (twice over, for origins that decode twice), read backslash
//     as "/", drop ";…" path parameters, and then resolve dot segments
//     or not. A protected path must then begin with the prefix segment
//     itself, in any ASCII case (so no encoded "/" or "\", no ";" and no
//     "%25" in front of it), and hold no encoded "/", "\" or control
//     character anywhere; otherwise it is refused.
//  4. Case: the prefix segment is forwarded in lower case (/EVENTS/x is
//     /events/x); everything else keeps its case, and event ids are
//     case-sensitive (/events/Demo is not /events/demo), so the protected
//     site must route event ids case-sensitively.
//
// protected reports whether the path is under the protected prefix.
func Canonical(raw string) (path string, protected bool, err error) {
	if raw == "" || raw[0] != '/' || len(raw) > maxPathLen {
		return "", false, ErrPath
	}
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '%':
			if i+2 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2]) {
				return "", false, ErrPath
			}
			d := unhex(raw[i+1])<<4 | unhex(raw[i+2])
			if unreserved(d) {
				b.WriteByte(d)
			} else {
				writeEscape(&b, d)
			}
			i += 2
		case c <= ' ' || c >= 0x7f || c == '\\' || c == '"' || c == '<' || c == '>' || c == '`' ||
			c == '{' || c == '}' || c == '|' || c == '^' || c == '#' || c == '?':
			writeEscape(&b, c)
		default:
			b.WriteByte(c)
		}
	}
	if b.Len() > maxPathLen {
		return "", false, ErrPath
	}
	path = removeDots(b.String())
	if !underPrefix(asciiLower(path)) && !underPrefix(lenient(path, true)) && !underPrefix(lenient(path, false)) {
		return path, false, nil
	}
	seg := path[1:]
	if i := strings.IndexByte(seg, '/'); i >= 0 {
		seg = seg[:i]
	}
	if asciiLower(seg) != prefixSegment {
		return "", false, ErrPath
	}
	path = ProtectedPrefix + path[len(ProtectedPrefix):]
	for i := 0; i+2 < len(path); i++ {
		if path[i] != '%' {
			continue
		}
		d := unhex(path[i+1])<<4 | unhex(path[i+2])
		if d == '/' || d == '\\' || d < 0x20 || d == 0x7f {
			return "", false, ErrPath
		}
	}
	return path, true, nil
}

// prefixSegment is ProtectedPrefix without its slashes.
var prefixSegment = strings.Trim(ProtectedPrefix, "/")

// underPrefix reports whether a lenient path lies below the prefix
// (/events itself is the site's own page, not an event's).
func underPrefix(p string) bool { return strings.HasPrefix(p, ProtectedPrefix) }

// lenient is what a forgiving origin could make of a canonical path: with
// dots resolved after decoding, or (dots false) taken as they come.
func lenient(p string, dots bool) string {
	for range 3 {
		d := decodeAll(p)
		if d == p {
			break
		}
		p = d
	}
	p = strings.ReplaceAll(p, "\\", "/")
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if j := strings.IndexByte(s, ';'); j >= 0 {
			segs[i] = s[:j]
		}
	}
	p = strings.Join(segs, "/")
	if dots {
		p = removeDots(p)
	}
	return asciiLower(p)
}

// asciiLower folds A-Z only: the prefix is ASCII, and Unicode folding would
// let other letters stand for it in one language and not in another.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// decodeAll decodes every well-formed escape, leaving a stray "%" alone.
func decodeAll(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]) {
			b.WriteByte(unhex(p[i+1])<<4 | unhex(p[i+2]))
			i += 2
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// removeDots drops "." and ".." segments (RFC 3986 §5.2.4) and merges runs
// of "/"; p starts with "/". A trailing "/", ".", or ".." leaves a "/".
func removeDots(p string) string {
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".", "..":
			if s == ".." && len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		case "":
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func writeEscape(b *strings.Builder, c byte) {
	const hex = "0123456789ABCDEF"
	b.WriteByte('%')
	b.WriteByte(hex[c>>4])
	b.WriteByte(hex[c&15])
}
