// Tier 2 queue page. The browser carries the Tier 1 pass (cookie
// urr-vwr-token) to POST /api/queue/check/{event}, which either queues the
// visitor at their Tier 1 position or lets them in. Once active, the API sets
// the urr-entry-token cookie and this page moves on to the seat page.
import {
  ApiError, announcer, backoff, clamp, clockTime, eventPath, finalError, jitter, requestJSON,
  retryNotice, setStage, setText, showStatus, validId,
} from './common.js';
import { applyStatic, currentLang, formatNumber, formatWait, translator } from './i18n.js';

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

function render(v) {
  const position = Number(v.position) || 0;
  const ahead = Number(v.peopleAhead) || 0;
  document.body.dataset.position = String(position);
  setText($('position'), position ? formatNumber(lang, position) : '–');
  setText($('ahead'), formatNumber(lang, ahead));
  setText($('behind'), formatNumber(lang, Number(v.peopleBehind) || 0));
  setText($('wait'), formatWait(t, Number(v.estimatedWait)));
  const users = Number(v.currentUsers) || 0;
  const threshold = Number(v.threshold) || 0;
  setText($('users'), threshold ? t('of', formatNumber(lang, users), formatNumber(lang, threshold)) : '–');
  const pct = threshold ? Math.round(clamp(users / threshold, 0, 1) * 100) : 0;
  $('progress-fill').style.width = `${pct}%`;
  $('progress').setAttribute('aria-valuenow', String(pct));
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
  setTimeout(() => location.replace(path), 400);
}

async function loop(gen) {
  setStage('joining');
  status(t('status.joining'));
  while (gen === generation) {
    let wait;
    try {
      const call = requestJSON(`${API}/check/${encodeURIComponent(event)}`, { method: 'POST', cache: 'no-store' });
      inflight = call.catch(() => {});
      const { body } = await call;
      if (gen !== generation) return;
      failures = 0;
      if (body.status === 'active') {
        $('leave').disabled = true;
        if (redirectLoop()) {
          // The seat page keeps sending us back: the entry cookie is not being stored.
          setStage('error');
          status(t('err.cookies'), 'bad');
          return;
        }
        setStage('active');
        status(t('status.active'), 'ok');
        setText($('live'), t('status.active'));
        go(seatPath);
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
        if (params.get('lang')) back.set('lang', params.get('lang'));
        go(`/vwr/?${back}`);
        return;
      }
      if (finalError(err)) {
        setStage('error');
        status(t('err.bad'), 'bad');
        return;
      }
      failures += 1;
      wait = backoff(failures, err instanceof ApiError ? err.retryAfter : undefined);
      status(...retryNotice(t, err, Math.round(wait / 1000)));
      setStage('retrying');
    }
    await pause(wait);
  }
}

async function leaveQueue() {
  const btn = $('leave');
  btn.disabled = true;
  generation += 1;
  wake();
  status(t('status.leaving'));
  // A check still on the wire could queue us again after the leave; let it land first.
  await inflight;
  try {
    await requestJSON(`${API}/leave/${encodeURIComponent(event)}`, { method: 'POST', cache: 'no-store' });
  } catch (err) {
    btn.disabled = false;
    const secs = Math.round(backoff(1) / 1000);
    status(err instanceof ApiError ? t('err.generic', secs) : t('err.network', secs), 'bad');
    generation += 1;
    loop(generation);
    return;
  }
  setStage('left');
  status(t('status.left'), 'ok');
  setText($('live'), t('status.left'));
  btn.hidden = true;
  $('do-not-close').hidden = true;
  const rejoin = $('rejoin');
  rejoin.hidden = false;
  rejoin.focus();
}

function rejoin() {
  $('rejoin').hidden = true;
  const btn = $('leave');
  btn.hidden = false;
  btn.disabled = false;
  $('do-not-close').hidden = false;
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
    $('leave').disabled = true;
    return;
  }
  setText($('event-name'), `${t('event')} · ${event}`);
  $('leave').addEventListener('click', leaveQueue);
  $('rejoin').addEventListener('click', rejoin);
  loop(generation);
}

start();
