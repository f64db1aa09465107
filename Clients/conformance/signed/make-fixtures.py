#!/usr/bin/env python3
"""Makes the signed fixtures of the conformance scenarios (README.md, "Signed answers"): three Ed25519 test keys and
the exact bytes of layouts and manifests with their `Tabs-Signature` as tabserver makes it (docs/signing.md).

The keys are test keys, made for these files only, and committed so that a run of this script is reproducible
(Ed25519 signatures are deterministic): `current` and `next` are the keys the scenarios pin, `stranger` is pinned by
no one. Run from anywhere: `python3 Clients/conformance/signed/make-fixtures.py` (needs the `cryptography` package;
`openssl pkeyutl -sign -rawin -inkey keys/current.pem -in message` gives the same signature bytes).
"""
import base64
import hashlib
import json
import os
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

HERE = os.path.dirname(os.path.abspath(__file__))
KEYS = os.path.join(HERE, "keys")
SEED = "fixed-seed"
REVISIONS = 1795000000000


def key(name):
    """The private key `keys/<name>.pem` (PKCS#8, as `openssl genpkey -algorithm ed25519` writes it), made once."""
    path = os.path.join(KEYS, name + ".pem")
    if not os.path.exists(path):
        os.makedirs(KEYS, exist_ok=True)
        pem = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        with open(path, "wb") as f:
            f.write(pem)
    with open(path, "rb") as f:
        return serialization.load_pem_private_key(f.read(), password=None)


def raw_public(private):
    return private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(private):
    """Lowercase hex of the first 8 bytes of SHA-256 of the 32-byte raw public key."""
    return hashlib.sha256(raw_public(private)).digest()[:8].hex()


def signature(private, kind, account, environment, body):
    message = b"tabs-signature-v1\n" + kind.encode() + b"\n" + account.encode() + b"\n" + environment.encode() + b"\n" + body
    return 'keyid="%s", sig="%s"' % (key_id(private), base64.b64encode(private.sign(message)).decode())


def fnv1a32(text):
    """FNV-1a, 32 bits, over UTF-16 code units (the bucket formula of docs/rollouts.md)."""
    h = 0x811C9DC5
    units = text.encode("utf-16-le")
    for i in range(0, len(units), 2):
        h ^= units[i] | (units[i + 1] << 8)
        h = (h * 16777619) & 0xFFFFFFFF
    return h


def bucket(seed, install):
    return fnv1a32(str(fnv1a32(seed + install))) % 10000


def compact(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def main():
    current, following, stranger = key("current"), key("next"), key("stranger")
    with open(os.path.join(HERE, "..", "jack.bundle.json"), encoding="utf-8") as f:
        bundled = json.load(f)["representations"][0]["layout"]

    def layout(version):
        copy = json.loads(json.dumps(bundled))
        copy["version"] = version
        copy["tabs"][0]["title"] = "Version %d" % version
        return compact(copy)

    def manifest(revision, stable, rollout):
        # tabserver's revisions are Unix milliseconds: beyond 32 bits, as here.
        return compact({"account": "jack", "environment": "production", "layout": "jack", "revision": REVISIONS + revision,
                        "stable": {"version": stable}, "rollout": rollout})

    candidate_install = "3f1c9e2a-7d4b-4c1e-9a55-0b6d2e8f1a77"
    stable_install = "install-0"
    tester = "tester-0"
    assert bucket(SEED, candidate_install) == 1095
    assert bucket(SEED, stable_install) >= 5000, bucket(SEED, stable_install)
    assert bucket(SEED, tester) >= 5000, bucket(SEED, tester)
    rollout = {"id": 1, "version": 2, "seed": SEED, "percent": 50, "installs": [tester],
               "schedule": [{"percent": 100, "at": "2026-11-26T21:00:00.000Z"}]}

    fixtures = {}

    def add(name, kind, body, signer, environment="production", note=""):
        fixtures[name] = {"about": note, "kind": kind, "account": "jack", "environment": environment,
                          "body": body.decode("utf-8"), "signature": signature(signer, kind, "jack", environment, body)}

    for version in (1, 2, 3):
        add("layout-v%d" % version, "layout", layout(version), current, note="version %d, signed by current" % version)
    add("layout-v4-next-key", "layout", layout(4), following, note="version 4, signed by next (rotation)")
    add("layout-v5-stranger", "layout", layout(5), stranger, note="version 5, signed by a key no one pins")
    add("layout-v6-staging", "layout", layout(6), current, "staging", "version 6, signed for staging, not production")
    add("manifest-r4", "manifest", manifest(4, 3, None), current, note="revision …004: stable 3, no rollout")
    add("manifest-r5", "manifest", manifest(5, 1, rollout), current,
        note="revision …005: stable 1, rollout of version 2 at 50% with seed fixed-seed, tester-0 always")
    add("manifest-r6", "manifest", manifest(6, 1, None), current, note="revision …006: the rollout rolled back, stable 1")
    # The schedule scenarios (README.md, "The device clock"): r5's rollout paused, its step moved, another rollout.
    add("manifest-r7", "manifest", manifest(7, 1, dict(rollout, schedule=[])), current,
        note="revision …007: r5's rollout paused (no step to come)")
    add("manifest-r8", "manifest",
        manifest(8, 1, dict(rollout, schedule=[{"percent": 100, "at": "2026-11-26T22:00:00.000Z"}])), current,
        note="revision …008: r5's rollout with its step moved an hour later, to 22:00")
    add("manifest-r9", "manifest",
        manifest(9, 1, {"id": 2, "version": 3, "seed": SEED, "percent": 0, "installs": [],
                        "schedule": [{"percent": 100, "at": "2026-11-26T23:00:00.000Z"}]}), current,
        note="revision …009: another rollout, of version 3, from 0% to 100% at 23:00")

    document = {
        "about": "Made by make-fixtures.py; do not edit. Test keys only.",
        "keys": {name: base64.b64encode(raw_public(k)).decode() for name, k in
                 (("current", current), ("next", following), ("stranger", stranger))},
        "keyIds": {name: key_id(k) for name, k in (("current", current), ("next", following), ("stranger", stranger))},
        "installs": {"candidate": [candidate_install, bucket(SEED, candidate_install)],
                     "stable": [stable_install, bucket(SEED, stable_install)], "tester": [tester, bucket(SEED, tester)]},
        "fixtures": fixtures,
    }
    with open(os.path.join(HERE, "fixtures.json"), "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    print(json.dumps({"keys": document["keys"], "installs": document["installs"]}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
