// The pre-queue draw rule (docs/draw.md), as internal/draw computes it,
// with Web Crypto: the page checks its own ticket, its Merkle proof, the
// commitment R it kept in its receipt, and recomputes every place from the
// published list. Runs in browsers and in Node 20+ (globalThis.crypto);
// e2e/unit.test.js checks it against internal/draw/testdata/kat.json.

export const RULE = 'vwr-draw-v1';
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
  new DataView(b.buffer).setBigUint64(0, BigInt(n));
  return b;
}

/** commitment is R = SHA-256(0x02 ‖ rule ‖ 0 ‖ eventId ‖ 0 ‖ opensAt s ‖ round ‖ n ‖ Merkle root). */
export async function commitment({ eventId, opensAt, round }, n, merkle) {
  const enc = new TextEncoder();
  const secs = Math.floor(new Date(opensAt).getTime() / 1000);
  return sha256(concat(Uint8Array.of(2), enc.encode(RULE), Uint8Array.of(0), enc.encode(eventId), Uint8Array.of(0),
    u64(secs), u64(round), u64(n), merkle));
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

/**
 * verifyPlace rechecks a receipt against the published draw: h from the
 * requestId and nonce, the Merkle proof, the commitment R the page kept
 * from before the draw, randomness = SHA-256(signature), the sorted list,
 * and the receipt's place among everyone's. The beacon's BLS signature is
 * left to `vwr verify-draw` (no pairing code in the page). Returns
 * {ok, position, reason}.
 */
export async function verifyPlace(receipt, doc, tickets, published) {
  const fail = (reason) => ({ ok: false, reason });
  const h = await ticketHash(receipt.requestId, unhex(receipt.clientNonce));
  if (hex(h) !== receipt.h) return fail('ticket hash');
  if (doc.rule !== RULE || doc.status !== 'drawn' || !doc.beacon) return fail('not drawn');
  if (receipt.root && receipt.root !== doc.root) return fail('root changed since close');
  if (hex(await sha256(unhex(doc.beacon.signature))) !== doc.beacon.randomness) return fail('beacon randomness');
  if (doc.beacon.round !== doc.round) return fail('beacon round');
  const sorted = tickets.map(unhex);
  for (let i = 1; i < sorted.length; i += 1) if (compare(sorted[i - 1], sorted[i]) >= 0) return fail('list order');
  if (sorted.length !== doc.n) return fail('ticket count');
  const merkle = await merkleRoot(sorted);
  if (hex(merkle) !== doc.merkleRoot) return fail('Merkle root');
  if (receipt.proof) {
    const proof = { ...receipt.proof, siblings: receipt.proof.siblings.map(unhex) };
    if (hex(await rootFromProof(h, proof)) !== doc.merkleRoot) return fail('Merkle proof');
  }
  const root = await commitment(doc, sorted.length, merkle);
  if (hex(root) !== doc.root) return fail('commitment R');
  const pos = await positions(unhex(doc.beacon.randomness), root, sorted);
  if (published && pos.some((p, i) => p !== published[i])) return fail('published positions');
  const mine = tickets.indexOf(receipt.h);
  if (mine < 0) return fail('ticket not in the list');
  if (receipt.position && receipt.position !== pos[mine]) return fail('position');
  return { ok: true, position: pos[mine] };
}
