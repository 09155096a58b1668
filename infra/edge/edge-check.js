// vwr edge check: CloudFront Function (cloudfront-js-2.0), viewer request on
// the protected site. A port of internal/edge.Decide (see its doc), line by
// line: canonical URI (400 if malformed or ambiguous; the origin gets the
// canonical one), then /events/{event} needs a Tier 1 pass for {event}
// (HS256 by kid, iss vwr, aud vwr-tier1, tier 1, exp > now, nbf <= now,
// iat <= now + 30 s, sub, pos >= 1), else 302 to the waiting room.
// Secrets: the KeyValueStore, key = kid (whoever reads it can mint passes).
// Both run internal/edge/testdata's vectors; runtime.test.mjs holds this
// file to the runtime's documented features (no for-of, classes, spread,
// destructuring, ?., u/y regex flags).
import cf from 'cloudfront';
const crypto = require('crypto');

const kvs = cf.kvs();
const COOKIE = 'urr-vwr-token';
const PREFIX = '/events/';
const EVENT_RE = /^[A-Za-z0-9_-]{1,64}$/;
const B64URL_RE = /^[A-Za-z0-9_-]*$/;
const MAX_SKEW = 30; // token.MaxClockSkew, seconds
const HEX = '0123456789ABCDEF';
const UNRESERVED_RE = /^[A-Za-z0-9._~-]$/;

// Go's url.QueryEscape: only A-Z a-z 0-9 - _ . ~ stay; space becomes +.
function qe(s) {
  return encodeURIComponent(s)
    .replace(/[!'()*]/g, function (c) { return '%' + c.charCodeAt(0).toString(16).toUpperCase(); })
    .replace(/%20/g, '+');
}

// Raw URL-safe base64 as Go's base64.RawURLEncoding reads it: no padding,
// no foreign characters, no impossible length.
function b64(seg) {
  if (!B64URL_RE.test(seg) || seg.length % 4 === 1) return null;
  return Buffer.from(seg.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

// Go decodes tier and pos into integers, where 1.0 or 4.2e1 is an error
// (its name folding reads the long s as s).
const NON_INT_RE = /"(tier|po[s\u017f])"\s*:\s*-?\d+[.eE]/i;

// fold is encoding/json's name folding: claim names match without regard
// to case (ASCII, plus the long s and the Kelvin sign), the last one wins.
function fold(c) {
  const out = {};
  const keys = Object.keys(c);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    let f = '';
    for (let j = 0; j < k.length; j++) {
      const ch = k[j];
      f += ch === '\u017f' ? 'S' : ch === '\u212a' ? 'K' : ch < '\x80' ? ch.toUpperCase() : ch;
    }
    out[f] = c[k];
  }
  return out;
}

function json(seg) {
  const b = b64(seg);
  if (b === null) return null;
  const text = b.toString('utf8');
  if (NON_INT_RE.test(text)) return null;
  try {
    const v = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : null;
  } catch (e) {
    return null;
  }
}

function num(v) { return typeof v === 'number' && isFinite(v); }

// verify is token.KeyRing.VerifyTier1: true only for a pass for event.
async function verify(raw, event, now) {
  const parts = raw.split('.');
  if (parts.length !== 3) return false;
  const h = json(parts[0]);
  const payload = json(parts[1]);
  const c = payload === null ? null : fold(payload);
  const sig = b64(parts[2]);
  if (h === null || c === null || sig === null || h.alg !== 'HS256') return false;
  if (typeof h.kid !== 'string' || h.kid === '' || h.kid.length > 512) return false;
  let secret;
  try {
    secret = await kvs.get(h.kid);
  } catch (e) {
    return false; // unknown kid
  }
  const mac = crypto.createHmac('sha256', secret).update(parts[0] + '.' + parts[1]).digest();
  if (mac.length !== sig.length) return false;
  let diff = 0;
  for (let i = 0; i < mac.length; i++) diff |= mac[i] ^ sig[i];
  if (diff !== 0) return false;

  const aud = typeof c.AUD === 'string' ? [c.AUD] : c.AUD;
  if (!Array.isArray(aud) || aud.some(function (a) { return typeof a !== 'string'; }) || aud.indexOf('vwr-tier1') < 0) return false;
  if (c.ISS !== 'vwr') return false;
  if (!num(c.EXP) || !(now < c.EXP)) return false;
  if (c.NBF !== undefined && c.NBF !== null && (!num(c.NBF) || now < c.NBF)) return false;
  if (!num(c.IAT) || c.IAT > now + MAX_SKEW) return false;
  if (c.TIER !== 1 || typeof c.SUB !== 'string' || c.SUB === '') return false;
  if (!Number.isInteger(c.POS) || c.POS < 1) return false;
  return c.EID === event;
}

function hexv(ch) { return ch.length === 1 ? HEX.indexOf(ch.toUpperCase()) : -1; }
function esc(c) { return '%' + HEX[c >> 4] + HEX[c & 15]; }
function lower(s) { return s.replace(/[A-Z]+/g, function (m) { return m.toLowerCase(); }); }
function under(p) { return p.indexOf(PREFIX) === 0; }

// removeDots drops . and .. segments (RFC 3986 5.2.4) and merges slashes.
function removeDots(p) {
  const segs = p.slice(1).split('/');
  const out = [];
  for (let i = 0; i < segs.length; i++) {
    const s = segs[i];
    const last = i === segs.length - 1;
    if (s === '.' || s === '..') {
      if (s === '..' && out.length > 0) out.pop();
      if (last) out.push('');
    } else if (s !== '' || last) {
      out.push(s);
    }
  }
  return '/' + out.join('/');
}

function decodeAll(p) {
  return p.replace(/%([0-9A-Fa-f]{2})/g, function (m, h) { return String.fromCharCode(parseInt(h, 16)); });
}

// lenient is what a forgiving origin could make of a canonical path.
function lenient(p, dots) {
  for (let i = 0; i < 3; i++) {
    const d = decodeAll(p);
    if (d === p) break;
    p = d;
  }
  p = p.split('\\').join('/').split('/').map(function (s) {
    const j = s.indexOf(';');
    return j < 0 ? s : s.slice(0, j);
  }).join('/');
  return lower(dots ? removeDots(p) : p);
}

// canonical is edge.Canonical: {path, prot} or null (refused).
function canonical(raw) {
  if (raw === '' || raw[0] !== '/' || raw.length > 8192) return null;
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i];
    const c = raw.charCodeAt(i);
    if (ch === '%') {
      const hi = hexv(raw.charAt(i + 1));
      const lo = hexv(raw.charAt(i + 2));
      if (hi < 0 || lo < 0) return null;
      const d = String.fromCharCode(hi * 16 + lo);
      out += UNRESERVED_RE.test(d) ? d : esc(hi * 16 + lo);
      i += 2;
    } else if (c >= 0x80) {
      let s = ch;
      if (c >= 0xd800 && c < 0xdc00) s += raw.charAt(++i);
      try {
        out += encodeURIComponent(s);
      } catch (e) {
        return null;
      }
    } else if (c <= 0x20 || c === 0x7f || '\\"<>`{}|^#?'.indexOf(ch) >= 0) {
      out += esc(c);
    } else {
      out += ch;
    }
  }
  if (out.length > 8192) return null;
  const path = removeDots(out);
  if (!under(lower(path)) && !under(lenient(path, true)) && !under(lenient(path, false))) return { path: path, prot: false };
  if (lower(path.slice(1).split('/')[0]) !== PREFIX.slice(1, -1)) return null;
  const p = PREFIX + path.slice(PREFIX.length);
  return /%(2F|5C|[01][0-9A-F]|7F)/.test(p) ? null : { path: p, prot: true };
}

function problem(code, text, body) {
  return {
    statusCode: code,
    statusDescription: text,
    headers: { 'content-type': { value: 'application/json' }, 'cache-control': { value: 'no-store' } },
    body: { encoding: 'text', data: body + '\n' },
  };
}

// rawQuery rebuilds the query string from CloudFront's parsed form.
function rawQuery(qs) {
  const out = [];
  for (var k in qs) {
    const e = qs[k];
    const vals = e.multiValue ? e.multiValue : [e];
    for (let i = 0; i < vals.length; i++) out.push(k + '=' + vals[i].value);
  }
  return out.join('&');
}

// safeReturn is edge.SafeReturn (internal/edge/returnpath.go): only a
// canonical path under /events/{event} goes into the return parameter.
function safeReturn(raw, ev) {
  if (raw.length === 0 || raw.length > 2048) return false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c < 0x21 || c > 0x7e || '\\"\'<>`{}^|[]'.indexOf(raw[i]) >= 0) return false;
  }
  const lower = raw.toLowerCase();
  if (lower.indexOf('%2e') >= 0 || lower.indexOf('%2f') >= 0 || lower.indexOf('%5c') >= 0) return false;
  const home = PREFIX + ev;
  const cut = raw.search(/[?#]/);
  const p = cut >= 0 ? raw.slice(0, cut) : raw;
  const rest = cut >= 0 ? raw.slice(cut) : '';
  if (rest === '?' || rest === '#') return false;
  if (p !== home && p.indexOf(home + '/') !== 0) return false;
  if (p.indexOf('//') >= 0) return false;
  const segs = p.split('/');
  for (let i = 0; i < segs.length; i++) if (segs[i] === '.' || segs[i] === '..') return false;
  return true;
}

async function handler(event) {
  const req = event.request;
  const c = canonical(req.uri);
  if (c === null) return problem(400, 'Bad Request', '{"error":"malformed or ambiguous path","code":"invalid_path"}');
  const path = c.path;
  req.uri = path;
  if (!c.prot) return req;
  const ev = path.slice(PREFIX.length).split('/')[0];
  if (!EVENT_RE.test(ev)) return problem(404, 'Not Found', '{"error":"unknown event","code":"invalid_event_id"}');
  const cookie = req.cookies && req.cookies[COOKIE] ? req.cookies[COOKIE].value : '';
  if (cookie !== '' && await verify(cookie, ev, Date.now() / 1000)) return req;
  const q = rawQuery(req.querystring || {});
  let ret = q === '' ? path : path + '?' + q;
  if (!safeReturn(ret, ev)) ret = PREFIX + ev;
  return {
    statusCode: 302,
    statusDescription: 'Found',
    headers: {
      location: { value: '/vwr/?event=' + qe(ev) + '&return=' + qe(ret) },
      // Per-visitor answer: no shared cache may keep it.
      'cache-control': { value: 'no-store' },
    },
  };
}
