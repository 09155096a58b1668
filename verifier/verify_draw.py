#!/usr/bin/env python3
"""An independent verifier of vwr's pre-queue draw (rule vwr-draw-v2).

Written from docs/draw.md alone, in another language and on another
BLS12-381 implementation (py_ecc), so that a mistake in vwr's Go code or
in its page does not hide in a verifier that shares it.

    verify_draw.py bundle BUNDLE.json [--chain-hash HEX] [--event ID] [--receipt R.json ...]
    verify_draw.py beacons BEACONS.json

`bundle` checks a bundle as `vwr verify-draw -save` writes it (the draw
document, every ticket, every position) and any receipts, and prints one
JSON object: ok, error, the values it computed (chainHash, merkleRoot,
root, randomness, positions) and one result per receipt. `beacons`
checks drand rounds: {"chain": <chain info>, "beacons": [{round,
randomness, signature}, ...]} and prints [true|false, ...]. The exit
status is 0 when everything verified, 1 otherwise.
"""

import hashlib
import hmac
import json
import re
import sys
from calendar import timegm

from py_ecc.bls.hash_to_curve import hash_to_G1
from py_ecc.bls.point_compression import decompress_G1, decompress_G2
from py_ecc.optimized_bls12_381 import (
    FQ12,
    G2,
    curve_order,
    final_exponentiate,
    is_inf,
    multiply,
    neg,
    pairing,
)

RULE = "vwr-draw-v2"
RECEIPT = "vwr-receipt-v1"
SCHEME = "bls-unchained-g1-rfc9380"
DST = b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_"
QUICKNET = "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971"


class Mismatch(Exception):
    pass


def need(cond, why):
    if not cond:
        raise Mismatch(why)


def sha256(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.digest()


def u32(n):
    return n.to_bytes(4, "big")


def u64(n):
    return n.to_bytes(8, "big")


def i64(n):
    return n.to_bytes(8, "big", signed=True)


def unhex(s, size=None, what="value"):
    need(isinstance(s, str) and re.fullmatch(r"(?:[0-9a-f]{2})*", s), f"{what} is not lowercase hex")
    b = bytes.fromhex(s)
    need(size is None or len(b) == size, f"{what} has {len(b)} bytes, not {size}")
    return b


TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z")


def unix_ms(s, what, whole_seconds=False):
    """RFC 3339 UTC with Z, as Go's RFC3339Nano writes it, in unix ms."""
    m = TIME.fullmatch(s) if isinstance(s, str) else None
    need(m, f"{what} {s!r} is not an RFC 3339 UTC time")
    frac = m.group(7) or ""
    need(not frac.endswith("0"), f"{what} has trailing zeros in its fraction")
    need(len(frac) <= 3, f"{what} has a fraction finer than a millisecond")
    need(not (whole_seconds and frac), f"{what} has a fraction of a second")
    secs = timegm(tuple(int(m.group(i)) for i in range(1, 7)) + (0, 0, 0))
    return secs * 1000 + int(frac.ljust(3, "0") or 0)


def strict(obj, allowed, required, what):
    need(isinstance(obj, dict), f"{what} is not an object")
    extra = set(obj) - set(allowed)
    need(not extra, f"{what} has unknown fields {sorted(extra)}")
    missing = set(required) - set(obj)
    need(not missing, f"{what} lacks {sorted(missing)}")


def integer(v, what, lo=0):
    need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, f"{what} must be an integer ≥ {lo}")
    return v


# --- the chain and the beacon -------------------------------------------

CHAIN_FIELDS = ["public_key", "period", "genesis_time", "hash", "groupHash", "schemeID", "metadata"]


def chain_hash(c):
    strict(c, CHAIN_FIELDS, CHAIN_FIELDS, "chain")
    strict(c["metadata"], ["beaconID"], [], "chain metadata")
    beacon_id = c["metadata"].get("beaconID", "")
    tail = b"" if beacon_id in ("", "default") else beacon_id.encode()
    return sha256(u32(integer(c["period"], "period", 1)), i64(integer(c["genesis_time"], "genesis_time")),
                  unhex(c["public_key"], 96, "public key"), unhex(c["groupHash"], 32, "groupHash"), tail)


def round_at_ms(c, r):
    return (c["genesis_time"] + (r - 1) * c["period"]) * 1000


def first_round_at_or_after(c, t_ms):
    s = t_ms // 1000
    r = 0 if s < c["genesis_time"] else (s - c["genesis_time"]) // c["period"] + 1
    if r == 0 or round_at_ms(c, r) < t_ms:
        r += 1
    return r


def point(raw, size, what):
    """A compressed point: flags, not infinity, on the curve, in the subgroup."""
    need(len(raw) == size, f"{what} has {len(raw)} bytes, not {size}")
    need(raw[0] & 0x80, f"{what} is not compressed")
    need(not raw[0] & 0x40, f"{what} is the point at infinity")
    try:
        if size == 48:
            p = decompress_G1(int.from_bytes(raw, "big"))
        else:
            p = decompress_G2((int.from_bytes(raw[:48], "big"), int.from_bytes(raw[48:], "big")))
    except Exception as e:  # py_ecc raises ValueError for points off the curve
        raise Mismatch(f"{what} does not decode: {e}")
    need(not is_inf(p), f"{what} is the point at infinity")
    need(is_inf(multiply(p, curve_order)), f"{what} is not in the prime-order subgroup")
    return p


def beacon_ok(c, b):
    """The round's signature under the chain's key, and randomness = SHA-256(σ)."""
    need(c["schemeID"] == SCHEME, f"scheme {c['schemeID']!r}")
    strict(b, ["round", "randomness", "signature"], ["round", "randomness", "signature"], "beacon")
    sig = unhex(b["signature"], None, "signature")
    need(unhex(b["randomness"], 32, "randomness") == sha256(sig), "randomness is not SHA-256(signature)")
    s = point(sig, 48, "signature")
    pk = point(unhex(c["public_key"], 96, "public key"), 96, "public key")
    h = hash_to_G1(sha256(u64(integer(b["round"], "round", 1))), DST, hashlib.sha256)
    # e(σ, g2) = e(H(m), pk)  ⇔  e(σ, g2) · e(−H(m), pk) = 1
    prod = pairing(G2, s, final_exponentiate=False) * pairing(pk, neg(h), final_exponentiate=False)
    need(final_exponentiate(prod) == FQ12.one(), f"round {b['round']}: the BLS signature does not verify")


# --- the list, R and the order -------------------------------------------

def merkle_root(hashes):
    if not hashes:
        return sha256(b"")
    level = [sha256(b"\x00", h) for h in hashes]
    while len(level) > 1:
        nxt = [sha256(b"\x01", level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def root_from_proof(h, index, n, siblings):
    need(n >= 1 and 0 <= index < n, "proof index out of range")
    node, i, w, used = sha256(b"\x00", h), index, n, 0
    while w > 1:
        if (i ^ 1) < w:
            need(used < len(siblings), "proof too short")
            s = siblings[used]
            node = sha256(b"\x01", node, s) if i % 2 == 0 else sha256(b"\x01", s, node)
            used += 1
        i, w = i // 2, (w + 1) // 2
    need(used == len(siblings), "proof too long")
    return node


def commitment(d, n, mroot):
    closed = unix_ms(d["closedAt"], "closedAt")
    return sha256(b"\x02", RULE.encode(), b"\x00", d["eventId"].encode(), b"\x00",
                  i64(unix_ms(d["scheduledAt"], "scheduledAt")), i64(unix_ms(d["opensAt"], "opensAt", True) // 1000),
                  i64(d["marginMs"]), u64(d["scheduledRound"]), u64(d["round"]), i64(closed), u64(n), mroot)


def positions(randomness, r, hashes):
    keyed = sorted((hmac.new(randomness, r + h, hashlib.sha256).digest(), i) for i, h in enumerate(hashes))
    out = [0] * len(hashes)
    for rank, (_, i) in enumerate(keyed):
        out[i] = rank + 1
    return out


def layout(n):
    size = 1024
    while -(-n // size) > 4096:
        size *= 2
    return size, -(-n // size)


DOC_FIELDS = ["rule", "eventId", "status", "scheduledAt", "opensAt", "marginMs", "chain", "scheduledRound",
              "scheduledRoundAt", "round", "roundAt", "roundMoved", "closedAt", "cancelledAt", "merkleRoot", "root",
              "n", "beacon", "chunkSize", "chunks"]
DOC_DRAWN = ["rule", "eventId", "status", "scheduledAt", "opensAt", "marginMs", "chain", "scheduledRound",
             "scheduledRoundAt", "round", "roundAt", "closedAt", "merkleRoot", "root", "n", "beacon", "chunkSize", "chunks"]


def check_timing(d):
    c = d["chain"]
    margin = integer(d["marginMs"], "marginMs")
    need(margin >= 1000, "margin below 1 s")
    need(round_at_ms(c, d["scheduledRound"]) == unix_ms(d["scheduledRoundAt"], "scheduledRoundAt"), "scheduledRoundAt")
    need(round_at_ms(c, d["round"]) == unix_ms(d["roundAt"], "roundAt"), "roundAt")
    need(unix_ms(d["scheduledRoundAt"], "scheduledRoundAt") >= unix_ms(d["opensAt"], "opensAt", True) + margin,
         "the scheduled round comes less than the margin after the opening")
    close_by = unix_ms(d["closedAt"], "closedAt") + margin
    if d["round"] == d["scheduledRound"]:
        need("roundMoved" not in d, "roundMoved on the scheduled round")
        need(close_by <= unix_ms(d["roundAt"], "roundAt"), "closedAt + margin is after roundAt")
    else:
        need(d.get("roundMoved") == "late-close", "the round is not the scheduled one")
        need(close_by > unix_ms(d["scheduledRoundAt"], "scheduledRoundAt"), "the round moved without a late close")
        need(d["round"] == first_round_at_or_after(c, close_by), "the round moved to the wrong round")


def verify_bundle(bundle, trusted, event):
    """The steps of docs/draw.md, "Verifying a draw, step by step"."""
    out = {}
    strict(bundle, ["draw", "tickets", "positions"], ["draw", "tickets", "positions"], "bundle")
    d = bundle["draw"]
    strict(d, DOC_FIELDS, DOC_DRAWN, "draw document")
    need(d["rule"] == RULE, f"rule {d['rule']!r}")
    need(d["status"] == "drawn", f"status {d['status']!r}")
    need(event is None or d["eventId"] == event, f"event {d['eventId']!r}")
    need(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", d["eventId"]), "event id")
    need("cancelledAt" not in d, "a drawn sale with cancelledAt")
    c = d["chain"]
    ch = chain_hash(c)
    out["chainHash"] = ch.hex()
    need(ch.hex() == c["hash"], "the chain info does not hash to its hash")
    need(c["hash"] == trusted, f"chain {c['hash']} is not the trusted chain {trusted}")
    need(c["schemeID"] == SCHEME, "scheme")
    for f in ("scheduledRound", "round"):
        integer(d[f], f, 1)
    check_timing(d)
    b = d["beacon"]
    need(b["round"] == d["round"], "beacon round")
    beacon_ok(c, b)
    out["randomness"] = b["randomness"]
    n = integer(d["n"], "n")
    tickets = [unhex(t, 32, "ticket") for t in bundle["tickets"]]
    need(len(tickets) == n and len(bundle["positions"]) == n, "n tickets and n positions")
    need((d["chunkSize"], d["chunks"]) == layout(n), "chunk layout")
    need(all(tickets[i - 1] < tickets[i] for i in range(1, n)), "the list is not strictly ascending")
    mroot = merkle_root(tickets)
    out["merkleRoot"] = mroot.hex()
    need(mroot.hex() == d["merkleRoot"], "Merkle root")
    r = commitment(d, n, mroot)
    out["root"] = r.hex()
    need(r.hex() == d["root"], "commitment R")
    pos = positions(bytes.fromhex(b["randomness"]), r, tickets)
    out["positions"] = pos
    need(pos == bundle["positions"], "published positions")
    return out


RECEIPT_FIELDS = ["receipt", "rule", "eventId", "requestId", "clientNonce", "h", "opensAt", "round", "roundAt",
                  "chainHash", "issuedAt", "root", "rootSeenAt", "proof", "position"]
RECEIPT_REQUIRED = ["receipt", "rule", "eventId", "requestId", "clientNonce", "h", "opensAt", "round", "roundAt",
                    "chainHash", "issuedAt"]


def check_receipt(bundle, rc):
    """docs/draw.md, "Receipts": agree, and prove the close or not."""
    d = bundle["draw"]
    strict(rc, RECEIPT_FIELDS, RECEIPT_REQUIRED, "receipt")
    need(rc["receipt"] == RECEIPT and rc["rule"] == d["rule"], "receipt version or rule")
    need(rc["eventId"] == d["eventId"] and rc["chainHash"] == d["chain"]["hash"], "receipt event or chain")
    need(unix_ms(rc["opensAt"], "opensAt") == unix_ms(d["opensAt"], "opensAt"), "receipt opensAt")
    need(rc["round"] == d["scheduledRound"] and unix_ms(rc["roundAt"], "roundAt") == unix_ms(d["scheduledRoundAt"], "roundAt"),
         "receipt round")
    h = sha256(rc["requestId"].encode(), unhex(rc["clientNonce"], 16, "clientNonce"))
    need(h.hex() == rc["h"], "h is not SHA-256(requestId ‖ clientNonce)")
    need(rc["h"] in bundle["tickets"], "the ticket is not in the list")
    i = bundle["tickets"].index(rc["h"])
    pos = bundle["positions"][i]
    if "proof" in rc:
        p = rc["proof"]
        strict(p, ["index", "n", "siblings"], ["index", "n", "siblings"], "proof")
        sib = [unhex(s, 32, "sibling") for s in p["siblings"]]
        need(p["index"] == i and root_from_proof(h, p["index"], p["n"], sib).hex() == d["merkleRoot"], "Merkle proof")
    need(rc.get("position", 0) in (0, pos), "position")
    res = {"ok": True, "position": pos, "provesClose": False}
    if "root" in rc:
        need(rc["root"] == d["root"], "the R this receipt saw differs from the published R")
        if "rootSeenAt" in rc and unix_ms(rc["rootSeenAt"], "rootSeenAt") < unix_ms(d["roundAt"], "roundAt"):
            res["provesClose"] = True
    return res


def main(argv):
    if len(argv) >= 2 and argv[0] == "beacons":
        with open(argv[1]) as f:
            v = json.load(f)
        results = []
        for b in v["beacons"]:
            try:
                need(chain_hash(v["chain"]).hex() == v["chain"]["hash"], "chain hash")
                beacon_ok(v["chain"], b)
                results.append(True)
            except Mismatch:
                results.append(False)
        print(json.dumps(results))
        return 0 if all(results) else 1
    if len(argv) < 2 or argv[0] != "bundle":
        print(__doc__, file=sys.stderr)
        return 2
    trusted, event, receipts = QUICKNET, None, []
    args = argv[2:]
    while args:
        flag, value, args = args[0], args[1], args[2:]
        if flag == "--chain-hash":
            trusted = value
        elif flag == "--event":
            event = value
        elif flag == "--receipt":
            receipts.append(value)
        else:
            print(f"unknown flag {flag}", file=sys.stderr)
            return 2
    with open(argv[1]) as f:
        bundle = json.load(f)
    out = {"ok": False, "error": None, "receipts": []}
    try:
        out.update(verify_bundle(bundle, trusted, event))
        out["ok"] = True
    except Mismatch as e:
        out["error"] = str(e)
    for name in receipts:
        with open(name) as f:
            rc = json.load(f)
        try:
            need(out["ok"], "the draw did not verify")
            out["receipts"].append(check_receipt(bundle, rc))
        except Mismatch as e:
            out["receipts"].append({"ok": False, "error": str(e)})
    print(json.dumps(out))
    return 0 if out["ok"] and all(r["ok"] for r in out["receipts"]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
