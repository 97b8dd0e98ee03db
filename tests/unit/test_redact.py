"""Secret shapes. The fake secrets are built when the tests run, from a seeded random
source, so that no literal in the repository looks like a key to a secret scanner."""

import pytest

from pgrecall.worker import redaction as redact
from pgrecall.worker.chunk import chunking_signature
from pgrecall.worker.document import ParsedDocument, Section
from pgrecall.worker.redaction import Finding
from tests.support.secrets import ALNUM, B64, HEX, SHAPES, UPPER, URLSAFE, planted
from tests.support.secrets import random_text as _random


@pytest.mark.parametrize(("kind", "build"), SHAPES)
def test_each_provider_shape_is_found_and_replaced_by_a_marker_naming_it(kind, build):
    secret = build(1)
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


def test_an_assignment_after_a_label_is_found():
    """The value after "Note:" holds the assignment, which is looked at on its own."""
    text = "Note: password=hunter2-blue and Step 3: token=" + _random(ALNUM, 24) + "&page=2"
    assert [f.kind for f in redact.find_secrets(text)] == ["password", "token"]
    assert redact.redact(text)[0] == "Note: password=[redacted: password] and Step 3: token=[redacted: token]&page=2"


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


@pytest.mark.parametrize("secret", planted(1), ids=lambda p: p.kind)
def test_every_planted_secret_is_redacted_from_its_line_and_nothing_distinctive_of_it_stays(secret):
    redacted, findings = redact.redact(secret.line)
    assert [f.kind for f in findings] == [secret.kind]
    assert f"[redacted: {secret.kind}]" in redacted
    assert not [part for part in secret.parts if part in redacted]


def test_a_document_loses_its_secrets_in_title_headings_texts_and_metadata_and_counts_them_by_kind():
    github, aws = "ghp_" + _random(ALNUM, 36), "AKIA" + _random(UPPER, 16)
    document = ParsedDocument(
        path="ops/deploy.md",
        kind="markdown",
        title=f"Deploy with {github}",
        content_hash="0" * 64,
        sections=[Section(f"Deploy > {aws}", f"password=opensesame and {github}"), Section("Plain", "Nothing here.")],
        metadata={"password": "opensesame", "tags": ["ops", aws], "db": {"url": "postgres://u:pw-4711x@h/x"}, "n": 3},
    )
    redacted = redact.redact_document(document)
    assert redacted.title == "Deploy with [redacted: github token]"
    assert redacted.sections == [
        Section("Deploy > [redacted: aws access key]", "password=[redacted: password] and [redacted: github token]"),
        Section("Plain", "Nothing here."),
    ]
    # A value is a password by the key it is under.
    assert redacted.metadata == {
        "password": "[redacted: password]",
        "tags": ["ops", "[redacted: aws access key]"],
        "db": {"url": "postgres://u:[redacted: password in url]@h/x"},
        "n": 3,
    }
    assert redacted.redactions == {"aws access key": 2, "github token": 2, "password": 2, "password in url": 1}
    assert (redacted.path, redacted.content_hash) == (document.path, document.content_hash)  # the file is the file


def test_a_document_without_secrets_is_returned_as_it_is():
    document = ParsedDocument("a.md", "markdown", "E-4711", "0" * 64, [Section("", "Version 2.1.173.")], {"k": "v"})
    assert redact.redact_document(document) is document


def test_turning_redaction_on_or_off_or_changing_its_patterns_changes_the_chunking_signature():
    # Without redaction, the signature's form before redaction existed (the chunker's version changed since).
    assert chunking_signature(128, redact_secrets=False) == "v4/128"
    assert chunking_signature(128) == f"v4/128/redacted-v{redact.PATTERNS_VERSION}"
    assert chunking_signature(128, redact_secrets=True) != chunking_signature(64, redact_secrets=True)


def test_what_the_readme_says_is_and_is_not_redacted():
    token = _random(ALNUM, 12, 5)
    assert redact.redact(f'{{"token": "{token}"}}')[0] == '{"token": "[redacted: token]"}'
    assert redact.redact("postgres://app:Tr0ub4dor@db/shop")[0] == "postgres://app:[redacted: password in url]@db/shop"
    not_detected = ["the password is hunter2", "pass=hunter2x", "pwd=hunter2x", f"hostname={_random(ALNUM, 32, 6)}"]
    left_alone = ["api_key=${OPENAI_API_KEY}", "password = get_password(user)", "password: str", "secret: changeme"]
    assert [text for text in not_detected + left_alone if redact.find_secrets(text)] == []
