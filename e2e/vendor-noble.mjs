// Vendors the BLS12-381 code "Verify my place" runs in the browser:
// @noble/curves and @noble/hashes (Paul Miller; audited, MIT), pinned in
// e2e/package.json and package-lock.json, which npm ci checks by integrity
// hash. The page has no build step and its CSP allows only same-origin
// scripts, so the files are copied into static/vwr/vendor/ unchanged
// except for one rewrite: the bare imports of @noble/hashes become relative
// paths a browser can load. `node e2e/vendor-noble.mjs` writes the copy;
// e2e/vendor.test.js fails when the copy differs from what this writes.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const VENDOR = path.resolve(HERE, '..', 'static', 'vwr', 'vendor');

/** The two packages, their pinned versions and the files bls12-381.js needs. */
export const PACKAGES = [
  {
    name: '@noble/curves', version: '2.4.0', dir: 'noble-curves-2.4.0',
    files: ['LICENSE', 'bls12-381.js', 'utils.js', 'abstract/bls.js', 'abstract/curve.js', 'abstract/der.js',
      'abstract/hash-to-curve.js', 'abstract/modular.js', 'abstract/tower.js', 'abstract/weierstrass.js'],
  },
  {
    name: '@noble/hashes', version: '2.4.0', dir: 'noble-hashes-2.4.0',
    files: ['LICENSE', '_md.js', '_u64.js', 'hmac.js', 'sha2.js', 'utils.js'],
  },
];

/** rewrite turns `from '@noble/hashes/x.js'` into a path relative to file. */
export function rewrite(text, file) {
  const up = '../'.repeat(file.split('/').length);
  return text.replace(/from '@noble\/hashes\/([a-z0-9_]+\.js)'/g, (_, f) => `from '${up}noble-hashes-2.4.0/${f}'`);
}

/** expected returns {relative path in static/vwr/vendor: contents} from node_modules. */
export async function expected() {
  const out = {};
  for (const pkg of PACKAGES) {
    const src = path.join(HERE, 'node_modules', ...pkg.name.split('/'));
    const meta = JSON.parse(await readFile(path.join(src, 'package.json'), 'utf8'));
    if (meta.version !== pkg.version) throw new Error(`${pkg.name} ${meta.version} installed, ${pkg.version} pinned: run make testenv`);
    for (const f of pkg.files) {
      const text = await readFile(path.join(src, f), 'utf8');
      out[`${pkg.dir}/${f}`] = f.endsWith('.js') ? rewrite(text, f) : text;
    }
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [rel, text] of Object.entries(await expected())) {
    await mkdir(path.dirname(path.join(VENDOR, rel)), { recursive: true });
    await writeFile(path.join(VENDOR, rel), text);
    console.log(`vendored static/vwr/vendor/${rel}`);
  }
}
