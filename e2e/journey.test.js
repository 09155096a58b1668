// The whole two-tier journey in Chromium against the real `vwr local -demo`:
// event page → Tier 1 waiting page → Tier 2 queue → seat page → seat held.
// Tier 1 is paused/advanced and the Tier 2 slot is occupied/freed through
// the real admin and queue APIs, so every stage can be observed on purpose.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  QUEUE_ADMIN, TIER1_ADMIN, VIEWPORTS, api, axe, cookie, journal, launchChromium, screenshot, startVWR,
  waitFor, waitStage,
} from './harness.js';

// Tier 2 worker pass interval for this server; the leave test waits ten of them at most.
const WORKER_MS = 500;

let vwr;
let browser;

before(async () => {
  vwr = await startVWR({
    flags: ['-demo-crowd', '0', '-demo-threshold', '1', '-demo-batch', '1', '-demo-seats', '16', '-tier1-tick', '1s'],
    env: { QUEUE_ADMISSION_INTERVAL_MS: String(WORKER_MS) },
  });
  browser = await launchChromium();
});

after(async () => {
  // A test that failed before its unblock leaves a blocker renewing: stop
  // them all, or the timers keep this file's process (and node --test) alive.
  for (const id of renewals.values()) clearInterval(id);
  renewals.clear();
  await browser?.close();
  await vwr?.stop();
});

// --- server-side helpers (Node, not a browser) ---------------------------

const tier1 = (verb, event, body) => api(vwr.base, 'POST', `/vwr-api/vwr/admin/${verb}/${event}`, { token: TIER1_ADMIN, body });

async function tier1Status(event) {
  const r = await api(vwr.base, 'GET', `/vwr-api/vwr/admin/status/${event}`, { token: TIER1_ADMIN });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** setupEvent activates a Tier 1 event (paused) and sets its Tier 2 threshold. */
async function setupEvent(event, threshold = 1) {
  let r = await tier1('activate', event, { shards: 1, batchSize: 1 });
  assert.equal(r.status, 200, r.text);
  r = await tier1('pause', event);
  assert.equal(r.status, 200, r.text);
  r = await api(vwr.base, 'PUT', `/api/queue/admin/threshold/${event}`, { token: QUEUE_ADMIN, body: { threshold } });
  assert.equal(r.status, 200, r.text);
}

// The blockers' renewals: a holder who stops renewing frees the slot after
// QUEUE_ACTIVE_IDLE_SECONDS, as a closed tab does, so a blocker renews like
// the seat page until it leaves.
const renewals = new Map();

/** block takes the event's only Tier 2 slot as a header-identified user, so browsers queue. */
async function block(event, uid) {
  const r = await api(vwr.base, 'POST', `/api/queue/check/${event}`, { headers: { 'X-User-Id': uid } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.status, 'active', `blocker ${uid} should take the free slot: ${r.text}`);
  renewals.set(uid, setInterval(() => {
    api(vwr.base, 'POST', `/api/queue/heartbeat/${event}`, { headers: { 'X-User-Id': uid } }).catch(() => {});
  }, 10000));
  return r.body.entryToken;
}

/** renewed is the blocker's entry token, fresh (tokens last 20 s). */
async function renewed(event, uid) {
  const r = await api(vwr.base, 'POST', `/api/queue/heartbeat/${event}`, { headers: { 'X-User-Id': uid } });
  assert.equal(r.body.status, 'active', r.text);
  return r.body.entryToken;
}

async function unblock(event, uid) {
  clearInterval(renewals.get(uid));
  renewals.delete(uid);
  const r = await api(vwr.base, 'POST', `/api/queue/leave/${event}`, { headers: { 'X-User-Id': uid } });
  assert.equal(r.status, 200, r.text);
}

// --- browser helpers -----------------------------------------------------

/** inPage calls an API from the page, so the browser's cookies go along. */
function inPage(page, method, url, body) {
  return page.evaluate(async ([m, u, b]) => {
    const res = await fetch(u, { method: m, headers: b ? { 'Content-Type': 'application/json' } : {}, body: b ? JSON.stringify(b) : undefined });
    let json = null;
    try {
      json = await res.json();
    } catch {
      json = null;
    }
    return { status: res.status, body: json, type: res.headers.get('content-type') };
  }, [method, url, body]);
}

const path = (page) => {
  const u = new URL(page.url());
  return u.pathname + u.search;
};
const position = async (page) => Number(await page.evaluate(() => document.body.dataset.position));

async function noSeriousA11y(page, what) {
  const violations = await axe(page);
  assert.deepEqual(violations, [], `${what}: axe found serious/critical violations`);
}

// --- tests ---------------------------------------------------------------

/**
 * crowd puts other people into both tiers through the real APIs, so the
 * pages show a real line: `early` people who already passed Tier 1 and wait
 * in Tier 2 ahead of the visitor, and `late` Tier 1 positions that never come
 * to check. Returns the Tier 1 passes of the early ones (to leave later).
 */
async function crowd(event, early, late) {
  const assign = async (i, tag) => {
    const r = await api(vwr.base, 'POST', `/vwr-api/vwr/assign/${event}`, { headers: { 'Idempotency-Key': `${tag}-${Date.now()}-${i}` } });
    assert.equal(r.status, 201, r.text);
    return r.body;
  };
  const first = [];
  for (let i = 0; i < early; i++) first.push(await assign(i, 'early'));
  assert.equal((await tier1('advance', event, { by: early })).status, 200);
  const passes = [];
  for (const a of first) {
    const c = await api(vwr.base, 'GET', `/vwr-api/vwr/check/${event}/${a.requestId}`);
    assert.equal(c.body.admitted, true, c.text);
    const q = await api(vwr.base, 'POST', `/api/queue/check/${event}`, { token: c.body.token });
    assert.equal(q.body.status, 'queued', q.text);
    passes.push(c.body.token);
  }
  for (let i = 0; i < late; i++) await assign(i, 'late');
  return passes;
}

for (const [kind, viewport] of Object.entries(VIEWPORTS)) {
  test(`one visitor walks the whole way to a held seat (${kind})`, async () => {
    const event = 'demo';
    const blocker = `blocker-${kind}`;
    await tier1('pause', event);
    await block(event, blocker);
    const passes = await crowd(event, 4, 18);
    // bypassCSP lets the test inject axe-core; the pages themselves run under their strict CSP.
    const ctx = await browser.newContext({ viewport, locale: 'en-US', bypassCSP: true });
    const page = await ctx.newPage();
    journal(page);
    try {
      await walk({ ctx, page, event, blocker, passes });
    } finally {
      // Free every slot and place whatever happened, so later tests start clean.
      await unblock(event, blocker).catch(() => {});
      for (const token of passes) await api(vwr.base, 'POST', `/api/queue/leave/${event}`, { token }).catch(() => {});
      await inPage(page, 'POST', `/api/queue/leave/${event}`).catch(() => {});
      await ctx.close();
    }
  });
}

async function walk({ ctx, page, event, blocker, passes }) {
  // 1. The event page sends a visitor without a Tier 1 pass to the waiting room.
  await page.goto(`${vwr.base}/events/${event}`);
  assert.equal(path(page), `/vwr/?event=${event}&return=%2Fevents%2F${event}`);
  await waitStage(page, 'waiting');
  const pos = await position(page);
  const before = await tier1Status(event);
  assert.equal(pos, before.maxAssigned, 'the visitor is last in line');
  assert.equal(await cookie(ctx, 'urr-vwr-token'), undefined, 'no pass while waiting');
  // The line moves while they wait; the page follows on its own.
  assert.equal((await tier1('advance', event, { by: 8 })).status, 200);
  await waitFor(async () => Number((await page.getByTestId('serving').textContent()).replace(/\D/g, '')) === before.servingCounter + 8,
    { timeout: 10000, what: 'page shows the new serving counter' });
  assert.equal(await page.getByTestId('ahead').textContent(), String(pos - before.servingCounter - 8 - 1));
  assert.notEqual(await page.locator('#progress').getAttribute('aria-valuenow'), '0');
  await page.waitForTimeout(700); // let the progress bar finish its transition
  await screenshot(page, '1-waiting-room');
  await noSeriousA11y(page, 'Tier 1 waiting page');

  // 2. Tier 1 lets them in: the pass cookie is set and they are back on the event page, in the Tier 2 line.
  assert.equal((await tier1('advance', event, { by: 1000 })).status, 200);
  await waitStage(page, 'queued', 30000);
  assert.equal(path(page), `/events/${event}`);
  const pass = await cookie(ctx, 'urr-vwr-token');
  assert.ok(pass?.value, 'urr-vwr-token set');
  assert.equal(pass.httpOnly, true);
  assert.equal(pass.path, '/');
  // Two people without a Tier 1 pass join after them (behind), as the gateway header identifies them.
  for (const uid of [`late-${blocker}-1`, `late-${blocker}-2`]) {
    await api(vwr.base, 'POST', `/api/queue/check/${event}`, { headers: { 'X-User-Id': uid } });
  }
  await waitFor(async () => (await page.getByTestId('behind').textContent()) === '2', { timeout: 5000, what: 'two behind' });
  assert.equal(await position(page), passes.length + 1);
  assert.equal(await page.getByTestId('ahead').textContent(), String(passes.length));
  assert.equal(await page.getByTestId('users').textContent(), '1 of 1 places taken');
  assert.equal(await page.locator('#room-seats span[data-taken]').count(), 1, 'the shared room is drawn as seats');
  assert.equal(await page.locator('.room [role="progressbar"]').count(), 0, 'the shared room is not a progress bar');
  assert.match(await page.locator('#lead').textContent(), /second, shorter line/);
  await page.waitForTimeout(300);
  await screenshot(page, '2-queue');
  await noSeriousA11y(page, 'Tier 2 queue page');

  // Others hold a few seats in the meantime, with the blocker's entry token.
  // (Different seats per run: holds last five minutes.)
  const othersSeats = blocker.endsWith('phone') ? ['A3', 'A4', 'B6'] : ['A6', 'B2', 'B3'];
  const blockerEntry = await renewed(event, blocker);
  for (const seatId of othersSeats) {
    const r = await api(vwr.base, 'POST', `/api/seats/${event}/hold`, { body: { seatId }, headers: { 'x-queue-entry-token': blockerEntry } });
    assert.ok([200, 201].includes(r.status), r.text);
  }

  // 3. The people ahead leave and the slot frees: the entry cookie is set and the same URL shows the seat page.
  for (const token of passes) assert.equal((await api(vwr.base, 'POST', `/api/queue/leave/${event}`, { token })).status, 200);
  await unblock(event, blocker);
  await waitStage(page, ['seats', 'held'], 15000);
  assert.equal(path(page), `/events/${event}`);
  const entryCookie = await cookie(ctx, 'urr-entry-token');
  assert.ok(entryCookie?.value, 'urr-entry-token set');
  assert.equal(entryCookie.httpOnly, true);
  assert.equal(entryCookie.sameSite, 'Strict');
  await page.locator('.seat.available').first().waitFor();
  assert.equal(await page.locator(`.seat[data-seat="${othersSeats[0]}"]`).isDisabled(), true, 'a seat held by someone else is taken');
  await screenshot(page, '3-seats');
  await noSeriousA11y(page, 'seat page');

  // 4. Hold a seat.
  const seat = page.locator('.seat.available').nth(4);
  const seatId = await seat.getAttribute('data-seat');
  await seat.click();
  await page.locator('#hold').click();
  await waitStage(page, 'held', 10000);
  assert.match(await page.getByTestId('message').textContent(), new RegExp(`Seat ${seatId} is held for you until`));
  await screenshot(page, '4-held');
  const list = await inPage(page, 'GET', `/api/seats/${event}`);
  assert.equal(list.status, 200);
  assert.equal(list.body.seats.find((s) => s.id === seatId).status, 'mine');
  assert.equal(list.body.remaining, list.body.total - list.body.seats.filter((s) => s.status !== 'available').length);
  // Someone else cannot take it: the next person in line, let in with one
  // more place for a moment.
  const other = `late-${blocker}-1`;
  assert.equal((await api(vwr.base, 'PUT', `/api/queue/admin/threshold/${event}`, { token: QUEUE_ADMIN, body: { threshold: 2 } })).status, 200);
  let otherEntry = '';
  try {
    await waitFor(async () => {
      const r = await api(vwr.base, 'POST', `/api/queue/check/${event}`, { headers: { 'X-User-Id': other } });
      otherEntry = r.body.entryToken || '';
      return r.body.status === 'active';
    }, { timeout: 10000, what: `${other} let in` });
  } finally {
    await api(vwr.base, 'PUT', `/api/queue/admin/threshold/${event}`, { token: QUEUE_ADMIN, body: { threshold: 1 } });
  }
  const taken = await api(vwr.base, 'POST', `/api/seats/${event}/hold`, { body: { seatId }, headers: { 'x-queue-entry-token': otherEntry } });
  assert.equal(taken.status, 409);
  assert.equal(taken.body.code, 'seat_taken');
  // Without the entry cookie the seat API refuses.
  assert.equal((await api(vwr.base, 'GET', `/api/seats/${event}`)).status, 403);
  // The people who joined behind leave too.
  for (const uid of [`late-${blocker}-1`, `late-${blocker}-2`]) {
    await api(vwr.base, 'POST', `/api/queue/leave/${event}`, { headers: { 'X-User-Id': uid } });
  }
}

test('20 browsers: Tier 1 positions and Tier 2 admission order agree, reloads keep places', async () => {
  const event = 'order';
  const n = 20;
  await setupEvent(event, 1);
  await block(event, 'order-blocker');
  const pages = [];
  for (let i = 0; i < n; i++) {
    const ctx = await browser.newContext({ viewport: { width: 390, height: 700 } });
    pages.push(await ctx.newPage());
  }
  // Twenty pages load at once: more than the 30 s default navigation
  // timeout on a busy machine; the test is about order, not speed.
  await Promise.all(pages.map((p) => p.goto(`${vwr.base}/events/${event}`, { timeout: 120000 })));
  await Promise.all(pages.map((p) => waitStage(p, 'waiting', 60000)));
  const tier1Pos = await Promise.all(pages.map(position));
  assert.equal(new Set(tier1Pos).size, n, `distinct Tier 1 positions: ${tier1Pos}`);

  // Reload a few while waiting: same place.
  for (const i of [0, 7, 19]) {
    await pages[i].reload();
    await waitStage(pages[i], 'waiting');
    assert.equal(await position(pages[i]), tier1Pos[i], `page ${i} kept its Tier 1 position`);
  }

  // Let everyone through Tier 1 at once; they line up in Tier 2 behind the blocker.
  const adv = await tier1('advance', event, { by: n });
  assert.equal(adv.status, 200, adv.text);
  await Promise.all(pages.map((p) => waitStage(p, 'queued', 60000)));
  await waitFor(async () => {
    const ps = await Promise.all(pages.map(position));
    return new Set(ps).size === n && Math.max(...ps) === n;
  }, { timeout: 15000, what: 'every Tier 2 position settled' });
  const tier2Pos = await Promise.all(pages.map(position));
  const byTier1 = [...tier1Pos.keys()].sort((a, b) => tier1Pos[a] - tier1Pos[b]);
  assert.deepEqual(byTier1.map((i) => tier2Pos[i]), [...Array(n).keys()].map((k) => k + 1), 'Tier 2 line follows Tier 1 positions');

  // A reload in the Tier 2 line keeps the place too.
  await pages[byTier1[5]].reload();
  await waitStage(pages[byTier1[5]], 'queued');
  assert.equal(await position(pages[byTier1[5]]), 6);

  // Free the slot; each admitted visitor leaves at once, letting the next in.
  await unblock(event, 'order-blocker');
  const admitted = [];
  const done = new Set();
  while (admitted.length < n) {
    const i = await waitFor(async () => {
      const stages = await Promise.all(pages.map((p, k) => (done.has(k) ? 'done' : p.evaluate(() => document.body.dataset.stage).catch(() => ''))));
      const on = stages.map((s, k) => (s === 'seats' || s === 'held' ? k : -1)).filter((k) => k >= 0);
      assert.ok(on.length <= 1, `threshold 1 but ${on.length} on the seat page`);
      return on.length === 1 ? on[0] + 1 : 0;
    }, { timeout: 20000, what: `admission #${admitted.length + 1}` }) - 1;
    admitted.push(i);
    done.add(i);
    assert.equal((await inPage(pages[i], 'POST', `/api/queue/leave/${event}`)).status, 200);
  }
  assert.deepEqual(admitted.map((i) => tier1Pos[i]), [...tier1Pos].sort((a, b) => a - b), 'admitted in Tier 1 order');
  await Promise.all(pages.map((p) => p.context().close()));
});

test('tampered Tier 1 pass goes back to the waiting room; seat API needs a real entry token', async () => {
  const event = 'demo';
  await tier1('resume', event);
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${vwr.base}/events/${event}`);
  await waitStage(page, ['queued', 'seats'], 30000);
  const pass = await cookie(ctx, 'urr-vwr-token');
  const [h, p, sig] = pass.value.split('.');
  const flipped = sig[0] === 'A' ? `B${sig.slice(1)}` : `A${sig.slice(1)}`;
  await ctx.addCookies([{ ...pass, value: `${h}.${p}.${flipped}` }]);
  await page.goto(`${vwr.base}/events/${event}`);
  assert.equal(new URL(page.url()).pathname, '/vwr/');
  assert.equal(new URL(page.url()).searchParams.get('event'), event);

  // The seat API from Node: no token, and a token signed with a key the server does not have.
  const missing = await api(vwr.base, 'POST', `/api/seats/${event}/hold`, { body: { seatId: 'A1' } });
  assert.equal(missing.status, 403);
  assert.match(missing.headers.get('content-type'), /application\/json/);
  assert.equal(missing.body.code, 'entry_token_required');
  const forged = `${h}.${Buffer.from(JSON.stringify({ iss: 'vwr', aud: 'vwr-entry', sub: event, uid: 'mallory', exp: 4102444800, iat: 1 })).toString('base64url')}.${flipped}`;
  const bad = await api(vwr.base, 'POST', `/api/seats/${event}/hold`, { body: { seatId: 'A1' }, headers: { 'x-queue-entry-token': forged } });
  assert.equal(bad.status, 403);
  assert.equal(bad.body.code, 'entry_token_invalid');
  // A Tier 1 pass is not an entry token.
  const confused = await api(vwr.base, 'GET', `/api/seats/${event}`, { headers: { Cookie: `urr-entry-token=${pass.value}` } });
  assert.equal(confused.status, 403);
  await ctx.close();
});

test('Leave queue gives up the place, and the freed slot admits the next person with nobody acting', async (t) => {
  const event = 'leave';
  await setupEvent(event, 1);
  await tier1('resume', event);
  await block(event, 'leave-blocker');
  // bypassCSP lets the test inject axe-core; the pages themselves run under their strict CSP.
  const [a, b] = await Promise.all([0, 1].map(async () => (await browser.newContext({ bypassCSP: true })).newPage()));
  await a.goto(`${vwr.base}/events/${event}`);
  await waitStage(a, 'queued', 30000);
  await b.goto(`${vwr.base}/events/${event}`);
  await waitStage(b, 'queued', 30000);
  assert.equal(await position(a), 1);
  assert.equal(await position(b), 2);

  // Leaving asks first; "Stay in line" takes it back and nothing changes.
  await a.getByRole('button', { name: 'Leave queue' }).click();
  assert.match(await a.getByTestId('leave-ask').textContent(), /Leave the line\? Your place \(1\) goes to the next person/);
  await a.getByRole('button', { name: 'Stay in line' }).click();
  assert.equal(await a.locator('#leave-confirm').isVisible(), false);
  assert.equal(await a.getByRole('button', { name: 'Leave queue' }).isVisible(), true);
  assert.equal((await inPage(a, 'GET', `/api/queue/status/${event}`)).body.position, 1, 'still first after changing their mind');
  await a.getByRole('button', { name: 'Leave queue' }).click();
  await a.getByRole('button', { name: 'Yes, leave the line' }).click();
  await waitStage(a, 'left', 5000);
  assert.equal(await a.locator('h1').textContent(), 'You left the line');
  assert.match(await a.getByTestId('status').textContent(), /no longer in line/);
  // Nothing on the page still says they are in line.
  const visible = await a.evaluate(() => document.querySelector('main').innerText);
  assert.equal(await a.getByTestId('position').isVisible(), false, 'no place shown');
  for (const gone of ['You are in line', 'Do not close this page', 'Leave queue', 'Go to the home page']) {
    assert.ok(!visible.includes(gone), `"${gone}" still shows after leaving:\n${visible}`);
  }
  assert.equal(await a.getByRole('button', { name: 'Join the line again' }).isVisible(), true);
  await noSeriousA11y(a, 'Tier 2 page after leaving');
  await screenshot(a, '5-left');
  const after = await inPage(b, 'GET', `/api/queue/status/${event}`);
  assert.equal(after.body.position, 1, 'b moved up at once');
  const gone = await inPage(a, 'GET', `/api/queue/status/${event}`);
  assert.notEqual(gone.body.status, 'queued', 'a is out of the line');

  // Free the only slot: a worker pass admits b with nobody acting. That the
  // pass after the leave does it is services/queue's check (slotFreedForB,
  // no clock); a wall-clock bound here measured the machine's load.
  const t0 = Date.now();
  await unblock(event, 'leave-blocker');
  await waitFor(async () => (await inPage(b, 'GET', `/api/queue/status/${event}`)).body.status === 'active', { timeout: 10 * WORKER_MS, interval: 25, what: 'b active' });
  t.diagnostic(`b active ${Date.now() - t0} ms after the slot freed; worker interval ${WORKER_MS} ms`);
  await waitStage(b, ['seats', 'held'], 10000);
  // Join again: back in the line, with the way to leave again.
  await a.getByRole('button', { name: 'Join the line again' }).click();
  // b holds the only slot, so a waits again.
  await waitStage(a, 'queued', 10000);
  assert.equal(await a.locator('h1').textContent(), 'You are in line for this event');
  assert.equal(await a.getByRole('button', { name: 'Leave queue' }).isVisible(), true);
  assert.equal(await position(a), 1);
  await a.context().close();
  await b.context().close();
});

test('seat page: its clock runs to the slot\'s end; after a leave its renewal is refused, it goes back, and the same pass is done', async () => {
  const event = 'leaver';
  await setupEvent(event, 1);
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${vwr.base}/events/${event}`);
  await waitStage(page, 'waiting', 30000);
  assert.equal((await tier1('advance', event, { by: 1 })).status, 200);
  await waitStage(page, ['seats', 'held'], 30000);
  // The slot lasts QUEUE_ACTIVE_TTL_SECONDS (10 min); the token only 20 s.
  const [min] = (await page.locator('#timer-value').textContent()).split(':').map(Number);
  assert.ok(min >= 9, `the clock shows ${min} min, want the slot's 10`);
  // The visitor leaves (say, from another tab): the page's next renewal is
  // refused, the page says so and goes back, and the pass is done there.
  assert.equal((await inPage(page, 'POST', `/api/queue/leave/${event}`)).status, 200);
  // The page renews a third of the token's life (20 s) before it runs out.
  await waitStage(page, 'over', 30000);
  assert.match(await page.getByTestId('message').textContent(), /You left/);
  await waitStage(page, 'done', 30000);
  assert.equal(await page.getByRole('button', { name: 'Join the line again' }).isVisible(), true);
  await page.context().close();
});

test('status document is CDN-cacheable and the waiting pages are served cacheable', async () => {
  const st = await api(vwr.base, 'GET', '/vwr-api/vwr/status/demo');
  assert.equal(st.status, 200);
  assert.match(st.headers.get('cache-control'), /public/);
  for (const url of ['/vwr/', '/vwr/queue.html', '/vwr/vwr.js', '/vwr/vwr.css']) {
    const r = await api(vwr.base, 'GET', url);
    assert.equal(r.status, 200, url);
    assert.match(r.headers.get('cache-control'), /^public, max-age=\d+/, url);
  }
  const t1 = await tier1Status('demo');
  assert.equal(t1.active, true);
});
