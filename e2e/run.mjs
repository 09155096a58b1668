// make e2e's runner: every browser test file, JOBS at a time, as TAP.
//
// A test that fails is run once more, alone (its file, its name). A pass
// then does not hide it: it is reported as FLAKY, with its first failure, in
// the output and in test-output/e2e-flaky.txt, for someone to fix; the run
// passes. A test that fails twice, a file that fails outside any test, or
// more than MAX_RERUNS failures at once (something broke, not a slow
// moment on a shared machine) fail the run. The output ends with one line
// per failed test, its place and its error's first line, so the last lines
// of a CI log name it.
//
// Usage: node e2e/run.mjs [jobs [dir]]; E2E_FLAKY_FILE moves the flaky list.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const MAX_RERUNS = 3;
const here = dirname(fileURLToPath(import.meta.url));
const root = dirname(here);
const out = join(root, 'test-output');

/** run starts node --test with args, copies its output through, and resolves to [exit code, output]. */
function run(args) {
  return new Promise((resolve) => {
    // Under a test runner already (run.test.js), NODE_TEST_CONTEXT would
    // turn this run's report into messages for that runner.
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const child = spawn(process.execPath, ['--test', '--test-reporter=tap', ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
    // A runner stopped on its own (a CI timeout, kill) stops its tests too,
    // or they run on, orphaned, with their servers and browsers.
    const stop = (sig) => () => {
      child.kill(sig);
      process.exit(1);
    };
    const onTerm = stop('SIGTERM');
    const onInt = stop('SIGINT');
    process.once('SIGTERM', onTerm).once('SIGINT', onInt);
    let text = '';
    child.stdout.on('data', (d) => {
      process.stdout.write(d);
      text += d;
    });
    child.on('close', (code) => {
      process.off('SIGTERM', onTerm).off('SIGINT', onInt);
      resolve([code ?? 1, text]);
    });
  });
}

/** failures reads TAP's top-level "not ok" entries: name, file, line and the YAML block. */
export function failures(tap) {
  const lines = tap.split('\n');
  const found = [];
  for (let i = 0; i < lines.length; i += 1) {
    const m = /^not ok \d+ - (.*?)(?: # (?:SKIP|TODO).*)?$/.exec(lines[i]);
    if (!m) continue;
    const block = [];
    for (i += 1; i < lines.length && lines[i] !== '  ...'; i += 1) block.push(lines[i]);
    const loc = block.map((l) => /^ {2}location: '(.*):(\d+):\d+'$/.exec(l)).find(Boolean);
    const err = block.findIndex((l) => /^ {2}error: /.test(l));
    let error = err < 0 ? '' : block[err].replace(/^ {2}error: (\|-)?/, '').trim();
    if (!error && err >= 0) error = (block[err + 1] || '').trim();
    error = error.replace(/^'(.*)'$/, '$1');
    found.push({
      name: m[1].replace(/\\#/g, '#').replace(/\\n/g, '\n').replace(/\\\\/g, '\\'),
      file: loc ? loc[1] : '',
      line: loc ? Number(loc[2]) : 0,
      error,
      block: block.join('\n'),
    });
  }
  return found;
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

async function main() {
  const jobs = process.argv[2] || '3';
  mkdirSync(out, { recursive: true });
  const flakyFile = resolve(root, process.env.E2E_FLAKY_FILE || join(out, 'e2e-flaky.txt'));
  writeFileSync(flakyFile, '');
  const [code, tap] = await run([`--test-concurrency=${jobs}`, process.argv[3] || 'e2e/']);
  if (code === 0) return 0;
  const failed = failures(tap);
  const where = (f) => (f.file ? `${relative(root, f.file)}:${f.line}` : 'no location');
  const rerunnable = failed.length > 0 && failed.length <= MAX_RERUNS
    && failed.every((f) => f.file.endsWith('.test.js') && f.name !== f.file && !/^\//.test(f.name));
  const still = [];
  const flaky = [];
  if (rerunnable) {
    for (const f of failed) {
      console.log(`# e2e: "${f.name}" failed (${where(f)}); running it again, alone`);
      const [again] = await run(['--test-concurrency=1', `--test-name-pattern=^${escape(f.name)}$`, relative(root, f.file)]);
      (again === 0 ? flaky : still).push(f);
    }
  } else {
    still.push(...failed);
  }
  if (flaky.length) {
    writeFileSync(flakyFile, flaky.map((f) => `${f.name} (${where(f)})\n${f.block}\n`).join('\n'));
  }
  console.log('');
  for (const f of flaky) console.log(`FLAKY (failed once, passed alone; ${relative(root, flakyFile)}): ${f.name} (${where(f)}): ${f.error.slice(0, 300)}`);
  for (const f of still) console.log(`FAILED TEST: ${f.name} (${where(f)}): ${f.error.slice(0, 300)}`);
  if (!failed.length) console.log(`FAILED TEST: node --test exited ${code} with no failed test in its output`);
  return still.length || !failed.length ? 1 : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
