// The ALTCHA vectors (internal/altcha/testdata/vectors.json) under Node:
// the npm altcha-lib (pinned in package.json) re-makes every challenge,
// whether Go or altcha-lib made it, verifies its payload and solves it; the
// page's solver (static/vwr/pow.js) finds the same numbers and builds the
// same Altcha headers. internal/altcha runs the same file in Go, and
// pow.test.js in Chromium.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import altcha from 'altcha-lib/v1';
import { expiresAt, payAtTheDoor, payload, search, sha256Hex } from '../static/vwr/pow.js';

const vectors = JSON.parse(readFileSync(new URL('../internal/altcha/testdata/vectors.json', import.meta.url), 'utf8'));
const key = vectors.hmacKey;

const libOptions = (o) => ({
  hmacKey: key,
  salt: o.salt,
  number: o.number,
  maxnumber: o.maxnumber,
  params: Object.fromEntries(o.params || []),
  ...(o.expires ? { expires: new Date(o.expires * 1000) } : {}),
});

test('the vectors hold challenges made by both Go and altcha-lib', () => {
  const by = vectors.challenges.reduce((m, v) => ({ ...m, [v.madeBy]: (m[v.madeBy] || 0) + 1 }), {});
  assert.ok(by.go >= 4 && by['altcha-lib'] >= 4, JSON.stringify(by));
  assert.ok(vectors.refused.length >= 12);
});

for (const v of vectors.challenges) {
  test(`altcha-lib re-makes, verifies and solves: ${v.name}`, async () => {
    // Parameters keep their order only through an ordered source.
    const made = await altcha.createChallenge({ ...libOptions(v.options), params: new URLSearchParams(v.options.params || []) });
    assert.deepEqual(made, v.challenge);
    assert.equal(await altcha.verifySolution(v.payload, key), true);
    const { promise } = altcha.solveChallenge(v.challenge.challenge, v.challenge.salt, v.challenge.algorithm, v.challenge.maxnumber);
    assert.equal((await promise).number, v.options.number);
  });

  test(`the page's solver finds the number and builds the header: ${v.name}`, () => {
    assert.equal(search(v.challenge.challenge, v.challenge.salt, 0, v.challenge.maxnumber), v.options.number);
    assert.equal(payload(v.challenge, v.options.number), v.payload);
  });
}

for (const v of vectors.refused) {
  test(`altcha-lib ${v.libAccepts ? 'accepts what vwr refuses' : 'refuses'}: ${v.name}`, async () => {
    let ok = false;
    try {
      ok = await altcha.verifySolution(v.payload, key);
    } catch {
      ok = false;
    }
    assert.equal(ok, v.libAccepts);
  });
}

test('pow.js search starts anywhere, stops at the end of its range and reports progress', () => {
  const salt = 'abc?event=demo&expires=4102444800&';
  const ch = createHash('sha256').update(`${salt}70000`).digest('hex');
  const seen = [];
  assert.equal(search(ch, salt, 0, 100000, (n) => seen.push(n)), 70000);
  assert.ok(seen.length >= 4 && seen.every((n, i) => i === 0 || n > seen[i - 1]), `progress ${seen}`);
  assert.equal(search(ch, salt, 70001, 100000), -1);
  assert.equal(search(ch, salt, 9999, 70000), 70000, 'a start with fewer digits than the answer');
  assert.throws(() => search('ABC', salt, 0, 10), /challenge/);
});

test('pow.js sha256Hex agrees with node:crypto at every block boundary', () => {
  for (let len = 0; len <= 200; len += 1) {
    const s = 'é'.repeat(len % 7) + 'x'.repeat(len);
    assert.equal(sha256Hex(s), createHash('sha256').update(s).digest('hex'), `length ${len}`);
  }
});

test('payAtTheDoor solves a refusal\'s challenge, keeps the solution, and re-sends it on a retry', async () => {
  const mem = new Map();
  const kv = { get: (k) => mem.get(k), set: (k, v) => mem.set(k, v), del: (k) => mem.delete(k) };
  const v = vectors.challenges.find((c) => c.madeBy === 'go' && c.options.expires);
  const refusal = (code) => Object.assign(new Error(code), { body: { code, challenge: v.challenge } });
  const isRefusal = (err) => (err.body?.challenge ? err.body.challenge : null);
  const sent = [];
  const progress = [];
  let answers = [refusal('pow_required'), { ok: 1 }];
  const send = async (h) => {
    sent.push(h);
    const a = answers.shift();
    if (a instanceof Error) throw a;
    return a;
  };
  const opts = { kv, key: 'vwr:pow:e', onProgress: (p) => progress.push(p), isRefusal, solver: async (ch) => search(ch.challenge, ch.salt, 0, ch.maxnumber) };
  assert.deepEqual(await payAtTheDoor(send, opts), { ok: 1 });
  assert.deepEqual(sent, [undefined, v.payload], 'first without a solution, then with the solved challenge');
  assert.deepEqual(progress, [100]);
  assert.equal(mem.get('vwr:pow:e').header, v.payload, 'the solution is kept for a retry');
  assert.equal(mem.get('vwr:pow:e').expires, v.options.expires * 1000);

  // A reload re-sends the kept solution first.
  sent.length = 0;
  answers = [{ ok: 2 }];
  assert.deepEqual(await payAtTheDoor(send, opts), { ok: 2 });
  assert.deepEqual(sent, [v.payload]);

  // An expired solution is not sent; a replay refusal drops it and solves anew.
  sent.length = 0;
  answers = [refusal('pow_replayed'), { ok: 3 }];
  assert.deepEqual(await payAtTheDoor(send, { ...opts, now: () => v.options.expires * 1000 + 1 }), { ok: 3 });
  assert.equal(sent[0], undefined, 'an expired solution must not be sent');

  // A kept solution of an easier challenge (the operator raised pow, or
  // activated the event after it was solved at the default) is dropped
  // and the refusal's challenge solved: no dead end.
  sent.length = 0;
  progress.length = 0;
  mem.set('vwr:pow:e', { header: 'a kept, too easy solution', expires: v.options.expires * 1000 });
  answers = [refusal('pow_too_easy'), { ok: 4 }];
  assert.deepEqual(await payAtTheDoor(send, opts), { ok: 4 });
  assert.deepEqual(sent, ['a kept, too easy solution', v.payload]);
  assert.equal(mem.get('vwr:pow:e').header, v.payload, 'the new solution is kept in its place');

  // Other errors pass through; refusals stop after three solves.
  answers = [Object.assign(new Error('503'), { body: { code: 'unavailable' } })];
  await assert.rejects(payAtTheDoor(send, opts), /503/);
  answers = [refusal('pow_invalid'), refusal('pow_invalid'), refusal('pow_invalid'), refusal('pow_invalid')];
  await assert.rejects(payAtTheDoor(send, opts), /pow_invalid/);
});

test('expiresAt reads the salt\'s expiry', () => {
  assert.equal(expiresAt('abc?event=e&expires=1795341600&'), 1795341600000);
  assert.equal(expiresAt('abc&'), 0);
  assert.equal(expiresAt('abc?expires=soon&'), 0);
});
