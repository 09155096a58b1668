// A scheduled sale in Chromium against the real `vwr local -demo
// -demo-opens`: the visitor arrives before the opening and sees the
// countdown and the beacon round; the list closes and the page keeps R in
// its receipt; the local beacon stand-in's round draws the order; the page
// shows the drawn place and "Verify my place" recomputes it in the browser.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, axe, launchChromium, screenshot, startVWR, TIER1_ADMIN, waitFor } from './harness.js';

let vwr;
let browser;

before(async () => {
  // Opens 12 s after start; the draw's round comes ~3 s later (margin 1 s).
  vwr = await startVWR({ flags: ['-demo-opens', '12s', '-tier1-tick', '1s', '-demo-crowd', '0'], env: { VWR_DRAW_MARGIN: '1s' } });
  // Paused: the draw still happens, but nobody is admitted and sent away,
  // so the page stays to be verified.
  const r = await api(vwr.base, 'POST', '/vwr-api/vwr/admin/pause/demo', { token: TIER1_ADMIN });
  assert.equal(r.status, 200, r.text);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await vwr?.stop();
});

const text = (p, id) => p.evaluate((i) => document.getElementById(i)?.textContent || '', id);
const body = (p, key) => p.evaluate((k) => document.body.dataset[k] || '', key);

test('pre-queue countdown, beacon round, drawn place and "Verify my place"', async () => {
  // bypassCSP lets the test inject axe-core; the page itself runs under its strict CSP.
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, bypassCSP: true });
  const p = await ctx.newPage();
  await p.goto(`${vwr.base}/vwr/?event=demo&return=/events/demo&lang=en`);

  await waitFor(async () => (await body(p, 'phase')) === 'prequeue', { what: 'pre-queue phase' });
  assert.equal(await p.locator('#prequeue').isVisible(), true);
  await waitFor(async () => /\d+ s/.test(await text(p, 'countdown')), { what: 'a countdown in seconds' });
  const round = await text(p, 'round');
  assert.match(round, /^[\d,]+$/, 'the beacon round is shown');
  const st = await api(vwr.base, 'GET', '/vwr-api/vwr/status/demo');
  assert.equal(st.body.sale.phase, 'prequeue');
  assert.equal(Number(round.replace(/,/g, '')), st.body.sale.round, 'the page shows the scheduled round');
  assert.deepEqual(await axe(p), [], 'pre-queue page has no serious accessibility violations');
  assert.equal(await p.locator('#live').getAttribute('aria-live'), 'polite');
  await screenshot(p, 'draw-prequeue');

  // A second visitor reads the pre-queue in Korean.
  const ko = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: 'ko-KR' });
  const pk = await ko.newPage();
  await pk.goto(`${vwr.base}/vwr/?event=demo&return=/events/demo`);
  await waitFor(async () => (await body(pk, 'phase')) === 'prequeue', { what: 'Korean pre-queue phase' });
  assert.equal(await pk.evaluate(() => document.documentElement.lang), 'ko');
  assert.match(await text(pk, 'title'), /^\d\d:\d\d(:\d\d)?에 판매가 시작됩니다$/);
  await waitFor(async () => /\d+초/.test(await text(pk, 'countdown')), { what: 'a Korean countdown' });
  await ko.close();

  const rc = await p.evaluate(() => JSON.parse(localStorage.getItem('vwr:receipt:demo')));
  assert.match(rc.clientNonce, /^[0-9a-f]{32}$/);
  assert.match(rc.h, /^[0-9a-f]{64}$/);

  // The list closes at the opening: R goes into the receipt before the draw.
  await waitFor(async () => (await body(p, 'phase')) === 'drawn', { timeout: 45000, what: 'the draw' });
  const after = await p.evaluate(() => JSON.parse(localStorage.getItem('vwr:receipt:demo')));
  const doc = await api(vwr.base, 'GET', '/vwr-api/vwr/draw/demo');
  assert.equal(doc.body.status, 'drawn');
  assert.equal(after.root, doc.body.root, 'the receipt kept the published R');
  assert.ok(after.position === 1 || after.position === 2, `drawn among two tickets: ${after.position}`);
  assert.ok(after.proof && after.proof.n === 2, 'a Merkle proof is kept');
  assert.equal(await text(p, 'position'), String(after.position));

  await p.locator('#verify').click();
  await waitFor(async () => (await body(p, 'verified')) !== '', { what: 'verification' });
  assert.equal(await body(p, 'verified'), 'yes', await text(p, 'verify-result'));
  assert.match(await text(p, 'verify-result'), /^Verified/);
  assert.deepEqual(await axe(p), [], 'drawn page has no serious accessibility violations');
  await screenshot(p, 'draw-verified');

  // A tampered receipt fails the same check.
  await p.evaluate(() => {
    const r = JSON.parse(localStorage.getItem('vwr:receipt:demo'));
    r.root = '00'.repeat(32);
    localStorage.setItem('vwr:receipt:demo', JSON.stringify(r));
  });
  await p.locator('#verify').click();
  await waitFor(async () => (await body(p, 'verified')) === 'no', { what: 'a failed verification' });
  await ctx.close();
});
