// A scheduled sale walked the way shoppers walk it, with nothing paused:
// four visitors (phone and desktop, Korean and English) arrive before the
// opening, wait in the pre-queue, are drawn, pass Tier 1 and Tier 2 and land
// on the seat page, each in the language they chose, without a reload. The
// page once stayed on "drawing" after the draw had let the visitor in; this
// test is what catches that.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { VIEWPORTS, axe, cookie, journal, launchChromium, screenshot, startVWR, waitFor, waitStage } from './harness.js';

let vwr;
let browser;

before(async () => {
  // Opens 40 s after start; the draw's round comes a few seconds later.
  // Four places in seat selection, four let through Tier 1 per 1 s tick.
  vwr = await startVWR({
    // 40 s of pre-queue: four visitors' pages are checked in it, which a
    // busy machine (other test files beside this one) took more than 15 s for.
    flags: ['-demo-opens', '40s', '-tier1-tick', '1s', '-demo-crowd', '0', '-demo-threshold', '4', '-demo-batch', '4'],
    env: { VWR_DRAW_MARGIN: '1s' },
  });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await vwr?.stop();
});

// Every page a visitor sees writes its path, language and stage into the
// tab's sessionStorage whenever one changes, so the test can read the whole
// walk afterwards, pages that flashed by included.
function recordWalk() {
  const push = () => {
    const entry = `${location.pathname}|${document.documentElement.lang}|${document.body?.dataset.stage || ''}|${document.body?.dataset.phase || ''}`;
    const walk = JSON.parse(sessionStorage.getItem('walk') || '[]');
    if (walk[walk.length - 1] !== entry) {
      walk.push(entry);
      sessionStorage.setItem('walk', JSON.stringify(walk));
    }
  };
  document.addEventListener('DOMContentLoaded', () => {
    push();
    const o = new MutationObserver(push);
    o.observe(document.documentElement, { attributes: true, attributeFilter: ['lang'] });
    o.observe(document.body, { attributes: true, attributeFilter: ['data-stage', 'data-phase'] });
  });
}

const visitors = [
  // The language from a parameter on the first address only: it must survive every redirect.
  { name: 'phone-ko', viewport: VIEWPORTS.phone, locale: 'en-US', query: '?lang=ko', lang: 'ko' },
  { name: 'desktop-en', viewport: VIEWPORTS.desktop, locale: 'ko-KR', query: '?lang=en', lang: 'en' },
  // The language from the browser.
  { name: 'desktop-ko', viewport: VIEWPORTS.desktop, locale: 'ko-KR', query: '', lang: 'ko' },
  { name: 'phone-en', viewport: VIEWPORTS.phone, locale: 'en-US', query: '', lang: 'en' },
];

const words = {
  en: { opens: /^The sale opens at \d\d:\d\d(:\d\d)?$/, seats: 'Choose your seat', lead: 'Everyone here by then gets a random place' },
  ko: { opens: /^\d\d:\d\d(:\d\d)?에 판매가 시작됩니다$/, seats: '좌석을 선택하세요', lead: '그때까지 오신 모든 분은 무작위로 순번을 받습니다' },
};

test('a scheduled sale, unpaused, through the draw to the seat page on phone and desktop, in Korean and English', async () => {
  const pages = [];
  for (const v of visitors) {
    // bypassCSP lets the test inject axe-core; the pages themselves run under their strict CSP.
    const ctx = await browser.newContext({ viewport: v.viewport, locale: v.locale, bypassCSP: true });
    await ctx.addInitScript(recordWalk);
    const page = await ctx.newPage();
    journal(page);
    await page.goto(`${vwr.base}/events/demo${v.query}`);
    pages.push({ ...v, ctx, page });
  }

  // The pre-queue, in plain words: when the sale opens and what happens then.
  for (const v of pages) {
    await waitFor(async () => (await v.page.evaluate(() => document.body.dataset.phase)) === 'prequeue', { what: `${v.name} in the pre-queue` });
    assert.equal(await v.page.evaluate(() => document.documentElement.lang), v.lang, `${v.name}: language`);
    assert.match(await v.page.locator('h1').textContent(), words[v.lang].opens, `${v.name}: title`);
    const text = await v.page.evaluate(() => document.querySelector('main').innerText);
    assert.ok(text.includes(words[v.lang].lead), `${v.name}: says what happens at the opening:\n${text}`);
    for (const wrong of ['Demand is high', '지금 접속자가 많습니다', 'Opens in Drawing', '오픈까지 추첨 중']) {
      assert.ok(!text.includes(wrong), `${v.name}: "${wrong}" on the pre-queue page`);
    }
    assert.equal(await v.page.locator('#countdown').isVisible(), true);
  }
  assert.deepEqual(await axe(pages[0].page), [], 'Korean pre-queue page: no serious accessibility violations');
  await screenshot(pages[0].page, 'sale-1-prequeue');
  await screenshot(pages[1].page, 'sale-1-prequeue');

  // Nobody pauses anything: the opening, the draw, Tier 1, Tier 2 and the
  // seat page follow on their own, in each visitor's language.
  await Promise.all(pages.map((v) => waitStage(v.page, ['seats', 'held'], 90000)));
  for (const v of pages) {
    assert.equal(new URL(v.page.url()).pathname, '/events/demo', `${v.name}: on the event page`);
    assert.equal(await v.page.evaluate(() => document.documentElement.lang), v.lang, `${v.name}: seat page language`);
    assert.equal(await v.page.locator('h1').textContent(), words[v.lang].seats, `${v.name}: seat page title`);
    assert.ok(await cookie(v.ctx, 'urr-entry-token'), `${v.name}: entry token set`);
    const walk = await v.page.evaluate(() => JSON.parse(sessionStorage.getItem('walk') || '[]'));
    const paths = walk.map((w) => w.split('|')[0]);
    assert.ok(paths.includes('/vwr/'), `${v.name}: went through the waiting room: ${walk}`);
    for (const w of walk) {
      const [, lang] = w.split('|');
      assert.equal(lang, v.lang, `${v.name}: every page in ${v.lang}; walk ${walk.join(' → ')}`);
    }
    const phases = walk.map((w) => w.split('|')[3]).filter(Boolean);
    assert.ok(phases.includes('prequeue') && phases.includes('drawn'), `${v.name}: pre-queue then drawn: ${walk.join(' → ')}`);
  }
  assert.deepEqual(await axe(pages[0].page), [], 'Korean seat page: no serious accessibility violations');
  await screenshot(pages[0].page, 'sale-2-seats');
  await screenshot(pages[1].page, 'sale-2-seats');

  // The language switch on the seat page is remembered for the next page.
  const ko = pages[0];
  await ko.page.locator('#lang').click();
  await waitStage(ko.page, ['seats', 'held']);
  assert.equal(await ko.page.evaluate(() => document.documentElement.lang), 'en');
  assert.equal((await cookie(ko.ctx, 'urr-lang'))?.value, 'en');
  await Promise.all(pages.map((v) => v.ctx.close()));
});
