"""remember_request: the one validation of a remember, whatever interface asked it."""

import dataclasses

import pytest

from pgrecall.errors import InvalidInput
from pgrecall.memory.request import RememberRequest, remember_request


def test_a_request_holds_the_clean_fields():
    request = remember_request(
        "Deploys go out on Tuesdays.\r\n", title="Deploys", tags=["ops", "ops"], metadata={"w": 2}, source="cli"
    )
    assert request == RememberRequest(
        "Deploys go out on Tuesdays.", title="Deploys", tags=("ops",), metadata={"w": 2}, source="cli"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.force = True  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"text": "  "}, "empty"),
        ({"text": "x", "tags": ["a\nb"]}, "one line"),
        ({"text": "x", "metadata": {"a": {"b": 1}}}, "metadata"),
        ({"text": "x", "force": "yes"}, "force must be true or false"),
        ({"text": "x", "allow_secret": 1}, "allow_secret must be true or false"),
    ],
)
def test_bad_input_is_one_line_naming_the_field(fields, message):
    with pytest.raises(InvalidInput, match=message):
        remember_request(**fields)
