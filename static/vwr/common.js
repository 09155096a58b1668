// Helpers shared by the Tier 1 page (vwr.js) and the Tier 2 page (queue.js).
// Everything here is pure or takes its dependencies as arguments, so the e2e
// suite can unit-test it under plain Node.

const ID = /^[A-Za-z0-9_-]{1,64}$/;

/** validId reports whether s is an acceptable event or request id. */
export function validId(s) {
  return typeof s === 'string' && ID.test(s);
}

/** eventPath is the protected page of an event. */
export function eventPath(event) {
  return `/events/${encodeURIComponent(event)}`;
}

/**
 * safeReturn keeps a ?return= value only when it is a path the edge check
 * could have built for this event, else it falls back to the event page.
 * This is what stops the waiting page from being an open redirect. The
 * value must be printable ASCII without backslashes, encoded dots, slashes
 * or backslashes, or characters the URL parser would re-encode; it must
 * equal its own normalisation (so no dot segments survive), stay on this
 * origin, lie under /events/{event}, and have no "//" in its path.
 * internal/edge.SafeReturn applies the same rule on the server, and
 * internal/edge/testdata/return-paths.json is the battery both pass.
 */
export function safeReturn(raw, event, origin = 'https://vwr.invalid') {
  const home = eventPath(event);
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > 2048) return home;
  if (!/^[\x21-\x7e]+$/.test(raw) || /[\\"'<>`{}^|[\]]/.test(raw) || /%(2e|2f|5c)/i.test(raw)) return home;
  if (!(raw === home || ['/', '?', '#'].some((c) => raw.startsWith(home + c)))) return home;
  let u;
  try {
    u = new URL(raw, origin);
  } catch {
    return home;
  }
  const norm = u.pathname + u.search + u.hash;
  if (u.origin !== new URL(origin).origin || norm !== raw) return home;
  if (u.pathname.includes('//') || !(u.pathname === home || u.pathname.startsWith(home + '/'))) return home;
  return norm;
}

/** clamp bounds n to [lo, hi]. */
export function clamp(n, lo, hi) {
  return Math.min(hi, Math.max(lo, n));
}

/** jitter spreads a delay by ±fraction so that many pages do not poll in step. */
export function jitter(ms, fraction = 0.2, rand = Math.random) {
  return Math.round(ms * (1 - fraction + 2 * fraction * rand()));
}

/**
 * tier1Interval is how long the Tier 1 page waits before its next status poll,
 * in ms: 2 s when close, up to 15 s when far, never below the server's
 * nextPoll, but no later than the turn is due (dueIn seconds, at least 1 s,
 * as wait.js's tier1Poll), and at least Retry-After when the server asked
 * for it.
 */
export function tier1Interval({ ahead, nextPoll, retryAfter, dueIn }, rand = Math.random) {
  let s;
  if (ahead <= 50) s = 2;
  else if (ahead <= 500) s = 4;
  else if (ahead <= 5000) s = 8;
  else s = 15;
  if (Number.isFinite(nextPoll) && nextPoll > 0) s = Math.max(s, nextPoll);
  s = clamp(s, 2, 15);
  if (Number.isFinite(dueIn) && dueIn < s) {
    // Due sooner: look just after the turn (up to a tenth later, to spread
    // the pages of one batch), never before it.
    const ms = Math.max(dueIn, 1) * 1000 * (1 + 0.1 * rand());
    return Number.isFinite(retryAfter) && retryAfter > 0 ? Math.max(ms, retryAfter * 1000) : Math.round(ms);
  }
  const ms = jitter(s * 1000, 0.2, rand);
  if (Number.isFinite(retryAfter) && retryAfter > 0) return Math.max(ms, retryAfter * 1000);
  return clamp(ms, 2000, 15000);
}

/** backoff is the retry delay after n consecutive failures: 2, 4, 8 … 30 s, jittered. */
export function backoff(failures, retryAfter, rand = Math.random) {
  const base = clamp(2 ** clamp(failures, 1, 5), 2, 30);
  const ms = jitter(base * 1000, 0.25, rand);
  if (Number.isFinite(retryAfter) && retryAfter > 0) return Math.max(ms, retryAfter * 1000);
  return ms;
}

/**
 * finalError reports whether a failed call is not worth retrying: a 400
 * invalid_event_id, the link names no event there can be. Every other
 * failure, refusals included, is retried with backoff: a page never stops
 * by itself.
 */
export function finalError(err) {
  return err instanceof ApiError && err.status === 400 && err.body?.code === 'invalid_event_id';
}

/** retryNotice is the [message, kind] a page shows while it waits secs before retrying after err. */
export function retryNotice(t, err, secs) {
  if (err instanceof ApiError && (err.status === 503 || err.status === 429)) return [t('err.busy', secs), 'warn'];
  if (err instanceof ApiError) return [t('err.generic', secs), 'bad'];
  return [t('err.network', secs), 'bad'];
}

/**
 * announcer returns announce(value, text): it puts text into the live region
 * el when value differs from the last announced one, at most once per everyMs,
 * so screen readers hear about progress without being flooded.
 */
export function announcer(el, everyMs = 20000, now = Date.now) {
  let at = 0;
  let last;
  return (value, text) => {
    const ts = now();
    if (value === last || ts - at <= everyMs) return;
    at = ts;
    last = value;
    setText(el, text);
  };
}

/** retryAfterSeconds parses a Retry-After header given in seconds. */
export function retryAfterSeconds(headers) {
  const v = headers?.get?.('Retry-After');
  if (!v) return undefined;
  const n = Number.parseInt(v, 10);
  return Number.isFinite(n) && n >= 0 ? Math.min(n, 300) : undefined;
}

/** ApiError is a non-2xx answer: status, parsed JSON body and Retry-After. */
export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super(`HTTP ${status}`);
    this.status = status;
    this.body = body;
    this.retryAfter = retryAfter;
  }
}

/**
 * requestJSON performs one call and returns {status, body, headers}. Network
 * failures throw TypeError (from fetch); non-2xx answers throw ApiError.
 */
export async function requestJSON(url, init = {}, fetchImpl = globalThis.fetch) {
  const res = await fetchImpl(url, {
    credentials: 'same-origin',
    ...init,
    headers: { Accept: 'application/json', ...(init.headers || {}) },
  });
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (!res.ok) throw new ApiError(res.status, body, retryAfterSeconds(res.headers));
  return { status: res.status, body, headers: res.headers };
}

/** newKey returns a fresh idempotency key (URL-safe, 22 chars). */
export function newKey(cryptoImpl = globalThis.crypto) {
  const b = new Uint8Array(16);
  cryptoImpl.getRandomValues(b);
  let s = '';
  for (const x of b) s += String.fromCharCode(x);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** store wraps localStorage so that private modes without it still work. */
export function store(ls = globalThis.localStorage) {
  const mem = new Map();
  return {
    get(k) {
      try {
        const v = ls.getItem(k);
        return v === null ? undefined : JSON.parse(v);
      } catch {
        return mem.get(k);
      }
    },
    set(k, v) {
      mem.set(k, v);
      try {
        ls.setItem(k, JSON.stringify(v));
      } catch {
        // Storage full or disabled: the in-memory copy keeps this tab working.
      }
    },
    del(k) {
      mem.delete(k);
      try {
        ls.removeItem(k);
      } catch {
        // ignored, as in set
      }
    },
  };
}

/** setText updates an element only when its text changes, to keep repaints small. */
export function setText(el, text) {
  if (el && el.textContent !== text) el.textContent = text;
}

/** setStage marks the page's stage on <body>; the CSS shows what belongs to it. */
export function setStage(stage, doc = globalThis.document) {
  doc.body.dataset.stage = stage;
}

/** showStatus writes the status line and its kind (info, ok, warn, bad), which the CSS colours. */
export function showStatus(el, text, kind = 'info') {
  setText(el, text);
  el.dataset.kind = kind;
}

/** sleep resolves after ms. */
export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * clockTime formats a Date as HH:MM:SS in the page's language; with
 * seconds false, as HH:MM unless the time is not on a whole minute.
 */
export function clockTime(lang, d, seconds = true) {
  const opts = { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' };
  if (seconds || d.getSeconds() !== 0) opts.second = '2-digit';
  return new Intl.DateTimeFormat(lang === 'ko' ? 'ko-KR' : 'en-GB', opts).format(d);
}
