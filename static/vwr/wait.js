// The Tier 1 page's wait estimate, from the status document it polls: the
// real visitors ahead of its place (the holes of lagging shards are not
// people) and the ticks of the advancer until its turn. The arithmetic is
// internal/tier1/estimate.go's, digit for digit;
// internal/tier1/tier1api/testdata/wait-vectors.json pins the two together
// (e2e/unit.test.js runs it here). docs/tier1-design.md explains it.

/** strides is how many of shard k's positions (k+1, k+1+n, …) are ≤ x. */
function strides(k, n, x) {
  const d = x - k - 1;
  return d < 0 ? 0 : Math.floor(d / n) + 1;
}

/** normalCDF is Φ(z) by Abramowitz and Stegun's erf 7.1.26, as estimate.go. */
function normalCDF(z) {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  let p = 1.061405429 * t - 1.453152027;
  p = p * t + 1.421413741;
  p = p * t - 0.284496736;
  p = p * t + 0.254829592;
  const y = 1 - p * t * Math.exp(-(x * x));
  return z < 0 ? (1 - y) / 2 : (1 + y) / 2;
}

/** expectedMin is E[min(c + G, a)] for G ~ N(g, g), min(c, a) when g = 0. */
function expectedMin(c, g, a) {
  if (g <= 0 || c >= a) return Math.min(c, a);
  const mu = c + g;
  const sigma = Math.sqrt(g);
  const z = (a - mu) / sigma;
  const pdf = Math.exp(-(z * z) / 2) / Math.sqrt(2 * Math.PI);
  return Math.max(a - ((a - mu) * normalCDF(z) + sigma * pdf), c);
}

/**
 * estimateAhead counts the real visitors between the serving counter s and
 * position p from per-shard counters, each other shard grown by grow places
 * since they were read (tier1.EstimateAhead).
 */
export function estimateAhead(counters, n, s, p, grow) {
  if (n <= 0 || p <= s + 1) return 0;
  const own = (p - 1) % n;
  const ownCount = Math.floor((p - 1) / n) + 1;
  let total = 0;
  for (let k = 0; k < n; k += 1) {
    let c = k < counters.length ? Math.max(counters[k], 0) : 0;
    let g = Math.max(grow, 0);
    if (k === own) {
      c = Math.max(c, ownCount);
      g = 0;
    }
    total += expectedMin(c, g, strides(k, n, p - 1)) - expectedMin(c, g, strides(k, n, s));
  }
  return Math.max(Math.round(total), 0);
}

/** growSince is tier1.Grow: the places each shard likely handed out in ageSec. */
export function growSince(counters, n, p, enterRate, ageSec) {
  if (n <= 0 || ageSec <= 0) return 0;
  if (enterRate > 0) return Math.round((enterRate * ageSec) / n);
  if (p <= 0) return 0;
  const own = (p - 1) % n;
  const c = own < counters.length ? counters[own] : 0;
  return Math.max(Math.floor((p - 1) / n) + 1 - c - 1, 0);
}

/**
 * tier1Poll is the seconds until the next status poll: by distance (2, 4,
 * 8 or 15 s) but no later than when the turn is due (at least 1 s).
 */
export function tier1Poll(ahead, dueIn) {
  let s;
  if (ahead <= 50) s = 2;
  else if (ahead <= 500) s = 4;
  else if (ahead <= 5000) s = 8;
  else s = 15;
  if (Number.isFinite(dueIn) && dueIn < s) s = Math.max(dueIn, 1);
  return s;
}

/**
 * pageWait estimates, at nowMs, the wait of the visitor at position p from
 * a status document (tier1.Page.Wait). ok is false when the document lacks
 * the fields or was read before p was handed out: keep the last answer.
 * Returns {ok, peopleAhead, seconds, dueIn, nextPoll, paused, afterDraw}.
 */
export function pageWait(doc, p, nowMs) {
  const phase = doc?.sale?.phase;
  if (phase === 'prequeue' || phase === 'drawing') {
    return { ok: true, peopleAhead: 0, seconds: 0, dueIn: NaN, nextPoll: 2, paused: false, afterDraw: true };
  }
  const counters = Array.isArray(doc?.shardCounters) ? doc.shardCounters.map(Number) : [];
  const n = counters.length;
  const pace = doc?.pace || {};
  const batch = Number(pace.batch) || 0;
  const tickMs = Math.round(Number(pace.tickSeconds) * 1000);
  const asOf = Date.parse(doc?.asOf);
  const nextTick = Date.parse(pace.nextTickAt);
  const no = { ok: false, peopleAhead: 0, seconds: 0, dueIn: NaN, nextPoll: 0, paused: false, afterDraw: false };
  if (n === 0 || !(p > 0) || batch <= 0 || !(tickMs > 0) || !Number.isFinite(asOf) || !Number.isFinite(nextTick)) return no;
  const serving = Number(doc.servingCounter) || 0;
  if (p > serving && counters[(p - 1) % n] < Math.floor((p - 1) / n) + 1) return no;
  const paused = doc.paused === true;
  const grow = growSince(counters, n, p, Number(doc.enterRatePerSecond) || 0, (nowMs - asOf) / 1000);
  const ahead = estimateAhead(counters, n, serving, p, grow);
  const next = paused ? nowMs + tickMs : nextTick;
  const ticks = Math.floor(ahead / batch) + 1;
  const dueMs = next + (ticks - 1) * tickMs + Math.round((Number(pace.noticeSeconds) || 0) * 1000) - nowMs;
  const dueIn = dueMs / 1000;
  const seconds = Math.round(Math.max(dueMs, 0) / 1000);
  const nextPoll = ahead > 0 || paused ? Math.ceil(tier1Poll(ahead, dueIn)) : 1;
  return { ok: true, peopleAhead: ahead, seconds, dueIn, nextPoll, paused, afterDraw: false };
}

/**
 * waitRange rounds a wait in seconds to what a person can use, never finer
 * than the estimate is good for: ±20 %, its ends rounded to whole minutes
 * below 10 minutes, to 5 minutes below 90, else to half hours, never
 * leaving the estimate outside. Returns
 * {kind: 'soon'} under a minute, {kind: 'minutes', lo, hi} or {kind:
 * 'hours', lo, hi}.
 */
export function waitRange(seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return { kind: 'unknown' };
  if (seconds < 60) return { kind: 'soon' };
  const m = seconds / 60;
  // Ends to the nearest step, but the range always holds the estimate.
  const ends = (x, step) => {
    const lo = Math.min(Math.round((x * 0.8) / step), Math.floor(x / step)) * step;
    const hi = Math.max(Math.round((x * 1.2) / step), Math.ceil(x / step)) * step;
    return { lo, hi: Math.max(hi, lo + step) };
  };
  if (m >= 90) return { kind: 'hours', ...ends(m / 60, 0.5) };
  const r = ends(m, m * 1.2 <= 10 ? 1 : 5);
  return { kind: 'minutes', lo: Math.max(r.lo, 1), hi: r.hi };
}

/**
 * roundAhead keeps a people count to the precision it has: exact below
 * 100, else two significant digits ({n, about}).
 */
export function roundAhead(n) {
  if (!Number.isFinite(n) || n < 0) return { n: 0, about: false };
  if (n < 100) return { n, about: false };
  const unit = 10 ** (Math.floor(Math.log10(n)) - 1);
  return { n: Math.round(n / unit) * unit, about: true };
}
