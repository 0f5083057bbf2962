# Generated from errord/decide/classify by clients/python/genproto.py; never edit.
"""Exceptions a tool's own Python code raises, by family: what each says of the failure.

Most failures an agent meets are raised by the tool's code, not answered by an HTTP API.
Python names them precisely, and the name decides more than any word of the message:

- The tool's own bugs: AttributeError ('NoneType' object has no attribute 'json'),
  KeyError, IndexError, NameError, UnboundLocalError, AssertionError, RecursionError,
  ZeroDivisionError, ImportError... are INTERNAL: retrying deterministic code fails the
  same way, and nobody but the tool's author can fix it. A TypeError is one too, unless it
  says the call's arguments did not fit the function ("got an unexpected keyword
  argument", "missing 1 required positional argument"): the model's call is wrong then.
- Values the call gave that do not parse: ValueError (``int("ten")``, an Enum lookup, a
  date), json.JSONDecodeError, re.error: INVALID_INPUT; errord.decide.classify.fault then
  looks in the call for the value that failed, and without one a JSON or regex error is
  the tool's own (it parsed what its backend answered, or its own pattern).
- The file system, by errno (OSError's subclasses, or the errno's words in the message):
  a missing path (ENOENT) is NOT_FOUND, a directory given for a file (EISDIR, ENOTDIR) or
  a name taken (EEXIST) INVALID_INPUT, a permission (EACCES, EPERM) AUTH, a full disk
  (ENOSPC, EDQUOT) or a read-only one UNAVAILABLE and permanent (a person must free
  space), a busy resource (EAGAIN, EMFILE) UNAVAILABLE and transient.
- The DB-API's exception classes (sqlite3, psycopg, pymysql... name them alike):
  IntegrityError and DataError are the call's values, OperationalError the database's
  state, ProgrammingError and InterfaceError the tool's own use of the driver (a
  statement whose syntax error quotes the call's query is the call's: the message's
  phrases and the call's evidence say so). Their messages say more ("no such column:
  prce", "database is locked"), and the phrases read them first: these are the defaults
  when the message names nothing.

``BUILTIN_TIER`` is read after the HTTP status and before the message's phrases (a
KeyError's message is a key, not a phrase: KeyError('permission') is no AUTH);
``DEFAULT_TIER`` is read last, when nothing else named a cause. The exception's type is
read as executors name it: a built-in by its bare name (``KeyError``), another by its module
(``json.JSONDecodeError``); a DB-API class by its name in any module
(``sqlite3.IntegrityError``, ``psycopg.errors.IntegrityError``).
"""

from __future__ import annotations

import re
from typing import Final

from errord_client._classify.rules import PERMANENT, TRANSIENT, verdict
from errord_client.classify_model import Classification, ErrorCode

BUGS: Final = frozenset(
    {
        "AttributeError",
        "KeyError",
        "IndexError",
        "LookupError",
        "NameError",
        "UnboundLocalError",
        "AssertionError",
        "RecursionError",
        "ZeroDivisionError",
        "ArithmeticError",
        "FloatingPointError",
        "ImportError",
        "ModuleNotFoundError",
        "SyntaxError",
        "IndentationError",
        "TabError",
        "SystemError",
        "StopIteration",
        "StopAsyncIteration",
        "UnicodeEncodeError",
        "ReferenceError",
        "ChildProcessError",
        "ProcessLookupError",
    }
)
"""Built-in exceptions that say the tool's own code went wrong."""

TYPE_MISMATCH_OF_THE_CALL: Final = re.compile(
    r"unexpected keyword argument|missing \d+ required (?:positional |keyword-only )?argument"
    r"|takes (?:from )?\d+ (?:to \d+ )?positional arguments? but \d+ (?:was|were) given"
    r"|got multiple values for argument|got some positional-only arguments passed as keyword"
)
"""A TypeError that says the call's arguments did not fit the tool's function."""

ERRNO_WORDS: Final[tuple[tuple[str, str, ErrorCode, bool], ...]] = (
    # (the errno, its words as strerror gives them, the code, whether it is permanent)
    ("enoent", r"no such file or directory", ErrorCode.NOT_FOUND, True),
    ("eisdir", r"is a directory", ErrorCode.INVALID_INPUT, True),
    ("enotdir", r"not a directory", ErrorCode.INVALID_INPUT, True),
    ("eexist", r"file exists", ErrorCode.INVALID_INPUT, True),
    ("enametoolong", r"file name too long", ErrorCode.INVALID_INPUT, True),
    ("eacces", r"permission denied|operation not permitted", ErrorCode.AUTH, True),
    ("enospc", r"no space left on device|disk quota exceeded", ErrorCode.UNAVAILABLE, True),
    ("erofs", r"read-only file system", ErrorCode.UNAVAILABLE, True),
    ("eagain", r"resource temporarily unavailable", ErrorCode.UNAVAILABLE, False),
    ("emfile", r"too many open files", ErrorCode.UNAVAILABLE, False),
    ("ebusy", r"device or resource busy", ErrorCode.UNAVAILABLE, False),
    ("eio", r"input/output error", ErrorCode.UNAVAILABLE, False),
)
"""An OSError's errno, by the words ``strerror`` gives it (the message always has them)."""

OS_ERRORS: Final[dict[str, Classification]] = {
    "FileNotFoundError": verdict(ErrorCode.NOT_FOUND, "default:exception_family:enoent"),
    "IsADirectoryError": verdict(ErrorCode.INVALID_INPUT, "default:exception_family:eisdir"),
    "NotADirectoryError": verdict(ErrorCode.INVALID_INPUT, "default:exception_family:enotdir"),
    "FileExistsError": verdict(ErrorCode.INVALID_INPUT, "default:exception_family:eexist"),
    "PermissionError": verdict(ErrorCode.AUTH, "default:exception_family:permission"),
    "BlockingIOError": verdict(ErrorCode.UNAVAILABLE, "default:exception_family:eagain"),
    "InterruptedError": verdict(ErrorCode.UNAVAILABLE, "default:exception_family:eintr"),
}
"""OSError's subclasses, each one errno."""

INPUT_PARSING: Final[dict[str, str]] = {
    "ValueError": "value_error",
    "UnicodeDecodeError": "value_error",
    "decimal.InvalidOperation": "value_error",
    "json.JSONDecodeError": "json",
    "re.error": "regex",
    "re.PatternError": "regex",  # Python 3.13's name
}
"""Exceptions raised where a value did not parse (by type, as executors name it): INVALID_INPUT,
whose value errord.decide.classify.fault looks for in the call."""

DB_API: Final[dict[str, Classification]] = {
    "IntegrityError": verdict(ErrorCode.INVALID_INPUT, "default:exception_family:db_integrity"),
    "DataError": verdict(ErrorCode.INVALID_INPUT, "default:exception_family:db_data"),
    "ProgrammingError": verdict(ErrorCode.INTERNAL, "default:exception_family:db_statement"),
    "OperationalError": verdict(ErrorCode.UNAVAILABLE, "default:exception_family:db_operational"),
    "InterfaceError": verdict(ErrorCode.INTERNAL, "default:exception_family:db_interface"),
    "NotSupportedError": verdict(ErrorCode.UNSUPPORTED, "default:exception_family:db_unsupported"),
    "InternalError": verdict(ErrorCode.UNKNOWN, "default:exception_family:db_internal"),
}
"""The DB-API's exception classes (PEP 249), when the message names no cause."""

SETTING: Final = re.compile(
    r"""['"][A-Z][A-Z0-9]*_[A-Z0-9_]*(?:KEY|TOKEN|SECRET|URL|HOST|PASSWORD|DSN)['"]"""
)
"""A KeyError of an unset environment variable: ``os.environ["WEATHER_API_KEY"]``."""

BUG = verdict(ErrorCode.INTERNAL, "default:exception_family:bug")
MISSING_SETTING = verdict(
    ErrorCode.UNAVAILABLE, "default:exception_family:missing_setting", PERMANENT
)
"""A setting the tool needs is not there: whoever deploys the tool must set it."""
CALL_MISMATCH = verdict(ErrorCode.INVALID_INPUT, "default:exception_family:call_mismatch")
NOT_IMPLEMENTED = verdict(ErrorCode.UNSUPPORTED, "default:exception_family:not_implemented")
PARSING = {
    name: verdict(ErrorCode.INVALID_INPUT, f"default:exception_family:{rule}")
    for name, rule in INPUT_PARSING.items()
}
ERRNO_VERDICTS = {
    re.compile(words): verdict(
        code, f"default:exception_family:{errno}", PERMANENT if permanent else TRANSIENT
    )
    for errno, words, code, permanent in ERRNO_WORDS
}


def builtin_family(exception_type: str, message: str) -> Classification | None:
    """What a built-in exception of the tool's code says, and its message: a bug,
    a call that did not fit the function, a value that did not parse, an errno; None for
    any other exception (``is_builtin_family``)."""
    if exception_type in PARSING:
        return PARSING[exception_type]
    if not is_builtin_family(exception_type):
        return None
    if exception_type == "TypeError":
        return CALL_MISMATCH if TYPE_MISMATCH_OF_THE_CALL.search(message.lower()) else BUG
    if exception_type == "KeyError" and SETTING.fullmatch(message.strip()):
        return MISSING_SETTING
    if exception_type in BUGS:
        return BUG
    if exception_type == "NotImplementedError":
        return NOT_IMPLEMENTED
    if exception_type in OS_ERRORS:
        return OS_ERRORS[exception_type]
    return errno_verdict(message.lower())  # OSError itself


def errno_verdict(message: str) -> Classification | None:
    """The verdict of the errno whose words ``message`` (lowercased) has, if any."""
    for pattern, found in ERRNO_VERDICTS.items():
        if pattern.search(message):
            return found
    return None


def default_family(exception_type: str) -> Classification | None:
    """The DB-API class's default, read when the message named no cause."""
    return DB_API.get(exception_type.rpartition(".")[2])


BUILTIN_NAMES: Final = frozenset(
    {*BUGS, *OS_ERRORS, "TypeError", "NotImplementedError", "OSError", "IOError"}
)


def is_builtin_family(exception_type: str) -> bool:
    """Whether ``builtin_family`` reads this type (a built-in by its bare name, or a parsing
    error of json, re or decimal): the substring rules of exception types
    (errord.decide.classify.codes) are not asked about it ("TypeError" is no INVALID_INPUT
    by its name, "ModuleNotFoundError" no NOT_FOUND)."""
    return exception_type in BUILTIN_NAMES or exception_type in PARSING
