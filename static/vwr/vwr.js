// Tier 1 waiting page. It takes a place in line once (POST assign, with an
// Idempotency-Key kept per event so reloads keep the place), then polls the
// CDN-cached status document, and asks for admission (check) only once the
// serving counter has reached its position. The check answer sets the
// urr-vwr-token cookie; the page then goes back to ?return=.
//
// Before a scheduled opening the assign answer is a pre-queue ticket: the
// page shows a countdown and the beacon round, keeps a receipt in
// localStorage from that first answer on (docs/draw.md, "Receipts": the
// client nonce, requestId, ticket hash h, the schedule and, once the list
// closes, the commitment R with the time this browser first saw it), and
// after the draw adds its Merkle proof and position. "Download receipt"
// saves it; "Verify my place" checks the beacon's signature and recomputes
// the draw from the published data in the browser (draw.js).
import {
  ApiError, announcer, backoff, clockTime, finalError, newKey, requestJSON, retryNotice,
  safeReturn, setStage, setText, showStatus, sleep, store, tier1Interval, validId,
} from './common.js';
import { applyStatic, currentLang, formatAhead, formatNumber, formatRange, translator, withLang } from './i18n.js';
import {
  QUICKNET, RECEIPT, RULE, hex, newNonce, shortCode, ticketHash, unhex, verifyPlace,
} from './draw.js';
import { POW_CODES, payAtTheDoor } from './pow.js';
import { pageWait, roundAhead, waitRange } from './wait.js';

const API = '/vwr-api/vwr';
const lang = currentLang();
const t = translator(lang);
const $ = (id) => document.getElementById(id);
const kv = store();
const params = new URLSearchParams(location.search);
const event = params.get('event') || '';
// Polite, and only when the wait's rounded range changes, at most twice a minute.
const announce = announcer($('live'), 30000);

// What the page knows; also mirrored into data-* attributes for tests and tooling.
const s = {
  requestId: '', position: 0, serving: 0, failures: 0, nextPoll: 0,
  // The real visitors ahead (never positions: the holes of lagging shards
  // are not people), how many were ahead on joining, and the wait: seconds
  // as of waitAt (ms), the turn due in dueIn s from then, paused or not.
  ahead: 0, aheadAtJoin: 0, waitSec: NaN, waitAt: 0, dueIn: NaN, paused: false,
  // A scheduled sale: '' (none), 'prequeue', 'drawing' or 'drawn'.
  phase: '', opensAt: 0, round: 0,
};

// The draw receipt, per event, in the documented format (vwr-receipt-v1):
// the nonce is made before the first assign so an Idempotency-Key replay
// after a reload sends the same one. Absent fields are left out, never
// stored empty, so the download is exactly the documented JSON.
const receiptKey = `vwr:receipt:${event}`;
function receipt() {
  let r = kv.get(receiptKey);
  if (!r || typeof r.clientNonce !== 'string' || !/^[0-9a-f]{32}$/.test(r.clientNonce)) {
    r = { clientNonce: hex(newNonce()) };
  }
  if (r.receipt !== RECEIPT) {
    r = { receipt: RECEIPT, rule: RULE, eventId: event, clientNonce: r.clientNonce };
    kv.set(receiptKey, r);
  }
  return r;
}
function saveReceipt(change) {
  const r = { ...receipt(), ...change };
  for (const k of Object.keys(r)) if (r[k] === undefined || r[k] === null || r[k] === '') delete r[k];
  kv.set(receiptKey, r);
  renderReceipt(r);
  return r;
}
// noteRoot keeps the first R this browser sees, with the time it saw it:
// the evidence that the list was sealed before the beacon's randomness.
function noteRoot(root) {
  if (root && !receipt().root) saveReceipt({ root, rootSeenAt: new Date().toISOString() });
}
function renderReceipt(r) {
  if (!r.h) return;
  $('receipt').hidden = false;
  setText($('receipt-code'), shortCode(r.h));
  setText($('receipt-h'), r.h);
  setText($('receipt-root'), r.root || '–');
  const seen = Date.parse(r.rootSeenAt);
  const roundAt = Date.parse(r.roundAt);
  setText($('receipt-seen'), Number.isFinite(seen) ? clockTime(lang, new Date(seen)) : '–');
  setText($('receipt-round'), r.round ? formatNumber(lang, r.round) : '–');
  let state = t('receipt.kept');
  if (r.root && seen < roundAt) state = t('receipt.sealed', clockTime(lang, new Date(seen)), clockTime(lang, new Date(roundAt)));
  else if (r.root) state = t('receipt.sealedLate');
  else if (s.phase === 'prequeue') state = t('receipt.waitingSeal');
  setText($('receipt-state'), state);
  $('verify').disabled = !r.position;
  $('download').disabled = !r.requestId;
}

function status(text, kind = 'info') {
  showStatus($('status'), text, kind);
}

// estimate takes the wait and people ahead from an answer of the API (assign
// or check) or from the status document's pageWait.
function estimate(w) {
  s.ahead = Math.max(0, Number(w.peopleAhead) || 0);
  s.waitSec = Number(w.estimatedWait ?? w.seconds);
  s.waitAt = Date.now();
  s.dueIn = Number.isFinite(w.dueIn) ? w.dueIn : s.waitSec;
  s.paused = w.paused === true;
}

// progress is the share of the line ahead of the visitor on joining that
// has gone in since, in whole per cent.
function progress() {
  if (s.position && s.position <= s.serving) return 100;
  if (s.aheadAtJoin <= 0) return s.ahead > 0 ? 0 : 100;
  return Math.round(Math.min(1, Math.max(0, (s.aheadAtJoin - s.ahead) / s.aheadAtJoin)) * 100);
}

function render() {
  document.body.dataset.position = String(s.position);
  document.body.dataset.requestId = s.requestId;
  document.body.dataset.ahead = String(s.ahead);
  setText($('position'), s.position ? formatNumber(lang, s.position) : '–');
  setText($('ahead'), s.position ? formatAhead(t, lang, roundAhead(s.ahead)) : '–');
  setText($('serving'), s.position ? formatNumber(lang, s.serving) : '–');
  const left = Math.max(0, s.waitSec - (Date.now() - s.waitAt) / 1000);
  let range = formatRange(t, lang, waitRange(left));
  if (s.paused) range = t('range.paused', range);
  if (s.position) setText($('wait'), range);

  const pct = progress();
  $('progress-fill').style.width = `${pct}%`;
  $('progress').setAttribute('aria-valuenow', String(pct));
  $('progress').setAttribute('aria-valuetext', t('progress.text', pct));
  setText($('progress-text'), `${pct}%`);
  setText($('updated'), clockTime(lang, new Date()));

  if (s.position) announce(range, t('announce.wait', range, pct));
}

// headline sets the page's title and lead for what the visitor is waiting
// for: the opening, the draw, or their turn.
function headline(title, lead) {
  setText($('title'), title);
  setText($('lead'), lead);
  document.title = title;
}

// enterSale shows the pre-queue (countdown, beacon round) or the draw in
// words a shopper reads, and announces each change of phase once.
function enterSale(phase, opensAt, round, chain) {
  const changed = s.phase !== phase;
  s.phase = phase;
  s.opensAt = Date.parse(opensAt) || s.opensAt;
  s.round = Number(round) || s.round;
  document.body.dataset.phase = phase;
  $('prequeue').hidden = false;
  setText($('round'), formatNumber(lang, s.round));
  if (chain) setText($('chain'), `drand ${chain.metadata?.beaconID || ''} · ${String(chain.hash).slice(0, 12)}…`);
  const opens = s.opensAt ? clockTime(lang, new Date(s.opensAt), false) : '–';
  if (phase === 'prequeue') headline(t('title.prequeue', opens), t('lead.prequeue'));
  else headline(t('title.drawing'), t('lead.drawing', opens));
  tickCountdown();
  setText($('wait'), t('range.afterDraw'));
  if (changed) {
    setStage(phase);
    status(t(`status.${phase}`));
    setText($('live'), t(`announce.${phase}`));
  }
}

function tickCountdown() {
  if (s.phase !== 'prequeue') return;
  const left = Math.max(0, Math.ceil((s.opensAt - Date.now()) / 1000));
  setText($('countdown'), t('pq.countdown', Math.floor(left / 3600), Math.floor((left % 3600) / 60), left % 60));
}
setInterval(tickCountdown, 1000);

// fetchRoot keeps R in the receipt as soon as the list closes, before the
// beacon round exists, so a root swapped later is caught.
async function fetchRoot() {
  const { body } = await requestJSON(`${API}/draw/${encodeURIComponent(event)}`);
  noteRoot(body.root);
}

// localChain is the beacon chain the site declares besides quicknet (only
// vwr local's stand-in serves one); null when there is none.
async function localChain() {
  try {
    const res = await fetch('/vwr/local-chain.json', { cache: 'no-store' });
    return res.ok ? await res.json() : null;
  } catch {
    return null;
  }
}

function checkLine(c, doc) {
  if (c.id === 'chain') return t(`check.chain.${c.detail}`);
  if (c.id === 'beacon') return t(c.ok ? 'check.beacon' : 'check.beacon.bad', formatNumber(lang, doc.round));
  if (c.id === 'sealed' && !c.ok) return t(`check.sealed.${c.detail.replace(/ /g, '')}`);
  if (c.id === 'order') return t(c.ok ? 'check.order' : 'check.order.bad', formatNumber(lang, Number(c.detail)));
  return t(c.ok ? `check.${c.id}` : `check.${c.id}.bad`);
}

async function verifyMine() {
  const out = $('verify-result');
  const list = $('verify-checks');
  out.dataset.kind = 'info';
  list.replaceChildren();
  $('verify-limits').hidden = true;
  setText($('verify-summary'), t('verify.checking'));
  try {
    const r = receipt();
    const { body: doc } = await requestJSON(`${API}/draw/${encodeURIComponent(event)}`);
    const tickets = [];
    const published = [];
    for (let j = 0; j < doc.chunks; j += 1) {
      const { body: c } = await requestJSON(`${API}/draw/${encodeURIComponent(event)}/chunks/${j}`);
      tickets.push(...c.tickets);
      published.push(...c.positions);
    }
    const local = doc.chain?.hash !== QUICKNET.hash ? await localChain() : null;
    const res = await verifyPlace(r, doc, tickets, published, { local });
    for (const c of res.checks) {
      const li = document.createElement('li');
      li.dataset.ok = !c.ok ? 'no' : c.id === 'chain' && c.detail !== 'quicknet' ? 'warn' : 'yes';
      li.dataset.check = c.id;
      li.textContent = checkLine(c, doc);
      list.append(li);
    }
    out.dataset.kind = res.ok ? 'ok' : 'bad';
    document.body.dataset.verified = res.ok ? 'yes' : 'no';
    setText($('verify-summary'), res.ok ? t('verify.ok', formatNumber(lang, res.position), formatNumber(lang, doc.n)) : t('verify.bad'));
  } catch {
    out.dataset.kind = 'bad';
    document.body.dataset.verified = 'no';
    setText($('verify-summary'), t('verify.error'));
  }
  $('verify-docs').href = `/vwr/draw.html#${lang}`;
  $('verify-limits').hidden = false;
}

// downloadReceipt saves the receipt as the documented JSON, for
// `vwr verify-draw -receipt` or anyone's own checks later.
function downloadReceipt() {
  const r = receipt();
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([`${JSON.stringify(r, null, 2)}\n`], { type: 'application/json' }));
  a.download = `vwr-receipt-${event}-${shortCode(r.h) || 'ticket'}.json`;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

function leave(path) {
  setStage('leaving');
  // replace(): the back button should not land in the waiting room again.
  setTimeout(() => location.replace(withLang(path, lang)), 400);
}

// checking shows the proof of work's progress in the status line: the
// sentence once (the live region announces it), the percentage beside it
// hidden from screen readers, so they are not told every step.
let powPct;
function checking(pct) {
  if (document.body.dataset.stage !== 'checking') {
    setStage('checking');
    status(t('status.checking'));
    powPct = document.createElement('span');
    powPct.className = 'pct';
    powPct.dataset.testid = 'pow-progress';
    powPct.setAttribute('aria-hidden', 'true');
    $('status').append(' ', powPct);
  }
  setText(powPct, `${pct}%`);
}

// powChallenge is the challenge a proof-of-work refusal carries, or null.
function powChallenge(err) {
  const b = err instanceof ApiError ? err.body : null;
  return b && POW_CODES.has(b.code) && b.challenge ? b.challenge : null;
}

function showError(err) {
  s.failures += 1;
  if (err instanceof ApiError && err.body?.code === 'too_many_arrivals') {
    // Many arrivals from this network (a carrier's shared address): wait
    // as long as the server says, calmly.
    const wait = backoff(s.failures, err.retryAfter);
    status(t('err.crowdedNetwork', Math.round(wait / 1000)), 'warn');
    setStage('retrying');
    return wait;
  }
  if (err instanceof ApiError && err.body?.code === 'not_open') {
    // A scheduled sale whose pre-queue has not opened: wait calmly, no backoff.
    status(t('err.notOpen'), 'info');
    setStage('not-open');
    return 10000;
  }
  const wait = backoff(s.failures, err instanceof ApiError ? err.retryAfter : undefined);
  const secs = Math.round(wait / 1000);
  if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429 && err.status !== 408) {
    // Refused, not failed: retried all the same, in case it was a moment's state.
    status(t('err.refused', secs), 'warn');
    setStage('retrying');
    return wait;
  }
  status(...retryNotice(t, err, secs));
  setStage('retrying');
  return wait;
}

async function assign() {
  const key = `vwr:idem:${event}`;
  let idem = kv.get(key);
  if (!validId(idem)) {
    idem = newKey();
    kv.set(key, idem);
  }
  const rc = receipt();
  // An event may ask for a proof of work: the answer then carries a
  // challenge, solved in a worker while the status line shows progress.
  const { body } = await payAtTheDoor((altcha) => requestJSON(`${API}/assign/${encodeURIComponent(event)}`, {
    method: 'POST',
    headers: { 'Idempotency-Key': idem, 'Client-Nonce': rc.clientNonce, ...(altcha ? { Altcha: altcha } : {}) },
  }), { kv, key: `vwr:pow:${event}`, onProgress: checking, isRefusal: powChallenge });
  if (body && body.active === false) {
    // The API has set the pass as the urr-vwr-token cookie (HttpOnly).
    return { passThrough: true };
  }
  if (body.phase === 'prequeue') {
    // The server must not choose the ticket: h is ours to recompute.
    const h = hex(await ticketHash(body.requestId, unhex(rc.clientNonce)));
    if (h !== body.ticketHash) throw new Error('ticket hash mismatch');
    s.requestId = body.requestId;
    enterSale(body.phase, body.opensAt, body.round, body.chain);
    s.nextPoll = Number(body.nextPoll) || 0;
    if (rc.requestId !== body.requestId) {
      // A new ticket: everything the receipt knew was about another one.
      kv.set(receiptKey, { receipt: RECEIPT, rule: RULE, eventId: event, clientNonce: rc.clientNonce });
      saveReceipt({
        rule: body.rule, requestId: body.requestId, h, opensAt: body.opensAt, round: body.round,
        roundAt: body.roundAt, chainHash: body.chain?.hash, issuedAt: new Date().toISOString(),
      });
    } else {
      renderReceipt(rc);
    }
    return { passThrough: false };
  }
  s.requestId = body.requestId;
  s.position = Number(body.position) || 0;
  s.serving = Number(body.servingCounter) || 0;
  s.nextPoll = Number(body.nextPoll) || 0;
  estimate(body);
  // The progress bar counts from the people ahead when the place was taken;
  // a reload (an Idempotency-Key replay) keeps the first count.
  const saved = kv.get(`vwr:start:${event}`);
  if (saved && saved.requestId === s.requestId && Number.isFinite(saved.ahead)) {
    s.aheadAtJoin = saved.ahead;
  } else {
    s.aheadAtJoin = s.ahead;
    kv.set(`vwr:start:${event}`, { requestId: s.requestId, ahead: s.ahead });
  }
  return { passThrough: false };
}

async function check() {
  const { body } = await requestJSON(
    `${API}/check/${encodeURIComponent(event)}/${encodeURIComponent(s.requestId)}`,
    { cache: 'no-store' },
  );
  if (body.phase === 'prequeue' || body.phase === 'drawing') {
    enterSale(body.phase, body.sale.opensAt, body.sale.round);
    noteRoot(body.sale.root);
    s.nextPoll = Number(body.nextPoll) || 0;
    return false;
  }
  if (body.phase === 'drawn' && s.phase !== 'drawn') {
    s.phase = 'drawn';
    document.body.dataset.phase = 'drawn';
    $('prequeue').hidden = true;
    saveReceipt({ proof: body.proof, position: Number(body.position) });
    const place = formatNumber(lang, Number(body.position));
    headline(t('title.drawn'), t('lead.drawn', place));
    setText($('live'), t('status.drawn', place));
  }
  // Admitted: the drawn place and proof above are kept first, so a visitor
  // let in by the draw itself still leaves with a complete receipt.
  if (body.admitted) {
    s.position = Number(body.position) || s.position;
    return true;
  }
  s.position = Number(body.position) || s.position;
  s.serving = Number(body.servingCounter) || s.serving;
  s.nextPoll = Number(body.nextPoll) || 0;
  estimate(body);
  return false;
}

async function pollStatus() {
  // Cacheable on purpose: thousands of pages share one CDN copy.
  const { body } = await requestJSON(`${API}/status/${encodeURIComponent(event)}`);
  noteRoot(body.sale?.root);
  if (body.active === false) return false;
  s.serving = Math.max(s.serving, Number(body.servingCounter) || 0);
  // A document read before this place was handed out (or without the
  // counters) says nothing about it: keep the last estimate.
  const w = pageWait(body, s.position, Date.now());
  if (w.ok && !w.afterDraw) {
    estimate(w);
    s.nextPoll = 0;
  } else if (typeof body.paused === 'boolean') {
    s.paused = body.paused;
  }
  return true;
}

// admittedTo takes an admitted visitor on: the pass is in its cookie.
function admittedTo(returnPath) {
  setStage('admitted');
  status(t('status.admitted'), 'ok');
  setText($('live'), t('status.admitted'));
  render();
  leave(returnPath);
}

// badLink is the one state the page cannot leave by itself: the address
// names no valid event. It says so and offers the way out.
function badLink() {
  setStage('error');
  status(t('err.bad'), 'bad');
  $('error-actions').hidden = false;
}

async function run(returnPath) {
  setStage('joining');
  status(t('status.joining'));
  // Set once the poll interval has been waited: a failed poll is then retried
  // right after its backoff, and failures keep counting until a call succeeds.
  let pollDue = false;
  for (;;) {
    try {
      if (!s.requestId) {
        const { passThrough } = await assign();
        if (passThrough) {
          status(t('status.passThrough'), 'ok');
          leave(returnPath);
          return;
        }
      } else if (pollDue) {
        if (!(await pollStatus())) {
          // The event stopped queueing: the assign answer now carries the pass.
          s.requestId = '';
          continue;
        }
      }
      pollDue = false;
      if (s.phase === 'prequeue' || s.phase === 'drawing') {
        // Until the draw, the ticket's check says the phase; no position yet.
        // The draw may already have let this ticket in: then go at once.
        if (await check()) {
          s.serving = Math.max(s.serving, s.position);
          admittedTo(returnPath);
          return;
        }
        if (s.phase === 'drawing' && !receipt().root) await fetchRoot();
        if (s.phase !== 'drawn') {
          s.failures = 0;
          await sleep(Math.min(tier1Interval({ ahead: 0, nextPoll: s.nextPoll }), s.phase === 'drawing' ? 3000 : 15000));
          continue;
        }
        status(t('status.drawn', formatNumber(lang, s.position)));
      }
      let admitted = false;
      if (s.position <= s.serving) {
        status(t('status.almost'));
        admitted = await check();
      }
      if (admitted) {
        s.serving = Math.max(s.serving, s.position);
        admittedTo(returnPath);
        return;
      }
      s.failures = 0;
      setStage('waiting');
      if (s.paused) status(t('status.paused'), 'warn');
      else status(t('status.waiting'));
      render();
      // Poll again by distance, but no later than the turn is due.
      const dueIn = s.dueIn - (Date.now() - s.waitAt) / 1000;
      await sleep(tier1Interval({ ahead: s.ahead, nextPoll: s.nextPoll, dueIn }));
      pollDue = true;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404 && s.requestId) {
        // The place was lost (store wiped or expired): take a new one. A new
        // key, or the retry could be answered with the lost requestId again.
        s.requestId = '';
        kv.del(`vwr:idem:${event}`);
        kv.del(`vwr:pow:${event}`);
        continue;
      }
      if (err instanceof ApiError && err.body?.code === 'sale_cancelled') {
        // The operator cancelled the sale: nothing to wait for. The
        // receipt stays, to be downloaded.
        setStage('cancelled');
        status(t('err.cancelled'), 'bad');
        setText($('live'), t('err.cancelled'));
        return;
      }
      if (finalError(err)) {
        badLink();
        return;
      }
      await sleep(showError(err));
    }
  }
}

function start() {
  applyStatic(document, lang, t);
  document.title = t('title.tier1');

  if (!validId(event)) {
    setText($('event-name'), t('brand'));
    badLink();
    return;
  }
  setText($('event-name'), `${t('event')} · ${event}`);
  $('verify').addEventListener('click', verifyMine);
  $('download').addEventListener('click', downloadReceipt);
  renderReceipt(receipt());
  run(safeReturn(params.get('return'), event, location.origin));
}

start();
