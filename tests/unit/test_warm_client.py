"""The warm socket's client and protocol: where it looks, what it sends, and that it fails fast when no one answers."""

from __future__ import annotations

import dataclasses
import datetime
import json
import socket

import pytest

from pgrecall import contract, warm_client
from pgrecall.cli import COMMAND_MODULES, build_parser, command_modules, command_of
from pgrecall.errors import InvalidInput
from pgrecall.settings import load_settings


def settings_of(tmp_path, **env):
    return load_settings({"PGRECALL_HOME": str(tmp_path / "home"), **env})


def test_the_socket_is_in_the_home_unless_set_or_off(tmp_path):
    assert warm_client.socket_path(settings_of(tmp_path)) == tmp_path / "home" / "search.sock"
    custom = tmp_path / "run" / "pgrecall.sock"
    assert warm_client.socket_path(settings_of(tmp_path, PGRECALL_WARM_SOCKET=str(custom))) == custom
    for off in ("off", "OFF", "false", "no", "0"):
        settings = settings_of(tmp_path, PGRECALL_WARM_SOCKET=off)
        assert warm_client.socket_path(settings) is None
        assert warm_client.search(contract.search_request("x"), settings) is None
        assert not warm_client.answers(settings)


def test_a_request_travels_as_its_fields_with_the_callers_fusion(tmp_path):
    request = contract.search_request(
        "E-4711", k=3, mode="keyword", filters={"modified_since": "2026-11-01", "metadata": {"project": "apollo"}}
    )
    message = warm_client.search_message(request, settings_of(tmp_path, PGRECALL_FUSION="rrf"))
    fields = json.loads(warm_client.encode(message))["request"]
    assert set(fields) == {field.name for field in dataclasses.fields(contract.SearchRequest)}
    assert fields["fusion"] == "rrf" and fields["filters"]["modified_since"] == "2026-11-01T00:00:00+00:00"
    rebuilt = contract.search_request(**fields)  # as the service rebuilds it
    assert rebuilt == dataclasses.replace(request, fusion="rrf")
    explicit = warm_client.search_message(dataclasses.replace(request, fusion="convex"), settings_of(tmp_path))
    assert explicit["request"]["fusion"] == "convex"


def test_encode_is_one_line_and_refuses_what_json_cannot_carry():
    line = warm_client.encode({"text": "two\nlines", "when": datetime.date(2026, 11, 1), "tags": {"b", "a"}})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"text": "two\nlines", "when": "2026-11-01", "tags": ["a", "b"]}
    with pytest.raises(ValueError):
        warm_client.encode({"score": float("nan")})
    with pytest.raises(TypeError):
        warm_client.encode({"raw": b"bytes"})


@pytest.mark.parametrize("modified", [None, datetime.datetime(2026, 11, 30, 10, 0, 1, 500, tzinfo=datetime.UTC)])
def test_a_hit_comes_back_as_it_went(modified):
    hit = contract.Hit(
        chunk_id=1, document_id=2, source_root="/notes", path="a.md", kind="markdown", title=None, heading="# A",
        text="E-4711", snippet="E-4711", score=0.1 + 0.2, ranks={"vector": None, "keyword": 1},
        metadata={"project": "apollo", "n": 1.5}, modified=modified, arm_scores={"vector": None, "keyword": 1.0},
        project="/home/ada/src/apollo", occurred_at=modified, similarity=0.5 if modified else None,
    )  # fmt: skip
    back = warm_client.hit_of(json.loads(warm_client.encode(hit.to_json())))
    assert back == hit and back.to_json() == hit.to_json()


def test_no_server_is_none_at_once(tmp_path):
    settings = settings_of(tmp_path)
    request = contract.search_request("E-4711")
    assert warm_client.search(request, settings) is None  # no file (no home, even)
    path = warm_client.socket_path(settings)
    path.parent.mkdir(parents=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()  # the file a dead server left
    assert path.exists()
    assert warm_client.search(request, settings) is None
    assert warm_client.get_document(1, settings) is None
    too_long = settings_of(tmp_path, PGRECALL_WARM_SOCKET=str(tmp_path / ("x" * 200) / "search.sock"))
    assert warm_client.search(request, too_long) is None


def test_a_request_too_long_is_refused_before_it_is_sent(tmp_path):
    with pytest.raises(InvalidInput, match="longer than"):
        warm_client.call({"op": "search", "pad": "x" * warm_client.MAX_REQUEST_BYTES}, settings_of(tmp_path))


def test_the_command_table_names_each_modules_commands():
    for name, commands in COMMAND_MODULES.items():
        (module,) = command_modules(commands[0])
        assert module.__name__ == f"pgrecall.cli.{name}"
        parser = build_parser(commands[0])
        (subparsers,) = [a for a in parser._actions if a.dest == "command"]
        assert tuple(subparsers.choices) == commands, name
    every = build_parser()
    (subparsers,) = [a for a in every._actions if a.dest == "command"]
    assert tuple(subparsers.choices) == tuple(c for commands in COMMAND_MODULES.values() for c in commands)
    assert command_of(["-v", "search", "-k", "3", "x"]) == "search" and command_of(["--help"]) is None
    assert len(command_modules("no-such-command")) == len(COMMAND_MODULES)


def test_the_warm_searcher_and_the_searcher_read_the_index_alike():
    """`pgrecall mcp` always reads through a WarmSearcher: each method of IndexReader (what the MCP
    tools call) is on it and on the Searcher with the same parameters, and the warm service answers it.
    recent_memories once failed on every call: the WarmSearcher had no `recent`."""
    import inspect

    from pgrecall.api import warm_server
    from pgrecall.api.searcher import IndexReader, Searcher
    from pgrecall.cli.warm import WarmSearcher

    members = [name for name, value in vars(IndexReader).items() if inspect.isfunction(value) and name[0] != "_"]
    assert {"run", "get_document", "recent"} <= set(members)
    for name in members:
        expected = list(inspect.signature(getattr(IndexReader, name)).parameters)
        for implementation in (Searcher, WarmSearcher):
            assert callable(getattr(implementation, name, None)), f"{implementation.__name__} lacks {name}"
            parameters = list(inspect.signature(getattr(implementation, name)).parameters)
            assert parameters[: len(expected)] == expected, (implementation.__name__, name)
    for op in members:  # each method is an op of the warm service ("run" is its "search")
        assert f'"{"search" if op == "run" else op}"' in inspect.getsource(warm_server.answer), op


def test_a_recent_request_travels_as_its_fields(tmp_path):
    from pgrecall.api.read_queries import RecentDocument
    from pgrecall.cli.warm import recent_document_of

    request = contract.recent_request(project="/work/apollo", days=3, kind="markdown", limit=5)
    fields = json.loads(warm_client.encode({"request": dataclasses.asdict(request)}))["request"]
    assert contract.recent_request(**fields) == request
    moment = datetime.datetime(2026, 11, 2, 9, 30, tzinfo=datetime.UTC)
    document = RecentDocument(7, "/notes", "a.md", "markdown", None, "/work/apollo", moment, None)
    assert recent_document_of(json.loads(warm_client.encode(document.to_json()))) == document
