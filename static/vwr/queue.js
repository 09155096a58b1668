// Tier 2 queue page. The browser carries the Tier 1 pass (cookie
// urr-vwr-token) to POST /api/queue/check/{event}, which either queues the
// visitor at their Tier 1 position or lets them in. Once active, the API sets
// the urr-entry-token cookie and this page moves on to the seat page.
//
// Every state has a way forward the page takes by itself: queued → polls;
// active → the seat page; no pass → the waiting room; a failure → retries
// with backoff. Leaving is asked first and can be taken back until
// confirmed; then the page says the visitor left and offers to join again.
// A Tier 1 pass is admitted once: after a leave, or once its turn is over,
// the queue answers "done", and joining again takes a new Tier 1 place.
import {
  ApiError, announcer, backoff, clamp, clockTime, eventPath, finalError, jitter, requestJSON,
  retryNotice, setStage, setText, showStatus, store, validId,
} from './common.js';
import { applyStatic, currentLang, formatNumber, formatWait, translator, withLang } from './i18n.js';

const API = '/api/queue';
const lang = currentLang();
const t = translator(lang);
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);

/** eventFromLocation reads ?event= or the {event} of /events/{event} (where the demo site serves this page). */
function eventFromLocation() {
  const q = params.get('event');
  if (q) return q;
  const m = location.pathname.match(/^\/events\/([^/]+)(?:\/queue)?\/?$/);
  if (!m) return '';
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return '';
  }
}

const event = eventFromLocation();
const seatPath = eventPath(event);
const announce = announcer($('live'));

let generation = 0; // bumped on leave: a running loop sees it and stops
let inflight = Promise.resolve();
let wake = () => {};
let failures = 0;
let lastPosition = 0;

function status(text, kind = 'info') {
  showStatus($('status'), text, kind);
}

function pause(ms) {
  return new Promise((resolve) => {
    const id = setTimeout(resolve, ms);
    wake = () => {
      clearTimeout(id);
      resolve();
    };
  });
}

function headline(title, lead) {
  setText($('title'), title);
  setText($('lead'), lead);
  document.title = title;
}

// MAX_SEATS bounds the seats drawn for the shared room; beyond it each
// drawn seat stands for several places.
const MAX_SEATS = 12;

/**
 * renderRoom draws the seat-selection room everyone shares: how many of the
 * threshold's places are taken, as seats, never as a progress bar.
 */
function renderRoom(users, threshold) {
  setText($('users'), threshold ? t('room.count', formatNumber(lang, users), formatNumber(lang, threshold)) : '–');
  setText($('room-note'), !threshold ? '' : users >= threshold ? t('room.full') : t('room.open'));
  const seats = Math.min(threshold, MAX_SEATS);
  const taken = threshold ? Math.round((clamp(users, 0, threshold) / threshold) * seats) : 0;
  const box = $('room-seats');
  if (box.childElementCount !== seats) box.replaceChildren(...Array.from({ length: seats }, () => document.createElement('span')));
  [...box.children].forEach((el, i) => el.toggleAttribute('data-taken', i < taken));
}

// startKey remembers where in this line the visitor started, for their own
// progress bar (a reload keeps it).
const startKey = `vwr:t2start:${event}`;
function startPosition(position) {
  let start = 0;
  try {
    start = Number(sessionStorage.getItem(startKey)) || 0;
    if (position > start) {
      start = position;
      sessionStorage.setItem(startKey, String(start));
    }
  } catch {
    start = Math.max(start, position);
  }
  return start;
}

function render(v) {
  const position = Number(v.position) || 0;
  const ahead = Number(v.peopleAhead) || 0;
  lastPosition = position;
  document.body.dataset.position = String(position);
  setText($('position'), position ? formatNumber(lang, position) : '–');
  setText($('ahead'), formatNumber(lang, ahead));
  setText($('behind'), formatNumber(lang, Number(v.peopleBehind) || 0));
  setText($('wait'), formatWait(t, Number(v.estimatedWait)));
  renderRoom(Number(v.currentUsers) || 0, Number(v.threshold) || 0);
  const start = startPosition(position);
  const pct = start && position ? Math.round(clamp((start - position) / start, 0, 1) * 100) : 0;
  $('progress-fill').style.width = `${pct}%`;
  $('progress').setAttribute('aria-valuenow', String(pct));
  setText($('progress-text'), `${pct}%`);
  setText($('updated'), clockTime(lang, new Date()));
  if (position) announce(ahead, t('announce.tier2', formatNumber(lang, position), formatNumber(lang, ahead)));
}

// redirectLoop counts recent "active" answers in this tab. The seat page
// sends a visitor without a stored entry cookie back here, so three within a
// minute mean cookies are blocked, and redirecting again would loop forever.
function redirectLoop() {
  const key = `vwr:active:${event}`;
  const now = Date.now();
  let recent = [];
  try {
    recent = JSON.parse(sessionStorage.getItem(key) || '[]').filter((ts) => now - ts < 60000);
    recent.push(now);
    sessionStorage.setItem(key, JSON.stringify(recent));
  } catch {
    return false;
  }
  return recent.length > 3;
}

function go(path) {
  setTimeout(() => location.replace(withLang(path, lang)), 400);
}

// show picks which of the page's buttons the current state offers.
function show({ leave = false, rejoin = false, retry = false, home = false } = {}) {
  $('leave').hidden = !leave;
  $('leave').disabled = false;
  $('rejoin').hidden = !rejoin;
  $('retry').hidden = !retry;
  $('home').hidden = !home;
  if (!leave) $('leave-confirm').hidden = true;
}

async function loop(gen) {
  setStage('joining');
  status(t('status.joining'));
  show({ leave: true });
  while (gen === generation) {
    let wait;
    try {
      const call = requestJSON(`${API}/check/${encodeURIComponent(event)}`, { method: 'POST', cache: 'no-store' });
      inflight = call.catch(() => {});
      const { body } = await call;
      if (gen !== generation) return;
      failures = 0;
      if (body.status === 'active') {
        show();
        if (redirectLoop()) {
          // The seat page keeps sending us back: the entry cookie is not being stored.
          setStage('error');
          status(t('err.cookies'), 'bad');
          show({ retry: true });
          return;
        }
        try {
          sessionStorage.removeItem(startKey);
        } catch {
          // nothing kept
        }
        setStage('active');
        status(t('status.active'), 'ok');
        setText($('live'), t('status.active'));
        go(seatPath);
        return;
      }
      if (body.status === 'done') {
        // This pass was served already (admitted, left, or its turn ended):
        // it never queues again.
        const why = ['left', 'slot_ended', 'idle'].includes(body.code) ? body.code : 'left';
        finished('done', t('title.done'), t('lead.done'), t(`status.done.${why}`));
        return;
      }
      setStage('queued');
      // During a recovery window nobody is admitted while the line rebuilds.
      status(t(body.recovering ? 'status.recovering' : 'status.queued'), body.recovering ? 'warn' : 'info');
      document.body.dataset.recovering = body.recovering ? 'true' : 'false';
      render(body);
      wait = jitter(clamp(Number(body.nextPoll) || 3, 1, 60) * 1000, 0.2);
    } catch (err) {
      if (gen !== generation) return;
      if (err instanceof ApiError && err.status === 401) {
        // No (or an expired) Tier 1 pass: get one from the waiting room first.
        setStage('need-pass');
        status(t('status.needPass'), 'warn');
        const back = new URLSearchParams({ event, return: seatPath });
        back.set('lang', lang);
        go(`/vwr/?${back}`);
        return;
      }
      if (finalError(err)) {
        setStage('error');
        status(t('err.bad'), 'bad');
        show({ home: true });
        return;
      }
      failures += 1;
      wait = backoff(failures, err instanceof ApiError ? err.retryAfter : undefined);
      const secs = Math.round(wait / 1000);
      if (err instanceof ApiError && err.body?.code === 'unknown_event') status(t('err.unknownEvent', secs), 'warn');
      else if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) status(t('err.refused', secs), 'warn');
      else status(...retryNotice(t, err, secs));
      setStage('retrying');
    }
    await pause(wait);
  }
}

// askLeave shows the confirmation; the line keeps moving meanwhile.
function askLeave() {
  setText($('leave-ask'), t('leave.ask', formatNumber(lang, lastPosition || 0)));
  $('leave-confirm').hidden = false;
  $('leave').hidden = true;
  $('leave-no').focus();
}

function stay() {
  $('leave-confirm').hidden = true;
  $('leave').hidden = false;
  $('leave').focus();
}

async function leaveQueue() {
  $('leave-confirm').hidden = true;
  generation += 1;
  wake();
  status(t('status.leaving'));
  // A check still on the wire could queue us again after the leave; let it land first.
  await inflight;
  try {
    await requestJSON(`${API}/leave/${encodeURIComponent(event)}`, { method: 'POST', cache: 'no-store' });
  } catch (err) {
    const secs = Math.round(backoff(1) / 1000);
    status(err instanceof ApiError ? t('err.generic', secs) : t('err.network', secs), 'bad');
    generation += 1;
    loop(generation);
    return;
  }
  finished('left', t('title.left'), t('lead.left'), t('status.left'));
}

// finished shows that this pass is through with the line (left, or served
// before) and offers a new place in it.
function finished(stage, title, lead, text) {
  try {
    sessionStorage.removeItem(startKey);
  } catch {
    // nothing kept
  }
  setStage(stage);
  headline(title, lead);
  status(text, 'ok');
  setText($('live'), text);
  delete document.body.dataset.position;
  show({ rejoin: true });
  $('rejoin').focus();
}

// rejoin goes back through the Tier 1 waiting room for a new place: a pass
// is admitted once, so the old one would only be answered "done". The
// waiting room keeps its Idempotency-Key per event, which would hand back
// the old place; forget it first.
function rejoin() {
  $('rejoin').disabled = true;
  store().del(`vwr:idem:${event}`);
  const back = new URLSearchParams({ event, return: seatPath });
  back.set('lang', lang);
  go(`/vwr/?${back}`);
}

function retry() {
  try {
    sessionStorage.removeItem(`vwr:active:${event}`);
  } catch {
    // nothing kept
  }
  generation += 1;
  loop(generation);
}

function start() {
  applyStatic(document, lang, t);
  document.title = t('title.tier2');

  if (!validId(event)) {
    setStage('error');
    setText($('event-name'), t('brand'));
    status(t('err.bad'), 'bad');
    show({ home: true });
    return;
  }
  setText($('event-name'), `${t('event')} · ${event}`);
  $('leave').addEventListener('click', askLeave);
  $('leave-yes').addEventListener('click', leaveQueue);
  $('leave-no').addEventListener('click', stay);
  $('rejoin').addEventListener('click', rejoin);
  $('retry').addEventListener('click', retry);
  loop(generation);
}

start();
