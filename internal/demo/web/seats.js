// Seat page of the demo ticketing site. The entry token travels as the
// HttpOnly urr-entry-token cookie; the gate in front of /api/seats/ checks it.
const event = document.body.dataset.event;
const expires = Number(document.body.dataset.expires);
const $ = (id) => document.getElementById(id);
let selected = '';
let seats = [];

function message(text, kind = '') {
  const el = $('message');
  el.textContent = text;
  el.dataset.kind = kind;
}

function time(d) {
  return new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' }).format(d);
}

function tick() {
  const left = Math.max(0, Math.round((expires - Date.now()) / 1000));
  $('timer-value').textContent = `${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}`;
  $('timer').dataset.low = left < 60 ? 'true' : 'false';
  if (left === 0) {
    message('Your time to choose is up. Rejoin the queue from the event page.', 'bad');
    $('hold').disabled = true;
    return;
  }
  setTimeout(tick, 1000);
}

function render(list) {
  seats = list.seats;
  $('remaining').textContent = `${list.remaining} of ${list.total}`;
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
      const what = { available: 'available', held: 'taken', mine: 'held by you' }[s.status];
      const before = document.createElement('span');
      before.className = 'sr-only';
      before.textContent = `Seat ${s.row}`;
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
  message(`Seat ${id} is held for you until ${time(until)}. Complete your booking before then.`, 'ok');
}

async function load() {
  const res = await fetch(`/api/seats/${encodeURIComponent(event)}`, { cache: 'no-store' });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    message(res.status === 403 ? 'Your entry pass is missing or expired. Rejoin the queue from the event page.' : `Could not load seats (${body.code || res.status}).`, 'bad');
    return;
  }
  render(body);
}

async function hold() {
  if (!selected) return;
  $('hold').disabled = true;
  message(`Holding seat ${selected}…`);
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
    const why = {
      seat_taken: 'Someone else just took that seat. Please pick another.',
      sold_out: 'Sorry, every seat is taken.',
      entry_token_required: 'Your entry pass is missing. Rejoin the queue from the event page.',
      entry_token_expired: 'Your entry pass has expired. Rejoin the queue from the event page.',
    }[body.code] || `Could not hold the seat (${body.code || res.status}).`;
    message(why, 'bad');
    await load();
  } catch {
    message('Network problem. Please try again.', 'bad');
    $('hold').disabled = false;
  }
}

// renew keeps the entry token alive: the queue issues short tokens (renewed
// up to the end of the slot), so the site calls heartbeat while the visitor
// is here. It is also how a holder is counted back in after the queue lost
// its state (docs/tier2-store.md).
async function renew() {
  if (Date.now() >= expires) return;
  try {
    const res = await fetch(`/api/queue/heartbeat/${encodeURIComponent(event)}`, { method: 'POST', cache: 'no-store' });
    const body = await res.json().catch(() => ({}));
    if (res.ok && body.status !== 'active') {
      message('Your entry pass is no longer valid. Rejoin the queue from the event page.', 'bad');
      $('hold').disabled = true;
      return;
    }
  } catch {
    // A network blip: the token lasts well beyond the next try.
  }
  setTimeout(renew, 20000);
}

$('hold').addEventListener('click', hold);
tick();
load();
setTimeout(renew, 20000);
