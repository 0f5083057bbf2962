"""Struct and Value messages become the plain JSON json_format.MessageToDict gives, within
errord's bounds on depth, members and numbers."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format, struct_pb2
from hypothesis import given
from hypothesis import strategies as st

from errord.wire.plain_json import (
    MAX_JSON_DEPTH,
    MAX_JSON_MEMBERS,
    NotJSON,
    plain_struct,
    plain_value,
)

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(-(2**53), 2**53)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=30,
)


def struct(members: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(members)
    return message


def value(plain: Any) -> struct_pb2.Value:
    message = struct_pb2.Value()
    json_format.ParseDict(plain, message)
    return message


@given(st.dictionaries(st.text(max_size=6), JSON))
def test_a_struct_is_what_message_to_dict_gives(members: dict[str, Any]) -> None:
    message = struct(members)
    assert plain_struct(message) == json_format.MessageToDict(message)


@given(JSON)
def test_a_value_is_what_message_to_dict_gives(plain: Any) -> None:
    message = value(plain)
    assert plain_value(message) == json_format.MessageToDict(message)


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_a_number_json_cannot_hold_is_refused_however_deep(number: float) -> None:
    with pytest.raises(NotJSON, match="numbers must be finite"):
        plain_struct(struct({"a": [1, {"b": number}]}))


def nested(levels: int) -> Any:
    """A JSON array ``levels`` deep."""
    plain: Any = "bottom"
    for _ in range(levels):
        plain = [plain]
    return plain


def test_values_nest_at_most_max_json_depth_levels() -> None:
    assert plain_value(value(nested(MAX_JSON_DEPTH))) == nested(MAX_JSON_DEPTH)
    with pytest.raises(NotJSON, match=f"at most {MAX_JSON_DEPTH} levels"):
        plain_value(value(nested(MAX_JSON_DEPTH + 1)))
    assert plain_struct(struct({"a": nested(MAX_JSON_DEPTH - 1)}))
    with pytest.raises(NotJSON, match=f"at most {MAX_JSON_DEPTH} levels"):
        plain_struct(struct({"a": nested(MAX_JSON_DEPTH)}))


def test_members_and_items_count_together_against_max_json_members() -> None:
    half = MAX_JSON_MEMBERS // 2
    assert plain_struct(struct({"a": list(range(half - 2)), "b": list(range(half))}))
    with pytest.raises(NotJSON, match=f"at most {MAX_JSON_MEMBERS} object members"):
        plain_struct(struct({"a": list(range(half - 1)), "b": list(range(half))}))
