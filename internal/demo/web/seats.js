// Seat page of the demo ticketing site. The entry token travels as the
// HttpOnly urr-entry-token cookie; the gate in front of /api/seats/ checks it.
// The server renders the page in the visitor's language (<html lang>); the
// messages below follow it. The visit lasts until the slot's end
// (data-expires); the token is short and renewed through heartbeat until
// then (data-token-expires: the first one).
const event = document.body.dataset.event;
const expires = Number(document.body.dataset.expires);
let tokenExpires = Number(document.body.dataset.tokenExpires) || expires;
let over = false;
const $ = (id) => document.getElementById(id);
let selected = '';
let seats = [];

const strings = {
  en: {
    timeUp: 'Your time to choose is up. Rejoin the queue from the event page.',
    count: (left, total) => `${left} of ${total}`,
    status: { available: 'available', held: 'taken', mine: 'held by you' },
    seat: (row) => `Seat ${row}`,
    held: (id, until) => `Seat ${id} is held for you until ${until}. Complete your booking before then.`,
    noPass: 'Your entry pass is missing or expired. Rejoin the queue from the event page.',
    loadFailed: (code) => `Could not load seats (${code}).`,
    holding: (id) => `Holding seat ${id}…`,
    seat_taken: 'Someone else just took that seat. Please pick another.',
    sold_out: 'Sorry, every seat is taken.',
    entry_token_required: 'Your entry pass is missing. Rejoin the queue from the event page.',
    entry_token_expired: 'Your entry pass has expired. Rejoin the queue from the event page.',
    holdFailed: (code) => `Could not hold the seat (${code}).`,
    network: 'Network problem. Please try again.',
    noLonger: 'Your entry pass is no longer valid. Rejoin the queue from the event page.',
    left: 'You left, so your turn is over. Taking you back to the waiting room…',
    slot_ended: 'Your time to choose is up. Taking you back to the waiting room…',
    idle: 'Your turn was given to the next person while this page was away. Taking you back to the waiting room…',
  },
  ko: {
    timeUp: '좌석 선택 시간이 끝났습니다. 공연 페이지에서 다시 줄을 서 주세요.',
    count: (left, total) => `${total}석 중 ${left}석`,
    status: { available: '선택 가능', held: '선택됨', mine: '내 좌석' },
    seat: (row) => `좌석 ${row}`,
    held: (id, until) => `${id} 좌석을 ${until}까지 선점했습니다. 그 전에 예매를 마쳐 주세요.`,
    noPass: '입장권이 없거나 만료되었습니다. 공연 페이지에서 다시 줄을 서 주세요.',
    loadFailed: (code) => `좌석을 불러오지 못했습니다 (${code}).`,
    holding: (id) => `${id} 좌석을 선점하는 중…`,
    seat_taken: '방금 다른 분이 그 좌석을 선택했습니다. 다른 좌석을 골라 주세요.',
    sold_out: '죄송합니다. 모든 좌석이 선택되었습니다.',
    entry_token_required: '입장권이 없습니다. 공연 페이지에서 다시 줄을 서 주세요.',
    entry_token_expired: '입장권이 만료되었습니다. 공연 페이지에서 다시 줄을 서 주세요.',
    holdFailed: (code) => `좌석을 선점하지 못했습니다 (${code}).`,
    network: '네트워크 문제가 있습니다. 다시 시도해 주세요.',
    noLonger: '입장권이 더 이상 유효하지 않습니다. 공연 페이지에서 다시 줄을 서 주세요.',
    left: '나가셨으므로 차례가 끝났습니다. 대기실로 돌아갑니다…',
    slot_ended: '좌석 선택 시간이 끝났습니다. 대기실로 돌아갑니다…',
    idle: '페이지가 응답하지 않는 동안 다음 분에게 차례가 넘어갔습니다. 대기실로 돌아갑니다…',
  },
};
const lang = document.documentElement.lang === 'ko' ? 'ko' : 'en';
const t = strings[lang];

function message(text, kind = '') {
  const el = $('message');
  el.textContent = text;
  el.dataset.kind = kind;
}

// requeue offers the way back into the queue once the entry pass is gone.
function requeue(text) {
  message(text, 'bad');
  $('hold').disabled = true;
  $('requeue').hidden = false;
}

// end stops the visit: the slot is over (its end, a leave, or refused by
// the queue), so the page offers the way back and takes it after a few
// seconds: the event page then offers a new place in line.
function end(text) {
  if (over) return;
  over = true;
  document.body.dataset.stage = 'over';
  requeue(text);
  setTimeout(() => location.replace(`/events/${encodeURIComponent(event)}`), 4000);
}

function time(d) {
  return new Intl.DateTimeFormat(lang === 'ko' ? 'ko-KR' : 'en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' }).format(d);
}

function tick() {
  if (over) return;
  const left = Math.max(0, Math.round((expires - Date.now()) / 1000));
  $('timer-value').textContent = `${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}`;
  $('timer').dataset.low = left < 60 ? 'true' : 'false';
  if (left === 0) {
    end(t.slot_ended);
    return;
  }
  setTimeout(tick, 1000);
}

function render(list) {
  seats = list.seats;
  $('remaining').textContent = t.count(list.remaining, list.total);
  const map = $('map');
  const rows = new Map();
  for (const s of seats) {
    if (!rows.has(s.row)) rows.set(s.row, []);
    rows.get(s.row).push(s);
  }
  const frag = document.createDocumentFragment();
  const perRow = Math.max(...[...rows.values()].map((r) => r.length));
  map.style.setProperty('--per-row', String(perRow));
  for (const [row, rowSeats] of rows) {
    const line = document.createElement('div');
    line.className = 'row';
    const label = document.createElement('span');
    label.className = 'row-label';
    label.textContent = row;
    label.setAttribute('aria-hidden', 'true');
    line.append(label);
    for (const s of rowSeats) {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = `seat ${s.status}`;
      b.dataset.seat = s.id;
      // Visible text is the seat number; screen readers hear "Seat B4, available".
      const what = t.status[s.status];
      const before = document.createElement('span');
      before.className = 'sr-only';
      before.textContent = t.seat(s.row);
      const after = document.createElement('span');
      after.className = 'sr-only';
      after.textContent = `, ${what}`;
      b.append(before, s.id.slice(1), after);
      b.setAttribute('aria-pressed', String(s.id === selected));
      b.disabled = s.status === 'held';
      b.addEventListener('click', () => select(s.id));
      line.append(b);
    }
    frag.append(line);
  }
  map.replaceChildren(frag);
  map.setAttribute('aria-busy', 'false');
  const mine = seats.find((s) => s.status === 'mine');
  if (mine) showHeld(mine.id, new Date(mine.expiresAt));
}

function select(id) {
  selected = id;
  for (const b of document.querySelectorAll('.seat')) b.setAttribute('aria-pressed', String(b.dataset.seat === id));
  $('selected').textContent = id;
  const s = seats.find((x) => x.id === id);
  $('hold').disabled = !s || s.status !== 'available';
  if (s && s.status === 'mine') return;
  message('');
}

function showHeld(id, until) {
  document.body.dataset.stage = 'held';
  document.body.dataset.held = id;
  message(t.held(id, time(until)), 'ok');
}

async function load() {
  const res = await fetch(`/api/seats/${encodeURIComponent(event)}`, { cache: 'no-store' });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    if (res.status === 403) requeue(t.noPass);
    else message(t.loadFailed(body.code || res.status), 'bad');
    return;
  }
  render(body);
}

async function hold() {
  if (!selected) return;
  $('hold').disabled = true;
  message(t.holding(selected));
  try {
    const res = await fetch(`/api/seats/${encodeURIComponent(event)}/hold`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ seatId: selected }),
    });
    const body = await res.json().catch(() => ({}));
    if (res.ok) {
      await load();
      showHeld(body.seatId, new Date(body.expiresAt));
      return;
    }
    if (body.code === 'entry_token_required' || body.code === 'entry_token_expired' || body.code === 'entry_token_invalid') {
      requeue(t[body.code] || t.noPass);
      return;
    }
    message(['seat_taken', 'sold_out'].includes(body.code) ? t[body.code] : t.holdFailed(body.code || res.status), 'bad');
    await load();
  } catch {
    message(t.network, 'bad');
    $('hold').disabled = false;
  }
}

// renew keeps the entry token alive: the queue issues short tokens (renewed
// up to the end of the slot), so the site calls heartbeat while the visitor
// is here, a third of the token's life before it runs out. It is also how a
// holder is counted back in after the queue lost its state
// (docs/tier2-store.md), and how a silent tab lets its slot go (the queue
// frees a slot whose holder stops renewing). A refusal (410: left, slot
// ended or idle; 401/403 or "not active": no valid pass any more) ends the
// visit.
async function renew() {
  if (over || Date.now() >= expires) return;
  let next = 2000; // a network blip or a 503: try again soon, the token lasts longer
  try {
    const res = await fetch(`/api/queue/heartbeat/${encodeURIComponent(event)}`, { method: 'POST', cache: 'no-store' });
    const body = await res.json().catch(() => ({}));
    if (res.ok && body.status === 'active') {
      tokenExpires = Date.parse(body.tokenExpiresAt) || tokenExpires;
      next = renewIn();
    } else if (res.status !== 503 && res.status !== 429) {
      end(['left', 'slot_ended', 'idle'].includes(body.code) ? t[body.code] : t.noLonger);
      return;
    }
  } catch {
    // As above: retry soon.
  }
  setTimeout(renew, next);
}

// renewIn is how long to wait for the next renewal: a third of what is left
// of the token, between 2 and 20 seconds.
function renewIn() {
  return Math.min(Math.max((tokenExpires - Date.now()) / 3, 2000), 20000);
}

$('hold').addEventListener('click', hold);
tick();
load();
setTimeout(renew, renewIn());
