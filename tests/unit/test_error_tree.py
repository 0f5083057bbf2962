"""errors.py draws its whole exception tree: every exception class it defines is in the tree
of its docstring, under its parent."""

from __future__ import annotations

import inspect
import re

from errord import errors


def test_the_docstring_tree_names_every_exception_class_under_its_parent() -> None:
    assert errors.__doc__ is not None
    depth = {  # a class's column in the tree: its parent's is less
        match[2]: len(match[1])
        for match in re.finditer(r"^([│├└─ ]*)(\w+)\s", errors.__doc__, flags=re.M)
        if match[2][0].isupper()
    }
    defined = {
        kind
        for _, kind in inspect.getmembers(errors, inspect.isclass)
        if issubclass(kind, errors.ErrordError) and kind.__module__ == errors.__name__
    }
    assert {kind.__name__ for kind in defined} <= depth.keys()
    for kind in defined - {errors.ErrordError}:
        [parent] = kind.__bases__
        assert depth[kind.__name__] > depth[parent.__name__], kind.__name__
