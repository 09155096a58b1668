// The ALTCHA proof of work (v1: SHA-256), as internal/altcha checks it: find
// the number n in [0, maxnumber] with SHA-256(salt ‖ n) = challenge, n in
// decimal. Plain JavaScript SHA-256 rather than Web Crypto: a synchronous
// loop over one compression per number (the salt's full blocks are hashed
// once) is many times faster than a promise per digest. Runs in browsers,
// in the worker (pow-worker.js) and in Node; e2e checks it against the
// Go-made and altcha-lib-made vectors (internal/altcha/testdata).

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const IV = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

// compress runs one SHA-256 block (W[0..15] filled) over the state H.
function compress(H, W) {
  for (let i = 16; i < 64; i += 1) {
    const a = W[i - 15];
    const b = W[i - 2];
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
    W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
  }
  let a = H[0]; let b = H[1]; let c = H[2]; let d = H[3];
  let e = H[4]; let f = H[5]; let g = H[6]; let h = H[7];
  for (let i = 0; i < 64; i += 1) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g; g = f; f = e; e = (d + t1) | 0;
    d = c; c = b; b = a; a = (t1 + t2) | 0;
  }
  H[0] = (H[0] + a) | 0; H[1] = (H[1] + b) | 0; H[2] = (H[2] + c) | 0; H[3] = (H[3] + d) | 0;
  H[4] = (H[4] + e) | 0; H[5] = (H[5] + f) | 0; H[6] = (H[6] + g) | 0; H[7] = (H[7] + h) | 0;
}

function loadWords(W, buf, off) {
  for (let i = 0; i < 16; i += 1) {
    const j = off + 4 * i;
    W[i] = (buf[j] << 24) | (buf[j + 1] << 16) | (buf[j + 2] << 8) | buf[j + 3];
  }
}

const HEX64 = /^[0-9a-f]{64}$/;

/**
 * search looks for n in [from, to] with SHA-256(salt ‖ n) = challenge. It
 * calls onProgress(n) about every 2^14 numbers and returns n, or -1 when the
 * range holds none. Throws on a malformed challenge.
 */
export function search(challenge, salt, from, to, onProgress) {
  if (!HEX64.test(challenge)) throw new Error('pow: challenge is not 64 lowercase hex digits');
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 0) throw new Error('pow: bad range');
  const want = new Int32Array(8);
  for (let i = 0; i < 8; i += 1) want[i] = parseInt(challenge.slice(8 * i, 8 * i + 8), 16) | 0;
  const prefix = new TextEncoder().encode(salt);
  const W = new Int32Array(64);
  // The salt's whole blocks are the same for every n: hash them once.
  const mid = Int32Array.from(IV);
  const full = prefix.length - (prefix.length % 64);
  for (let off = 0; off < full; off += 64) {
    loadWords(W, prefix, off);
    compress(mid, W);
  }
  const tail = prefix.length - full;
  const buf = new Uint8Array(128);
  buf.set(prefix.subarray(full));
  const H = new Int32Array(8);
  // n's decimal digits, incremented in place.
  const digits = Array.from(String(from), (ch) => ch.charCodeAt(0));
  for (let n = from; n <= to; n += 1) {
    const d = digits.length;
    let o = tail;
    for (let i = 0; i < d; i += 1) buf[o++] = digits[i];
    buf[o++] = 0x80;
    const blocks = o + 8 > 64 ? 2 : 1;
    const end = 64 * blocks;
    buf.fill(0, o, end - 8);
    const bits = 8 * (prefix.length + d);
    const hi = Math.floor(bits / 0x100000000);
    buf[end - 8] = hi >>> 24; buf[end - 7] = hi >>> 16; buf[end - 6] = hi >>> 8; buf[end - 5] = hi;
    buf[end - 4] = bits >>> 24; buf[end - 3] = bits >>> 16; buf[end - 2] = bits >>> 8; buf[end - 1] = bits;
    H.set(mid);
    loadWords(W, buf, 0);
    compress(H, W);
    if (blocks === 2) {
      loadWords(W, buf, 64);
      compress(H, W);
    }
    if (H[0] === want[0] && H[1] === want[1] && H[2] === want[2] && H[3] === want[3]
      && H[4] === want[4] && H[5] === want[5] && H[6] === want[6] && H[7] === want[7]) {
      return n;
    }
    // n + 1 in decimal.
    let i = d - 1;
    while (i >= 0 && digits[i] === 57) { digits[i] = 48; i -= 1; }
    if (i < 0) digits.unshift(49); else digits[i] += 1;
    if (onProgress && (n & 0x3fff) === 0) onProgress(n);
  }
  return -1;
}

/** sha256Hex hashes a string (UTF-8), for tests and the payload check. */
export function sha256Hex(text) {
  const bytes = new TextEncoder().encode(text);
  const len = bytes.length;
  const padded = new Uint8Array(Math.ceil((len + 9) / 64) * 64);
  padded.set(bytes);
  padded[len] = 0x80;
  const bits = 8 * len;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(bits / 0x100000000));
  view.setUint32(padded.length - 4, bits >>> 0);
  const H = Int32Array.from(IV);
  const W = new Int32Array(64);
  for (let off = 0; off < padded.length; off += 64) {
    loadWords(W, padded, off);
    compress(H, W);
  }
  return Array.from(H, (x) => (x >>> 0).toString(16).padStart(8, '0')).join('');
}

/**
 * payload is the Altcha request header for a solved challenge: base64 of
 * the JSON {algorithm, challenge, number, salt, signature}, as the ALTCHA
 * widget sends it.
 */
export function payload(ch, number) {
  const json = JSON.stringify({
    algorithm: ch.algorithm, challenge: ch.challenge, number, salt: ch.salt, signature: ch.signature,
  });
  return btoa(json);
}

/** expiresAt is a challenge salt's expiry in ms since the epoch (0: none). */
export function expiresAt(salt) {
  const q = String(salt).split('?')[1] || '';
  const v = new URLSearchParams(q.replace(/&$/, '')).get('expires');
  return /^[0-9]+$/.test(v || '') ? Number(v) * 1000 : 0;
}

/**
 * solveHere searches on the calling thread in slices, yielding between
 * them: the fallback where module workers are not available, and what the
 * CPU-throttled measurement runs (Chromium throttles pages, not workers).
 * onProgress gets the share of the search space covered, 0–100.
 */
export async function solveHere(ch, onProgress = () => {}) {
  const slice = 20000;
  for (let from = 0; from <= ch.maxnumber; from += slice) {
    const n = search(ch.challenge, ch.salt, from, Math.min(from + slice - 1, ch.maxnumber));
    if (n >= 0) return n;
    onProgress(Math.floor(((from + slice) / (ch.maxnumber + 1)) * 100));
    await new Promise((r) => setTimeout(r, 0));
  }
  return -1;
}

/**
 * solve finds a challenge's number in a Web Worker (pow-worker.js),
 * reporting the share of the search space covered (0–100) as it goes; it
 * solves on this thread when no worker can be started.
 */
export function solve(ch, onProgress = () => {}) {
  let worker;
  try {
    worker = new Worker(new URL('./pow-worker.js', import.meta.url), { type: 'module' });
  } catch {
    return solveHere(ch, onProgress);
  }
  return new Promise((resolve, reject) => {
    worker.onmessage = ({ data }) => {
      if (data.type === 'progress') {
        onProgress(Math.min(99, Math.floor((data.n / (ch.maxnumber + 1)) * 100)));
        return;
      }
      worker.terminate();
      resolve(data.n);
    };
    worker.onerror = (e) => {
      worker.terminate();
      reject(new Error(`pow worker: ${e.message || 'failed'}`));
    };
    worker.postMessage({ challenge: ch.challenge, salt: ch.salt, maxnumber: ch.maxnumber });
  });
}

/** POW_CODES are the refusals that carry a challenge to solve. */
export const POW_CODES = new Set(['pow_required', 'pow_invalid', 'pow_too_easy', 'pow_replayed']);

/**
 * payAtTheDoor sends an arrival with the solution kept in kv under key (if
 * still valid); when the answer is a proof-of-work refusal it solves the
 * challenge that came with it (solver: solve, with onProgress) and sends
 * again. The solution is kept (not in the URL) so that a retry or a reload
 * re-sends it with the same Idempotency-Key, which the server answers
 * without counting a second arrival. isRefusal(err) picks the refusals.
 */
export async function payAtTheDoor(send, { kv, key, onProgress, isRefusal, solver = solve, now = Date.now }) {
  let kept = kv.get(key);
  if (!kept || typeof kept.header !== 'string' || !(kept.expires > now())) kept = null;
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await send(kept ? kept.header : undefined);
    } catch (err) {
      const ch = isRefusal(err);
      if (!ch || attempt >= 3) throw err;
      kv.del(key);
      kept = null;
      const n = await solver(ch, onProgress);
      if (n < 0) throw err;
      if (onProgress) onProgress(100);
      kept = { header: payload(ch, n), expires: expiresAt(ch.salt) };
      kv.set(key, kept);
    }
  }
}
