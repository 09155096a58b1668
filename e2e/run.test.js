// make e2e's runner (run.mjs): a test that fails once is run again alone
// and reported FLAKY; one that fails twice fails the run and is named last.
// make test's lanes (scripts/test-lanes.sh): a red run ends with what failed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { failures } from './run.mjs';

test('run.mjs reads TAP failures: name (unescaped), place and the error\'s first line', () => {
  const tap = [
    'ok 1 - fine',
    '  ---',
    '  duration_ms: 1',
    '  ...',
    'not ok 2 - a \\# b (c) [d]?',
    '  ---',
    '  duration_ms: 57738.45',
    "  location: '/work/ci/e2e/draw.test.js:54:1'",
    "  failureType: 'testCodeFailure'",
    '  error: |-',
    '    The input did not match the regular expression /x/. Input:',
    '    ',
    '  code: \'ERR_ASSERTION\'',
    '  ...',
    '# Subtest: nested',
    '    not ok 1 - inner',
    'not ok 3 - one line',
    '  ---',
    "  location: '/work/ci/e2e/pow.test.js:9:3'",
    "  error: 'boom'",
    '  ...',
  ].join('\n');
  const got = failures(tap).map(({ name, file, line, error }) => ({ name, file, line, error }));
  assert.deepEqual(got, [
    { name: 'a # b (c) [d]?', file: '/work/ci/e2e/draw.test.js', line: 54, error: 'The input did not match the regular expression /x/. Input:' },
    { name: 'one line', file: '/work/ci/e2e/pow.test.js', line: 9, error: 'boom' },
  ]);
});

test('run.mjs runs a failed test again alone: once-failing is FLAKY and passes, twice-failing fails and is named last', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vwr-run-'));
  try {
    const mark = join(dir, 'mark');
    const file = (body) => `import { test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { existsSync, writeFileSync } from 'node:fs';\n${body}\n`;
    writeFileSync(join(dir, 'a.test.js'), file(`test('once (x) [y]?', () => {
  if (!existsSync(${JSON.stringify(mark)})) { writeFileSync(${JSON.stringify(mark)}, ''); assert.fail('first run fails'); }
});
test('fine', () => {});`));
    const runner = new URL('./run.mjs', import.meta.url).pathname;
    const flaky = join(dir, 'flaky.txt');
    const once = spawnSync(process.execPath, [runner, '2', dir], { encoding: 'utf8', env: { ...process.env, E2E_FLAKY_FILE: flaky } });
    assert.equal(once.status, 0, once.stdout);
    assert.match(once.stdout, /^FLAKY \(failed once, passed alone; .*\): once \(x\) \[y\]\? \(.*a\.test\.js:4\): first run fails$/m);
    assert.match(readFileSync(flaky, 'utf8'), /^once \(x\) \[y\]\? \(.*a\.test\.js:4\)\n {2}---/);

    writeFileSync(join(dir, 'b.test.js'), file("test('always', () => { assert.equal(1, 2); });"));
    const twice = spawnSync(process.execPath, [runner, '2', dir], { encoding: 'utf8', env: { ...process.env, E2E_FLAKY_FILE: flaky } });
    assert.equal(twice.status, 1, twice.stdout);
    const last = twice.stdout.trimEnd().split('\n').pop();
    assert.match(last, /^FAILED TEST: always \(.*b\.test\.js:4\): /);
    assert.equal(readFileSync(flaky, 'utf8'), '', 'nothing flaky: the once-failing test passed first time');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('test-lanes.sh ends a red run with what failed: go test\'s failed test and its first lines, the browser runner\'s line, each lane\'s target', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vwr-lanes-'));
  try {
    // A stand-in make: its last argument is the target.
    const make = join(dir, 'make');
    writeFileSync(make, `#!/usr/bin/env bash
case "\${@: -1}" in
  gofail) printf -- '=== RUN   TestX\\n--- FAIL: TestX (0.01s)\\n    x_test.go:12: got 1, want 2\\n    x_test.go:13: second\\n    x_test.go:14: third\\nFAIL\\nFAIL\\texample.com/p\\t0.1s\\n'; exit 1 ;;
  e2efail) echo 'FAILED TEST: the page (e2e/x.test.js:3): boom'; exit 1 ;;
  flaky) echo 'one (e2e/y.test.js:7)' >"$E2E_FLAKY_FILE"; echo '  ---' >>"$E2E_FLAKY_FILE" ;;
  *) echo fine ;;
esac
`);
    chmodSync(make, 0o755);
    const lanes = new URL('../scripts/test-lanes.sh', import.meta.url).pathname;
    const env = { ...process.env, MAKE: make, LANES_LOGS: join(dir, 'lanes'), E2E_FLAKY_FILE: join(dir, 'flaky.txt') };
    const red = spawnSync('bash', [lanes, 'go: ok gofail never', 'e2e: e2efail', 'quiet: ok'], { encoding: 'utf8', env });
    assert.equal(red.status, 1, red.stdout);
    const tail = red.stdout.trimEnd().split('\n');
    assert.deepEqual(tail.slice(tail.indexOf('=== what failed ===')), [
      '=== what failed ===',
      'go: --- FAIL: TestX (0.01s)',
      'go:       x_test.go:12: got 1, want 2',
      'go:       x_test.go:13: second',
      'go: FAIL\texample.com/p\t0.1s',
      'go: make gofail',
      'e2e: FAILED TEST: the page (e2e/x.test.js:3): boom',
      'e2e: make e2efail',
    ]);
    assert.doesNotMatch(red.stdout, /make never/, 'a failed target ends its lane');

    const green = spawnSync('bash', [lanes, 'e2e: flaky', 'quiet: ok'], { encoding: 'utf8', env });
    assert.equal(green.status, 0, green.stdout);
    assert.match(green.stdout, /FLAKY browser tests \(failed once, passed alone; .*flaky\.txt\):\n {4}one \(e2e\/y\.test\.js:7\)\n/);
    assert.doesNotMatch(green.stdout, /what failed/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
