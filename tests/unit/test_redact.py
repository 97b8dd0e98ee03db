"""Secret shapes. The fake secrets are built when the tests run, from a seeded random
source, so that no literal in the repository looks like a key to a secret scanner."""

import base64
import json
import random
import string

import pytest

from pgrecall.worker import redact
from pgrecall.worker.redact import Finding

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"


def _random(alphabet: str, count: int, seed: int = 1) -> str:
    source = random.Random(seed)
    return "".join(source.choice(alphabet) for _ in range(count))


def _b64url(value: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _private_key(kind: str, terminated: bool = True) -> str:
    label = f"{kind} PRIVATE" + " KEY"
    lines = [_random(B64, 64, seed) for seed in range(4)]
    end = f"\n-----END {label}-----" if terminated else ""
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + end


SHAPES = [
    ("openai api key", lambda: "sk-proj-" + _random(URLSAFE, 120)),
    ("openai api key", lambda: "sk-" + _random(ALNUM, 20) + "T3Blbk" + "FJ" + _random(ALNUM, 20, 2)),
    ("anthropic api key", lambda: "sk-ant-api03-" + _random(URLSAFE, 93) + "AA"),
    ("aws access key", lambda: "AKIA" + _random(UPPER, 16)),
    ("aws access key", lambda: "ASIA" + _random(UPPER, 16)),
    ("github token", lambda: "ghp_" + _random(ALNUM, 36)),
    ("github token", lambda: "gho_" + _random(ALNUM, 36)),
    ("github token", lambda: "github_pat_" + _random(ALNUM, 22) + "_" + _random(ALNUM, 59, 2)),
    ("gitlab token", lambda: "glpat-" + _random(URLSAFE, 20)),
    ("slack token", lambda: "xoxb-" + _random(string.digits, 12) + "-" + _random(string.digits, 13) + "-" + _random(ALNUM, 24)),
    ("slack webhook", lambda: "https://hooks.slack.com/services/T" + _random(UPPER, 8) + "/B" + _random(UPPER, 10) + "/" + _random(ALNUM, 24)),
    ("stripe key", lambda: "sk_" + "live_" + _random(ALNUM, 24)),
    ("stripe key", lambda: "rk_" + "test_" + _random(ALNUM, 24)),
    ("google api key", lambda: "AIza" + _random(URLSAFE, 35)),
    ("google oauth secret", lambda: "GOCSPX-" + _random(URLSAFE, 28)),
    ("private key", lambda: _private_key("RSA")),
    ("private key", lambda: _private_key("OPENSSH")),
    ("private key", lambda: _private_key("EC", terminated=False)),
    ("jwt", lambda: _b64url({"alg": "HS256", "typ": "JWT"}) + "." + _b64url({"sub": "42", "iat": 1}) + "." + _random(URLSAFE, 43)),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "build"), SHAPES)
def test_each_provider_shape_is_found_and_replaced_by_a_marker_naming_it(kind, build):
    secret = build()
    text = f"Set it up with\n{secret}\nand restart."
    redacted, findings = redact.redact(text)
    assert redacted == f"Set it up with\n[redacted: {kind}]\nand restart."
    assert findings == [Finding(kind, text.index(secret), text.index(secret) + len(secret))]


@pytest.mark.parametrize(
    ("before", "secret", "after", "kind"),
    [
        ("postgres://app:", "Tr0ub4dor-" + _random(ALNUM, 6), "@db.internal:5432/shop", "password in url"),
        ("https://deploy:", _random(ALNUM, 12), "@git.example.org/repo.git", "password in url"),
        ("password=", "hunter2-blue", " ./run", "password"),
        ("DB_PASSWORD: ", "correct horse", "", "password"),  # only the first word: the value ends at a space
        ('{"password": "', "s3cr3t!" + _random(ALNUM, 5), '"}', "password"),
        ("token=", _random(ALNUM, 24), "&page=2", "token"),
        ("GITLAB_TOKEN: ", _random(ALNUM, 20), "", "token"),
        ("export AWS_SECRET_ACCESS_KEY=", _random(B64, 40), "", "secret"),
        ('client_secret = "', _random(HEX, 32), '"', "secret"),
        ("api_key: ", _random(ALNUM, 32), "", "secret"),
    ],
)
def test_passwords_tokens_and_random_values_of_key_like_names_are_redacted_alone(before, secret, after, kind):
    text = before + secret + after
    redacted, findings = redact.redact(text)
    value = secret.split(" ")[0]
    assert redacted == text.replace(value, f"[redacted: {kind}]", 1)
    assert [(f.kind, text[f.start : f.end]) for f in findings] == [(kind, value)]


def test_a_shape_of_its_own_wins_over_the_assignment_it_is_in():
    secret = "ghp_" + _random(ALNUM, 36)
    assert redact.redact(f"token={secret}") == ("token=[redacted: github token]", [Finding("github token", 6, 46)])


def test_several_secrets_are_found_in_order_and_positions_refer_to_the_original_text():
    aws, github = "AKIA" + _random(UPPER, 16), "ghp_" + _random(ALNUM, 36)
    text = f"first {github} then password=opensesame and {aws}."
    redacted, findings = redact.redact(text)
    assert (
        redacted == "first [redacted: github token] then password=[redacted: password] and [redacted: aws access key]."
    )
    assert [text[f.start : f.end] for f in findings] == [github, "opensesame", aws]
    assert redact.find_secrets(redacted) == []  # redacting twice changes nothing


def test_a_finding_names_the_kind_and_place_but_never_holds_the_secret():
    secret = "glpat-" + _random(URLSAFE, 20)
    (finding,) = redact.find_secrets(f"x {secret}")
    assert secret not in repr(finding) and secret not in str(vars(finding))


ORDINARY = """\
Incident E-4711: the checkout failed after the 2.1.173 upgrade (Python 3.11.4, PostgreSQL 16.2, v0.6.1).
The tarball's sha256 is {sha256} as published; commit {sha} fixed it, see also {short}.
Request 7b3e2c1a-5d4f-4e8a-9c6b-2f1e0d9c8b7a and idempotency_key = 0f8fad5b-d9cb-469f-a165-70867728950e were retried.
A line of base64 in prose, aGVsbG8gd29ybGQ=, says hello world; the cache key is user:42:profile.
primary_key = id, max_tokens=4096, token: 512 (too short), author: Jane Doe, first pass: the parser, pwd: /home/ada.
api_key=${{OPENAI_API_KEY}}, password: <your password>, token="****", secret: changeme, auth: none, password=xx.
Clone git@github.com:org/repo.git or ssh://git@github.com/org/repo.git; the API is at https://example.com:8080/v1?key=public.
Connect to postgresql://localhost:5432/shop as user@example.com; sk-learn and AKIA are just words here, and so is eyJ.
A config value: log_format = "%(asctime)s %(message)s", auth_method: scram-sha-256, access_key_id_prefix: AKIA.
Docs write postgresql://pgrecall:...@db.example.org/pgrecall and scheme://user:password@host.
"""
CODE = """\
def url(self, user: str, password: str | None = None) -> str:
    password = _renew_password(conn, state)
    self.admin_password = secrets.token_urlsafe(16)
    connect(url, password=password, token=self.token)
    cursor.execute(sql, {"password": password})
    token = match.group()
INSERT INTO readers VALUES (1) ON CONFLICT (id) DO UPDATE SET password = EXCLUDED.password;
"""


def test_ordinary_identifiers_are_not_secrets():
    text = ORDINARY.format(sha256=_random(HEX, 64), sha=_random(HEX, 40, 2), short=_random(HEX, 7, 3))
    assert redact.find_secrets(text) == []
    assert redact.redact(text) == (text, [])


def test_code_that_handles_a_password_is_not_one():
    """Sessions are full of code: a name assigned a call, an attribute or itself holds no secret."""
    assert redact.find_secrets(CODE) == []
    # A literal in the same code is one.
    assert [f.kind for f in redact.find_secrets('connect(url, password="wrong-horse")')] == ["password"]


@pytest.mark.parametrize(
    "text",
    [
        "x" + "ghp_" + _random(ALNUM, 36),  # in the middle of a longer token
        "ghp_" + _random(ALNUM, 20),  # too short for its shape
        "AKIA" + _random(UPPER, 16) + "Z",
    ],
)
def test_a_prefix_alone_does_not_make_a_secret(text):
    assert redact.find_secrets(text) == []


def test_entropy():
    assert redact.entropy("") == 0.0
    assert redact.entropy("aaaa") == 0.0
    assert redact.entropy("abcd") == 2.0
