"""Settings from the environment: one table, no database."""

import dataclasses
from pathlib import Path

import pytest

from pgrecall.embedders.embedding import new_embedder
from pgrecall.embedders.torch_embedder import TorchEmbedder
from pgrecall.errors import ConfigurationError
from pgrecall.settings import MODEL_THRESHOLDS, SETTINGS, Settings, load_settings

INTEGERS = [s for s in SETTINGS if s.minimum is not None and not s.real]

# The defaults, written out here on purpose: a change to one must be a choice.
EXPECTED_DEFAULTS = {
    "database_url": None,
    "search_database_url": None,
    "api_token": None,
    "model": None,
    "worker_concurrency": 32,
    "embed_batch_size": 64,
    "embed_backend": "onnx-int8",
    "model_cache": None,
    "max_file_bytes": 10 * 1024 * 1024,
    "chunk_tokens": 128,
    "redact_secrets": True,
    "fusion": "convex",
    "rrf_k": 60,
    "fusion_alpha": 0.5,
    "languages": "en,de",
    "ef_search": None,
    "log_format": None,
    "reconcile_seconds": 600,
    "memory_duplicate_similarity": 0.75,
    "stalled_seconds": 30,
    "editor_command": None,
}


def test_the_table_covers_every_field_once():
    assert [s.field for s in SETTINGS] == [f.name for f in dataclasses.fields(Settings)]
    assert len({s.variable for s in SETTINGS}) == len(SETTINGS)
    assert all(s.variable.startswith("PGRECALL_") for s in SETTINGS)


def test_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    settings = load_settings({})
    assert {name: getattr(settings, name) for name in EXPECTED_DEFAULTS} == EXPECTED_DEFAULTS
    assert settings.home == (tmp_path / "data" / "pgrecall").resolve()
    assert settings.config_file == tmp_path / "config" / "pgrecall" / "config.toml"
    assert settings.embedded
    # The dataclass has the same defaults: one table drives both.
    built = Settings(home=Path("/h"), config_file=Path("/c"), shared_buffers="128MB")
    assert {name: getattr(built, name) for name in EXPECTED_DEFAULTS} == EXPECTED_DEFAULTS


def test_empty_values_mean_the_default():
    settings = load_settings({s.variable: "" for s in SETTINGS})
    assert {name: getattr(settings, name) for name in EXPECTED_DEFAULTS} == EXPECTED_DEFAULTS


def test_each_variable_is_parsed(tmp_path):
    env = {
        "PGRECALL_HOME": str(tmp_path / "home"),
        "PGRECALL_DATABASE_URL": "postgresql://db/x",
        "PGRECALL_SEARCH_DATABASE_URL": "postgresql://replica/x",
        "PGRECALL_API_TOKEN": "secret",
        "PGRECALL_MODEL": "/models/m",
        "PGRECALL_LOG_FORMAT": "json",
        "PGRECALL_CONFIG": str(tmp_path / "c.toml"),
        "PGRECALL_FUSION": "rrf",
        "PGRECALL_FUSION_ALPHA": "0.25",
        "PGRECALL_EMBED_BACKEND": "onnx-int8",
        "PGRECALL_MODEL_CACHE": str(tmp_path / "models"),
        "PGRECALL_SESSION_TOOL_RESULTS": "on",
        "PGRECALL_REDACT_SECRETS": "false",
        "PGRECALL_HOOK_MIN_SCORE": "-0.5",
        "PGRECALL_HOOK_DEADLINE": "2.5",
        "PGRECALL_HOOK_INJECT": "off",
        "PGRECALL_MEMORY_DUPLICATE_SIMILARITY": "0.9",
        "PGRECALL_WARM_SOCKET": "off",
        "PGRECALL_LANGUAGES": "de,fr",
        "PGRECALL_EDITOR_COMMAND": "code --goto {path}:{line}",
        "PGRECALL_SHARED_BUFFERS": "2GB",
    }
    integers = {s.variable: str(s.minimum + 7) for s in INTEGERS}
    settings = load_settings({**env, **integers})
    assert settings.home == (tmp_path / "home").resolve()
    assert settings.database_url == "postgresql://db/x" and not settings.embedded
    assert settings.search_database_url == "postgresql://replica/x"
    assert settings.api_token == "secret"
    assert settings.model == "/models/m"
    assert settings.log_format == "json"
    assert settings.config_file == (tmp_path / "c.toml").resolve()
    assert settings.fusion == "rrf"
    assert settings.fusion_alpha == 0.25
    assert settings.embed_backend == "onnx-int8"
    assert settings.model_cache == (tmp_path / "models").resolve()
    assert settings.session_tool_results == "on"
    assert settings.redact_secrets is False
    assert (settings.hook_min_score, settings.hook_deadline) == (-0.5, 2.5)
    assert settings.hook_inject is False
    assert settings.memory_duplicate_similarity == 0.9
    assert settings.warm_socket == "off"
    assert settings.languages == "de,fr"
    assert settings.editor_command == "code --goto {path}:{line}"  # split by the API, which refuses a bad one
    assert settings.shared_buffers == "2GB"
    for setting in INTEGERS:
        assert getattr(settings, setting.field) == setting.minimum + 7, setting.variable
    assert set(env) | set(integers) == {s.variable for s in SETTINGS}  # none left out


def test_home_and_config_expand_the_user(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = load_settings({"PGRECALL_HOME": "~/h", "PGRECALL_CONFIG": "~/c.toml"})
    assert settings.home == (tmp_path / "h").resolve()
    assert settings.config_file == (tmp_path / "c.toml").resolve()


@pytest.mark.parametrize("setting", INTEGERS, ids=lambda s: s.variable)
def test_an_integer_below_its_minimum_is_refused_naming_the_variable(setting):
    settings = load_settings({setting.variable: str(setting.minimum)})
    assert getattr(settings, setting.field) == setting.minimum  # the minimum itself is accepted
    with pytest.raises(ConfigurationError) as refused:
        load_settings({setting.variable: str(setting.minimum - 1)})
    message = str(refused.value)
    assert message == f"{setting.variable} must be at least {setting.minimum}, got {setting.minimum - 1}"


@pytest.mark.parametrize("setting", INTEGERS, ids=lambda s: s.variable)
@pytest.mark.parametrize("raw", ["ten", "1.5", "3\n4"])
def test_a_non_integer_is_refused_in_one_line_naming_the_variable(setting, raw):
    with pytest.raises(ConfigurationError) as refused:
        load_settings({setting.variable: raw})
    message = str(refused.value)
    assert message.startswith(f"{setting.variable} must be an integer, got ")
    assert "\n" not in message


@pytest.mark.parametrize("raw", ["0", "1", "0.7"])
def test_fusion_alpha_takes_a_number_from_0_to_1(raw):
    assert load_settings({"PGRECALL_FUSION_ALPHA": raw}).fusion_alpha == float(raw)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("-0.1", "must be at least 0, got -0.1"),
        ("1.5", "must be at most 1, got 1.5"),
        ("nan", "must be at least 0, got nan"),
        ("half", "must be a number, got 'half'"),
    ],
)
def test_fusion_alpha_outside_0_to_1_is_refused_naming_the_variable(raw, message):
    with pytest.raises(ConfigurationError) as refused:
        load_settings({"PGRECALL_FUSION_ALPHA": raw})
    assert str(refused.value) == f"PGRECALL_FUSION_ALPHA {message}"


@pytest.mark.parametrize(("raw", "message"), [("1.01", "must be at most 1, got 1.01"), ("-1", "must be at least 0")])
def test_the_duplicate_similarity_is_a_cosine_from_0_to_1(raw, message):
    assert load_settings({"PGRECALL_MEMORY_DUPLICATE_SIMILARITY": "1"}).memory_duplicate_similarity == 1.0
    with pytest.raises(ConfigurationError, match=f"^PGRECALL_MEMORY_DUPLICATE_SIMILARITY {message}"):
        load_settings({"PGRECALL_MEMORY_DUPLICATE_SIMILARITY": raw})


def test_shared_buffers_defaults_to_an_eighth_of_the_memory_within_128mb_and_4gb(monkeypatch):
    from pgrecall import settings as settings_module

    for memory, expected in ((24 * 2**30, "3072MB"), (512 * 2**20, "128MB"), (256 * 2**30, "4096MB")):
        monkeypatch.setattr(settings_module, "_memory_bytes", lambda memory=memory: memory)
        assert load_settings({}).shared_buffers == expected
    assert settings_module._memory_bytes() > 0  # this machine's, read for real


@pytest.mark.parametrize("raw", ["lots", "2 GB", "2gb", "0MB", "1.5GB", "2GB\n"])
def test_a_shared_buffers_that_is_no_postgresql_size_is_refused_in_one_line(raw):
    with pytest.raises(ConfigurationError) as refused:
        load_settings({"PGRECALL_SHARED_BUFFERS": raw})
    assert str(refused.value) == f"PGRECALL_SHARED_BUFFERS must be a size such as 512MB or 2GB, got {raw!r}"


def test_an_unknown_fusion_is_refused():
    with pytest.raises(ConfigurationError, match=r"^PGRECALL_FUSION must be rrf or convex, got 'max'$"):
        load_settings({"PGRECALL_FUSION": "max"})


def test_an_unknown_log_format_is_refused():
    with pytest.raises(ConfigurationError, match=r"^PGRECALL_LOG_FORMAT must be console or json, got 'xml'$"):
        load_settings({"PGRECALL_LOG_FORMAT": "xml"})


def test_help_lists_every_variable_with_its_default():
    from pgrecall.cli import build_parser

    text = build_parser().format_help()
    lines = {line.split()[0]: line for line in text.splitlines() if line.strip().startswith("PGRECALL_")}
    assert set(lines) == {s.variable for s in SETTINGS}
    for setting in SETTINGS:
        assert f"(default: {setting.default_text})" in lines[setting.variable], setting.variable
    assert "(default: 64)" in lines["PGRECALL_EMBED_BATCH"]
    assert "(default: 10485760)" in lines["PGRECALL_MAX_FILE_BYTES"]


def test_the_embedder_takes_its_batch_size_default_from_the_table():
    default = load_settings({}).embed_batch_size
    assert new_embedder("/nowhere").batch_size == default  # the model itself loads lazily: nothing read here
    assert TorchEmbedder("/nowhere").batch_size == default


@pytest.mark.parametrize(
    ("raw", "expected"), [("false", False), ("0", False), ("OFF", False), ("true", True), ("yes", True)]
)
def test_redaction_is_a_flag(raw, expected):
    assert load_settings({"PGRECALL_REDACT_SECRETS": raw}).redact_secrets is expected


def test_a_flag_takes_no_other_word():
    with pytest.raises(ConfigurationError, match="PGRECALL_REDACT_SECRETS must be true or false, got 'maybe'"):
        load_settings({"PGRECALL_REDACT_SECRETS": "maybe"})


def test_a_model_with_thresholds_of_its_own_takes_them_unless_the_variable_is_set():
    bundled = load_settings({})
    e5 = load_settings({"PGRECALL_MODEL": "multilingual-e5-small"})
    own = MODEL_THRESHOLDS["multilingual-e5-small"]
    assert (e5.hook_min_score, e5.memory_duplicate_similarity) == (
        own["hook_min_score"],
        own["memory_duplicate_similarity"],
    )
    assert (bundled.hook_min_score, bundled.memory_duplicate_similarity) == (0.47, 0.75)
    chosen = load_settings({"PGRECALL_MODEL": "multilingual-e5-small", "PGRECALL_HOOK_MIN_SCORE": "0.5"})
    assert (chosen.hook_min_score, chosen.memory_duplicate_similarity) == (0.5, own["memory_duplicate_similarity"])
