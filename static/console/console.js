// The operator console's page. It talks only to its own server (the
// console's API under this page's path): one GET api/live a second gives
// the event list and every chart of the watched event; each control is one
// POST after the operator confirms it. The server holds the credentials.

import { pickLang, translator, num, duration, clock, dateTime } from './i18n.js';
import { draw, legend, table, spans, windowOf } from './chart.js';

const ID = /^[A-Za-z0-9_-]{1,64}$/;
const WINDOW_MS = 5 * 60 * 1000; // the most the charts show
const KEEP = 900; // readings kept (15 min at one a second)
const TABLE_ROWS = 30;

const lang = pickLang(new URLSearchParams(location.search).get('lang'), navigator.language);
const t = translator(lang);
const $ = (id) => document.getElementById(id);
const fmt = (n) => num(lang, n);

let csrf = '';
let event = '';
let samples = [];
let seq = 0;
let current = null;
let every = 1000;
let timer;
let failures = 0;
let listIDs = '';
let prefilled = '';

function setText(el, text) {
  if (el && el.textContent !== text) el.textContent = text;
}

function hashParams() {
  return new URLSearchParams(location.hash.slice(1));
}

function applyStatic() {
  document.documentElement.lang = lang;
  document.title = t('title');
  for (const el of document.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  updateLangLink();
}

function updateLangLink() {
  const link = $('lang');
  const other = lang === 'ko' ? 'en' : 'ko';
  const h = hashParams();
  h.delete('token');
  const hash = h.toString();
  link.href = `?lang=${other}${hash ? `#${hash}` : ''}`;
  link.lang = other;
  link.textContent = t('lang.switch');
}

function announce(text) {
  const live = $('live');
  live.textContent = '';
  setTimeout(() => { live.textContent = text; }, 50);
}

async function api(path, { method = 'GET', body } = {}) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrf) headers['X-CSRF-Token'] = csrf;
  const res = await fetch(path, {
    method, headers, credentials: 'same-origin', cache: 'no-store',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let json = null;
  try {
    json = await res.json();
  } catch {
    json = null;
  }
  return { status: res.status, body: json };
}

// --- signing in -----------------------------------------------------------

function showSignIn(message = '') {
  clearTimeout(timer);
  document.body.dataset.view = 'signin';
  $('app').hidden = true;
  $('signout').hidden = true;
  $('signin').hidden = false;
  setText($('signin-error'), message);
  $('token').focus();
}

async function signIn(token) {
  let r;
  try {
    r = await api('api/session', { method: 'POST', body: { token } });
  } catch {
    showSignIn(t('signin.failed'));
    return false;
  }
  if (r.status === 200) {
    csrf = r.body?.csrf || '';
    return true;
  }
  showSignIn(r.status === 429 ? t('signin.many') : r.status === 401 ? t('signin.wrong') : t('signin.failed'));
  return false;
}

function showApp() {
  document.body.dataset.view = 'app';
  $('signin').hidden = true;
  $('app').hidden = false;
  $('signout').hidden = false;
  selectFromHash();
}

// --- the event list -------------------------------------------------------

function stateBadge(state) {
  const s = document.createElement('span');
  s.className = 'state';
  s.dataset.state = state;
  s.textContent = t(`state.${state}`);
  return s;
}

function rowCells(r) {
  const t1 = r.tier1;
  const t2 = r.tier2;
  return [
    t1 ? fmt(t1.waiting) : '–',
    t1 ? fmt(t1.servingCounter) : '–',
    t2 ? fmt(t2.queueSize) : '–',
    t2 ? `${fmt(t2.currentUsers)} / ${fmt(t2.threshold)}` : '–',
    `${t1 ? fmt(t1.admitRatePerMinute) : '–'} · ${t2 ? fmt(t2.admittedLastMinute) : '–'}`,
  ];
}

function renderList(rows, truncated, errors) {
  const body = $('events-body');
  const ids = rows.map((r) => r.eventId).join(' ');
  if (ids !== listIDs) {
    // The set changed: rebuild. Otherwise cells change in place, so a
    // focused link keeps its focus.
    listIDs = ids;
    body.replaceChildren();
    for (const r of rows) {
      const tr = document.createElement('tr');
      tr.dataset.event = r.eventId;
      const th = document.createElement('th');
      th.scope = 'row';
      const a = document.createElement('a');
      a.href = `#event=${encodeURIComponent(r.eventId)}`;
      a.textContent = r.eventId;
      th.append(a);
      const st = document.createElement('td');
      tr.append(th, st);
      for (let i = 0; i < 5; i++) {
        const td = document.createElement('td');
        td.className = 'n';
        tr.append(td);
      }
      body.append(tr);
    }
  }
  for (const r of rows) {
    const tr = body.querySelector(`tr[data-event="${r.eventId}"]`);
    if (!tr) continue;
    const cells = tr.children;
    if (cells[1].firstChild?.dataset?.state !== r.state || cells[1].textContent !== t(`state.${r.state}`)) {
      cells[1].replaceChildren(stateBadge(r.state));
    }
    rowCells(r).forEach((v, i) => setText(cells[2 + i], v));
    const sel = r.eventId === event;
    if ((tr.getAttribute('aria-current') === 'true') !== sel) {
      if (sel) tr.setAttribute('aria-current', 'true');
      else tr.removeAttribute('aria-current');
    }
  }
  $('events-none').hidden = rows.length > 0;
  $('events-truncated').hidden = !truncated;
  const errs = Object.entries(errors || {}).map(([tier, e]) => t('err.tier', tier === 'tier1' ? 1 : 2, describe(e)));
  setText($('list-error'), errs.join(' '));
}

function describe(e) {
  if (!e) return '';
  const status = e.status ? `HTTP ${e.status} ` : '';
  return `${status}${e.code}${e.error ? `: ${e.error}` : ''}`;
}

// --- the watched event ----------------------------------------------------

function selectFromHash() {
  const ev = hashParams().get('event') || '';
  const next = ID.test(ev) ? ev : '';
  if (next !== event) {
    event = next;
    samples = [];
    seq = 0;
    current = null;
    prefilled = '';
  }
  updateLangLink();
  $('event-none').hidden = !!event;
  $('event-body').hidden = !event;
  if (event) setText($('event-title'), t('event.title', event));
  for (const tr of $('events-body').children) {
    if (tr.dataset.event === event) tr.setAttribute('aria-current', 'true');
    else tr.removeAttribute('aria-current');
  }
  poll();
}

function mergeSamples(ev) {
  if (ev.seq < seq) samples = []; // the console restarted: its numbering too
  for (const s of ev.samples) if (!samples.length || s.seq > samples[samples.length - 1].seq) samples.push(s);
  if (samples.length > KEEP) samples = samples.slice(-KEEP);
  seq = ev.seq;
}

function tierError(tier, e) {
  if (!e) return '';
  if (e.status === 404) return t(tier === 1 ? 'event.notTier1' : 'event.notTier2');
  return t('err.tier', tier, describe(e));
}

function renderEvent(now) {
  const ev = current;
  if (!ev) return;
  const t1 = ev.tier1;
  const t2 = ev.tier2;
  const badges = $('badges');
  const flags = ev.flags || [ev.state];
  if (badges.dataset.flags !== flags.join(' ') || badges.dataset.lang !== lang) {
    badges.dataset.flags = flags.join(' ');
    badges.dataset.lang = lang;
    badges.replaceChildren(...flags.map((f) => {
      const li = document.createElement('li');
      li.append(stateBadge(f));
      return li;
    }));
  }
  const last = samples[samples.length - 1];
  setText($('updated'), last ? t('event.updated', clock(lang, last.at)) : '');
  const errs = [tierError(1, ev.errors?.tier1), tierError(2, ev.errors?.tier2)].filter(Boolean);
  setText($('errors'), errs.join(' '));

  const rec = $('recovering');
  if (t2?.recovering && t2.recoveringUntil) {
    const until = Date.parse(t2.recoveringUntil);
    setText(rec, t('recovering', clock(lang, until), Math.max(0, Math.ceil((until - now) / 1000))));
    rec.hidden = false;
  } else {
    rec.hidden = true;
  }

  setText($('st-t1waiting'), t1 ? fmt(t1.waiting) : '–');
  setText($('st-serving'), t1 ? fmt(t1.servingCounter) : '–');
  setText($('st-serving-of'), t1 ? t('stat.servingOf', fmt(t1.servingCounter), fmt(t1.maxAssigned)) : '');
  setText($('st-t2line'), t2 ? fmt(t2.queueSize) : '–');
  setText($('st-onpages'), t2 ? t('stat.onPagesOf', fmt(t2.currentUsers), fmt(t2.threshold)) : '–');
  setText($('st-rate'), `${t1 ? fmt(t1.admitRatePerMinute) : '–'} / ${t2 ? fmt(t2.admittedLastMinute) : '–'}`);
  setText($('st-batch'), t1 ? fmt(t1.batchSize) : '–');
  setText($('st-pow'), t1 ? `${t('stat.pow')}: ${t1.pow ? fmt(t1.pow) : t('stat.powNone')}` : '');

  setText($('proj-1'), projection(ev.projection?.tier1, 1) || tierError(1, ev.errors?.tier1) || '–');
  setText($('proj-2'), projection(ev.projection?.tier2, 2) || tierError(2, ev.errors?.tier2) || '–');

  if (prefilled !== event && (t1 || t2)) {
    prefilled = event;
    if (t1) fillIfIdle('f-batch', t1.batchSize);
    if (t2) fillIfIdle('f-threshold', t2.threshold);
  }

  renderCharts(now);
  renderDraw(ev.draw, t1);
}

function fillIfIdle(id, value) {
  const el = $(id);
  if (el && document.activeElement !== el) el.value = String(value);
}

function projection(p, tier) {
  if (!p) return '';
  const eta = Number.isFinite(p.seconds) ? duration(t, p.seconds) : '';
  const w = fmt(p.waiting);
  const r = fmt(p.perMinute);
  switch (p.basis) {
    case 'empty': return t('proj.empty');
    case 'rate': return t(tier === 1 ? 'proj.rate1' : 'proj.rate2', eta, w, r);
    case 'room': return t('proj.room', w);
    case 'paused': return t('proj.paused', w);
    case 'no-rate': return t('proj.noRate', w);
    case 'recovering': return t('proj.recovering', clock(lang, Date.parse(p.until)), eta);
    default: return '';
  }
}

// --- charts ---------------------------------------------------------------

function charts() {
  const sqs = samples.some((s) => Number.isFinite(s.t1?.sqs));
  const rec = (s) => !!s.t2?.recovering;
  return [
    {
      id: 'chart-t1',
      series: [
        { cls: 's1', label: t('series.assigned'), value: (s) => s.t1?.assigned },
        { cls: 's2', label: t('series.serving'), value: (s) => s.t1?.serving },
      ],
      bands: spans(samples, (s) => !!s.t1?.paused, every).map(([from, to]) => ({ cls: 'paused', from, to, label: t('chart.paused') })),
    },
    {
      id: 'chart-t2line',
      series: [{ cls: 's1', label: t('series.line'), value: (s) => s.t2?.line }],
      bands: spans(samples, rec, every).map(([from, to]) => ({ cls: 'recovering', from, to, label: t('chart.recovering') })),
    },
    {
      id: 'chart-t2active',
      series: [
        { cls: 's1', label: t('series.active'), value: (s) => s.t2?.active },
        { cls: 's2', label: t('series.threshold'), value: (s) => s.t2?.threshold },
      ],
      bands: spans(samples, rec, every).map(([from, to]) => ({ cls: 'recovering', from, to, label: t('chart.recovering') })),
    },
    {
      id: 'chart-rate',
      series: [
        { cls: 's1', label: t('series.rate1'), value: (s) => s.t1?.rate },
        { cls: 's2', label: t('series.rate2'), value: (s) => s.t2?.rate },
        ...(sqs ? [{ cls: 's3', label: t('series.sqs'), value: (s) => s.t1?.sqs }] : []),
      ],
      bands: [],
    },
  ];
}

function renderCharts(now) {
  const to = samples.length ? Math.max(now, samples[samples.length - 1].at) : now;
  const from = to - windowOf(samples[0]?.at, to, WINDOW_MS);
  const last = samples[samples.length - 1];
  $('sqs-none').hidden = samples.some((s) => Number.isFinite(s.t1?.sqs));
  for (const c of charts()) {
    const fig = $(c.id);
    const title = fig.querySelector('.chart-title').textContent;
    const parts = last ? c.series.map((s) => `${s.label} ${Number.isFinite(s.value(last)) ? fmt(s.value(last)) : '–'}`).join(', ') : '';
    const summary = last ? t('chart.summary', parts) : t('chart.empty');
    setText(fig.querySelector('.summary'), summary);
    const svg = fig.querySelector('svg');
    svg.setAttribute('aria-label', `${title}. ${summary}`);
    draw(svg, {
      from, to, maxGap: every * 3,
      series: c.series.map((s) => ({ cls: s.cls, points: samples.map((r) => [r.at, s.value(r) ?? null]) })),
      bands: c.bands,
      xLabel: (ms) => t('chart.ago', ms),
      yFormat: fmt,
    });
    const ul = fig.querySelector('.legend');
    if (ul.dataset.key !== c.series.map((s) => s.label).join('|')) {
      ul.dataset.key = c.series.map((s) => s.label).join('|');
      legend(ul, c.series);
    }
    const wrap = fig.querySelector('.table-wrap');
    if (!wrap.hidden) {
      table(wrap.querySelector('table'), {
        caption: title, timeLabel: t('chart.time'), series: c.series,
        rows: samples.slice(-TABLE_ROWS).reverse(), format: fmt, time: (ms) => clock(lang, ms),
      });
    }
  }
}

function setupToggles() {
  for (const fig of document.querySelectorAll('.chart')) {
    const btn = fig.querySelector('.toggle');
    const wrap = fig.querySelector('.table-wrap');
    wrap.id = `${fig.id}-table`;
    wrap.setAttribute('aria-label', fig.querySelector('.chart-title').textContent);
    btn.setAttribute('aria-controls', wrap.id);
    btn.addEventListener('click', () => {
      wrap.hidden = !wrap.hidden;
      btn.setAttribute('aria-expanded', String(!wrap.hidden));
      btn.textContent = t(wrap.hidden ? 'chart.table' : 'chart.chart');
      renderCharts(Date.now());
    });
  }
}

// --- the draw -------------------------------------------------------------

function renderDraw(d, t1) {
  const box = $('draw');
  if (!d && !t1?.sale) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  const status = d?.status || t1.sale.phase;
  setText($('draw-status'), t(`draw.status.${status}`));
  setText($('draw-opens'), dateTime(lang, Date.parse(d?.opensAt || t1.sale.opensAt)));
  setText($('draw-n'), Number.isFinite(d?.n) ? fmt(d.n) : t('draw.notYet'));
  setText($('draw-root'), d?.root || t1?.sale?.root || t('draw.notYet'));
  const round = d?.round || t1?.sale?.round;
  const at = d?.roundAt || t1?.sale?.roundAt;
  setText($('draw-round'), round ? `${fmt(round)} (${dateTime(lang, Date.parse(at))})` : t('draw.notYet'));
  setText($('draw-rand'), d?.randomness || t('draw.notYet'));
  const doc = $('draw-doc');
  doc.hidden = !d?.url;
  if (d?.url) doc.href = d.url;
  $('draw-howto').href = siteURL('/vwr/draw.html');
  setText($('draw-verify'), d?.verify || '');
}

let site = '';
function siteURL(path) {
  return `${site.replace(/\/$/, '')}${path}`;
}

// --- polling --------------------------------------------------------------

// At most one read a second, whoever asks for it (the timer, a control's
// answer, another event chosen): a poll asked for sooner waits its turn,
// and one asked for while a read is out follows it.
let lastPoll = -Infinity;
let polling = false;
let pollAgain = false;

function poll() {
  clearTimeout(timer);
  if (polling) {
    pollAgain = true;
    return;
  }
  const wait = lastPoll + every - performance.now();
  if (wait > 0) {
    timer = setTimeout(poll, wait);
    return;
  }
  readLive();
}

async function readLive() {
  polling = true;
  lastPoll = performance.now();
  try {
    if (!(await readLiveOnce())) return;
  } finally {
    polling = false;
  }
  if (document.body.dataset.view !== 'app') return; // signed out meanwhile
  const next = failures ? Math.min(every * 2 ** failures, 15000) : every;
  if (pollAgain) {
    pollAgain = false;
    poll();
  } else {
    timer = setTimeout(poll, next);
  }
}

// readLiveOnce reads api/live and shows it; false when signed out.
async function readLiveOnce() {
  const asked = event;
  const q = asked ? `?event=${encodeURIComponent(asked)}&since=${seq}` : '';
  try {
    const r = await api(`api/live${q}`);
    if (r.status === 401) {
      pollAgain = false;
      showSignIn();
      return false;
    }
    if (r.status !== 200 || !r.body) throw new Error(`HTTP ${r.status}`);
    failures = 0;
    const b = r.body;
    every = b.sampleEveryMs || every;
    site = b.site || site;
    renderList(b.events || [], b.truncated, b.listErrors);
    if (b.event && b.event.eventId === event && asked === event) {
      mergeSamples(b.event);
      current = b.event;
      renderEvent(b.now);
    }
    if ($('errors').textContent === t('err.lost')) setText($('errors'), '');
  } catch {
    failures += 1;
    if (event) setText($('errors'), t('err.lost'));
    else setText($('list-error'), t('err.lost'));
  }
  return true;
}

// --- controls -------------------------------------------------------------

function intOf(id) {
  const el = $(id);
  const v = el.value.trim();
  if (v === '' || !/^-?\d+$/.test(v)) return undefined;
  return Number.parseInt(v, 10);
}

function isoOf(id) {
  const v = $(id).value;
  if (!v) return undefined;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

// Each control: the route it reaches (shown before confirming), the fields
// it sends, the input that must be filled, and the question it asks.
const CONTROLS = {
  pause: { tier: 1, method: 'POST', route: '/vwr/admin/pause', ask: (e) => t('ask.pause', e) },
  resume: { tier: 1, method: 'POST', route: '/vwr/admin/resume', ask: (e) => t('ask.resume', e) },
  deactivate: { tier: 1, method: 'POST', route: '/vwr/admin/deactivate', ask: (e) => t('ask.deactivate', e) },
  cancel: { tier: 1, method: 'POST', route: '/vwr/admin/cancel', ask: (e) => t('ask.cancel', e) },
  activate: {
    tier: 1, method: 'POST', route: '/vwr/admin/activate',
    body: () => ({ shards: intOf('f-shards') ?? 0, batchSize: intOf('f-abatch') ?? 0, pow: intOf('f-pow') ?? 0 }),
    ask: (e) => t('ask.activate', e),
  },
  batch: {
    tier: 1, method: 'POST', route: '/vwr/admin/batch', need: 'f-batch',
    body: () => ({ batchSize: intOf('f-batch') }), ask: (e, b) => t('ask.batch', e, fmt(b.batchSize)),
  },
  advance: {
    tier: 1, method: 'POST', route: '/vwr/admin/advance', need: 'f-by',
    body: () => ({ by: intOf('f-by') }), ask: (e, b) => t('ask.advance', e, fmt(b.by)),
  },
  threshold: {
    tier: 2, method: 'PUT', route: '/api/queue/admin/threshold', need: 'f-threshold',
    body: () => ({ threshold: intOf('f-threshold') }), ask: (e, b) => t('ask.threshold', e, fmt(b.threshold)),
  },
  schedule: {
    tier: 1, method: 'POST', route: '/vwr/admin/schedule', need: 'f-opens',
    body: () => {
      const b = { opensAt: isoOf('f-opens') };
      const from = isoOf('f-from');
      if (from) b.prequeueFrom = from;
      const pow = intOf('f-spow');
      if (pow) b.pow = pow;
      return b;
    },
    ask: (e, b) => t('ask.schedule', e, dateTime(lang, Date.parse(b.opensAt))),
  },
};

let pending = null;

function ask(name, button) {
  const c = CONTROLS[name];
  if (!c || !event) return;
  if (c.need) {
    const input = $(c.need);
    const ok = c.need === 'f-opens' ? isoOf(c.need) !== undefined : intOf(c.need) !== undefined;
    input.setAttribute('aria-invalid', String(!ok));
    if (!ok) {
      announce(t('ask.needValue'));
      input.focus();
      return;
    }
  }
  const body = c.body ? c.body() : undefined;
  pending = { name, body, button };
  const dlg = $('confirm');
  setText($('confirm-title'), button.textContent);
  setText($('confirm-text'), c.ask(event, body || {}));
  setText($('confirm-call'), `${c.method} Tier ${c.tier} ${c.route}/${event}${body ? `\n${JSON.stringify(body)}` : ''}`);
  dlg.returnValue = '';
  dlg.showModal();
  $('confirm-no').focus();
}

async function perform() {
  const p = pending;
  pending = null;
  if (!p) return;
  const label = p.button.textContent;
  p.button.disabled = true;
  const box = $('result');
  let line;
  let kind;
  let call = '';
  let answer = '';
  try {
    const r = await api(`api/events/${encodeURIComponent(event)}/${p.name}`, { method: 'POST', body: p.body ?? {} });
    if (r.status === 401) {
      showSignIn();
      return;
    }
    if (r.status === 200 && r.body) {
      const a = r.body;
      call = `${a.method} ${a.url}${a.sent ? `\n${JSON.stringify(a.sent)}` : ''}`;
      answer = JSON.stringify(a.answer, null, 2);
      const ok = a.status >= 200 && a.status < 300;
      kind = ok ? 'ok' : 'bad';
      line = ok ? t('result.ok', label, a.status) : t('result.refused', label, a.status, a.answer?.error || '');
    } else {
      kind = 'bad';
      line = t('result.failed', label, r.body?.error || `HTTP ${r.status}`);
      answer = r.body ? JSON.stringify(r.body, null, 2) : '';
    }
  } catch (err) {
    kind = 'bad';
    line = t('result.failed', label, String(err));
  } finally {
    p.button.disabled = false;
  }
  box.hidden = false;
  box.dataset.kind = kind;
  box.dataset.action = p.name;
  setText($('result-line'), line);
  setText($('result-call'), call);
  setText($('result-body'), answer);
  announce(line);
  box.focus();
  poll();
}

function setupControls() {
  for (const b of document.querySelectorAll('[data-action]')) {
    b.addEventListener('click', () => ask(b.dataset.action, b));
  }
  $('confirm').addEventListener('close', () => {
    const yes = $('confirm').returnValue === 'yes';
    if (yes) {
      perform();
    } else if (pending) {
      pending.button.focus();
      pending = null;
    }
  });
  $('open-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const v = $('open-id').value.trim();
    if (!ID.test(v)) {
      setText($('open-error'), t('open.bad'));
      $('open-id').setAttribute('aria-invalid', 'true');
      return;
    }
    setText($('open-error'), '');
    $('open-id').removeAttribute('aria-invalid');
    location.hash = `event=${encodeURIComponent(v)}`;
    $('event').focus();
  });
  $('signin-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    if (await signIn($('token').value)) {
      $('token').value = '';
      showApp();
    }
  });
  $('signout').addEventListener('click', async () => {
    await api('api/session', { method: 'DELETE' }).catch(() => {});
    csrf = '';
    showSignIn();
  });
  window.addEventListener('hashchange', selectFromHash);
  let resize;
  window.addEventListener('resize', () => {
    clearTimeout(resize);
    resize = setTimeout(() => renderCharts(Date.now()), 150);
  });
}

async function start() {
  applyStatic();
  setupToggles();
  setupControls();
  // vwr console prints its URL with #token=…: sign in with it, then drop it
  // from the address bar and history.
  const h = hashParams();
  const token = h.get('token');
  if (token) {
    h.delete('token');
    history.replaceState(null, '', `${location.pathname}${location.search}${h.toString() ? `#${h}` : ''}`);
    if (await signIn(token)) {
      showApp();
      return;
    }
    return;
  }
  let r;
  try {
    r = await api('api/session');
  } catch {
    showSignIn(t('signin.failed'));
    return;
  }
  if (r.status === 200) {
    csrf = r.body?.csrf || '';
    showApp();
  } else {
    showSignIn();
  }
}

start();
