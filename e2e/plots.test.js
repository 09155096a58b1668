// The rehearsal report's plots, rendered in Chromium: a small `vwr loadtest`
// with a Redis flush draws them, and each SVG is checked by the boxes the
// browser lays out. No screenshot diff: text (titles, axis labels, ticks,
// legend) must not cover a data point or cross a data line, must stay out of
// the data area, the ticks must be round and start at a labelled 0, and the
// recovery window must be shaded.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { buildVWR, launchChromium } from './harness.js';

const run = promisify(execFile);
let browser;
let dir;

before(async () => {
  const { bin } = await buildVWR();
  dir = await mkdtemp(path.join(tmpdir(), 'vwr-plots-'));
  await run(bin, ['loadtest', '-visitors', '300', '-rate', '150', '-threshold', '30', '-dwell', '1s', '-batch', '40',
    '-fault', 'redis-flush@2s', '-out', dir, '-quiet', '-timeout', '4m'], {
    env: {
      PATH: process.env.PATH, HOME: process.env.HOME,
      // A short recovery window (it must outlast the entry tokens) keeps the run short.
      QUEUE_ENTRY_TOKEN_TTL_SECONDS: '5', QUEUE_RECOVERY_WINDOW_SECONDS: '10',
    },
    maxBuffer: 1 << 24,
  });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
});

// The series colours of internal/loadtest/plot.go: data, never furniture.
const DATA = ['#1F77B4', '#FF7F0E', '#2CA02C', '#D62728', '#5A5A8C'];

/** layout reads, in page pixels, every text box, the data area and the data. */
function layout(dataColours) {
  const pt = (el, x, y) => {
    const p = new DOMPoint(x, y).matrixTransform(el.getScreenCTM());
    return [p.x, p.y];
  };
  const texts = [...document.querySelectorAll('text')].map((t) => {
    const r = t.getBoundingClientRect();
    return { text: t.textContent, x0: r.left, x1: r.right, y0: r.top, y1: r.bottom };
  });
  const grid = { x0: Infinity, x1: -Infinity, y0: Infinity, y1: -Infinity };
  const points = [];
  const lines = [];
  let shaded = 0;
  for (const el of document.querySelectorAll('path')) {
    const st = el.getAttribute('style') || '';
    const stroke = (st.match(/stroke:(#[0-9A-F]{6})/i) || [])[1]?.toUpperCase();
    const fill = (st.match(/fill:(#[0-9A-F]{6})/i) || [])[1]?.toUpperCase();
    const d = el.getAttribute('d');
    const nums = (d.match(/-?[\d.]+(e-?\d+)?/g) || []).map(Number);
    if (stroke === '#808080') {
      for (let i = 0; i + 1 < nums.length; i += 2) {
        const [x, y] = pt(el, nums[i], nums[i + 1]);
        grid.x0 = Math.min(grid.x0, x); grid.x1 = Math.max(grid.x1, x);
        grid.y0 = Math.min(grid.y0, y); grid.y1 = Math.max(grid.y1, y);
      }
      continue;
    }
    if (/fill-opacity/.test(st)) {
      shaded += 1; // a shaded window: an area, not data points
      continue;
    }
    if (/A/.test(d) && dataColours.includes(fill)) {
      const b = el.getBBox();
      points.push(pt(el, b.x + b.width / 2, b.y + b.height / 2));
    } else if (dataColours.includes(stroke)) {
      const ps = [];
      for (let i = 0; i + 1 < nums.length; i += 2) ps.push(pt(el, nums[i], nums[i + 1]));
      ps.forEach((p) => points.push(p));
      for (let i = 1; i < ps.length; i += 1) lines.push([ps[i - 1], ps[i]]);
    }
  }
  return { texts, grid, points, lines, shaded };
}

const inside = (r, [x, y]) => x > r.x0 && x < r.x1 && y > r.y0 && y < r.y1;
const overlaps = (a, b) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;

/** crosses reports whether segment p–q passes through rectangle r (Liang–Barsky). */
function crosses(r, [[x0, y0], [x1, y1]]) {
  let t0 = 0;
  let t1 = 1;
  const dx = x1 - x0;
  const dy = y1 - y0;
  for (const [p, q] of [[-dx, x0 - r.x0], [dx, r.x1 - x0], [-dy, y0 - r.y0], [dy, r.y1 - y0]]) {
    if (p === 0) {
      if (q <= 0) return false;
    } else {
      const t = q / p;
      if (p < 0) t0 = Math.max(t0, t);
      else t1 = Math.min(t1, t);
    }
  }
  return t0 < t1;
}

/** roundSteps: values from 0 in equal steps of 1, 2 or 5 × 10^k. */
function roundSteps(values) {
  const v = [...values].sort((a, b) => a - b);
  if (v.length < 2 || v[0] !== 0) return false;
  const step = v[1] - v[0];
  const mant = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
  if (![1, 2, 5].some((m) => Math.abs(mant - m) < 1e-6)) return false;
  return v.every((x, i) => Math.abs(x - i * step) < step * 1e-6);
}

test('every plot is drawn', async () => {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.svg')).sort();
  assert.deepEqual(files, ['active.svg', 'admissions.svg', 'queue.svg', 'wait-tier1.svg', 'wait.svg']);
});

for (const name of ['queue.svg', 'admissions.svg', 'active.svg', 'wait-tier1.svg', 'wait.svg']) {
  test(`${name}: labels and legend stay off the data; round ticks from 0; units`, async () => {
    const page = await browser.newPage({ viewport: { width: 1000, height: 600 } });
    await page.goto(`file://${path.join(dir, name)}`);
    const { texts, grid, points, lines, shaded } = await page.evaluate(layout, DATA);
    assert.ok(points.length >= 2, `${name}: ${points.length} data points found`);
    assert.ok(grid.x1 > grid.x0 && grid.y1 > grid.y0, `${name}: no data area`);
    for (const t of texts) {
      assert.ok(!overlaps(t, grid), `${name}: "${t.text}" lies over the data area`);
      const hit = points.find((p) => inside(t, p));
      assert.equal(hit, undefined, `${name}: "${t.text}" covers a data point at ${hit}`);
      const cut = lines.find((l) => crosses(t, l));
      assert.equal(cut, undefined, `${name}: a data line crosses "${t.text}"`);
    }
    // Tick labels: the numbers; those sharing one baseline are the x axis.
    const numbers = texts.filter((t) => /^-?\d+(\.\d+)?$/.test(t.text));
    const rows = new Map();
    for (const t of numbers) rows.set(Math.round(t.y1), [...(rows.get(Math.round(t.y1)) || []), t]);
    const xAxis = [...rows.values()].sort((a, b) => b.length - a.length)[0];
    const yAxis = numbers.filter((t) => !xAxis.includes(t));
    assert.ok(roundSteps(xAxis.map((t) => Number(t.text))), `${name}: x ticks ${xAxis.map((t) => t.text)}`);
    assert.ok(roundSteps(yAxis.map((t) => Number(t.text))), `${name}: y ticks ${yAxis.map((t) => t.text)}`);
    const words = texts.map((t) => t.text).join(' | ');
    assert.match(words, name.startsWith('wait') ? /actual wait \(s\).*estimate shown first \(s\)/ : /time since the first arrival \(s\)/);
    if (!name.startsWith('wait')) {
      assert.ok(shaded >= 1, `${name}: the recovery window is not shaded`);
      assert.match(words, /recovery after redis-flush \(\d+\.\d s\)/);
    }
    await page.close();
  });
}
