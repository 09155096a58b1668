// The pre-queue draw rule (docs/draw.md), as internal/draw computes it,
// with Web Crypto, plus the BLS check of the beacon round with the vendored
// @noble/curves (static/vwr/vendor, loaded only when a visitor verifies).
// The page checks its own ticket, the beacon's signature against drand's
// public quicknet key pinned below, the close's timing, the commitment R it
// kept in its receipt, its Merkle proof, and recomputes every place from the
// published list. Runs in browsers and in Node 20+ (globalThis.crypto);
// e2e/unit.test.js checks it against internal/draw/testdata/kat.json.

export const RULE = 'vwr-draw-v2';
export const RECEIPT = 'vwr-receipt-v1';

/** QUICKNET is drand's public quicknet chain: the only chain trusted by default. */
export const QUICKNET = Object.freeze({
  public_key: '83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a',
  period: 3,
  genesis_time: 1692803367,
  hash: '52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971',
  groupHash: 'f477d5c89f21a17c863a7f937c6a6d15859414d2be09cd448d4279af331c5d3e',
  schemeID: 'bls-unchained-g1-rfc9380',
  metadata: Object.freeze({ beaconID: 'quicknet' }),
});

const subtle = () => globalThis.crypto.subtle;

/** hex encodes bytes as lowercase hex. */
export function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** unhex decodes lowercase hex; anything else throws. */
export function unhex(s) {
  if (typeof s !== 'string' || !/^([0-9a-f]{2})*$/.test(s)) throw new Error(`not lowercase hex: ${s}`);
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i += 1) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}

/** sha256 of bytes. */
export async function sha256(bytes) {
  return new Uint8Array(await subtle().digest('SHA-256', bytes));
}

/** newNonce returns 16 random bytes. */
export function newNonce(cryptoImpl = globalThis.crypto) {
  return cryptoImpl.getRandomValues(new Uint8Array(16));
}

/** ticketHash is h = SHA-256(requestId ‖ clientNonce). */
export async function ticketHash(requestId, nonce) {
  return sha256(concat(new TextEncoder().encode(requestId), nonce));
}

/** shortCode is the first 4 bytes of h as XXXX-XXXX: a ticket's name for people. */
export function shortCode(h) {
  const s = String(h || '').slice(0, 8).toUpperCase();
  return s.length === 8 ? `${s.slice(0, 4)}-${s.slice(4)}` : '';
}

const leaf = (h) => sha256(concat(Uint8Array.of(0), h));
const node = (l, r) => sha256(concat(Uint8Array.of(1), l, r));

/** merkleRoot over sorted ticket hashes; a node without a partner is carried up. */
export async function merkleRoot(sorted) {
  if (sorted.length === 0) return sha256(new Uint8Array(0));
  let level = await Promise.all(sorted.map(leaf));
  while (level.length > 1) {
    const next = [];
    for (let i = 0; i < level.length; i += 2) {
      next.push(i + 1 === level.length ? level[i] : node(level[i], level[i + 1]));
    }
    level = await Promise.all(next);
  }
  return level[0];
}

/** rootFromProof climbs from h at proof.index of proof.n leaves. */
export async function rootFromProof(h, proof) {
  let cur = await leaf(h);
  let idx = proof.index;
  let width = proof.n;
  let used = 0;
  if (!(width >= 1 && idx >= 0 && idx < width)) throw new Error('proof index out of range');
  while (width > 1) {
    if ((idx ^ 1) < width) {
      if (used === proof.siblings.length) throw new Error('proof too short');
      const sib = proof.siblings[used];
      cur = idx % 2 === 0 ? await node(cur, sib) : await node(sib, cur);
      used += 1;
    }
    idx = Math.floor(idx / 2);
    width = Math.ceil(width / 2);
  }
  if (used !== proof.siblings.length) throw new Error('proof too long');
  return cur;
}

function u64(n) {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt.asUintN(64, BigInt(n)));
  return b;
}

function u32(n) {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n);
  return b;
}

const ms = (t) => Date.parse(t);

/** commitment is R (docs/draw.md): it binds the sale, its close and the list. */
export async function commitment(sale, n, merkle) {
  const enc = new TextEncoder();
  return sha256(concat(Uint8Array.of(2), enc.encode(RULE), Uint8Array.of(0), enc.encode(sale.eventId), Uint8Array.of(0),
    u64(ms(sale.scheduledAt)), u64(Math.floor(ms(sale.opensAt) / 1000)), u64(sale.marginMs),
    u64(sale.scheduledRound), u64(sale.round), u64(ms(sale.closedAt)), u64(n), merkle));
}

async function hmacKey(randomness) {
  return subtle().importKey('raw', randomness, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
}

/** orderKey is HMAC-SHA-256(key = randomness, msg = R ‖ h). */
export async function orderKey(randomness, root, h) {
  return new Uint8Array(await subtle().sign('HMAC', await hmacKey(randomness), concat(root, h)));
}

function compare(a, b) {
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

/** positions draws the sorted list: positions[i] is sorted[i]'s place (1…n). */
export async function positions(randomness, root, sorted) {
  const key = await hmacKey(randomness);
  const keys = await Promise.all(sorted.map((h) => subtle().sign('HMAC', key, concat(root, h))));
  const order = sorted.map((_, i) => i);
  order.sort((a, b) => compare(new Uint8Array(keys[a]), new Uint8Array(keys[b])) || a - b);
  const out = new Array(sorted.length);
  order.forEach((i, rank) => { out[i] = rank + 1; });
  return out;
}

/** chainHash is drand's: SHA-256(period u32 ‖ genesis i64 ‖ public key ‖ group hash ‖ beacon id unless "default"). */
export async function chainHash(info) {
  const id = info.metadata?.beaconID || '';
  return sha256(concat(u32(info.period), u64(info.genesis_time), unhex(info.public_key), unhex(info.groupHash),
    id && id !== 'default' ? new TextEncoder().encode(id) : new Uint8Array(0)));
}

/** timeOf is round r's publication time (ms). */
export function timeOf(chain, r) {
  return (chain.genesis_time + (r - 1) * chain.period) * 1000;
}

/** firstRoundAtOrAfter is the first round published at t (ms) or later. */
export function firstRoundAtOrAfter(chain, t) {
  const s = Math.floor(t / 1000);
  let r = s < chain.genesis_time ? 0 : Math.floor((s - chain.genesis_time) / chain.period) + 1;
  if (r === 0 || timeOf(chain, r) < t) r += 1;
  return r;
}

/**
 * checkTiming returns '' when the document's times hold (docs/draw.md):
 * the scheduled round comes at least the margin after the opening, the
 * list closed at least the margin before the round that draws it, and that
 * round is the scheduled one or, after a late close, the first at least the
 * margin after it. Otherwise it names what fails.
 */
export function checkTiming(doc) {
  const c = doc.chain;
  const margin = doc.marginMs;
  if (!(Number.isInteger(margin) && margin >= 1000)) return 'margin below 1 s';
  if (timeOf(c, doc.scheduledRound) !== ms(doc.scheduledRoundAt)) return 'scheduledRoundAt';
  if (timeOf(c, doc.round) !== ms(doc.roundAt)) return 'roundAt';
  if (ms(doc.scheduledRoundAt) < ms(doc.opensAt) + margin) return 'scheduled round too early';
  if (!doc.closedAt) return 'no closedAt';
  const closeBy = ms(doc.closedAt) + margin;
  if (doc.round === doc.scheduledRound) {
    if (doc.roundMoved) return 'roundMoved';
    return closeBy <= ms(doc.roundAt) ? '' : 'closedAt + margin after roundAt';
  }
  if (doc.roundMoved !== 'late-close') return 'round is not the scheduled one';
  if (closeBy <= ms(doc.scheduledRoundAt)) return 'round moved without a late close';
  return doc.round === firstRoundAtOrAfter(c, closeBy) ? '' : 'moved to the wrong round';
}

let bls;
async function blsVerify(sig, msg, pk) {
  bls ??= import('./vendor/noble-curves-2.4.0/bls12-381.js').then((m) => m.bls12_381.shortSignatures);
  const s = await bls;
  try {
    return s.verify(sig, s.hash(msg), pk);
  } catch {
    return false; // not a point, not in the subgroup, or the wrong length
  }
}

/**
 * verifyBeacon checks a quicknet-scheme round: the BLS signature on
 * SHA-256(round as 8 bytes) under the chain's G2 public key (RFC 9380 hash
 * to G1, with subgroup checks), and randomness = SHA-256(signature).
 */
export async function verifyBeacon(chain, beacon) {
  if (chain.schemeID !== QUICKNET.schemeID) return false;
  const sig = unhex(beacon.signature);
  const pk = unhex(chain.public_key);
  // Compressed points only, never the point at infinity (docs/draw.md).
  const point = (b, n) => b.length === n && (b[0] & 0xc0) === 0x80;
  if (!point(sig, 48) || !point(pk, 96)) return false;
  if (hex(await sha256(sig)) !== beacon.randomness) return false;
  return blsVerify(sig, await sha256(u64(beacon.round)), pk);
}

function sameChain(a, b) {
  return a && b && a.hash === b.hash && a.public_key === b.public_key && a.period === b.period
    && a.genesis_time === b.genesis_time && a.groupHash === b.groupHash && a.schemeID === b.schemeID
    && (a.metadata?.beaconID || '') === (b.metadata?.beaconID || '');
}

/**
 * verifyPlace checks a receipt against the published draw and says, check
 * by check, what held: {ok, position, checks: [{id, ok, detail}]}. ok is
 * true only when every check passed. local is a chain the site declares
 * besides quicknet (vwr local's stand-in), trusted but reported as not the
 * public one. What the page cannot check is listed in the docs, not here.
 */
export async function verifyPlace(receipt, doc, tickets, published, { local } = {}) {
  const checks = [];
  const add = (id, ok, detail = '') => { checks.push({ id, ok, detail }); return ok; };
  const done = (position) => ({ ok: checks.every((c) => c.ok), position, checks });

  // 1. The ticket is the visitor's: h from the nonce only the page knows.
  let h = null;
  try {
    h = await ticketHash(receipt.requestId, unhex(receipt.clientNonce));
  } catch { /* a malformed nonce fails below */ }
  if (!add('ticket', !!h && hex(h) === receipt.h && receipt.eventId === doc.eventId)) return done();
  if (!add('drawn', doc.rule === RULE && doc.status === 'drawn' && !!doc.beacon, doc.status)) return done();

  // 2. The beacon: drand's public quicknet chain, or a chain the site
  // declares (reported as not public); its BLS signature on the round.
  let chainOK = false;
  let chainDetail = 'quicknet';
  if (sameChain(doc.chain, QUICKNET)) {
    chainOK = true;
  } else if (local && sameChain(doc.chain, local) && hex(await chainHash(local)) === local.hash) {
    chainOK = true;
    chainDetail = 'local';
  } else {
    chainDetail = 'unknown';
  }
  if (!add('chain', chainOK, chainDetail)) return done();
  add('beacon', doc.beacon.round === doc.round && await verifyBeacon(doc.chain, doc.beacon), String(doc.round));

  // 3. The close: the document's times, and the R this page saw before the
  // round's time (the evidence that the list was fixed before the
  // randomness existed).
  const timing = checkTiming(doc);
  add('timing', timing === '', timing);
  if (!receipt.root) {
    add('sealed', false, 'no R');
  } else if (receipt.root !== doc.root) {
    add('sealed', false, 'R changed');
  } else {
    const seen = ms(receipt.rootSeenAt);
    add('sealed', Number.isFinite(seen) && seen < ms(doc.roundAt), Number.isFinite(seen) && seen < ms(doc.roundAt) ? '' : 'R seen late');
  }

  // 4. The list, R, the ticket's place in it and everyone's order.
  const sorted = tickets.map(unhex);
  let sortedOK = sorted.length === doc.n;
  for (let i = 1; i < sorted.length && sortedOK; i += 1) sortedOK = compare(sorted[i - 1], sorted[i]) < 0;
  const merkle = await merkleRoot(sorted);
  const root = await commitment(doc, sorted.length, merkle);
  if (!add('list', sortedOK && hex(merkle) === doc.merkleRoot && hex(root) === doc.root)) return done();
  const mine = tickets.indexOf(receipt.h);
  let inList = mine >= 0;
  if (inList && receipt.proof) {
    try {
      const proof = { ...receipt.proof, siblings: receipt.proof.siblings.map(unhex) };
      inList = proof.index === mine && hex(await rootFromProof(h, proof)) === doc.merkleRoot;
    } catch {
      inList = false;
    }
  }
  if (!add('included', inList)) return done();
  const pos = await positions(unhex(doc.beacon.randomness), root, sorted);
  const everyone = !published || pos.every((p, i) => p === published[i]);
  add('order', everyone && (!receipt.position || receipt.position === pos[mine]), String(pos[mine]));
  return done(pos[mine]);
}
