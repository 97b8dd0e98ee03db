"""Fake secrets of every shape pgrecall.worker.redaction knows, built when the tests run from a
seeded random source, so that no literal in the repository looks like a key to a secret scanner."""

from __future__ import annotations

import base64
import dataclasses
import json
import random
import re
import string

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"


def random_text(alphabet: str, count: int, seed: int = 1) -> str:
    source = random.Random(seed)
    return "".join(source.choice(alphabet) for _ in range(count))


def _b64url(value: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def private_key(kind: str, terminated: bool = True, seed: int = 0) -> str:
    label = f"{kind} PRIVATE" + " KEY"
    lines = [random_text(B64, 64, seed + n) for n in range(4)]
    end = f"\n-----END {label}-----" if terminated else ""
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + end


# (kind, build(seed) -> the secret), one per shape of a provider.
SHAPES = [
    ("openai api key", lambda s: "sk-proj-" + random_text(URLSAFE, 120, s)),
    ("openai api key", lambda s: "sk-" + random_text(ALNUM, 20, s) + "T3Blbk" + "FJ" + random_text(ALNUM, 20, s + 1)),
    ("anthropic api key", lambda s: "sk-ant-api03-" + random_text(URLSAFE, 93, s) + "AA"),
    ("aws access key", lambda s: "AKIA" + random_text(UPPER, 16, s)),
    ("aws access key", lambda s: "ASIA" + random_text(UPPER, 16, s)),
    ("github token", lambda s: "ghp_" + random_text(ALNUM, 36, s)),
    ("github token", lambda s: "gho_" + random_text(ALNUM, 36, s)),
    ("github token", lambda s: "github_pat_" + random_text(ALNUM, 22, s) + "_" + random_text(ALNUM, 59, s + 1)),
    ("gitlab token", lambda s: "glpat-" + random_text(URLSAFE, 20, s)),
    ("slack token", lambda s: "xoxb-" + random_text(string.digits, 12, s) + "-" + random_text(string.digits, 13, s) + "-" + random_text(ALNUM, 24, s)),
    ("slack webhook", lambda s: "https://hooks.slack.com/services/T" + random_text(UPPER, 8, s) + "/B" + random_text(UPPER, 10, s) + "/" + random_text(ALNUM, 24, s)),
    ("stripe key", lambda s: "sk_" + "live_" + random_text(ALNUM, 24, s)),
    ("stripe key", lambda s: "rk_" + "test_" + random_text(ALNUM, 24, s)),
    ("google api key", lambda s: "AIza" + random_text(URLSAFE, 35, s)),
    ("google oauth secret", lambda s: "GOCSPX-" + random_text(URLSAFE, 28, s)),
    ("private key", lambda s: private_key("RSA", seed=s)),
    ("private key", lambda s: private_key("OPENSSH", seed=s)),
    ("private key", lambda s: private_key("EC", terminated=False, seed=s)),
    ("jwt", lambda s: _b64url({"alg": "HS256", "typ": "JWT"}) + "." + _b64url({"sub": str(s), "iat": 1}) + "." + random_text(URLSAFE, 43, s)),
]  # fmt: skip

# (kind, build(seed) -> (text before, the secret, text after)): the shapes a name or a URL makes.
ASSIGNMENTS = [
    ("password in url", lambda s: ("postgres://app:", "Tr0ub4dor-" + random_text(ALNUM, 10, s), "@db.internal:5432/shop")),
    ("password", lambda s: ("password=", "hunter2-" + random_text(ALNUM, 10, s), " ./run")),
    ("token", lambda s: ("token=", random_text(ALNUM, 24, s), "&page=2")),
    ("secret", lambda s: ("export AWS_SECRET_ACCESS_KEY=", random_text(B64, 40, s), "")),
    ("secret", lambda s: ('client_secret = "', random_text(HEX, 32, s), '"')),
]  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Planted:
    kind: str
    line: str  # the secret in the text it is found in
    secret: str

    @property
    def parts(self) -> list[str]:
        """The secret and each distinctive part of it: every run of 8 or more letters and digits
        (a key's random part, a JWT's segments, each line of a private key) that is not a word
        of the shape itself (BEGIN, PRIVATE, services)."""
        runs = {run for run in re.findall(r"[A-Za-z0-9]{8,}", self.secret) if any(c.isdigit() for c in run)}
        return [self.secret, *sorted(runs)]


def planted(seed: int) -> list[Planted]:
    """One secret of every shape, each distinct from those of another seed."""
    secrets = []
    for number, (kind, build) in enumerate(SHAPES):
        secret = build(seed * 100 + number)
        secrets.append(Planted(kind, f"Set it up with\n{secret}\nand restart.", secret))
    for number, (kind, build) in enumerate(ASSIGNMENTS):
        before, secret, after = build(seed * 100 + 50 + number)
        secrets.append(Planted(kind, before + secret + after, secret))
    return secrets
