// Unit tests of the pages' pure helpers (static/vwr/common.js, i18n.js),
// run by plain Node: no browser, no server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  announcer, ApiError, backoff, finalError, jitter, newKey, retryAfterSeconds, retryNotice, safeReturn,
  store, tier1Interval, validId,
} from '../static/vwr/common.js';
import {
  cookieLang, currentLang, formatAhead, formatRange, formatWait, langCookie, langOfPath, pickLang, translator, withLang,
} from '../static/vwr/i18n.js';
import { estimateAhead, pageWait, roundAhead, tier1Poll, waitRange } from '../static/vwr/wait.js';

const origin = 'https://tickets.example';

// The shared battery (internal/edge/testdata/return-paths.json): the same
// cases run in Chromium (pages.test.js) and through the Go validator.
const battery = JSON.parse(readFileSync(new URL('../internal/edge/testdata/return-paths.json', import.meta.url), 'utf8'));

test('safeReturn passes the return-path battery', async (t) => {
  assert.ok(battery.cases.length >= 40, 'the battery is loaded');
  for (const c of battery.cases) {
    await t.test(`${JSON.stringify(c.raw)?.slice(0, 60)}: ${c.why}`, () => {
      assert.equal(safeReturn(c.raw, battery.event, battery.origin), c.want ?? `/events/${battery.event}`);
    });
  }
});

test('safeReturn falls back to the encoded event page', () => {
  assert.equal(safeReturn('//x', 'a_b-1', origin), '/events/a_b-1');
});

test('validId matches ^[A-Za-z0-9_-]{1,64}$', () => {
  for (const ok of ['demo', 'A_b-9', 'x'.repeat(64)]) assert.ok(validId(ok), ok);
  for (const bad of ['', 'a b', 'a/b', 'x'.repeat(65), '../x', undefined, 7]) assert.ok(!validId(bad), String(bad));
});

test('tier1Interval stays within 2–15 s by distance and honours nextPoll and Retry-After', () => {
  const lo = () => 0; // jitter at its low end
  const hi = () => 0.999999; // and at its high end
  assert.equal(tier1Interval({ ahead: 0 }, lo), 2000);
  assert.ok(tier1Interval({ ahead: 0 }, hi) <= 2400);
  assert.equal(tier1Interval({ ahead: 100000 }, hi), 15000);
  assert.ok(tier1Interval({ ahead: 100000 }, lo) >= 12000);
  assert.ok(tier1Interval({ ahead: 10 }, lo) < tier1Interval({ ahead: 1000 }, lo), 'closer polls sooner');
  assert.equal(tier1Interval({ ahead: 10, nextPoll: 10 }, () => 0.5), 10000, 'nextPoll raises the floor');
  assert.equal(tier1Interval({ ahead: 10, nextPoll: 60 }, () => 0.5), 15000, 'but never past 15 s');
  assert.equal(tier1Interval({ ahead: 10, retryAfter: 30 }, () => 0.5), 30000, 'Retry-After wins');
  assert.equal(tier1Interval({ ahead: 10000, dueIn: 3.5 }, lo), 3500, 'a turn due in 3.5 s is looked at then');
  assert.ok(tier1Interval({ ahead: 10000, dueIn: 3.5 }, hi) <= 3850, 'or a little later');
  assert.equal(tier1Interval({ ahead: 10000, dueIn: -2 }, lo), 1000, 'an overdue turn: every second');
  assert.ok(tier1Interval({ ahead: 10, dueIn: 60 }, hi) <= 2400, 'a far turn does not slow a close page');
  const spread = new Set(Array.from({ length: 50 }, () => tier1Interval({ ahead: 10 })));
  assert.ok(spread.size > 10, 'jitter spreads pages out');
});

test('backoff doubles to 30 s and honours Retry-After', () => {
  const mid = () => 0.5;
  assert.deepEqual([1, 2, 3, 4, 5, 9].map((n) => backoff(n, undefined, mid)), [2000, 4000, 8000, 16000, 30000, 30000]);
  assert.equal(backoff(1, 20, mid), 20000);
  assert.equal(jitter(1000, 0.2, () => 0), 800);
  assert.equal(jitter(1000, 0.2, () => 1), 1200);
});

test('retryAfterSeconds parses seconds and ignores junk', () => {
  const h = (v) => new Headers(v === undefined ? {} : { 'Retry-After': v });
  assert.equal(retryAfterSeconds(h('7')), 7);
  assert.equal(retryAfterSeconds(h('9999')), 300);
  assert.equal(retryAfterSeconds(h('soon')), undefined);
  assert.equal(retryAfterSeconds(h()), undefined);
});

test('finalError gives up only on a link that names no possible event, and retries the rest', () => {
  assert.ok(finalError(new ApiError(400, { code: 'invalid_event_id' })), '400 invalid_event_id');
  for (const code of ['pow_invalid', 'invalid_client_nonce', undefined]) assert.ok(!finalError(new ApiError(400, { code })), `400 ${code}`);
  for (const st of [401, 403, 404, 408, 409, 413, 428, 429, 500, 503]) assert.ok(!finalError(new ApiError(st)), String(st));
  assert.ok(!finalError(new TypeError('network')), 'a network failure is retried');
});

test('retryNotice words busy, failed and offline differently', () => {
  const t = translator('en');
  assert.deepEqual(retryNotice(t, new ApiError(503), 4), [t('err.busy', 4), 'warn']);
  assert.deepEqual(retryNotice(t, new ApiError(429), 4), [t('err.busy', 4), 'warn']);
  assert.deepEqual(retryNotice(t, new ApiError(500), 4), [t('err.generic', 4), 'bad']);
  assert.deepEqual(retryNotice(t, new TypeError('offline'), 4), [t('err.network', 4), 'bad']);
});

test('announcer speaks on change, at most once per interval', () => {
  const el = { textContent: '' };
  let now = 100000;
  const announce = announcer(el, 20000, () => now);
  announce(5, 'five');
  assert.equal(el.textContent, 'five');
  now += 1000;
  announce(4, 'four');
  assert.equal(el.textContent, 'five', 'too soon');
  now += 20000;
  announce(5, 'five again');
  assert.equal(el.textContent, 'five', 'unchanged value');
  announce(3, 'three');
  assert.equal(el.textContent, 'three');
});

test('newKey makes distinct valid idempotency keys', () => {
  const a = newKey();
  const b = newKey();
  assert.ok(validId(a) && validId(b));
  assert.notEqual(a, b);
});

test('store survives a broken localStorage', () => {
  const broken = { getItem() { throw new Error('denied'); }, setItem() { throw new Error('denied'); }, removeItem() { throw new Error('denied'); } };
  const kv = store(broken);
  kv.set('k', { a: 1 });
  assert.deepEqual(kv.get('k'), { a: 1 });
  kv.del('k');
  assert.equal(kv.get('k'), undefined);
});

test('language comes from ?lang=, then navigator.language, else English', () => {
  assert.equal(pickLang('ko', 'en-US'), 'ko');
  assert.equal(pickLang('en', 'ko-KR'), 'en');
  assert.equal(pickLang(null, 'ko-KR'), 'ko');
  assert.equal(pickLang('fr', 'ko'), 'ko');
  assert.equal(pickLang(null, 'de-DE'), 'en');
  assert.equal(pickLang('__proto__', undefined), 'en');
});

test('the urr-lang cookie sits between ?lang= and the browser, and ?lang= sets it', () => {
  assert.equal(pickLang(null, 'en-US', 'ko'), 'ko', 'the earlier choice beats the browser');
  assert.equal(pickLang('en', 'ko-KR', 'ko'), 'en', 'a new ?lang= beats the earlier choice');
  assert.equal(pickLang(null, 'ko-KR', 'fr'), 'ko', 'an unknown cookie falls through');
  assert.equal(cookieLang('a=1; urr-lang=ko; b=2'), 'ko');
  assert.equal(cookieLang('urr-langx=ko'), undefined);
  assert.equal(langCookie('ko'), 'urr-lang=ko; Path=/; Max-Age=31536000; SameSite=Lax');
  assert.equal(langOfPath('/events/demo?lang=ko'), 'ko');
  assert.equal(langOfPath('https://evil.example/?lang=ko'), undefined, 'only a path counts');
  const doc = { cookie: '' };
  assert.equal(currentLang({ search: '?event=demo&return=%2Fevents%2Fdemo%3Flang%3Dko' }, { language: 'en-US' }, doc), 'ko');
  assert.equal(doc.cookie, langCookie('ko'), 'a choice is remembered');
  const none = { cookie: '' };
  assert.equal(currentLang({ search: '?event=demo' }, { language: 'ko-KR' }, none), 'ko');
  assert.equal(none.cookie, '', 'the browser\'s language is not a choice to remember');
  assert.equal(currentLang({ search: '?lang=xx' }, { language: 'ko' }, none), 'ko');
  assert.equal(none.cookie, '', 'an unknown ?lang= is not remembered');
  assert.equal(withLang('/events/demo', 'ko', { search: '?lang=ko' }), '/events/demo?lang=ko');
  assert.equal(withLang('/events/demo?x=1', 'ko', { search: '?lang=ko' }), '/events/demo?x=1&lang=ko');
  assert.equal(withLang('/events/demo', 'ko', { search: '' }), '/events/demo', 'no parameter to pass on');
});

test('both languages have every string', () => {
  const en = translator('en');
  const ko = translator('ko');
  for (const key of ['title.tier1', 'title.tier2', 'leave', 'doNotClose', 'err.busy', 'err.network', 'status.admitted',
    'title.prequeue', 'lead.prequeue', 'title.drawing', 'lead.drawing', 'title.drawn', 'lead.drawn', 'pq.drawingNow',
    'room.count', 'room.full', 'room.open', 'progress.mine', 'leave.ask', 'leave.confirm', 'leave.stay', 'title.left',
    'lead.left', 'err.unknownEvent', 'err.refused', 'action.retry', 'action.home']) {
    assert.notEqual(en(key, 3), key);
    assert.notEqual(ko(key, 3), key);
    assert.notEqual(en(key, 3), ko(key, 3), `${key} is translated`);
  }
  assert.match(ko('err.busy', 5), /5초/);
});

test('formatWait is short and never negative', () => {
  const t = translator('en');
  assert.equal(formatWait(t, 30), '< 1 min');
  assert.equal(formatWait(t, 125), '2 min');
  assert.equal(formatWait(t, 3900), '1h 5m');
  assert.equal(formatWait(t, -1), 'Calculating…');
  assert.equal(formatWait(t, Number.NaN), 'Calculating…');
});

// The draw rule in the page (static/vwr/draw.js) against the known-answer
// vector internal/draw's Go tests check too.
async function loadKat() {
  const { readFile } = await import('node:fs/promises');
  const d = await import('../static/vwr/draw.js');
  const kat = JSON.parse(await readFile(new URL('../internal/draw/testdata/kat.json', import.meta.url), 'utf8'));
  return { d, kat };
}

test('draw.js agrees with internal/draw on the known-answer vector', async () => {
  const { d, kat } = await loadKat();
  for (const tk of kat.tickets) {
    assert.equal(d.hex(await d.ticketHash(tk.requestId, d.unhex(tk.clientNonce))), tk.h);
  }
  assert.equal(d.hex(await d.chainHash(kat.chain)), kat.chain.hash);
  const sorted = kat.sorted.map(d.unhex);
  const merkle = await d.merkleRoot(sorted);
  assert.equal(d.hex(merkle), kat.merkleRoot);
  const root = await d.commitment(kat.sale, sorted.length, merkle);
  assert.equal(d.hex(root), kat.root);
  const rnd = d.unhex(kat.beacon.randomness);
  assert.equal(await d.verifyBeacon(kat.chain, kat.beacon), true);
  for (let i = 0; i < sorted.length; i += 1) {
    assert.equal(d.hex(await d.orderKey(rnd, root, sorted[i])), kat.orderKeys[i]);
    const proof = { index: i, n: sorted.length, siblings: kat.proofs[i].map(d.unhex) };
    assert.equal(d.hex(await d.rootFromProof(sorted[i], proof)), kat.merkleRoot);
  }
  assert.deepEqual(await d.positions(rnd, root, sorted), kat.positions);
});

// Real quicknet rounds, as drand's relays serve them, and forgeries.
test('draw.js verifies quicknet BLS signatures with the vendored noble-curves', async () => {
  const d = await import('../static/vwr/draw.js');
  const real = [
    [2, 'b6b6a585449b66eb12e875b64fcbab3799861a00e4dbf092d99e969a5eac57dd3f798acf61e705fe4f093db926626807'],
    [3, 'b3fab6df720b68cc47175f2c777e86d84187caab5770906f515ff1099cb01e4deaa027075d860823e49477b93c72bd64'],
    [657413, 'b713718a38ae728dfd477991af2822e08d2f305e47718cef9f7848ce4050e7be41076862b98fad56e91a6b85b89cd97b'],
  ];
  for (const [round, signature] of real) {
    const beacon = { round, signature, randomness: d.hex(await d.sha256(d.unhex(signature))) };
    assert.equal(await d.verifyBeacon(d.QUICKNET, beacon), true, `round ${round}`);
    assert.equal(await d.verifyBeacon(d.QUICKNET, { ...beacon, round: round + 1 }), false, `round ${round} as ${round + 1}`);
  }
  // 48 random bytes with a consistent randomness: not a signature.
  const forged = new Uint8Array(48);
  globalThis.crypto.getRandomValues(forged);
  forged[0] = (forged[0] & 0x1f) | 0x80; // compressed-point flag, so it is not rejected for its flags alone
  assert.equal(await d.verifyBeacon(d.QUICKNET, { round: 2, signature: d.hex(forged), randomness: d.hex(await d.sha256(forged)) }), false);
});

test('draw.js verifyPlace checks every step and names the one that fails', async () => {
  const { d, kat } = await loadKat();
  const c = kat.chain;
  const doc = {
    rule: d.RULE, status: 'drawn', eventId: kat.sale.eventId, scheduledAt: kat.sale.scheduledAt, opensAt: kat.sale.opensAt,
    marginMs: kat.sale.marginMs, chain: c, scheduledRound: kat.sale.scheduledRound,
    scheduledRoundAt: new Date(d.timeOf(c, kat.sale.scheduledRound)).toISOString(), round: kat.sale.round,
    roundAt: new Date(d.timeOf(c, kat.sale.round)).toISOString(), closedAt: kat.sale.closedAt,
    beacon: kat.beacon, merkleRoot: kat.merkleRoot, root: kat.root, n: kat.sorted.length,
  };
  assert.equal(d.checkTiming(doc), '');
  const tk = kat.tickets[2];
  const i = kat.sorted.indexOf(tk.h);
  const receipt = {
    receipt: d.RECEIPT, eventId: kat.sale.eventId, requestId: tk.requestId, clientNonce: tk.clientNonce, h: tk.h,
    root: kat.root, rootSeenAt: new Date(Date.parse(kat.sale.closedAt) + 1000).toISOString(),
    proof: { index: i, n: kat.sorted.length, siblings: kat.proofs[i] }, position: kat.positions[i],
  };
  const ok = await d.verifyPlace(receipt, doc, kat.sorted, kat.positions);
  assert.equal(ok.ok, true, JSON.stringify(ok.checks));
  assert.equal(ok.position, kat.positions[i]);
  assert.deepEqual(ok.checks.map((x) => x.id), ['ticket', 'drawn', 'chain', 'beacon', 'timing', 'sealed', 'list', 'included', 'order']);
  const failing = async (r, dd, tickets = kat.sorted) => (await d.verifyPlace(r, dd, tickets, kat.positions)).checks.filter((x) => !x.ok).map((x) => x.id);
  const swapped = [...kat.sorted];
  swapped[0] = swapped[0].replace(/^./, (ch) => (ch === '0' ? '1' : '0'));
  assert.deepEqual(await failing(receipt, doc, swapped), ['list']);
  assert.deepEqual(await failing({ ...receipt, root: '00'.repeat(32) }, doc), ['sealed']);
  assert.deepEqual(await failing({ ...receipt, root: undefined, rootSeenAt: undefined }, doc), ['sealed']);
  assert.deepEqual(await failing({ ...receipt, rootSeenAt: doc.roundAt }, doc), ['sealed']);
  assert.deepEqual(await failing({ ...receipt, position: receipt.position + 1 }, doc), ['order']);
  assert.deepEqual(await failing({ ...receipt, clientNonce: '11'.repeat(16) }, doc), ['ticket']);
  // A forged signature, even with randomness = SHA-256(signature).
  const sig = d.unhex(kat.beacon.signature);
  sig[20] ^= 1;
  const forged = { ...kat.beacon, signature: d.hex(sig), randomness: d.hex(await d.sha256(sig)) };
  assert.ok((await failing(receipt, { ...doc, beacon: forged })).includes('beacon'));
  // A chain that is not quicknet is refused unless the site declares it.
  const other = { ...c, genesis_time: c.genesis_time + 1 };
  assert.deepEqual(await failing(receipt, { ...doc, chain: other }), ['chain']);
  // A close claimed too late for its round.
  const late = new Date(Date.parse(doc.roundAt) - 9000).toISOString();
  assert.notEqual(d.checkTiming({ ...doc, closedAt: late }), '');
  assert.equal(d.shortCode(tk.h), `${tk.h.slice(0, 4)}-${tk.h.slice(4, 8)}`.toUpperCase());
});

// The Tier 1 wait estimate: the shared vectors
// (internal/tier1/tier1api/testdata/wait-vectors.json, made by the real
// service and checked against tier1.Page by TestWaitVectors) run here.
const waitVectors = JSON.parse(readFileSync(new URL('../internal/tier1/tier1api/testdata/wait-vectors.json', import.meta.url), 'utf8'));

test('pageWait gives the Go estimate for every shared vector', () => {
  assert.ok(waitVectors.length >= 40, 'the vectors are loaded');
  for (const v of waitVectors) {
    const got = pageWait(v.doc, v.position, Date.parse(v.now));
    const want = v.want;
    const have = got.ok
      ? { ok: true, peopleAhead: got.peopleAhead, seconds: got.seconds, nextPoll: got.nextPoll, paused: got.paused, afterDraw: got.afterDraw }
      : { ok: false, peopleAhead: 0, seconds: 0, nextPoll: 0, paused: false, afterDraw: false };
    assert.deepEqual(have, want, `${v.name}, p=${v.position} at ${v.now}`);
  }
});

test('estimateAhead does not count the holes of a lagging shard', () => {
  // 4 shards: positions 1 2 4 5 8 9 are held; 3 and 7 are holes.
  assert.equal(estimateAhead([3, 1, 0, 2], 4, 1, 9, 0), 4);
  assert.equal(estimateAhead([3, 1, 0, 2], 4, 5, 6, 0), 0);
  // Grown by the enter rate, a lagging shard counts about what it got since.
  assert.ok(estimateAhead([10, 10, 0, 10], 4, 0, 41, 5) > estimateAhead([10, 10, 0, 10], 4, 0, 41, 0));
});

test('waitRange rounds to what the estimate is good for', () => {
  assert.deepEqual(waitRange(20), { kind: 'soon' });
  assert.deepEqual(waitRange(60), { kind: 'minutes', lo: 1, hi: 2 });
  assert.deepEqual(waitRange(300), { kind: 'minutes', lo: 4, hi: 6 });
  assert.deepEqual(waitRange(1800), { kind: 'minutes', lo: 25, hi: 35 });
  assert.deepEqual(waitRange(3 * 3600), { kind: 'hours', lo: 2.5, hi: 3.5 });
  assert.deepEqual(waitRange(-1), { kind: 'unknown' });
  for (let s = 60; s < 20000; s += 37) {
    const r = waitRange(s);
    if (r.kind === 'minutes') assert.ok(r.lo * 60 <= s && s <= r.hi * 60 && r.lo < r.hi, `${s}: ${JSON.stringify(r)}`);
    if (r.kind === 'hours') assert.ok(r.lo * 3600 <= s && s <= r.hi * 3600, `${s}: ${JSON.stringify(r)}`);
  }
  const en = translator('en');
  const ko = translator('ko');
  assert.equal(formatRange(en, 'en', waitRange(300)), 'about 4–6 minutes');
  assert.equal(formatRange(ko, 'ko', waitRange(300)), '약 4–6분');
  assert.equal(formatRange(en, 'en', waitRange(3 * 3600)), 'about 2.5–3.5 hours');
  assert.equal(formatRange(ko, 'ko', waitRange(20)), '1분 이내');
});

test('roundAhead shows no false precision', () => {
  assert.deepEqual(roundAhead(37), { n: 37, about: false });
  assert.deepEqual(roundAhead(1234), { n: 1200, about: true });
  assert.deepEqual(roundAhead(98765), { n: 99000, about: true });
  assert.equal(formatAhead(translator('en'), 'en', roundAhead(12345)), 'about 12,000');
  assert.equal(formatAhead(translator('ko'), 'ko', roundAhead(12345)), '약 12,000');
});

test('tier1Poll polls no later than the turn is due', () => {
  assert.equal(tier1Poll(10, 30), 2);
  assert.equal(tier1Poll(10000, 30), 15);
  assert.equal(tier1Poll(10000, 3.2), 3.2);
  assert.equal(tier1Poll(10000, -5), 1);
  assert.equal(tier1Poll(600, Number.NaN), 8);
});
