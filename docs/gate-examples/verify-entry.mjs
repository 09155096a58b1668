// Verify a vwr entry token in Node with jose (npm install jose).
import { jwtVerify } from 'jose';

const SKEW_SECONDS = 30; // how far in the future iat may lie (clocks differ)

/**
 * verifyEntry returns the visitor's id if token lets them into eventId now,
 * and throws otherwise. secret is the queue's QUEUE_ENTRY_TOKEN_SECRET.
 */
export async function verifyEntry(token, eventId, secret) {
  const { payload } = await jwtVerify(token, new TextEncoder().encode(secret), {
    algorithms: ['HS256'], // never "none", never another algorithm
    issuer: 'vwr',
    audience: 'vwr-entry', // a Tier 1 pass ("vwr-tier1") is not an entry token
    subject: eventId, // the event this request is for
    requiredClaims: ['exp', 'iat', 'sub', 'uid'],
    clockTolerance: 0, // exp is strict: the queue renews tokens, it never needs slack
  });
  if (payload.iat > Date.now() / 1000 + SKEW_SECONDS) throw new Error('iat is in the future');
  if (typeof payload.uid !== 'string' || payload.uid === '') throw new Error('no uid');
  return payload.uid;
}

// node verify-entry.mjs <token> <eventId>, with QUEUE_ENTRY_TOKEN_SECRET set.
if (import.meta.url === `file://${process.argv[1]}`) {
  verifyEntry(process.argv[2], process.argv[3], process.env.QUEUE_ENTRY_TOKEN_SECRET)
    .then((uid) => console.log(JSON.stringify({ ok: true, uid })))
    .catch((err) => { console.log(JSON.stringify({ ok: false, error: err.code || err.message })); process.exitCode = 1; });
}
