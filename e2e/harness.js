// Test harness for vwr's browser tests: builds the real `vwr` binary, runs
// `vwr local` on a free loopback port, and drives Debian's Chromium through
// playwright-core. Nothing is downloaded: the browser is /usr/bin/chromium.
import { spawn, execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, mkdir, readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';

const run = promisify(execFile);
const require = createRequire(import.meta.url);

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SHOTS = path.join(ROOT, 'test-output', 'screenshots');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const VIEWPORTS = { phone: { width: 390, height: 844 }, desktop: { width: 1280, height: 800 } };
export const TIER1_ADMIN = 'e2e-tier1-admin';
export const QUEUE_ADMIN = 'e2e-queue-admin';

/** freePort asks the kernel for a loopback port that was free a moment ago. */
export async function freePort() {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address();
  srv.close();
  await once(srv, 'close');
  return port;
}

let built;
/**
 * buildVWR compiles cmd/vwr once per test process into a temp dir, or takes
 * the binary VWR_E2E_BIN names (`make e2e` builds it once for every file it
 * runs side by side, instead of one link per file).
 */
export function buildVWR() {
  built ??= (async () => {
    if (process.env.VWR_E2E_BIN) {
      const bin = path.resolve(process.env.VWR_E2E_BIN);
      if (!existsSync(bin)) throw new Error(`VWR_E2E_BIN=${bin} does not exist: run the tests through \`make e2e\`, which builds it`);
      return { bin, dir: path.dirname(bin) };
    }
    const dir = await mkdtemp(path.join(tmpdir(), 'vwr-e2e-'));
    const bin = path.join(dir, 'vwr');
    await run('go', ['build', '-o', bin, './cmd/vwr'], { cwd: ROOT, env: { ...process.env, GOFLAGS: '-mod=readonly' } });
    return { bin, dir };
  })();
  return built;
}

/**
 * startVWR runs `vwr local` (with -demo unless demo is false) plus extra
 * flags and env, waits for /healthz, and returns {base, stop, logs()}. The
 * process is killed by stop().
 */
export async function startVWR({ demo = true, flags = [], env = {} } = {}) {
  const { bin } = await buildVWR();
  const port = await freePort();
  const addr = `127.0.0.1:${port}`;
  const child = spawn(bin, ['local', '-addr', addr, ...(demo ? ['-demo'] : []), ...flags], {
    cwd: ROOT,
    // A clean environment: no REDIS_URL or secrets leak in from the shell, so
    // every run uses the embedded Redis and fresh keys.
    env: Object.fromEntries(Object.entries({
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      VWR_ADMIN_TOKEN: TIER1_ADMIN,
      QUEUE_ADMIN_TOKEN: QUEUE_ADMIN,
      ...env,
    }).filter(([, v]) => v !== undefined)),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b) => { out += b; });
  child.stderr.on('data', (b) => { out += b; });
  const exited = once(child, 'exit');
  const base = `http://${addr}`;
  const deadline = Date.now() + 30000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`vwr local exited with ${child.exitCode}:\n${out}`);
    try {
      const res = await fetch(`${base}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`vwr local did not become healthy in 30s:\n${out}`);
    }
    await sleep(100);
  }
  return {
    base,
    logs: () => out,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
      }
    },
  };
}

/**
 * launchChromium starts Debian's Chromium headless. playwright-core gives
 * every launch a fresh temporary user-data-dir and removes it on close, and
 * each test opens its own isolated contexts on top.
 */
export async function launchChromium() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} not found: run \`make testenv\` (it apt-installs chromium)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/** sleep resolves after ms. */
export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/** waitFor polls fn until it returns a truthy value or the timeout passes. */
export async function waitFor(fn, { timeout = 30000, interval = 100, what = 'condition' } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what} (last: ${last})`);
    await sleep(interval);
  }
}

/** stage reads the page's data-stage (set by every vwr page). */
export function stage(page) {
  return page.evaluate(() => document.body?.dataset.stage || '');
}

const journals = new WeakMap();

/**
 * journal keeps a page's script errors, failed requests, refused answers
 * and console errors, so that a waitStage timeout can say why the page did
 * not get there.
 */
export function journal(page) {
  const lines = [];
  const note = (line) => lines.push(`${new Date().toISOString().slice(11, 23)} ${line}`.slice(0, 300));
  page.on('pageerror', (e) => note(`pageerror ${e.message}`));
  page.on('requestfailed', (r) => note(`requestfailed ${r.method()} ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => { if (r.status() >= 400) note(`${r.status()} ${r.request().method()} ${r.url()}`); });
  page.on('console', (m) => { if (m.type() === 'error') note(`console ${m.text()}`); });
  journals.set(page, lines);
  return lines;
}

/** waitStage waits until the page shows one of the given stages. */
export async function waitStage(page, stages, timeout = 30000) {
  const want = [].concat(stages);
  try {
    return await waitFor(async () => {
      const s = await stage(page).catch(() => '');
      return want.includes(s) ? s : '';
    }, { timeout, what: `stage ${want.join('|')} at ${page.url()}` });
  } catch (err) {
    // Say what the page showed instead: a timeout alone does not tell a
    // page stuck retrying from one that never ran.
    const shown = await page.evaluate(() => ({
      stage: document.body?.dataset.stage, status: document.getElementById('status')?.textContent,
    })).catch((e) => ({ unreadable: String(e) }));
    err.message += `; the page showed ${JSON.stringify(shown)}`;
    const j = journals.get(page);
    if (j) err.message += `; its journal: ${JSON.stringify(j.slice(-20))}`;
    throw err;
  }
}

/** screenshot saves test-output/screenshots/<name>-<viewport>.png. */
export async function screenshot(page, name) {
  await mkdir(SHOTS, { recursive: true });
  const { width } = page.viewportSize();
  const kind = width < 600 ? 'phone' : 'desktop';
  const file = path.join(SHOTS, `${name}-${kind}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

let axeSource;
/**
 * axe runs axe-core in the page and returns violations rated serious or
 * critical (every violation with all). With underCSP the page keeps its own
 * strict CSP (no bypassCSP): axe is then evaluated through the debugger,
 * which the CSP does not govern, instead of injected as an inline script it
 * would refuse.
 */
export async function axe(page, { underCSP = false, all = false } = {}) {
  axeSource ??= await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
  if (underCSP) await page.evaluate(axeSource);
  else await page.addScriptTag({ content: axeSource });
  const result = await page.evaluate(async () => globalThis.axe.run(document, { resultTypes: ['violations'] }));
  return result.violations
    .filter((v) => all || v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/** cookie returns the named cookie of a browser context, or undefined. */
export async function cookie(context, name) {
  return (await context.cookies()).find((c) => c.name === name);
}

/** api calls the server from Node (not a browser) and returns {status, body}. */
export async function api(base, method, url, { token, body, headers = {} } = {}) {
  const res = await fetch(base + url, {
    method,
    headers: {
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
      ...(body ? { 'Content-Type': 'application/json' } : {}),
      ...headers,
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, body: json, text, headers: res.headers };
}
