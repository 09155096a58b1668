// Line charts drawn as SVG, with no library: a time axis of the last few
// minutes, a value axis of round ticks from a labelled 0, shaded spans
// (paused, recovering), and a legend beside in HTML. Each series has its
// own colour and dash, so colour is never the only difference. The pure
// helpers (ticks, segments, spans) are unit-tested under Node.

const SVG = 'http://www.w3.org/2000/svg';

/** xStep is the time between labelled ticks of a window of span ms: 15 s up to 2 min, then a minute. */
export function xStep(span) {
  return span <= 2 * 60000 ? 15000 : span <= 8 * 60000 ? 60000 : 120000;
}

/**
 * windowOf is how much time the charts show: the readings' span rounded up
 * to a whole minute, at least one minute and at most max ms.
 */
export function windowOf(first, last, max) {
  if (!Number.isFinite(first) || !Number.isFinite(last)) return 60000;
  return Math.min(max, Math.max(60000, Math.ceil((last - first) / 60000) * 60000));
}

/** niceStep is the round step (1, 2 or 5 × 10^k) that cuts max into about count parts. */
export function niceStep(max, count = 4) {
  if (!(max > 0)) return 1;
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) {
    if (m * mag >= raw) return Math.max(1, m * mag);
  }
  return 10 * mag;
}

/** yTicks are 0, step, 2·step … up to the first tick at or above max. */
export function yTicks(max, count = 4) {
  const step = niceStep(max, count);
  const top = Math.max(step, Math.ceil(max / step) * step);
  const out = [];
  for (let v = 0; v <= top + step / 2; v += step) out.push(v);
  return out;
}

/**
 * segments splits [t, v] points into runs without gaps: a null value (the
 * tier did not answer) or a jump in time of more than maxGap ends a run.
 */
export function segments(points, maxGap) {
  const out = [];
  let cur = [];
  let lastT;
  for (const [t, v] of points) {
    if (v === null || v === undefined || !Number.isFinite(v) || (lastT !== undefined && t - lastT > maxGap)) {
      if (cur.length) out.push(cur);
      cur = [];
    }
    if (v !== null && v !== undefined && Number.isFinite(v)) cur.push([t, v]);
    lastT = t;
  }
  if (cur.length) out.push(cur);
  return out;
}

/** spans are the [from, to] times over which flag(sample) held, from samples in time order. */
export function spans(samples, flag, step) {
  const out = [];
  let from;
  let last;
  for (const s of samples) {
    if (flag(s)) {
      if (from === undefined) from = s.at;
      last = s.at;
    } else if (from !== undefined) {
      out.push([from, s.at]);
      from = undefined;
    }
  }
  if (from !== undefined) out.push([from, last + step]);
  return out;
}

function el(name, attrs = {}, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/**
 * draw renders a chart into the <svg> svg, sized to its box:
 * opts = {from, to, series: [{cls, points: [[t, v]]}], bands: [{cls, from, to, label}],
 *         xLabel(msAgo), yFormat(v), maxGap}.
 */
export function draw(svg, opts) {
  const width = Math.max(240, Math.round(svg.getBoundingClientRect().width || 600));
  const height = 200;
  const m = { left: 52, right: 10, top: 10, bottom: 26 };
  const w = width - m.left - m.right;
  const h = height - m.top - m.bottom;
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('height', String(height));
  svg.replaceChildren();
  const span = Math.max(1, opts.to - opts.from);
  const x = (t) => m.left + ((t - opts.from) / span) * w;
  let max = 0;
  for (const s of opts.series) for (const [t, v] of s.points) if (t >= opts.from && Number.isFinite(v)) max = Math.max(max, v);
  const ticks = yTicks(max);
  const top = ticks[ticks.length - 1];
  const y = (v) => m.top + h - (v / top) * h;

  for (const b of opts.bands || []) {
    const x0 = Math.max(m.left, x(b.from));
    const x1 = Math.min(m.left + w, x(b.to));
    if (x1 - x0 < 1) continue;
    svg.append(el('rect', { class: `band ${b.cls}`, x: x0, y: m.top, width: x1 - x0, height: h }));
    if (x1 - x0 > 60) svg.append(el('text', { class: 'band-label', x: x0 + 4, y: m.top + 14 }, b.label));
  }
  for (const v of ticks) {
    svg.append(el('line', { class: 'grid', x1: m.left, x2: m.left + w, y1: y(v), y2: y(v) }));
    svg.append(el('text', { class: 'tick', x: m.left - 6, y: y(v) + 4, 'text-anchor': 'end' }, opts.yFormat(v)));
  }
  const every = xStep(span);
  const n = Math.floor(span / every + 1e-9);
  for (let k = 0; k <= n; k++) {
    const t = opts.to - k * every;
    svg.append(el('line', { class: 'grid grid-x', x1: x(t), x2: x(t), y1: m.top, y2: m.top + h }));
    const anchor = k === 0 ? 'end' : k === n && t - opts.from < every / 4 ? 'start' : 'middle';
    svg.append(el('text', { class: 'tick', x: x(t), y: height - 8, 'text-anchor': anchor }, opts.xLabel(k * every)));
  }
  svg.append(el('line', { class: 'axis', x1: m.left, x2: m.left + w, y1: y(0), y2: y(0) }));
  svg.append(el('line', { class: 'axis', x1: m.left, x2: m.left, y1: m.top, y2: m.top + h }));
  for (const s of opts.series) {
    const pts = s.points.filter(([t]) => t >= opts.from - opts.maxGap);
    for (const seg of segments(pts, opts.maxGap)) {
      const d = seg.map(([t, v]) => `${x(Math.max(t, opts.from)).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
      if (seg.length === 1) {
        const [[t, v]] = seg;
        svg.append(el('circle', { class: `line ${s.cls}`, cx: x(Math.max(t, opts.from)), cy: y(v), r: 2.5 }));
      } else {
        svg.append(el('polyline', { class: `line ${s.cls}`, points: d }));
      }
    }
  }
}

/** legend fills the <ul> ul with one item per series: a sample of its line and its name. */
export function legend(ul, series) {
  ul.replaceChildren();
  for (const s of series) {
    const li = document.createElement('li');
    const sw = el('svg', { width: 28, height: 10, 'aria-hidden': 'true', focusable: 'false' });
    sw.append(el('line', { class: `line ${s.cls}`, x1: 1, x2: 27, y1: 5, y2: 5 }));
    li.append(sw, document.createTextNode(` ${s.label}`));
    ul.append(li);
  }
}

/**
 * table fills a <table> with the latest rows (newest first): a header of
 * the time and each series, then one row per sample.
 */
export function table(tbl, { caption, timeLabel, series, rows, format, time }) {
  tbl.replaceChildren();
  const cap = document.createElement('caption');
  cap.textContent = caption;
  const thead = document.createElement('thead');
  const hr = document.createElement('tr');
  for (const label of [timeLabel, ...series.map((s) => s.label)]) {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = label;
    hr.append(th);
  }
  thead.append(hr);
  const tbody = document.createElement('tbody');
  for (const r of rows) {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = time(r.at);
    tr.append(th);
    for (const s of series) {
      const td = document.createElement('td');
      const v = s.value(r);
      td.textContent = Number.isFinite(v) ? format(v) : '–';
      tr.append(td);
    }
    tbody.append(tr);
  }
  tbl.append(cap, thead, tbody);
}
