"""Verify a vwr entry token in Python with PyJWT (pip install PyJWT)."""
import json
import os
import sys
import time

import jwt

SKEW_SECONDS = 30  # how far in the future iat may lie (clocks differ)


def verify_entry(token: str, event_id: str, secret: str) -> str:
    """Return the visitor's id if token lets them into event_id now; raise otherwise.

    secret is the queue's QUEUE_ENTRY_TOKEN_SECRET.
    """
    claims = jwt.decode(
        token,
        secret,
        algorithms=["HS256"],  # never "none", never another algorithm
        issuer="vwr",
        audience="vwr-entry",  # a Tier 1 pass ("vwr-tier1") is not an entry token
        leeway=0,  # exp is strict: the queue renews tokens, it never needs slack
        # iat is checked below with the skew allowance; PyJWT's own check has none.
        options={"require": ["exp", "iat", "sub", "uid"], "verify_iat": False},
    )
    if claims["sub"] != event_id:
        raise jwt.InvalidTokenError("token is for another event")
    if not isinstance(claims["iat"], (int, float)) or claims["iat"] > time.time() + SKEW_SECONDS:
        raise jwt.ImmatureSignatureError("iat is in the future")
    if not isinstance(claims["uid"], str) or not claims["uid"]:
        raise jwt.InvalidTokenError("no uid")
    return claims["uid"]


# python verify_entry.py <token> <event_id>, with QUEUE_ENTRY_TOKEN_SECRET set.
if __name__ == "__main__":
    try:
        uid = verify_entry(sys.argv[1], sys.argv[2], os.environ["QUEUE_ENTRY_TOKEN_SECRET"])
        print(json.dumps({"ok": True, "uid": uid}))
    except jwt.PyJWTError as err:
        print(json.dumps({"ok": False, "error": type(err).__name__}))
        sys.exit(1)
