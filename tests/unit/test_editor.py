"""PGRECALL_EDITOR_COMMAND: split once like a shell line, placeholders replaced inside whole arguments."""

import pytest

from pgrecall.api.editor import argv_for, line_of, parse_command
from pgrecall.errors import ConfigurationError


@pytest.mark.parametrize(
    ("template", "path", "line", "argv"),
    [
        ("code --goto {path}:{line}", "/notes/a b.md", 12, ["code", "--goto", "/notes/a b.md:12"]),
        ("xdg-open {path}", "/notes/x.md", 1, ["xdg-open", "/notes/x.md"]),
        ("emacsclient -n +{line} {path}", "/n/x.md", 7, ["emacsclient", "-n", "+7", "/n/x.md"]),
        # a path that looks like shell is one argument, never split nor run
        ("vim {path}", "/n/$(rm -rf ~); `x` 'q'.md", 3, ["vim", "/n/$(rm -rf ~); `x` 'q'.md"]),
        # a placeholder in the path is not replaced again; other braces are left alone
        ("ed {path} {line}", "/n/{line}.md", 4, ["ed", "/n/{line}.md", "4"]),
        ("'/opt/My Editor/bin/edit' --file={path} {x}", "/n.md", 2, ["/opt/My Editor/bin/edit", "--file=/n.md", "{x}"]),
    ],
)
def test_the_argv_is_the_template_with_path_and_line_in_place(template, path, line, argv):
    assert argv_for(parse_command(template), path, line) == argv


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("code 'unclosed {path}", "cannot be split"),
        ("code --goto", "must name {path}"),
        ("{path} --open", "must start with the program"),
    ],
)
def test_a_command_that_cannot_open_a_file_is_refused_in_one_line(template, reason):
    with pytest.raises(ConfigurationError, match=reason) as raised:
        parse_command(template)
    assert "\n" not in str(raised.value)


def test_the_line_is_where_the_chunk_begins_in_the_file():
    text = "# Title\n\nFirst paragraph.\n\n## Second\n\nThe second paragraph\ngoes on  and on.\n"
    assert line_of(text, "The second paragraph goes on and on.") == 7  # the chunker joined its lines
    assert line_of(text, "\n  First paragraph.") == 3
    # the chunk's first words were redacted: the words after them are found
    assert line_of(text, "[redacted] paragraph goes on and on.") == 7
    assert line_of(text, "nowhere in the file at all") == 1
    assert line_of(text, "") == 1
    assert line_of("a.\nb (c) [d]* e?\n", "b (c) [d]* e?") == 2  # the words are text, not patterns
