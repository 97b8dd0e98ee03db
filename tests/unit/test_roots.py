"""Named roots from the config file and the command line: no database."""

import pytest

from pgrecall import roots
from pgrecall.errors import ConfigurationError, InvalidInput
from pgrecall.roots import Root
from tests.notes import write_notes


def _config(tmp_path, text: str | bytes):
    config = tmp_path / "config.toml"
    if isinstance(text, bytes):
        config.write_bytes(text)
    else:
        config.write_text(text, encoding="utf-8")
    return config


def _folders(tmp_path, *names):
    for name in names:
        (tmp_path / name).mkdir(parents=True)


def test_a_missing_config_file_or_one_without_roots_names_none(tmp_path):
    assert roots.from_config(tmp_path / "absent.toml") == []
    assert roots.from_config(_config(tmp_path, "[other]\nkey = 1\n")) == []


def test_roots_keep_their_order_and_names_a_missing_name_is_the_folders(tmp_path, monkeypatch):
    _folders(tmp_path, "home/notes", "exports/claude")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = _config(
        tmp_path,
        f'[[roots]]\nname = "mine"\npath = "~/notes"\n\n[[roots]]\npath = "{tmp_path}/exports/./claude"\n',
    )
    assert roots.from_config(config) == [
        Root("mine", tmp_path / "home" / "notes"),
        Root("claude", tmp_path / "exports" / "claude"),
    ]


def test_a_root_through_a_link_is_the_folder_it_leads_to(tmp_path):
    _folders(tmp_path, "real")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (root,) = roots.from_config(_config(tmp_path, f'[[roots]]\npath = "{tmp_path}/link"\n'))
    assert root == Root("real", tmp_path / "real")


def test_a_relative_path_is_resolved_against_the_config_file_not_the_working_directory(tmp_path, monkeypatch):
    _folders(tmp_path, "conf/notes", "elsewhere/notes")
    config = tmp_path / "conf" / "config.toml"
    config.write_text('[[roots]]\npath = "notes"\n[memory]\nfolder = "mem"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path / "elsewhere")  # under systemd the working directory is /
    assert roots.from_config(config) == [Root("notes", tmp_path / "conf" / "notes")]
    assert roots.memory_folder(config, tmp_path / "home") == tmp_path / "conf" / "mem"
    assert roots.memory_folder(None, tmp_path / "home") == tmp_path / "home" / "memories"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[roots]]\npath = \n", r"config\.toml: .*line 2"),  # TOML that does not parse
        (b"[[roots]]\npath = '\xff'\n", r"config\.toml: .*utf-8"),  # not UTF-8
        ('[[roots]]\nname = "a"\n', "roots entry 1 needs a path"),
        ('[[roots]]\npath = "{tmp}"\n[[roots]]\npath = 3\n', "roots entry 2 needs a path"),
        ('roots = ["{tmp}"]\n', "roots entry 1 needs a path"),
        ('[[roots]]\npath = "{tmp}/absent"\n', "root .*/absent is not a folder"),
        ('[[roots]]\npath = "{tmp}/file.txt"\n', "root .*/file.txt is not a folder"),
    ],
)
def test_a_bad_config_is_one_line_naming_the_file(tmp_path, text, message):
    (tmp_path / "file.txt").write_text("x")
    if isinstance(text, str):
        text = text.replace("{tmp}", str(tmp_path))
    config = _config(tmp_path, text)
    with pytest.raises(ConfigurationError, match=message) as raised:
        roots.from_config(config)
    assert str(raised.value).startswith(f"{config}: ")
    assert "\n" not in str(raised.value)


def test_root_names_must_be_unique_given_or_taken_from_the_folder(tmp_path):
    _folders(tmp_path, "a/notes", "b/notes", "c")
    given = f'[[roots]]\nname = "x"\npath = "{tmp_path}/a/notes"\n[[roots]]\nname = "x"\npath = "{tmp_path}/c"\n'
    taken = f'[[roots]]\npath = "{tmp_path}/a/notes"\n[[roots]]\npath = "{tmp_path}/b/notes"\n'
    for text in (given, taken):
        with pytest.raises(ConfigurationError, match="root names must be unique"):
            roots.from_config(_config(tmp_path, text))
    renamed = taken.replace(f'[[roots]]\npath = "{tmp_path}/b', f'[[roots]]\nname = "b"\npath = "{tmp_path}/b')
    assert [root.name for root in roots.from_config(_config(tmp_path, renamed))] == ["notes", "b"]


def test_folders_named_on_the_command_line_add_to_the_config_files_roots(tmp_path):
    _folders(tmp_path, "cli", "configured")
    config = _config(tmp_path, f'[[roots]]\npath = "{tmp_path}/configured"\n')
    configured, cli = Root("configured", tmp_path / "configured"), Root("cli", tmp_path / "cli")
    assert roots.resolve([str(tmp_path / "cli")], config) == [configured, cli]
    assert roots.resolve([str(tmp_path / "configured"), str(tmp_path / "cli")], config) == [configured, cli]  # once
    assert roots.resolve([], config) == [configured]
    with pytest.raises(InvalidInput, match="not a folder: "):
        roots.resolve([str(tmp_path / "absent")], config)
    with pytest.raises(InvalidInput, match="^no folders to follow: add one with `pgrecall sources add notes PATH`"):
        roots.resolve([], tmp_path / "absent.toml")
    with pytest.raises(InvalidInput, match="no folders to follow"):
        roots.resolve([], None)


def test_roots_inside_one_another_or_of_one_name_are_refused(tmp_path):
    _folders(tmp_path, "notes/sub", "elsewhere/notes")
    config = _config(tmp_path, f'[[roots]]\npath = "{tmp_path}/notes"\n')
    with pytest.raises(InvalidInput, match=r"the root sub \(.*/notes/sub\) is inside the root notes"):
        roots.resolve([str(tmp_path / "notes" / "sub")], config)
    with pytest.raises(InvalidInput, match="the root sub .* is inside the root notes"):
        roots.resolve([str(tmp_path / "notes" / "sub"), str(tmp_path / "notes")], None)
    with pytest.raises(InvalidInput, match="two roots named notes: .*--name NAME"):
        roots.resolve([str(tmp_path / "elsewhere" / "notes")], config)
    nested = _config(tmp_path, f'[[roots]]\npath = "{tmp_path}/notes"\n[[roots]]\npath = "{tmp_path}/notes/sub"\n')
    with pytest.raises(ConfigurationError, match="config.toml: the root sub .* is inside the root notes"):
        roots.from_config(nested)


def test_the_memory_folder_is_always_a_root_and_never_nested_in_another(tmp_path):
    _folders(tmp_path, "notes", "notes/memories", "memories")
    notes = Root("notes", tmp_path / "notes")
    assert roots.with_memories([], tmp_path / "memories") == [Root("memories", tmp_path / "memories")]
    assert roots.with_memories([notes], tmp_path / "memories")[-1] == Root("memories", tmp_path / "memories")
    with pytest.raises(ConfigurationError, match="inside one another"):
        roots.with_memories([notes], tmp_path / "notes" / "memories")
    with pytest.raises(ConfigurationError, match="inside one another"):
        roots.with_memories([Root("all", tmp_path)], tmp_path / "memories")
    assert roots.resolve([], None, required=False) == []


def test_the_memory_folder_named_as_a_root_is_watched_once(tmp_path):
    folder = (tmp_path / "memories").resolve()
    notes = write_notes(tmp_path / "notes", {"a.md": "A."})
    folder.mkdir()
    given = roots.from_arguments([str(folder), str(notes)])  # named "memories" after its folder
    assert roots.with_memories(given, folder) == [roots.Root("notes", notes), roots.Root("memories", folder)]
    other = write_notes(tmp_path / "elsewhere" / "memories", {"b.md": "B."})
    with pytest.raises(ConfigurationError, match='the root name "memories" is taken'):
        roots.with_memories(roots.from_arguments([str(other)]), folder)
