// The proof-of-work solver as a module Web Worker (pow.js's solve starts
// it), so the page stays responsive while it counts. Message in: a
// challenge {challenge, salt, maxnumber}; messages out: {type: 'progress',
// n} about ten times a second, then {type: 'done', n, ms} (n = -1: none).
import { search } from './pow.js';

self.onmessage = ({ data }) => {
  const t0 = performance.now();
  let last = t0;
  const n = search(data.challenge, data.salt, 0, data.maxnumber, (i) => {
    const now = performance.now();
    if (now - last >= 100) {
      last = now;
      self.postMessage({ type: 'progress', n: i });
    }
  });
  self.postMessage({ type: 'done', n, ms: performance.now() - t0 });
};
