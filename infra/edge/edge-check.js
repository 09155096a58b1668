// vwr edge check: CloudFront Function (runtime cloudfront-js-2.0), viewer
// request on the protected site. A port of internal/edge.Decide, line by line:
//
//  1. The path is not /events/{event} or below it: pass.
//  2. {event} is not ^[A-Za-z0-9_-]{1,64}$: 404.
//  3. Cookie urr-vwr-token is a valid Tier 1 pass for {event}: pass.
//     (HS256 under the key named by its kid, iss vwr, aud vwr-tier1, tier 1,
//     exp > now, nbf <= now, iat <= now + 30 s, sub set, pos >= 1, eid == {event}.)
//  4. Otherwise: 302 to /vwr/?event={event}&return={path?query}, or
//     return=/events/{event} when safeReturn refuses that path.
//
// The HMAC secrets live in the CloudFront KeyValueStore, key = kid, so keys
// rotate without a deployment. Whoever reads that store can mint passes.
// Both implementations run the vectors in internal/edge/testdata.
import cf from 'cloudfront';
const crypto = require('crypto');

const kvs = cf.kvs();
const COOKIE = 'urr-vwr-token';
const PREFIX = '/events/';
const EVENT_RE = /^[A-Za-z0-9_-]{1,64}$/;
const B64URL_RE = /^[A-Za-z0-9_-]*$/;
const MAX_SKEW = 30; // token.MaxClockSkew, seconds

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

// Go decodes tier and pos into integers, where 1.0 or 4.2e1 is an error.
const NON_INT_RE = /"(tier|pos)"\s*:\s*-?\d+[.eE]/iu;

// fold is encoding/json's name folding: claim names match without regard
// to case (ASCII, plus the long s and the Kelvin sign), the last one wins.
function fold(c) {
    const out = {};
    for (const k of Object.keys(c)) {
        let f = '';
        for (const ch of k) {
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

// rawQuery rebuilds the query string from CloudFront's parsed form.
function rawQuery(qs) {
    const out = [];
    for (const k in qs) {
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
    const path = req.uri;
    if (path.indexOf(PREFIX) !== 0) return req;
    const ev = path.slice(PREFIX.length).split('/')[0];
    if (!EVENT_RE.test(ev)) {
        return {
            statusCode: 404,
            statusDescription: 'Not Found',
            headers: { 'content-type': { value: 'application/json' }, 'cache-control': { value: 'no-store' } },
            body: { encoding: 'text', data: '{"error":"unknown event","code":"invalid_event_id"}\n' },
        };
    }
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
