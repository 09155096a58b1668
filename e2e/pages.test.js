// Behaviour of the waiting pages in Chromium: the pages are served by the real
// `vwr local`; page.route stands in for the Tier 1/Tier 2 APIs where a rare
// answer (503, network loss, hostile ?return=) must be produced on demand.
// The full journey against the real APIs is in journey.test.js.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { launchChromium, startVWR, waitFor, waitStage } from './harness.js';

let vwr;
let browser;

before(async () => {
  vwr = await startVWR({ demo: false });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await vwr?.stop();
});

const json = (status, body, headers = {}) => ({ status, contentType: 'application/json', headers, body: JSON.stringify(body) });

// The stub origin answers /events/… (the path, not a ?return= mentioning it).
const isOrigin = (url) => url.pathname.startsWith('/events/');

/** page opens a fresh context whose /events/ pages are a stub "origin". */
async function page(opts = {}) {
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, ...opts });
  const p = await ctx.newPage();
  await p.route(isOrigin, (r) => r.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>origin</title><body data-stage="origin">origin</body>' }));
  return p;
}

// The shared return-path battery (internal/edge/testdata/return-paths.json),
// also run under Node (unit.test.js) and by the Go validator (internal/edge).
const battery = JSON.parse(readFileSync(new URL('../internal/edge/testdata/return-paths.json', import.meta.url), 'utf8'));

test('safeReturn gives the same answers in Chromium as the battery says', async () => {
  const p = await page();
  await p.goto(`${vwr.base}/vwr/common.js`);
  const got = await p.evaluate(async ({ cases, event, origin }) => {
    const m = await import('/vwr/common.js');
    return cases.map((c) => m.safeReturn(c.raw, event, origin));
  }, battery);
  assert.ok(battery.cases.length >= 40, 'the battery is loaded');
  battery.cases.forEach((c, i) => assert.equal(got[i], c.want ?? `/events/${battery.event}`, `${JSON.stringify(c.raw)}: ${c.why}`));
  await p.context().close();
});

test('hostile ?return= values of the battery never leave the site', async () => {
  const p = await page();
  await p.route('**/vwr-api/vwr/assign/**', (r) => r.fulfill(json(200, { active: false, admitted: true, token: 'a.b.c' })));
  for (const c of battery.cases.filter((x) => x.want === null && typeof x.raw === 'string')) {
    await p.goto(`${vwr.base}/vwr/?event=demo&return=${encodeURIComponent(c.raw)}`);
    await waitStage(p, 'origin');
    const u = new URL(p.url());
    assert.equal(u.origin, vwr.base, `${JSON.stringify(c.raw)} (${c.why}) left the site`);
    assert.equal(u.pathname, '/events/demo', `${JSON.stringify(c.raw)} (${c.why})`);
  }
  await p.context().close();
});

// The edge's canonical paths (internal/edge/testdata/edge-vectors.json):
// every return the edge builds for an encoded path is one the page follows
// exactly as built, in Chromium's URL parser.
const edgeVectors = JSON.parse(readFileSync(new URL('../internal/edge/testdata/edge-vectors.json', import.meta.url), 'utf8'));

test('the page follows every return the edge builds for an encoded path, unchanged', async () => {
  const returns = edgeVectors.cases.filter((c) => c.name.startsWith('encoded: ') && c.want === 'redirect').map((c) => {
    const q = new URL(c.location, 'https://shop.example').searchParams;
    return { name: c.name, event: q.get('event'), ret: q.get('return') };
  });
  assert.ok(returns.length >= 25, `${returns.length} encoded redirects`);
  const p = await page();
  await p.goto(`${vwr.base}/vwr/common.js`);
  const got = await p.evaluate(async ({ returns, origin }) => {
    const m = await import('/vwr/common.js');
    return returns.map((r) => m.safeReturn(r.ret, r.event, origin));
  }, { returns, origin: vwr.base });
  returns.forEach((r, i) => assert.equal(got[i], r.ret, `${r.name}: the page would go to ${got[i]}`));
  await p.context().close();
});

test('encoded paths to an event page meet the edge: the waiting room first, the canonical page after', async () => {
  // No stub origin here: the real vwr local answers, its demo site being the
  // protected origin behind the edge check.
  for (const raw of ['/%65vents/demo', '/ev%65nts/demo/%73eats', '/EVENTS/demo', '/events/%64emo', '//events/demo', '/x/%2e%2e/events/demo']) {
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    const hops = [];
    const onResponse = (r) => { if (r.request().isNavigationRequest()) hops.push({ url: r.url(), status: r.status() }); };
    p.on('response', onResponse);
    await p.goto(`${vwr.base}${raw}`, { waitUntil: 'commit' });
    // The event passes through (never activated), so the page gets a pass at
    // once and returns to the canonical path, where the origin answers.
    const want = raw.includes('eats') ? '/events/demo/seats' : '/events/demo';
    await waitFor(() => hops.some((h) => new URL(h.url).pathname === want), { what: `${raw} back at ${want}` });
    p.off('response', onResponse);
    const firstPage = hops.findIndex((h) => h.status !== 301 && h.status !== 302 && h.status !== 307);
    assert.equal(new URL(hops[firstPage].url).pathname, '/vwr/', `${raw}: the first page shown is not the waiting room: ${JSON.stringify(hops)}`);
    assert.equal(hops[firstPage].status, 200);
    await ctx.close();
  }
});

test('an inactive event passes straight through to ?return=, the API setting the pass as an HttpOnly cookie', async () => {
  const p = await page();
  // The real Tier 1 API: an event never activated fails open (pass-through).
  await p.goto(`${vwr.base}/vwr/?event=never-activated&return=${encodeURIComponent('/events/never-activated/seats?x=1')}`);
  await waitStage(p, 'origin');
  assert.equal(new URL(p.url()).pathname + new URL(p.url()).search, '/events/never-activated/seats?x=1');
  const c = (await p.context().cookies()).find((x) => x.name === 'urr-vwr-token');
  assert.ok(c, 'urr-vwr-token cookie set');
  assert.equal(c.httpOnly, true);
  assert.equal(c.sameSite, 'Lax');
  assert.match(c.value, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  await p.context().close();
});

test('check is called only once the serving counter reaches the position', async () => {
  const p = await page();
  let serving = 3;
  const calls = { assign: [], status: 0, check: [] };
  await p.route('**/vwr-api/vwr/assign/**', (r) => {
    calls.assign.push(r.request().headers()['idempotency-key']);
    r.fulfill(json(201, { requestId: 'req1', eventId: 'demo', position: 5, servingCounter: serving, peopleAhead: 1, estimatedWait: 10, nextPoll: 2 }));
  });
  await p.route('**/vwr-api/vwr/status/**', (r) => {
    calls.status += 1;
    if (calls.status >= 2) serving = 5;
    r.fulfill(json(200, { eventId: 'demo', active: true, servingCounter: serving, maxAssigned: 9, admitRatePerMinute: 60 }));
  });
  await p.route('**/vwr-api/vwr/check/**', (r) => {
    calls.check.push({ serving, url: r.request().url() });
    r.fulfill(json(200, { admitted: true, token: 'x.y.z', position: 5 }));
  });
  await p.goto(`${vwr.base}/vwr/?event=demo&return=/events/demo`);
  await waitStage(p, 'waiting');
  assert.equal(await p.getByTestId('position').textContent(), '5');
  assert.equal(await p.getByTestId('ahead').textContent(), '1');
  await waitStage(p, 'origin', 20000);
  assert.ok(calls.status >= 2, 'polled the status document');
  assert.equal(calls.check.length, 1, 'one check, when it could succeed');
  assert.equal(calls.check[0].serving, 5);
  assert.match(calls.check[0].url, /\/vwr-api\/vwr\/check\/demo\/req1$/);
  assert.equal(calls.assign.length, 1);
  assert.match(calls.assign[0], /^[A-Za-z0-9_-]{16,64}$/);
  await p.context().close();
});

test('reload keeps the Idempotency-Key, so the place is kept', async () => {
  const p = await page();
  const keys = [];
  await p.route('**/vwr-api/vwr/assign/**', (r) => {
    keys.push(r.request().headers()['idempotency-key']);
    r.fulfill(json(201, { requestId: 'req1', eventId: 'demo', position: 50, servingCounter: 1, peopleAhead: 48, estimatedWait: 100, nextPoll: 5 }));
  });
  await p.route('**/vwr-api/vwr/status/**', (r) => r.fulfill(json(200, { eventId: 'demo', active: true, servingCounter: 1, maxAssigned: 50, admitRatePerMinute: 0 })));
  await p.goto(`${vwr.base}/vwr/?event=demo`);
  await waitStage(p, 'waiting');
  await p.reload();
  await waitStage(p, 'waiting');
  await p.goto(`${vwr.base}/vwr/?event=other`);
  await waitStage(p, 'waiting');
  assert.equal(keys.length, 3);
  assert.equal(keys[0], keys[1], 'same key after reload');
  assert.notEqual(keys[0], keys[2], 'one key per event');
  await p.context().close();
});

test('503 shows the busy message and honours Retry-After; network loss says so and retries', async () => {
  const p = await page();
  let assigns = 0;
  const times = [];
  await p.route('**/vwr-api/vwr/assign/**', (r) => {
    assigns += 1;
    times.push(Date.now());
    if (assigns === 1) return r.fulfill(json(503, { error: 'busy', code: 'unavailable' }, { 'Retry-After': '3' }));
    if (assigns === 2) return r.abort('internetdisconnected');
    return r.fulfill(json(201, { requestId: 'r', eventId: 'demo', position: 9, servingCounter: 1, peopleAhead: 7, estimatedWait: 60, nextPoll: 5 }));
  });
  await p.route('**/vwr-api/vwr/status/**', (r) => r.fulfill(json(200, { eventId: 'demo', active: true, servingCounter: 1, maxAssigned: 9, admitRatePerMinute: 0 })));
  // Every status line the page shows, as it shows it: on a loaded machine
  // the 3 s can pass between two reads, and the next line replace the one
  // a read was about to check.
  await p.addInitScript(() => {
    globalThis.__lines = [];
    new MutationObserver(() => {
      const st = document.getElementById('status');
      const line = { stage: document.body?.dataset.stage, kind: st?.dataset.kind, text: st?.textContent };
      const last = globalThis.__lines.at(-1);
      if (!last || last.stage !== line.stage || last.kind !== line.kind || last.text !== line.text) globalThis.__lines.push(line);
    }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  });
  await p.goto(`${vwr.base}/vwr/?event=demo`);
  await waitStage(p, 'waiting', 30000);
  assert.equal(await p.getByTestId('position').textContent(), '9');
  assert.equal(assigns, 3);
  assert.ok(times[1] - times[0] >= 2900, `waited ${times[1] - times[0]} ms, Retry-After was 3 s`);
  const lines = (await p.evaluate(() => globalThis.__lines)).filter((l) => l.stage === 'retrying');
  const busy = lines.findIndex((l) => /very busy.*retrying in \d+ s/.test(l.text));
  const lost = lines.findIndex((l) => /cannot reach/.test(l.text));
  assert.ok(busy >= 0 && lost > busy, `the busy line, then the network one: ${JSON.stringify(lines)}`);
  assert.equal(lines[busy].kind, 'warn', 'busy is a warning, not a failure');
  await p.context().close();
});

test('a status outage keeps the error shown and backs off until a poll succeeds', async () => {
  const p = await page();
  const polls = [];
  await p.route('**/vwr-api/vwr/assign/**', (r) => r.fulfill(json(201, { requestId: 'r', eventId: 'demo', position: 9, servingCounter: 1, peopleAhead: 7, estimatedWait: 60, nextPoll: 2 })));
  await p.route('**/vwr-api/vwr/status/**', async (r) => {
    polls.push({ at: Date.now(), stage: await p.evaluate(() => document.body.dataset.stage) });
    if (polls.length <= 3) return r.abort('internetdisconnected');
    return r.fulfill(json(200, { eventId: 'demo', active: true, servingCounter: 2, maxAssigned: 9, admitRatePerMinute: 0 }));
  });
  await p.goto(`${vwr.base}/vwr/?event=demo`);
  await waitFor(() => polls.length >= 4, { timeout: 30000, what: 'fourth status poll' });
  assert.equal(polls[0].stage, 'waiting');
  // Retries follow the backoff directly, with the error still on screen.
  assert.deepEqual(polls.slice(1, 4).map((x) => x.stage), ['retrying', 'retrying', 'retrying']);
  // backoff(2) is 4 s ± 25 %, backoff(3) 8 s ± 25 %: the wait grows while the outage lasts.
  assert.ok(polls[3].at - polls[2].at > polls[2].at - polls[1].at, `waits ${polls.map((x) => x.at - polls[0].at)}`);
  await waitStage(p, 'waiting', 10000);
  assert.equal(await p.getByTestId('serving').textContent(), '2');
  await p.context().close();
});

test('a lost place (check answers 404) is taken again with a new Idempotency-Key', async () => {
  const p = await page();
  const keys = [];
  await p.route('**/vwr-api/vwr/assign/**', (r) => {
    keys.push(r.request().headers()['idempotency-key']);
    const [id, pos] = keys.length === 1 ? ['lost', 1] : ['fresh', 3];
    r.fulfill(json(201, { requestId: id, eventId: 'demo', position: pos, servingCounter: 1, peopleAhead: pos - 1, estimatedWait: 10, nextPoll: 2 }));
  });
  await p.route('**/vwr-api/vwr/check/**', (r) => r.fulfill(json(404, { error: 'unknown request id', code: 'not_found' })));
  await p.route('**/vwr-api/vwr/status/**', (r) => r.fulfill(json(200, { eventId: 'demo', active: true, servingCounter: 1, maxAssigned: 3, admitRatePerMinute: 0 })));
  await p.goto(`${vwr.base}/vwr/?event=demo`);
  await waitStage(p, 'waiting');
  assert.equal(await p.getByTestId('position').textContent(), '3');
  assert.equal(keys.length, 2);
  assert.notEqual(keys[0], keys[1], 'the lost place\'s key is not reused');
  await p.context().close();
});

test('a malformed event id shows an error instead of calling the API', async () => {
  const p = await page();
  let called = false;
  await p.route('**/vwr-api/**', (r) => {
    called = true;
    r.abort();
  });
  await p.goto(`${vwr.base}/vwr/?event=${encodeURIComponent('../admin')}`);
  await waitStage(p, 'error');
  assert.match(await p.getByTestId('status').textContent(), /not valid/);
  assert.equal(called, false);
  await p.context().close();
});

test('Korean from navigator.language, English from ?lang=en', async () => {
  const ctx = await browser.newContext({ locale: 'ko-KR' });
  const p = await ctx.newPage();
  await p.route('**/vwr-api/vwr/assign/**', (r) => r.fulfill(json(201, { requestId: 'r', eventId: 'demo', position: 12345, servingCounter: 1, peopleAhead: 12343, estimatedWait: 600, nextPoll: 5 })));
  await p.route('**/vwr-api/vwr/status/**', (r) => r.fulfill(json(200, { eventId: 'demo', active: true, servingCounter: 1, maxAssigned: 9, admitRatePerMinute: 0 })));
  await p.goto(`${vwr.base}/vwr/?event=demo`);
  await waitStage(p, 'waiting');
  assert.equal(await p.evaluate(() => document.documentElement.lang), 'ko');
  assert.equal(await p.locator('h1').textContent(), '대기실에 입장했습니다');
  assert.equal(await p.getByTestId('position').textContent(), '12,345');
  // The switch link keeps the page's query and names the other language.
  const link = p.locator('#lang');
  assert.equal(await link.textContent(), 'English');
  assert.equal(await link.getAttribute('href'), '?event=demo&lang=en');
  await link.click();
  await waitStage(p, 'waiting');
  assert.equal(await p.locator('h1').textContent(), 'You are in the waiting room');
  assert.equal(await link.getAttribute('href'), '?event=demo&lang=ko');
  await ctx.close();
});

test('Tier 2 page: no Tier 1 pass sends the visitor to the waiting room', async () => {
  const p = await page();
  await p.unroute(isOrigin);
  await p.route('**/api/queue/check/**', (r) => r.fulfill(json(401, { error: 'tier 1 pass required', code: 'unauthorized' })));
  await p.route('**/vwr-api/vwr/assign/**', (r) => r.fulfill(json(201, { requestId: 'r', eventId: 'demo', position: 2, servingCounter: 1, peopleAhead: 0, estimatedWait: 5, nextPoll: 2 })));
  await p.route('**/vwr-api/vwr/status/**', (r) => r.fulfill(json(200, { eventId: 'demo', active: true, servingCounter: 1, maxAssigned: 2, admitRatePerMinute: 0 })));
  await p.goto(`${vwr.base}/vwr/queue.html?event=demo`);
  await waitFor(() => new URL(p.url()).pathname === '/vwr/', { what: 'waiting room' });
  const u = new URL(p.url());
  assert.equal(u.searchParams.get('event'), 'demo');
  assert.equal(u.searchParams.get('return'), '/events/demo');
  await p.context().close();
});

test('Tier 2 page stops redirecting when the entry cookie never sticks', async () => {
  const ctx = await browser.newContext();
  const p = await ctx.newPage();
  // The "seat page" without a stored entry cookie is the queue page again.
  const queueHtml = await (await fetch(`${vwr.base}/vwr/queue.html`)).text();
  await p.route(isOrigin, (r) => r.fulfill({ status: 200, contentType: 'text/html', body: queueHtml }));
  let checks = 0;
  await p.route('**/api/queue/check/**', (r) => {
    checks += 1;
    r.fulfill(json(200, { queued: false, status: 'active', eventId: 'demo', position: 0, entryToken: 'x', threshold: 3, currentUsers: 1, nextPoll: 3 }));
  });
  await p.goto(`${vwr.base}/events/demo`);
  await waitStage(p, 'error', 20000);
  assert.match(await p.getByTestId('status').textContent(), /allow cookies/);
  assert.equal(checks, 4);
  await ctx.close();
});

/**
 * saleRoutes answers assign with a pre-queue ticket (its hash computed from
 * the page's own nonce, as the page checks) and check with whatever
 * answers() returns next.
 */
async function saleRoutes(p, answers) {
  const { createHash } = await import('node:crypto');
  const opensAt = new Date(Date.now() + 1000).toISOString();
  await p.route('**/vwr-api/vwr/assign/**', (r) => {
    const nonce = Buffer.from(r.request().headers()['client-nonce'], 'hex');
    const h = createHash('sha256').update(Buffer.concat([Buffer.from('req-sale'), nonce])).digest('hex');
    r.fulfill(json(201, { phase: 'prequeue', requestId: 'req-sale', eventId: 'demo', ticketHash: h, opensAt, round: 77, nextPoll: 2 }));
  });
  const sale = { opensAt, round: 77, phase: 'drawing' };
  await p.route('**/vwr-api/vwr/check/**', (r) => r.fulfill(json(200, answers(sale))));
  await p.route('**/vwr-api/vwr/draw/**', (r) => r.fulfill(json(200, { status: 'drawing' })));
}

test('the drawing state says what is happening, and an admitted answer during it goes to the event', async () => {
  const p = await page();
  let checks = 0;
  await saleRoutes(p, (sale) => {
    checks += 1;
    // Drawing twice, then the draw itself lets the visitor in (no phase in the answer).
    if (checks <= 2) return { admitted: false, phase: 'drawing', ticketHash: '00', sale, nextPoll: 2 };
    return { admitted: true, token: 'x.y.z', position: 4, expiresAt: new Date(Date.now() + 600000).toISOString() };
  });
  await p.goto(`${vwr.base}/vwr/?event=demo&return=${encodeURIComponent('/events/demo')}`);
  await waitFor(async () => (await p.evaluate(() => document.body.dataset.phase)) === 'drawing', { what: 'drawing' });
  assert.equal(await p.locator('h1').textContent(), 'Drawing places now');
  assert.equal(await p.locator('#drawing-row').isVisible(), true);
  assert.equal(await p.locator('#countdown').isVisible(), false, 'no countdown once the sale opened');
  const text = await p.evaluate(() => document.querySelector('main').innerText);
  assert.ok(!/Opens in/.test(text) && !/Demand is high/.test(text), text);
  assert.match(await p.getByTestId('status').textContent(), /public random number/);
  // Admitted while drawing: the page goes on by itself, no reload.
  await waitStage(p, 'origin', 20000);
  assert.equal(new URL(p.url()).pathname, '/events/demo');
  await p.context().close();
});

test('Tier 2 page: refusals are retried with a message; only a bad link stops, with a way out', async () => {
  const p = await page();
  await p.unroute(isOrigin);
  let calls = 0;
  await p.route('**/api/queue/check/**', (r) => {
    calls += 1;
    if (calls === 1) return r.fulfill(json(404, { error: 'unknown event', code: 'unknown_event' }, { 'Retry-After': '1' }));
    return r.fulfill(json(200, { queued: true, status: 'queued', eventId: 'demo', position: 2, peopleAhead: 1, peopleBehind: 0, queueSize: 2, estimatedWait: 30, nextPoll: 30, currentUsers: 3, threshold: 3 }));
  });
  await p.goto(`${vwr.base}/vwr/queue.html?event=demo`);
  await waitStage(p, 'retrying');
  assert.match(await p.getByTestId('status').textContent(), /not taking visitors right now/);
  await waitStage(p, 'queued', 20000);
  assert.equal(await p.getByTestId('users').textContent(), '3 of 3 places taken');
  assert.match(await p.getByTestId('room-note').textContent(), /All places are taken/);
  await p.goto(`${vwr.base}/vwr/queue.html?event=${encodeURIComponent('a b')}`);
  await waitStage(p, 'error');
  assert.equal(await p.getByRole('link', { name: 'Go to the home page' }).isVisible(), true);
  assert.equal(await p.getByRole('button', { name: 'Leave queue' }).isVisible(), false);
  await p.context().close();
});

test('the language chosen with ?lang= follows the visitor to pages opened without it', async () => {
  const ctx = await browser.newContext({ locale: 'en-US' });
  const p = await ctx.newPage();
  await p.route('**/vwr-api/vwr/assign/**', (r) => r.fulfill(json(201, { requestId: 'r', eventId: 'demo', position: 9, servingCounter: 1, peopleAhead: 7, estimatedWait: 60, nextPoll: 5 })));
  await p.route('**/vwr-api/vwr/status/**', (r) => r.fulfill(json(200, { eventId: 'demo', active: true, servingCounter: 1, maxAssigned: 9, admitRatePerMinute: 0 })));
  await p.route('**/api/queue/check/**', (r) => r.fulfill(json(200, { queued: true, status: 'queued', eventId: 'demo', position: 1, peopleAhead: 0, peopleBehind: 0, queueSize: 1, estimatedWait: 5, nextPoll: 30, currentUsers: 1, threshold: 1 })));
  await p.goto(`${vwr.base}/vwr/?event=demo&lang=ko`);
  await waitStage(p, 'waiting');
  assert.equal(await p.evaluate(() => document.documentElement.lang), 'ko');
  assert.equal((await ctx.cookies()).find((c) => c.name === 'urr-lang')?.value, 'ko');
  await p.goto(`${vwr.base}/vwr/queue.html?event=demo`);
  await waitStage(p, 'queued');
  assert.equal(await p.evaluate(() => document.documentElement.lang), 'ko', 'the queue page keeps the choice');
  assert.equal(await p.locator('h1').textContent(), '이 공연의 대기열에 있습니다');
  // The edge's redirect carries ?lang= inside ?return=: it counts as a choice too.
  const en = await browser.newContext({ locale: 'ko-KR' });
  const q = await en.newPage();
  await q.route('**/vwr-api/vwr/assign/**', (r) => r.fulfill(json(201, { requestId: 'r', eventId: 'demo', position: 9, servingCounter: 1, peopleAhead: 7, estimatedWait: 60, nextPoll: 5 })));
  await q.route('**/vwr-api/vwr/status/**', (r) => r.fulfill(json(200, { eventId: 'demo', active: true, servingCounter: 1, maxAssigned: 9, admitRatePerMinute: 0 })));
  await q.goto(`${vwr.base}/vwr/?event=demo&return=${encodeURIComponent('/events/demo?lang=en')}`);
  await waitStage(q, 'waiting');
  assert.equal(await q.evaluate(() => document.documentElement.lang), 'en');
  await ctx.close();
  await en.close();
});

// A status document as the API serves it: one shard holding places
// 1…1000, the serving counter at serving, full ticks of 40 every tickSeconds
// with the next one a second away.
function statusDoc(serving, tickSeconds, extra = {}) {
  const now = Date.now();
  return {
    eventId: 'demo', active: true, paused: false, servingCounter: serving, maxAssigned: 1000, admitRatePerMinute: 0,
    updatedAt: new Date(now).toISOString(), shardCounters: [1000], asOf: new Date(now).toISOString(), enterRatePerSecond: 0,
    pace: { batch: 40, tickSeconds, nextTickAt: new Date(now + 1000).toISOString(), measured: true, noticeSeconds: 1 },
    ...extra,
  };
}

for (const [lang, want] of [
  ['en', { ahead: 'about 400', first: 'about 4–6 minutes', later: 'about 2–3 minutes', paused: /^paused \(about 2–4 minutes once it resumes\)$/, text: /50 % of the line ahead of you is through/ }],
  ['ko', { ahead: '약 400', first: '약 4–6분', later: '약 2–3분', paused: /^일시 정지 \(재개 후 약 2–4분\)$/, text: /내 앞 대기열의 50%가 입장했습니다/ }],
]) {
  test(`the wait is a rounded range and the bar the line passed since joining (${lang})`, async () => {
    const p = await page({ locale: lang === 'ko' ? 'ko-KR' : 'en-US' });
    let serving = 99;
    let paused = false;
    await p.route('**/vwr-api/vwr/assign/**', (r) => r.fulfill(json(201, {
      requestId: 'req1', eventId: 'demo', position: 500, servingCounter: 99, peopleAhead: 400, estimatedWait: 302, nextPoll: 4,
    })));
    // 400 ahead at 40 per 30 s tick: 1 + 10 × 30 + 1 s; then 200 ahead.
    await p.route('**/vwr-api/vwr/status/**', (r) => r.fulfill(json(200, statusDoc(serving, 30, { paused }))));
    await p.goto(`${vwr.base}/vwr/?event=demo`);
    await waitStage(p, 'waiting');
    assert.equal(await p.getByTestId('wait').textContent(), want.first);
    assert.equal(await p.getByTestId('ahead').textContent(), want.ahead);
    assert.equal(await p.locator('#progress').getAttribute('aria-valuenow'), '0');

    serving = 299;
    await waitFor(async () => (await p.getByTestId('wait').textContent()) === want.later, { timeout: 10000, what: 'the next estimate' });
    assert.equal(await p.getByTestId('ahead').textContent(), want.ahead.replace('400', '200'));
    const bar = p.locator('#progress');
    assert.equal(await bar.getAttribute('aria-valuenow'), '50');
    assert.match(await bar.getAttribute('aria-valuetext'), want.text);
    await p.waitForTimeout(700); // the bar's width transition
    const ratio = await p.evaluate(() => document.getElementById('progress-fill').getBoundingClientRect().width
      / document.getElementById('progress').getBoundingClientRect().width);
    assert.ok(Math.abs(ratio - 0.5) < 0.03, `the bar is ${ratio} full`);
    // No false precision anywhere: no seconds, no unrounded count.
    assert.doesNotMatch(await p.getByTestId('wait').textContent(), /\d+ ?(s|초)\b/);

    // The screen reader hears the range politely, once, not on every poll.
    const live = p.locator('#live');
    assert.equal(await live.getAttribute('aria-live'), 'polite');
    const spoken = await live.textContent();
    assert.ok(spoken.includes(want.first) || spoken.includes(want.later), `live region: ${spoken}`);

    // Paused: nobody goes in, and the wait counts from a resumption (a tick
    // later than it would have been: 30 + 5 × 30 + 1 s).
    paused = true;
    await waitFor(async () => want.paused.test(await p.getByTestId('wait').textContent()), { timeout: 10000, what: 'the paused estimate' });
    assert.equal(await p.getByTestId('status').getAttribute('data-kind'), 'warn');
    await p.context().close();
  });
}

test('the live region speaks when the rounded wait changes, not on every poll', async () => {
  const p = await page();
  let polls = 0;
  await p.route('**/vwr-api/vwr/assign/**', (r) => r.fulfill(json(201, {
    requestId: 'req1', eventId: 'demo', position: 60, servingCounter: 1, peopleAhead: 58, estimatedWait: 40, nextPoll: 2,
  })));
  await p.route('**/vwr-api/vwr/status/**', (r) => {
    polls += 1;
    r.fulfill(json(200, statusDoc(1, 10)));
  });
  await p.addInitScript(() => {
    window.spoken = [];
    new MutationObserver(() => window.spoken.push(document.getElementById('live')?.textContent))
      .observe(document, { subtree: true, childList: true, characterData: true });
  });
  await p.goto(`${vwr.base}/vwr/?event=demo`);
  await waitStage(p, 'waiting');
  await waitFor(() => polls >= 4, { timeout: 20000, what: 'four status polls' });
  const spoken = (await p.evaluate(() => window.spoken)).filter((x) => x);
  assert.equal(new Set(spoken).size, 1, `spoken: ${JSON.stringify(spoken)}`);
  await p.context().close();
});
