"""A conversation's hit is an exchange: the question found brings its answer, and says who spoke
and when. The fixtures of real exports (claude.ai, ChatGPT, a Claude Code session), indexed
and searched through the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.cli import cli_env, run_cli

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parents[1] / "fixtures"
SESSION = "7b3e2c1a-5d4f-4e8a-9c6b-2f1e0d9c8b7a.jsonl"

# (kind, question, words of its answer, the day it was said as the hit writes it)
CASES = [
    (
        "claude_conversation",
        "how often should I feed the rye sourdough starter in the fridge",
        ["Once a week in the fridge is enough"],
        "[11 April 2025] User:",
    ),
    ("chatgpt_conversation", "how deep do carrot seeds go", ["About 1 cm deep"], "[16 June 2025] User:"),
    (
        "claude_code_session",
        "why does autovacuum never run on the orders table",
        ["Claude:", "autovacuum_enabled=false"],
        "[15 June 2026] User:",
    ),
]


@pytest.fixture
def indexed(db_url, tmp_path):
    exports = tmp_path / "exports"
    shutil.copytree(FIXTURES / "claude_export", exports / "claude")
    shutil.copytree(FIXTURES / "chatgpt", exports / "chatgpt")
    (exports / "code").mkdir()
    shutil.copy(FIXTURES / "claude_code" / SESSION, exports / "code" / SESSION)
    env = cli_env(db_url, tmp_path / "home")
    result = run_cli("index", str(exports), env=env)
    assert result.returncode == 0, result.stderr
    return env


@pytest.mark.parametrize(("kind", "question", "answer", "said"), CASES, ids=[case[0] for case in CASES])
def test_a_hit_on_a_question_carries_its_answer_its_speakers_and_its_date(indexed, kind, question, answer, said):
    result = run_cli("search", question, "--kind", kind, "-k", "1", "--json", env=indexed)
    assert result.returncode == 0, result.stderr
    [hit] = json.loads(result.stdout)
    assert question.split()[-1] in hit["text"].lower()  # the question's own message
    assert said in hit["text"]
    for words in answer:
        assert words in hit["text"]
