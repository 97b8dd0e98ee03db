"""JSON text edited in place: pgrecall.claude_integration.json_text keeps what it does not change byte for byte."""

import json

import pytest

from pgrecall.claude_integration.json_text import edited_text, same

# As a user writes settings by hand: one-line arrays and objects, a blank line, odd spacing.
USERS_SETTINGS = """{
  "permissions": {"allow": ["Bash(npm run lint)", "Read"], "deny": []},
  "env": { "A": "1" },

  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "log.sh"}]}]
  },
  "model":"opus"
}
"""
ENTRY = {"hooks": [{"type": "command", "command": "pgrecall hook prompt", "timeout": 5}]}


def edited(text, change):
    data = json.loads(text)
    change(data)
    result = edited_text(text, data)
    assert same(json.loads(result), data)
    return result


def test_an_added_member_leaves_the_rest_byte_for_byte():
    result = edited(USERS_SETTINGS, lambda data: data["hooks"].__setitem__("UserPromptSubmit", [ENTRY]))
    assert result == USERS_SETTINGS.replace(
        '[{"type": "command", "command": "log.sh"}]}]\n',
        '[{"type": "command", "command": "log.sh"}]}],\n'
        '    "UserPromptSubmit": [\n'
        "      {\n"
        '        "hooks": [\n'
        "          {\n"
        '            "type": "command",\n'
        '            "command": "pgrecall hook prompt",\n'
        '            "timeout": 5\n'
        "          }\n"
        "        ]\n"
        "      }\n"
        "    ]\n",
    )


def test_an_item_appended_to_a_one_line_array_stays_on_its_line():
    result = edited(USERS_SETTINGS, lambda data: data["hooks"]["PreToolUse"].append(ENTRY))
    first = '[{"matcher": "Bash", "hooks": [{"type": "command", "command": "log.sh"}]}'
    added = ', {"hooks": [{"type": "command", "command": "pgrecall hook prompt", "timeout": 5}]}'
    assert result == USERS_SETTINGS.replace(first, first + added)


def test_removing_what_was_added_gives_the_original_back():
    added = edited(USERS_SETTINGS, lambda data: data["hooks"].__setitem__("UserPromptSubmit", [ENTRY]))
    assert edited(added, lambda data: data["hooks"].pop("UserPromptSubmit")) == USERS_SETTINGS
    appended = edited(USERS_SETTINGS, lambda data: data["hooks"]["PreToolUse"].append(ENTRY))
    assert edited(appended, lambda data: data["hooks"]["PreToolUse"].pop()) == USERS_SETTINGS


def test_a_member_removed_from_the_middle_or_the_end_and_a_value_changed():
    text = '{\n  "a": [1, 2],\n  "b": {"x": 1},\n  "c": 3\n}'
    assert edited(text, lambda data: data.pop("b")) == '{\n  "a": [1, 2],\n  "c": 3\n}'
    assert edited(text, lambda data: data.pop("c")) == '{\n  "a": [1, 2],\n  "b": {"x": 1}\n}'
    assert (
        edited(text, lambda data: data["b"].__setitem__("x", 2)) == '{\n  "a": [1, 2],\n  "b": {"x": 2},\n  "c": 3\n}'
    )
    assert edited(text, lambda data: data.clear()) == "{}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{}", '{\n  "k": [\n    1\n  ]\n}'),
        ('{\n  "a": {}\n}\n', '{\n  "a": {\n    "k": [\n      1\n    ]\n  }\n}\n'),
        ('{"a": {}}', '{"a": {"k": [1]}}'),  # a one-line file stays on one line
    ],
)
def test_an_empty_object_gets_its_first_member_as_its_file_is_written(text, expected):
    def add(data):
        data.get("a", data)["k"] = [1]

    assert edited(text, add) == expected


def test_a_reordered_object_is_written_again_whole_and_escaping_follows_the_file():
    text = '{\n  "a": 1,\n  "b": 2\n}'
    assert edited_text(text, {"b": 2, "a": 1}) == '{\n  "b": 2,\n  "a": 1\n}'
    assert edited_text('{"a": "é"}', {"a": "é", "b": "ü"}, ensure_ascii=True) == '{"a": "é", "b": "\\u00fc"}'
    assert edited_text('{\n\t"a": 1\n}', {"a": 1, "b": [2]}, indent="\t") == '{\n\t"a": 1,\n\t"b": [\n\t\t2\n\t]\n}'


def test_same_tells_json_types_and_member_order_apart():
    assert same({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]})
    assert not same(1, True) and not same(1, 1.0) and not same({"a": 1, "b": 2}, {"b": 2, "a": 1})


def test_an_object_with_a_key_written_twice_is_written_again_whole_when_it_changes():
    text = '{"a": 1, "b": 2, "a": 3}'
    assert edited_text(text, {"a": 3, "b": 2}) == text  # unchanged: as it was
    assert edited_text(text, {"a": 3, "b": 2, "c": 4}) == '{"a": 3, "b": 2, "c": 4}'


def _random_value(rnd, depth=0):
    if depth > 3 or rnd.random() < 0.4:
        return rnd.choice([1, 2.5, True, None, "x", "é", 'a"b', [], {}])
    if rnd.random() < 0.5:
        return [_random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    return {rnd.choice("abcdefg"): _random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))}


def _random_edit(rnd, value, depth=0):
    """`value` with one member or item removed, added or edited somewhere in it (in place)."""
    if not isinstance(value, dict | list):
        return _random_value(rnd, depth + 1)
    keys = list(value) if isinstance(value, dict) else list(range(len(value)))
    choice = rnd.random()
    if keys and choice < 0.3:
        del value[rnd.choice(keys)]
    elif choice < 0.6:
        if isinstance(value, dict):
            value[rnd.choice("hijk")] = _random_value(rnd, depth + 1)
        else:
            value.insert(rnd.randint(0, len(value)), _random_value(rnd, depth + 1))
    elif keys:
        key = rnd.choice(keys)
        value[key] = _random_edit(rnd, value[key], depth + 1)
    return value


def test_any_edit_gives_the_edited_data_and_no_edit_the_text_as_it_was():
    import copy
    import random

    rnd = random.Random(38)
    styles = [{"indent": 2}, {"indent": "\t"}, {}, {"separators": (",", ":")}, {"indent": 4, "ensure_ascii": False}]
    for _ in range(3000):
        data = {key: _random_value(rnd, 1) for key in "pqrs"[: rnd.randint(0, 4)]}
        text = json.dumps(data, **rnd.choice(styles)) + rnd.choice(["", "\n"])
        new = _random_edit(rnd, copy.deepcopy(data))
        result = edited_text(text, new, ensure_ascii=True)
        assert same(json.loads(result), new), (text, new, result)
        if same(data, new):
            assert result == text
