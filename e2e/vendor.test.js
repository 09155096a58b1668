// The vendored @noble/curves and @noble/hashes in static/vwr/vendor/ are
// exactly the pinned npm packages (npm ci checks their integrity hashes)
// with the one import rewrite e2e/vendor-noble.mjs makes, licences
// included; nothing else is served from there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { expected, VENDOR } from './vendor-noble.mjs';

async function walk(dir, base = dir) {
  const out = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...await walk(p, base));
    else out.push(path.relative(base, p).split(path.sep).join('/'));
  }
  return out;
}

test('static/vwr/vendor is the pinned noble packages, unchanged but for import paths', async () => {
  const want = await expected();
  assert.deepEqual((await walk(VENDOR)).sort(), Object.keys(want).sort(), 'run node e2e/vendor-noble.mjs');
  for (const [rel, text] of Object.entries(want)) {
    assert.equal(await readFile(path.join(VENDOR, rel), 'utf8'), text, `static/vwr/vendor/${rel} differs (run node e2e/vendor-noble.mjs)`);
  }
  for (const [rel, text] of Object.entries(want)) {
    if (rel.endsWith('.js')) assert.doesNotMatch(text, /^\s*import[^;]*from '@/m, `${rel} keeps a bare import`);
  }
  assert.match(want['noble-curves-2.4.0/LICENSE'], /MIT License/);
});
