// The operator console in Chromium against the real `vwr local -demo`: the
// demo's simulated crowd moves while the console's charts follow it, a
// pause (by keyboard alone) stops the serving counter, a threshold empties
// the Tier 2 line, axe finds nothing in either language, and a page on
// another origin of the same host cannot steer it. The screenshots are the
// README's (make screenshots).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { spawn } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  QUEUE_ADMIN, ROOT, SHOTS, TIER1_ADMIN, VIEWPORTS, api, axe, buildVWR, freePort, launchChromium, screenshot, startVWR, waitFor,
} from './harness.js';

import { niceStep, segments, spans, windowOf, xStep, yTicks } from '../static/console/chart.js';
import { duration, pickLang, tables, translator } from '../static/console/i18n.js';

let vwr;
let browser;
const DEMO_TICK_MS = 2000; // vwr local -demo's advancer tick

test('chart helpers: round ticks from 0, gaps, shaded spans, the window', () => {
  assert.deepEqual(yTicks(0), [0, 1]);
  assert.deepEqual(yTicks(3), [0, 1, 2, 3]);
  assert.deepEqual(yTicks(37), [0, 10, 20, 30, 40]);
  assert.deepEqual(yTicks(1234), [0, 500, 1000, 1500]);
  assert.equal(niceStep(7), 2);
  // A missing reading or a jump in time breaks the line.
  assert.deepEqual(segments([[0, 1], [1, 2], [2, null], [3, 4], [10, 5]], 3), [[[0, 1], [1, 2]], [[3, 4]], [[10, 5]]]);
  const s = [0, 1, 2, 3, 4].map((at) => ({ at, p: at === 1 || at === 2 || at === 4 }));
  assert.deepEqual(spans(s, (x) => x.p, 1), [[1, 3], [4, 5]]);
  assert.equal(windowOf(undefined, 0, 300000), 60000);
  assert.equal(windowOf(0, 90000, 300000), 120000);
  assert.equal(windowOf(0, 3600000, 300000), 300000);
  assert.equal(xStep(60000), 15000);
  assert.equal(xStep(300000), 60000);
});

test('console words: both languages have every key, durations read well', () => {
  assert.deepEqual(Object.keys(tables.ko).sort(), Object.keys(tables.en).sort());
  const en = translator('en');
  const ko = translator('ko');
  assert.equal(pickLang('ko-KR', 'en'), 'ko');
  assert.equal(pickLang(undefined, 'fr'), 'en');
  assert.equal(duration(en, 45), '45 s');
  assert.equal(duration(en, 250), '4 min 10 s');
  assert.equal(duration(ko, 7500), '2시간 5분');
  assert.equal(en('chart.ago', 30000), '−30 s');
  assert.equal(ko('chart.ago', 120000), '−2분');
});

/** palette reads console.css's custom properties: light, and dark over light. */
async function palettes() {
  const css = await readFile(new URL('../static/console/console.css', import.meta.url), 'utf8');
  const vars = (block) => Object.fromEntries([...block.matchAll(/--([\w-]+):\s*([^;]+);/g)].map((m) => [m[1], m[2].trim()]));
  const light = vars(css.match(/^:root\s*{([^}]*)}/m)[1]);
  const dark = { ...light, ...vars(css.match(/@media \(prefers-color-scheme: dark\)\s*{\s*:root\s*{([^}]*)}/)[1]) };
  return { light, dark };
}

/** rgba parses #rrggbb or rgba(r, g, b, a). */
function rgba(c) {
  const hex = c.match(/^#([0-9a-f]{6})$/i);
  if (hex) return [0, 2, 4].map((i) => Number.parseInt(hex[1].slice(i, i + 2), 16)).concat(1);
  const m = c.match(/^rgba?\(([^)]+)\)$/);
  assert.ok(m, `colour ${c}`);
  const [r, g, b, a = 1] = m[1].split(',').map(Number);
  return [r, g, b, a];
}

/** over composites a translucent colour over an opaque one. */
const over = (top, bottom) => top.slice(0, 3).map((v, i) => v * top[3] + bottom[i] * (1 - top[3])).concat(1);

/** contrast is WCAG 2's contrast ratio of two opaque colours. */
function contrast(a, b) {
  const lum = ([r, g, b2]) => {
    const f = (v) => { const s = v / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b2);
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

test('console colours: every pair the page draws meets WCAG AA in both schemes', async () => {
  // [foreground, background, minimum]: text 4.5:1; lines, shapes, borders
  // that carry meaning and the focus ring 3:1 (WCAG 1.4.3, 1.4.11).
  const text = 4.5;
  const shape = 3;
  const pairs = [
    ['text', 'card', text], ['text', 'bg', text], ['muted', 'card', text], ['muted', 'bg', text],
    ['accent-strong', 'card', text], ['accent-strong', 'bg', text], ['accent-strong', 'accent-soft', text],
    ['text', 'accent-soft', text], ['muted', 'accent-soft', text],
    ['ok', 'ok-soft', text], ['ok', 'card', text], ['warn', 'warn-soft', text], ['warn', 'card', text],
    ['bad', 'bad-soft', text], ['bad', 'card', text], ['text', 'bg', text],
    ['muted', 'band-paused/card', text], ['muted', 'band-recovering/card', text],
    ['c1', 'card', shape], ['c2', 'card', shape], ['c3', 'card', shape], ['c4', 'card', shape],
    ['c1', 'band-paused/card', shape], ['c2', 'band-paused/card', shape],
    ['c1', 'band-recovering/card', shape], ['c2', 'band-recovering/card', shape],
    ['muted', 'card', shape], ['accent', 'card', shape], ['accent', 'bg', shape],
  ];
  const { light, dark } = await palettes();
  // The primary button: white on the accent in light, near-black in dark.
  const failures = [];
  for (const [scheme, vars, onAccent] of [['light', light, '#ffffff'], ['dark', dark, '#14151a']]) {
    const colour = (name) => {
      const [top, under] = name.split('/');
      const c = rgba(vars[top] ?? top);
      return under ? over(c, colour(under)) : c;
    };
    for (const [fg, bg, min] of [...pairs, [onAccent, 'accent', text]]) {
      const ratio = contrast(colour(fg), colour(bg));
      if (ratio < min) failures.push(`${scheme}: ${fg} on ${bg} is ${ratio.toFixed(2)}:1, under ${min}:1`);
    }
  }
  assert.deepEqual(failures, []);
});

before(async () => {
  // 60 visitors, 2 let through Tier 1 per 2 s tick: the line lasts ~60 s,
  // long enough to pause it with people waiting on a slow machine. Each
  // stays a minute on the protected pages, so past the threshold of 3 a
  // Tier 2 line forms and stays until the threshold is raised.
  vwr = await startVWR({ flags: ['-demo-crowd', '60', '-demo-batch', '2', '-demo-crowd-stay', '60s'] });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await vwr?.stop();
});

const status1 = async () => (await api(vwr.base, 'GET', '/vwr-api/vwr/admin/status/demo', { token: TIER1_ADMIN })).body;
const stats2 = async () => (await api(vwr.base, 'GET', '/api/queue/admin/stats/demo', { token: QUEUE_ADMIN })).body;

/** value reads a headline number of the page ("1,234" → 1234). */
async function value(page, testid) {
  const s = await page.textContent(`[data-testid="${testid}"]`);
  const n = Number.parseInt(String(s).replace(/[^\d-]/g, ''), 10);
  return Number.isFinite(n) ? n : undefined;
}

/** line is the points of a chart's last drawn segment of series cls. */
function line(page, chart, cls) {
  return page.evaluate(([c, k]) => {
    const all = document.querySelectorAll(`#${c} polyline.${k}`);
    return all.length ? all[all.length - 1].getAttribute('points') : '';
  }, [chart, cls]);
}

async function signIn(page, token) {
  await page.waitForSelector('#signin:not([hidden])');
  await page.fill('#token', token);
  await page.press('#token', 'Enter');
}

/** confirm answers the open confirmation dialog with its Confirm button. */
async function confirm(page) {
  await page.waitForSelector('dialog#confirm[open]');
  await page.click('#confirm-yes');
}

test('the console follows the demo sale live and steers it', async () => {
  const ctx = await browser.newContext({ viewport: VIEWPORTS.desktop });
  const page = await ctx.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  // The page runs under its own CSP (no bypassCSP): anything it refused is a bug.
  page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) problems.push(m.text()); });
  await page.goto(`${vwr.base}/vwr/console/#event=demo`);
  await page.evaluate(() => performance.setResourceTimingBufferSize(10000));

  // Signing in: a wrong token is refused, axe is clean on the form.
  await signIn(page, 'not-the-token');
  await waitFor(async () => (await page.textContent('[data-testid="signin-error"]')).includes('does not open'), { what: 'the wrong-token message' });
  assert.deepEqual(await axe(page, { underCSP: true, all: true }), [], 'axe on the sign-in form');
  await signIn(page, TIER1_ADMIN);
  await page.waitForSelector('#app:not([hidden])');
  await waitFor(async () => (await page.textContent('#event-title')) === 'Event demo' && (await value(page, 'serving')) === 0, { what: 'the demo event, before anyone came' });
  assert.equal(await value(page, 't1-waiting'), 0);

  // The crowd arrives (a page load of the waiting room lets it in) and the
  // charts follow it: places handed out, then the serving counter rising.
  const r = await fetch(`${vwr.base}/vwr/?event=demo`);
  assert.equal(r.status, 200);
  await waitFor(async () => (await value(page, 't1-waiting')) > 0, { what: 'Tier 1 waiting > 0 on the console' });
  const first = await line(page, 'chart-t1', 's2');
  const serving0 = await value(page, 'serving');
  await waitFor(async () => (await value(page, 'serving')) >= serving0 + 4 && (await line(page, 'chart-t1', 's2')) !== first,
    { what: 'the serving counter rising on the chart' });
  await waitFor(async () => (await value(page, 't2-line')) >= 2, { what: 'a Tier 2 line' });
  assert.match(await page.textContent('#chart-t1 .summary'), /Places handed out 60/);
  assert.match(await page.textContent('[data-testid="proj-1"]'), /waiting ÷ .* let through per minute/);

  // The table toggle gives the same readings as text.
  await page.click('#chart-t1 .toggle');
  assert.equal(await page.getAttribute('#chart-t1 .toggle', 'aria-expanded'), 'true');
  await waitFor(async () => (await page.locator('#chart-t1 table.data tbody tr').count()) >= 5, { what: 'the Tier 1 table' });

  // Pause by keyboard alone: Tab to the control, Enter, confirm, Enter.
  await page.evaluate(() => document.activeElement?.blur());
  let focused = '';
  for (let i = 0; i < 80 && focused !== 'pause'; i++) {
    await page.keyboard.press('Tab');
    focused = await page.evaluate(() => document.activeElement?.dataset?.action || '');
  }
  assert.equal(focused, 'pause', 'Tab reaches the Pause control');
  await page.keyboard.press('Enter');
  await page.waitForSelector('dialog#confirm[open]');
  assert.match(await page.textContent('[data-testid="confirm-text"]'), /Pause demo\?/);
  assert.match(await page.textContent('[data-testid="confirm-call"]'), /POST Tier 1 \/vwr\/admin\/pause\/demo/);
  assert.equal((await status1()).paused, false, 'nothing changed before the confirmation');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'confirm-no', 'the dialog starts on Cancel');
  await page.keyboard.press('Shift+Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'confirm-yes');
  await page.keyboard.press('Enter');
  await waitFor(async () => /Pause: done \(HTTP 200\)/.test(await page.textContent('[data-testid="result-line"]')), { what: 'the pause answer' });
  assert.match(await page.textContent('[data-testid="result-body"]'), /"paused": true/);
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'result', 'focus moves to the answer');
  // Escape backs out of a confirmation: nothing is sent, focus returns.
  await page.focus('[data-action="resume"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('dialog#confirm[open]');
  await page.keyboard.press('Escape');
  await waitFor(async () => (await page.locator('dialog#confirm[open]').count()) === 0, { what: 'the dialog closed by Escape' });
  assert.equal(await page.evaluate(() => document.activeElement?.dataset?.action), 'resume', 'focus back on the control');
  assert.equal((await status1()).paused, true, 'Escape changed nothing');

  // The serving counter stops while people wait: every reading the console
  // took over three advancer ticks (the demo's is 2 s) after the pause has
  // the same serving counter, and so do the page and the API.
  await waitFor(async () => (await page.textContent('[data-testid="badges"]')).includes('paused'), { what: 'the paused badge' });
  let whilePaused = [];
  await waitFor(async () => {
    const { body } = await api(vwr.base, 'GET', '/vwr/console/api/live?event=demo', { token: TIER1_ADMIN });
    whilePaused = body.event.samples.filter((x) => x.t1?.paused);
    return whilePaused.length >= 2 && whilePaused.at(-1).at - whilePaused[0].at >= 3 * DEMO_TICK_MS;
  }, { what: 'three advancer ticks of readings while paused', timeout: 60000 });
  const held = whilePaused[0].t1.serving;
  assert.deepEqual([...new Set(whilePaused.map((x) => x.t1.serving))], [held], 'the serving counter stood still in every reading');
  assert.ok(whilePaused.every((x) => x.t1.waiting > 0), 'people waited at Tier 1 all along');
  await waitFor(async () => (await value(page, 'serving')) === held && (await value(page, 't1-waiting')) > 0, { what: 'the held counter on the page' });
  assert.equal((await status1()).servingCounter, held);
  assert.match(await page.textContent('[data-testid="proj-1"]'), /Not while paused/);
  assert.ok(await page.locator('#chart-t1 rect.band.paused').count() >= 1, 'the pause is shaded on the chart');

  // A threshold: the Tier 2 line empties into the protected pages.
  assert.ok((await value(page, 't2-line')) >= 1, 'someone waits at Tier 2 before the threshold');
  await page.fill('#f-threshold', '50');
  await page.click('[data-action="threshold"]');
  await page.waitForSelector('dialog#confirm[open]');
  assert.match(await page.textContent('[data-testid="confirm-text"]'), /Allow 50 people/);
  await confirm(page);
  await waitFor(async () => /Set threshold: done \(HTTP 200\)/.test(await page.textContent('[data-testid="result-line"]')), { what: 'the threshold answer' });
  await waitFor(async () => (await value(page, 't2-line')) === 0 && (await page.textContent('#chart-t2active .summary')).includes('Threshold 50'),
    { what: 'the Tier 2 line emptied on the console' });
  const s2 = await stats2();
  assert.equal(s2.threshold, 50);
  assert.equal(s2.queueSize, 0);
  assert.ok((await value(page, 'on-pages')) > 3, 'more than the old threshold are on the pages');

  // An empty value asks nothing; a refusal is shown as the API gave it.
  await page.fill('#f-by', '');
  await page.click('[data-action="advance"]');
  assert.equal(await page.locator('dialog#confirm[open]').count(), 0, 'no confirmation for an empty value');
  assert.equal(await page.getAttribute('#f-by', 'aria-invalid'), 'true');
  await page.fill('#f-by', '0');
  await page.click('[data-action="advance"]');
  await confirm(page);
  await waitFor(async () => /Advance now: refused \(HTTP 400\)/.test(await page.textContent('[data-testid="result-line"]')), { what: 'the refused advance' });
  assert.match(await page.textContent('[data-testid="result-body"]'), /"code": "invalid_config"/);
  await page.fill('#f-by', '5');
  await page.click('[data-action="advance"]');
  await confirm(page);
  await waitFor(async () => /Advance now: done \(HTTP 200\)/.test(await page.textContent('[data-testid="result-line"]')), { what: 'the advance answer' });

  assert.deepEqual(await axe(page, { underCSP: true, all: true }), [], 'axe on the live console (English)');
  // The README's pictures: the whole desktop page, and the phone's first
  // screen (the list and the event's numbers), with the advance shown.
  await waitFor(async () => (await value(page, 'serving')) >= held + 5, { what: 'the advance on the console' });
  await page.click('#chart-t1 .toggle');
  await screenshot(page, 'console');
  // At most one read a second, shared by every chart: the page's requests
  // to its console are api/live a second or more apart, the session, and
  // the controls' POSTs; nothing else.
  const reads = await page.evaluate(() => performance.getEntriesByType('resource')
    .map((e) => ({ path: new URL(e.name).pathname, at: e.startTime }))
    .filter((e) => e.path.includes('/vwr/console/api/')));
  const live = reads.filter((e) => e.path.endsWith('/api/live')).map((e) => e.at);
  assert.ok(live.length >= 10, `the page read its console ${live.length} times`);
  const gaps = live.slice(1).map((at, i) => Math.round(at - live[i]));
  assert.ok(Math.min(...gaps) >= 950, `api/live gaps (ms): ${gaps.join(' ')}`);
  assert.deepEqual(reads.filter((e) => !/\/api\/(live|session|events\/demo\/(pause|threshold|advance))$/.test(e.path)), [], 'no other reads');

  await page.setViewportSize(VIEWPORTS.phone);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.evaluate(() => new Promise((r) => { requestAnimationFrame(() => requestAnimationFrame(r)); }));
  await mkdir(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, 'console-phone.png') });
  await page.setViewportSize(VIEWPORTS.desktop);

  // Korean: the same page, the session kept.
  await page.click('#lang');
  await page.waitForURL(/lang=ko/);
  await page.waitForSelector('#app:not([hidden])');
  await waitFor(async () => (await page.textContent('#event-title')) === '이벤트 demo', { what: 'the Korean console' });
  assert.equal(await page.getAttribute('html', 'lang'), 'ko');
  assert.match(await page.textContent('[data-testid="badges"]'), /일시 정지/);
  assert.deepEqual(await axe(page, { underCSP: true, all: true }), [], 'axe on the live console (Korean)');
  // The dark scheme has its own palette: axe checks it too.
  await page.emulateMedia({ colorScheme: 'dark' });
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), 'rgb(15, 16, 22)');
  assert.deepEqual(await axe(page, { underCSP: true, all: true }), [], 'axe on the live console (Korean, dark)');
  await page.emulateMedia({ colorScheme: 'light' });
  assert.deepEqual(problems, [], 'no script errors');
  await ctx.close();
});

test('a page on another origin of the same host cannot steer the console', async () => {
  const ctx = await browser.newContext({ viewport: VIEWPORTS.desktop });
  const page = await ctx.newPage();
  await page.goto(`${vwr.base}/vwr/console/`);
  await signIn(page, QUEUE_ADMIN);
  await page.waitForSelector('#app:not([hidden])');
  const csrf = await page.evaluate(async () => (await (await fetch('api/session')).json()).csrf);
  assert.ok(csrf, 'the session has a CSRF token');
  const before1 = await status1();

  // The attacker: another port of 127.0.0.1, so the same site, where a
  // SameSite cookie alone would still be sent.
  const port = await freePort();
  const evil = createServer((req, res) => {
    res.setHeader('Content-Type', 'text/html');
    res.end(`<!doctype html><title>evil</title>
      <form id="f" method="post" action="${vwr.base}/vwr/console/api/events/demo/deactivate" enctype="text/plain">
        <input name='{"x":"' value='"}'></form>`);
  });
  evil.listen(port, '127.0.0.1');
  await once(evil, 'listening');
  try {
    const attacker = await ctx.newPage();
    await attacker.goto(`http://127.0.0.1:${port}/`);
    // A fetch that sends the cookie (no-cors, so no preflight stops it first),
    // even with the CSRF token it somehow learnt.
    const sent = await attacker.evaluate(async ([url, token]) => {
      const out = [];
      for (const headers of [{ 'Content-Type': 'text/plain' }, { 'X-CSRF-Token': token }]) {
        try {
          const r = await fetch(url, { method: 'POST', credentials: 'include', mode: 'no-cors', headers, body: '{}' });
          out.push(r.type);
        } catch (e) {
          out.push(`error: ${e.message}`);
        }
      }
      return out;
    }, [`${vwr.base}/vwr/console/api/events/demo/deactivate`, csrf]);
    assert.equal(sent.length, 2);
    // A form posted across: a navigation, but not a GET.
    const nav = attacker.waitForNavigation();
    await attacker.evaluate(() => document.getElementById('f').submit());
    await nav;
    const body = await attacker.textContent('body');
    assert.match(body, /"code":"cross_site"/, `the cross-site form got: ${body}`);
    const after1 = await status1();
    assert.equal(after1.active, true, 'the event is still active');
    assert.equal(after1.updatedAt, before1.updatedAt, 'nothing was written');
  } finally {
    evil.close();
  }
  // The console's own page still works with the same session.
  const ok = await page.evaluate(async (token) => {
    const r = await fetch('api/events/demo/resume', { method: 'POST', headers: { 'X-CSRF-Token': token } });
    return r.status;
  }, csrf);
  assert.equal(ok, 200);
  await ctx.close();
});

test('an event opened by id is scheduled, cancelled and activated from the page', async () => {
  const ctx = await browser.newContext({ viewport: VIEWPORTS.desktop });
  const page = await ctx.newPage();
  await page.goto(`${vwr.base}/vwr/console/`);
  await signIn(page, TIER1_ADMIN);
  await page.waitForSelector('#app:not([hidden])');
  // A local date and time as <input type="datetime-local"> takes it.
  const local = (ms) => {
    const d = new Date(ms);
    const p2 = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())}T${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
  };
  const opens = Math.floor((Date.now() + 2 * 3600 * 1000) / 1000) * 1000;
  const sale = `sale-${process.pid}`;
  await page.fill('#open-id', 'not an id!');
  await page.press('#open-id', 'Enter');
  assert.equal(await page.getAttribute('#open-id', 'aria-invalid'), 'true');
  await page.fill('#open-id', sale);
  await page.press('#open-id', 'Enter');
  await waitFor(async () => (await page.textContent('#event-title')) === `Event ${sale}` && (await page.textContent('[data-testid="badges"]')).includes('inactive'),
    { what: 'the new event, inactive' });

  await page.fill('#f-opens', local(opens));
  await page.fill('#f-from', local(opens - 3600 * 1000));
  await page.click('[data-action="schedule"]');
  await page.waitForSelector('dialog#confirm[open]');
  assert.match(await page.textContent('[data-testid="confirm-call"]'), new RegExp(`"opensAt":"${new Date(opens).toISOString().replace('.000Z', 'Z')}"`));
  await confirm(page);
  await waitFor(async () => /Schedule the sale: done \(HTTP 200\)/.test(await page.textContent('[data-testid="result-line"]')), { what: 'the schedule answer' });
  await waitFor(async () => (await page.textContent('[data-testid="badges"]')).includes('scheduled') && (await page.isVisible('[data-testid="draw"]')),
    { what: 'the scheduled badge and the draw panel' });
  const sched = (await api(vwr.base, 'GET', `/vwr-api/vwr/admin/status/${sale}`, { token: TIER1_ADMIN })).body;
  assert.equal(Date.parse(sched.sale.opensAt), opens);
  assert.equal(Date.parse(sched.sale.prequeueFrom), opens - 3600 * 1000);

  await page.click('[data-action="cancel"]');
  await confirm(page);
  await waitFor(async () => (await page.textContent('[data-testid="badges"]')).includes('cancelled'), { what: 'the cancelled badge' });

  // Activate (in its disclosure) on another event, by keyboard.
  const other = `act-${process.pid}`;
  await page.fill('#open-id', other);
  await page.press('#open-id', 'Enter');
  await waitFor(async () => (await page.textContent('#event-title')) === `Event ${other}`, { what: 'the other event' });
  await page.focus('details summary');
  await page.keyboard.press('Enter');
  await page.fill('#f-abatch', '7');
  await page.focus('[data-action="activate"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('dialog#confirm[open]');
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Enter');
  await waitFor(async () => /Activate: done \(HTTP 200\)/.test(await page.textContent('[data-testid="result-line"]')), { what: 'the activation answer' });
  await waitFor(async () => (await page.textContent('[data-testid="badges"]')).includes('active') && (await value(page, 'batch')) === 7,
    { what: 'the active event with its batch' });
  await ctx.close();
});

test('the console takes Authorization: Bearer without a session', async () => {
  const r = await api(vwr.base, 'GET', '/vwr/console/api/live?event=demo', { token: QUEUE_ADMIN });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.event.eventId, 'demo');
  assert.ok(r.body.event.samples.length >= 1);
  const no = await api(vwr.base, 'GET', '/vwr/console/api/live?event=demo', { token: 'wrong' });
  assert.equal(no.status, 401);
});

/**
 * deployment stands in for a deployment's two admin APIs (each behind its
 * own bearer token) with one event whose Tier 2 is in a recovery window,
 * whose sale is drawing, and whose admin function has the SQS consumer's
 * counts: the states vwr local -demo does not reach. The numbers move with
 * time so the charts have lines.
 */
async function deployment({ t1Token, t2Token }) {
  const started = Date.now();
  const until = new Date(started + 10 * 60 * 1000).toISOString();
  const opensAt = new Date(started - 60 * 1000).toISOString();
  const root = 'ab'.repeat(32);
  const status = () => {
    const s = Math.floor((Date.now() - started) / 1000);
    return {
      eventId: 'rec', active: true, paused: false, shards: 1, batchSize: 10, servingCounter: 100 + 3 * s, maxAssigned: 900,
      assigned: 900, admitted: 100 + 3 * s, waiting: 800 - 3 * s, admitRatePerMinute: 180, updatedAt: new Date().toISOString(), pow: 0,
      sale: { phase: 'drawing', opensAt, round: 4242, roundAt: new Date(started + 20000).toISOString(), root },
      queueAdmittedLastMinute: 170 + (s % 5),
    };
  };
  const stats = () => ({
    eventId: 'rec', queueSize: 60, currentUsers: 0, threshold: 50, available: 50, admittedLastMinute: 0,
    estimatedClearSeconds: 0, recovering: true, recoveringUntil: until,
  });
  const server = createServer((req, res) => {
    const send = (code, body) => { res.writeHead(code, { 'Content-Type': 'application/json' }); res.end(JSON.stringify(body)); };
    const auth = req.headers.authorization;
    const u = new URL(req.url, 'http://x');
    if (u.pathname === '/vwr-api/vwr/draw/rec') return send(200, { eventId: 'rec', status: 'drawing', opensAt, round: 4242, roundAt: new Date(started + 20000).toISOString(), root, n: 900 });
    if (u.pathname.startsWith('/vwr-api/vwr/admin/')) {
      if (auth !== `Bearer ${t1Token}`) return send(401, { error: 'admin token required', code: 'unauthorized' });
      if (u.pathname === '/vwr-api/vwr/admin/events') return send(200, { events: [status()], truncated: false });
      if (u.pathname === '/vwr-api/vwr/admin/status/rec') return send(200, status());
    }
    if (u.pathname.startsWith('/api/queue/admin/')) {
      if (auth !== `Bearer ${t2Token}`) return send(401, { error: 'admin token required', code: 'unauthorized' });
      if (u.pathname === '/api/queue/admin/events') return send(200, { events: [stats()], truncated: false });
      if (u.pathname === '/api/queue/admin/stats/rec') return send(200, stats());
    }
    return send(404, { error: 'not found', code: 'not_found' });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

test('vwr console against a deployment: the printed URL signs in, and a recovery window, a drawing sale and the SQS consumer show', async () => {
  const t1Token = 'deployment-tier1-token';
  const t2Token = 'deployment-tier2-token';
  const dep = await deployment({ t1Token, t2Token });
  const { bin } = await buildVWR();
  const child = spawn(bin, ['console', '-addr', `127.0.0.1:${await freePort()}`, '-url', dep.url], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, VWR_ADMIN_TOKEN: t1Token, QUEUE_ADMIN_TOKEN: t2Token },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b) => { out += b; });
  child.stderr.on('data', (b) => { out += b; });
  const ctx = await browser.newContext({ viewport: VIEWPORTS.desktop });
  try {
    const url = await waitFor(() => out.match(/open (http:\/\/127\.0\.0\.1:\d+\/vwr\/console\/#token=\S+)/)?.[1], { what: `vwr console's URL (${out})` });
    const page = await ctx.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(url);
    await page.waitForSelector('#app:not([hidden])');
    assert.ok(!page.url().includes('token='), `the sign-in token left the address bar: ${page.url()}`);

    // The list names the most urgent state; the event shows every one.
    await waitFor(async () => (await page.textContent('#events-body')).includes('recovering'), { what: 'the recovering event in the list' });
    await page.click('#events-body a');
    await waitFor(async () => (await page.textContent('#event-title')) === 'Event rec', { what: 'the event' });
    await waitFor(async () => /recovering.*drawing/.test(await page.textContent('[data-testid="badges"]')), { what: 'both badges' });
    assert.match(await page.textContent('[data-testid="recovering"]'), /nobody new is admitted until/);
    assert.match(await page.textContent('[data-testid="proj-2"]'), /Admissions resume at .* \(the recovery window\)/);
    await waitFor(async () => (await page.locator('#chart-t2line rect.band.recovering').count()) >= 1, { what: 'the recovery window shaded' });

    // The draw: n, R, the round, its status, the document and the check.
    assert.equal(await page.isVisible('[data-testid="draw"]'), true);
    assert.match(await page.textContent('#draw-status'), /waiting for the beacon/);
    assert.equal(Number((await page.textContent('#draw-n')).replace(/\D/g, '')), 900);
    assert.equal(await page.textContent('#draw-root'), 'ab'.repeat(32));
    assert.match(await page.textContent('#draw-round'), /^4,242 /);
    assert.equal(await page.getAttribute('#draw-doc', 'href'), `${dep.url}/vwr-api/vwr/draw/rec`);
    assert.equal(await page.textContent('[data-testid="draw-verify"]'), `vwr verify-draw -event rec -url ${dep.url}/vwr-api`);

    // The SQS consumer's count is a third series of the admissions chart.
    await waitFor(async () => (await page.textContent('#chart-rate .legend')).includes('SQS consumer counted'), { what: 'the SQS series' });
    assert.equal(await page.isVisible('#sqs-none'), false);
    await waitFor(async () => (await page.locator('#chart-rate polyline.s3').count()) >= 1, { what: 'the SQS line' });

    // Neither admin token ever reaches the page.
    const seen = await page.evaluate(async () => `${document.documentElement.outerHTML}${await (await fetch('api/live?event=rec')).text()}`);
    assert.ok(!seen.includes(t1Token) && !seen.includes(t2Token), 'an admin token reached the browser');
    assert.deepEqual(await axe(page, { underCSP: true, all: true }), [], 'axe with the recovery banner and the draw');
    assert.deepEqual(problems, []);
  } finally {
    await ctx.close();
    child.kill('SIGTERM');
    dep.close();
  }
});
