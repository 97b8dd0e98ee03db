"""Project scope and time, the pure parts: project normalisation, the natural time forms,
the filters and requests of the contract, and the ranking after fusion on synthetic scores."""

from __future__ import annotations

import datetime

import pytest

from pgrecall import contract
from pgrecall.api.fuse import (
    PROJECT_BOOST,
    Facts,
    Fused,
    RankedList,
    convex_fusion,
    exact_ties,
    project_boost,
    reciprocal_rank_fusion,
    rerank,
)
from pgrecall.errors import InvalidInput
from pgrecall.projects import project_of
from pgrecall.worker.document import latest, moment

NOW = datetime.datetime(2026, 11, 20, 15, 30, tzinfo=datetime.UTC)


# --- project_of ---


def test_a_folder_inside_a_git_work_tree_is_its_top_level(tmp_path):
    (tmp_path / "apollo" / ".git").mkdir(parents=True)
    (tmp_path / "apollo" / "api" / "src").mkdir(parents=True)
    assert project_of(str(tmp_path / "apollo" / "api" / "src")) == str((tmp_path / "apollo").resolve())
    assert project_of(str(tmp_path / "apollo")) == str((tmp_path / "apollo").resolve())


def test_a_worktree_whose_git_is_a_file_is_its_own_top_level(tmp_path):
    (tmp_path / "wt" / "pkg").mkdir(parents=True)
    (tmp_path / "wt" / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")
    assert project_of(str(tmp_path / "wt" / "pkg")) == str((tmp_path / "wt").resolve())


def test_a_folder_outside_git_is_kept_resolved(tmp_path):
    (tmp_path / "plain" / "sub").mkdir(parents=True)
    assert project_of(f"{tmp_path}/plain/sub/../sub/") == str((tmp_path / "plain" / "sub").resolve())
    assert project_of(str(tmp_path / "not-there")) == str((tmp_path / "not-there").resolve())


def test_a_file_uri_and_a_home_path_are_folders(tmp_path, monkeypatch):
    (tmp_path / "my project" / ".git").mkdir(parents=True)
    assert project_of("file://" + str(tmp_path / "my%20project")) == str((tmp_path / "my project").resolve())
    monkeypatch.setenv("HOME", str(tmp_path))
    assert project_of("~/my project") == str((tmp_path / "my project").resolve())


@pytest.mark.parametrize("name", ["apollo", "  Apollo Launch  ", "team/apollo"])
def test_a_bare_name_stays_a_name(name):
    assert project_of(name) == name.strip()


def test_the_contract_takes_none_and_empty_as_no_project_and_refuses_the_rest():
    assert contract.normal_project(None) is None and contract.normal_project("  ") is None
    with pytest.raises(InvalidInput, match="project must be a string"):
        contract.normal_project(42)
    with pytest.raises(InvalidInput, match="one line"):
        contract.normal_project("a\nb")
    with pytest.raises(InvalidInput, match="longer than"):
        contract.normal_project("x" * 600)


def test_a_memory_s_project_goes_into_its_front_matter(tmp_path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "sub").mkdir()
    assert contract.with_project({"status": "draft"}, str(tmp_path / "repo" / "sub")) == {
        "status": "draft",
        "project": str((tmp_path / "repo").resolve()),
    }
    assert contract.with_project(None, "apollo") == {"project": "apollo"}
    assert contract.with_project({"a": 1}, None) == {"a": 1}
    assert contract.with_project(None, "") is None


# --- parse_when ---


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7d", NOW - datetime.timedelta(days=7)),
        ("2w", NOW - datetime.timedelta(weeks=2)),
        ("24h", NOW - datetime.timedelta(hours=24)),
        ("3 days ago", NOW - datetime.timedelta(days=3)),
        ("1 week", NOW - datetime.timedelta(weeks=1)),
        ("today", datetime.datetime(2026, 11, 20, tzinfo=datetime.UTC)),
        ("Yesterday", datetime.datetime(2026, 11, 19, tzinfo=datetime.UTC)),
        ("2026-11-01T10:00:00+02:00", datetime.datetime(2026, 11, 1, 8, tzinfo=datetime.UTC)),
        ("2026-11-01T10:00:00Z", datetime.datetime(2026, 11, 1, 10, tzinfo=datetime.UTC)),
    ],
)
def test_natural_forms_of_a_moment(text, expected):
    assert contract.parse_when(text, now=NOW) == expected


def test_a_date_without_offset_is_its_local_midnight():
    parsed = contract.parse_when("2026-11-01", now=NOW)
    assert parsed.tzinfo is not None
    assert parsed.replace(tzinfo=None) == datetime.datetime(2026, 11, 1)


@pytest.mark.parametrize("bad", ["", "soon", "7x", "-3d", "2026-13-01", "last tuesday", 7, None])
def test_other_forms_are_refused_naming_the_field_and_the_forms(bad):
    with pytest.raises(InvalidInput, match=r"before must be an ISO date or time, today, yesterday, or an age"):
        contract.parse_when(bad, "before", now=NOW)


def test_filters_since_and_before_parse_and_must_be_in_order():
    request = contract.search_request("q", filters={"since": "2026-11-01T00:00:00Z", "before": "2026-11-02T00:00:00Z"})
    assert request.filters["since"] == datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
    assert request.filters["before"] == datetime.datetime(2026, 11, 2, tzinfo=datetime.UTC)
    with pytest.raises(InvalidInput, match="since must be earlier than before"):
        contract.search_request("q", filters={"since": "2026-11-02T00:00:00Z", "before": "2026-11-01T00:00:00Z"})
    with pytest.raises(InvalidInput, match="filter since must be"):
        contract.search_request("q", filters={"since": "whenever"})


def test_modified_since_keeps_its_iso_only_form():
    request = contract.search_request("q", filters={"modified_since": "2026-01-01"})
    assert request.filters["modified_since"] == datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    with pytest.raises(InvalidInput, match="modified_since must be an ISO date"):
        contract.search_request("q", filters={"modified_since": "7d"})


def test_the_project_filter_and_the_project_searched_from_are_normalised_apart(tmp_path):
    (tmp_path / "a" / ".git").mkdir(parents=True)
    (tmp_path / "a" / "x").mkdir()
    request = contract.search_request("q", filters={"project": str(tmp_path / "a" / "x")}, project="b")
    assert request.filters == {"project": str((tmp_path / "a").resolve())}
    assert request.project == "b"
    assert contract.search_request("q", filters={"project": ""}).filters == {}


def test_recent_request_bounds():
    request = contract.recent_request(days=3, now=NOW)
    assert request.since == NOW - datetime.timedelta(days=3) and request.limit == contract.DEFAULT_RECENT_LIMIT
    assert contract.recent_request(since="yesterday", now=NOW).since == datetime.datetime(
        2026, 11, 19, tzinfo=datetime.UTC
    )
    for bad, message in [({"days": 0}, "days must be"), ({"kind": "pdf"}, "unknown kind"), ({"limit": 0}, "limit")]:
        with pytest.raises(InvalidInput, match=message):
            contract.recent_request(**bad)


# --- documents' own times ---


def test_moments_as_documents_write_them():
    assert moment("2026-11-30T10:00:00Z") == datetime.datetime(2026, 11, 30, 10, tzinfo=datetime.UTC)
    assert moment(datetime.date(2026, 11, 30)) == datetime.datetime(2026, 11, 30, tzinfo=datetime.UTC)
    assert moment("not a time") is None and moment(12) is None and moment("") is None
    assert latest(["2026-01-02T00:00:00Z", None, "junk", "2026-03-01T00:00:00Z"]) == datetime.datetime(
        2026, 3, 1, tzinfo=datetime.UTC
    )
    assert latest([]) is None


# --- the ranking after fusion ---


def test_without_a_project_the_order_and_scores_are_the_fusion_s():
    lists = [
        RankedList("keyword", ["a", "b", "c"], scores=[9.0, 5.0, 1.0]),
        RankedList("vector", ["c", "b", "d"], scores=[0.9, 0.8, 0.1]),
    ]
    for fused in (convex_fusion(lists, arms=("vector", "keyword")), reciprocal_rank_fusion(lists)):
        facts = {item.id: Facts("p", float(n)) for n, item in enumerate(fused)}
        assert rerank(fused, facts, None) == fused


def test_the_project_searched_from_wins_at_about_equal_relevance_and_only_there():
    fused = [
        Fused("other", 0.80, {}, {"keyword": 0.6, "vector": 1.0}),
        Fused("mine", 0.78, {}, {"keyword": 0.56, "vector": 1.0}),
        Fused("global", 0.77, {}, {"keyword": 0.54, "vector": 1.0}),
    ]
    facts = {"other": Facts("/b", None), "mine": Facts("/a", None), "global": Facts(None, None)}
    ranked = rerank(fused, facts, "/a")
    assert [item.id for item in ranked] == ["mine", "other", "global"]
    assert ranked[0].score == pytest.approx(0.78 * (1 + PROJECT_BOOST))
    assert [item.id for item in rerank(fused, facts, "/elsewhere")] == ["other", "mine", "global"]


def test_an_exact_match_in_another_project_keeps_first_place():
    # E-4711 only in project B's note: the keyword arm scores it far above the rest.
    lists = [
        RankedList("keyword", ["b-e4711", "a-e4712"], scores=[12.0, 3.0]),
        RankedList("vector", ["a-e4712", "b-e4711", "a-other"], scores=[0.91, 0.90, 0.5]),
    ]
    facts = {"b-e4711": Facts("/b", None), "a-e4712": Facts("/a", None), "a-other": Facts("/a", None)}
    convex = convex_fusion(lists, arms=("vector", "keyword"))
    assert rerank(convex, facts, "/a", project_boost("convex"))[0].id == "b-e4711"
    # Under RRF the two are equal (each first in one arm): the project breaks that tie, and
    # the exact match stays second, above the project's other note.
    by_rank = reciprocal_rank_fusion(lists)
    assert [f.id for f in rerank(by_rank, facts, "/a", project_boost("rrf"))] == ["a-e4712", "b-e4711", "a-other"]


def test_under_rrf_the_boost_decides_near_ties_only():
    # (keyword, vector) ranks: x (1, 1), y (2, 3), w (3, 2).
    lists = [RankedList("keyword", ["x", "y", "w"]), RankedList("vector", ["x", "w", "y"])]
    fused = reciprocal_rank_fusion(lists)
    assert [f.id for f in fused] == ["x", "y", "w"]  # y (2, 3) and w (3, 2) tie; keyword first
    mine = {"w": Facts("/a", None)}
    assert [f.id for f in rerank(fused, mine, "/a", project_boost("rrf", 60))] == ["x", "w", "y"]
    # A whole rank better in both arms stays above: y (2, 3) is not lifted over x (1, 1).
    assert [f.id for f in rerank(fused, {"y": Facts("/a", None)}, "/a", project_boost("rrf", 60))][0] == "x"
    twins = reciprocal_rank_fusion(
        [RankedList("keyword", ["e4711", "e4712"]), RankedList("vector", ["e4711", "e4712"])]
    )
    assert rerank(twins, {"e4712": Facts("/a", None)}, "/a", project_boost("rrf", 60))[0].id == "e4711"


def test_recency_orders_exact_ties_only():
    same = {"keyword": 0.5, "vector": 0.5}
    fused = [
        Fused("old", 0.5, {}, dict(same)),
        Fused("new", 0.5, {}, dict(same)),
        Fused("newest-but-lower", 0.49, {}, dict(same)),
        Fused("lexical", 0.5, {}, {"keyword": 0.6, "vector": 0.4}),
    ]
    facts = {"old": Facts(None, 1.0), "new": Facts(None, 2.0), "newest-but-lower": Facts(None, 3.0)}
    assert set(exact_ties(fused)) == {"old", "new"}
    # Equal score, more lexical evidence first (as the keyword-first lists ordered ties); then newer first.
    assert [item.id for item in rerank(fused, facts)] == ["lexical", "new", "old", "newest-but-lower"]


def test_only_ties_that_reach_into_the_hits_are_weighed():
    fused = [
        Fused("first", 0.9, {}, {"keyword": 0.9}),
        Fused("tied-a", 0.5, {}, {"keyword": 0.5}),
        Fused("tied-b", 0.5, {}, {"keyword": 0.5}),
        Fused("deep-a", 0.2, {}, {"keyword": 0.2}),
        Fused("deep-b", 0.2, {}, {"keyword": 0.2}),
    ]
    assert exact_ties(fused, within=2) == ["tied-a", "tied-b"]  # tied-b is third: its group reaches in
    assert exact_ties(fused, within=1) == []
    assert exact_ties(fused) == ["tied-a", "tied-b", "deep-a", "deep-b"]


def test_exact_ties_under_rrf_are_equal_ranks():
    fused = reciprocal_rank_fusion([RankedList("vector", ["x"]), RankedList("vector", ["y"])])
    assert set(exact_ties(fused)) == {"x", "y"}
    assert [f.id for f in rerank(fused, {"x": Facts(None, 1.0), "y": Facts(None, 5.0)})] == ["y", "x"]


# --- what the adapters give a document: its project and its own time ---


def test_a_note_names_its_project_and_created_time_in_its_front_matter():
    from pgrecall.worker import adapters

    note = "---\nid: 0123456789ab\ncreated: '2026-11-30T10:00:00Z'\nproject: /home/me/apollo\n---\n\nDeploys on Tuesdays.\n"
    (document,) = adapters.parse("2026/11/x.md", note.encode()).documents
    assert document.project == "/home/me/apollo"
    assert document.occurred_at == datetime.datetime(2026, 11, 30, 10, tzinfo=datetime.UTC)
    (plain,) = adapters.parse("plain.md", b"# Plain\n\nNo front matter.").documents
    assert plain.project is None and plain.occurred_at is None  # the file's modification time stands in


def test_a_claude_code_session_is_of_its_cwd_at_its_last_message():
    from pathlib import Path

    from pgrecall.worker.adapters import claude_code

    session = Path(__file__).parents[1] / "fixtures" / "claude_code" / "7b3e2c1a-5d4f-4e8a-9c6b-2f1e0d9c8b7a.jsonl"
    document = claude_code.parse_session("projects/x/s.jsonl", session.read_text())
    assert document.project == "/home/ada/src/shop"
    assert document.occurred_at == datetime.datetime(2026, 6, 15, 10, 50, tzinfo=datetime.UTC)


def test_a_claude_conversation_is_at_its_last_message_and_a_project_conversation_of_its_project():
    import io
    import json
    import zipfile

    from pgrecall.worker import adapters
    from tests.notes import conversation

    chat = conversation("c1", "Launch plan", [("human", "When?"), ("assistant", "Tuesday."), ("human", "Ok")])
    chat["project_uuid"] = "p1"
    (document,) = adapters.parse("conversations.json", json.dumps([chat]).encode()).documents
    assert document.occurred_at == datetime.datetime(2025, 3, 1, 10, 2, tzinfo=datetime.UTC)  # the third message
    assert document.project is None  # conversations.json names only the project's uuid

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("conversations.json", json.dumps([chat]))
        zipped.writestr("projects.json", json.dumps([{"uuid": "p1", "name": "Apollo", "docs": []}]))
    by_path = {d.path: d for d in adapters.parse("export.zip", archive.getvalue()).documents}
    assert by_path["export.zip#c1"].project == "Apollo"
    assert by_path["export.zip#project:p1"].project == "Apollo"


def test_a_chatgpt_conversation_is_at_its_last_message_shown():
    import json
    from pathlib import Path

    from pgrecall.worker.adapters import chatgpt

    export = Path(__file__).parents[1] / "fixtures" / "chatgpt" / "conversations.json"
    value = json.loads(export.read_text())
    first = chatgpt.parse_conversation("c.json", value[0])
    shown = chatgpt.current_branch(value[0]["mapping"], value[0].get("current_node"))
    times = [n["message"]["create_time"] for n in shown if chatgpt.message_text(n.get("message"))[1]]
    assert first.occurred_at == datetime.datetime.fromtimestamp(max(times), datetime.UTC)


# --- a root's project in the config file ---


def test_a_root_s_project_in_the_config_is_normalised_relative_to_the_file(tmp_path):
    from pgrecall import roots
    from pgrecall.errors import ConfigurationError

    (tmp_path / "work" / "apollo" / ".git").mkdir(parents=True)
    (tmp_path / "work" / "apollo" / "docs").mkdir()
    (tmp_path / "notes").mkdir()
    config = tmp_path / "config.toml"
    config.write_text(
        '[[roots]]\npath = "work/apollo/docs"\nproject = "./work/apollo/docs"\n'
        '[[roots]]\nname = "team"\npath = "notes"\nproject = "Borealis"\n'
        '[[roots]]\nname = "plain"\npath = "notes"\n'
    )
    apollo, team, plain = roots.from_config(config)
    assert apollo.project == str((tmp_path / "work" / "apollo").resolve())
    assert (team.project, plain.project) == ("Borealis", None)
    config.write_text('[[roots]]\npath = "notes"\nproject = 3\n')
    with pytest.raises(ConfigurationError, match="roots entry 1: project must be a folder or a name"):
        roots.from_config(config)
