// node:test for the CloudFront Functions in this directory. The edge check
// runs the cross-language vectors minted by internal/edge (TestEdgeVectors):
// Go's edge.Decide and this port must give every vector the same answer.
//
// The harness loads each file as CloudFront would: the `cloudfront` module's
// KeyValueStore is a map of the vectors' keys, `require('crypto')` is Node's,
// and Date.now is the vectors' clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const vectors = JSON.parse(readFileSync(join(here, '../../internal/edge/testdata/edge-vectors.json'), 'utf8'));

// CloudFront Functions' size limit for the code, in bytes.
const MAX_FUNCTION_BYTES = 10 * 1024;

function load(file, store, nowSeconds) {
  const src = readFileSync(join(here, file), 'utf8');
  const importLine = "import cf from 'cloudfront';";
  const body = src.includes(importLine) ? src.replace(importLine, '') : src;
  const cf = {
    kvs() {
      return {
        async get(key) {
          if (!Object.prototype.hasOwnProperty.call(store, key)) throw new Error(`key not found: ${key}`);
          return store[key];
        },
      };
    },
  };
  const fakeDate = { now: () => nowSeconds * 1000 };
  return new Function('cf', 'require', 'Date', `${body}\nreturn handler;`)(cf, require, fakeDate);
}

// viewerRequest builds the event CloudFront hands a viewer-request function.
function viewerRequest(path, query, cookie) {
  const querystring = {};
  for (const pair of query === '' ? [] : query.split('&')) {
    const i = pair.indexOf('=');
    const [k, v] = i < 0 ? [pair, ''] : [pair.slice(0, i), pair.slice(i + 1)];
    if (querystring[k]) {
      const e = querystring[k];
      e.multiValue = e.multiValue || [{ value: e.value }];
      e.multiValue.push({ value: v });
    } else {
      querystring[k] = { value: v };
    }
  }
  const cookies = cookie === '' ? {} : { 'urr-vwr-token': { value: cookie } };
  return { version: '1.0', context: { eventType: 'viewer-request' }, viewer: { ip: '192.0.2.1' },
    request: { method: 'GET', uri: path, querystring, headers: {}, cookies } };
}

function outcome(req, res) {
  if (res === req) return { want: 'pass', forward: req.uri };
  if (res.statusCode === 302) {
    assert.equal(res.headers['cache-control'].value, 'no-store');
    return { want: 'redirect', location: res.headers.location.value };
  }
  if (res.statusCode === 404) {
    assert.deepEqual(JSON.parse(res.body.data), { error: 'unknown event', code: 'invalid_event_id' });
    return { want: 'notfound' };
  }
  if (res.statusCode === 400) {
    assert.deepEqual(JSON.parse(res.body.data), { error: 'malformed or ambiguous path', code: 'invalid_path' });
    assert.equal(res.headers['cache-control'].value, 'no-store');
    return { want: 'badrequest' };
  }
  return { unexpected: res };
}

test('the vectors cover every rejection the issue names', () => {
  const names = vectors.cases.map((c) => c.name);
  for (const n of ['alg none', 'expired', 'wrong event', 'bad signature', 'missing cookie', 'unknown kid', 'valid pass']) {
    assert.ok(names.includes(n), `vector "${n}" is missing`);
  }
  assert.ok(vectors.cases.length >= 20);
  const encoded = vectors.cases.filter((c) => c.name.startsWith('encoded: '));
  assert.ok(encoded.length >= 40, `${encoded.length} encoded-path vectors`);
  for (const want of ['pass', 'redirect', 'notfound', 'badrequest']) {
    assert.ok(encoded.some((c) => c.want === want), `no encoded-path vector wants ${want}`);
  }
});

for (const c of vectors.cases) {
  test(`edge check agrees with edge.Decide: ${c.name}`, async () => {
    const handler = load('edge-check.js', vectors.keys, vectors.now);
    const event = viewerRequest(c.path, c.query, c.cookie);
    const res = await handler(event);
    const want = c.want === 'redirect' ? { want: 'redirect', location: c.location }
      : c.want === 'pass' ? { want: 'pass', forward: c.forward } : { want: c.want };
    assert.deepEqual(outcome(event.request, res), want);
  });
}

test('a retired kid no longer verifies', async () => {
  const valid = vectors.cases.find((c) => c.name === 'valid pass signed by the retiring kid');
  const { k2 } = vectors.keys;
  const handler = load('edge-check.js', { k2 }, vectors.now);
  const event = viewerRequest(valid.path, '', valid.cookie);
  assert.equal((await handler(event)).statusCode, 302);
});

test('the functions fit CloudFront Functions\' 10 KB limit', () => {
  for (const f of ['edge-check.js', 'strip-prefix.js', 'page-index.js']) {
    const size = statSync(join(here, f)).size;
    assert.ok(size < MAX_FUNCTION_BYTES, `${f} is ${size} bytes`);
  }
});

test('strip-prefix hands /vwr-api/vwr/… to the API as /vwr/…', () => {
  const handler = load('strip-prefix.js', {}, 0);
  for (const [uri, want] of [
    ['/vwr-api/vwr/status/summer-sale', '/vwr/status/summer-sale'],
    ['/vwr-api/vwr/assign/summer-sale', '/vwr/assign/summer-sale'],
    ['/vwr-api/', '/'],
    ['/vwr-apix/vwr/status/e', '/vwr-apix/vwr/status/e'],
  ]) {
    const event = viewerRequest(uri, '', '');
    assert.equal(handler(event).uri, want, uri);
  }
});

test('page-index serves /vwr/ as /vwr/index.html', () => {
  const handler = load('page-index.js', {}, 0);
  for (const [uri, want] of [
    ['/vwr/', '/vwr/index.html'],
    ['/vwr/vwr.js', '/vwr/vwr.js'],
    ['/vwr/queue.html', '/vwr/queue.html'],
  ]) {
    assert.equal(handler(viewerRequest(uri, 'event=e1', '')).uri, want, uri);
  }
});
