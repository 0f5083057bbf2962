# Generated from errord/decide/classify by clients/python/genproto.py; never edit.
"""Classification, the first stage of a decision: what a failure is, and who can act on it.

``classify`` normalizes the failure to a code and a class by the rules of its tiers
(``classification``: the message's phrases, the API's error body, the exception's type and
family, the HTTP status), and lets the tool's manifest override the class; ``with_fault``
then reads the call itself for whose fault it is and which parameter it is about
(``fault``, from ``evidence``). The tables are data: ``phrases``, ``codes``, ``api``,
``families``, ``status``; ``rules`` is how they are written and searched.

It reads nothing but the domain's values, so that the client package holds a copy of it
(errord_client._classify, written by clients/python/genproto.py): an executor whose
errord does not answer classifies a failure exactly as errord would.
"""

from errord_client._classify.classification import (
    DEFAULT_CLASSES,
    ERROR_CODE_TIER,
    EXCEPTION_TYPE_TIER,
    EXCEPTION_TYPES,
    GRPC_STATUS_CODES,
    HTTP_STATUS_CODES,
    OVERRIDING_PHRASES,
    OVERRIDING_TIER,
    PHRASE_TIER,
    PHRASES,
    SEARCHED_CHARS,
    WORD_TIER,
    WORDS,
    OverrideRule,
    Rule,
    Tier,
    classify,
    http_status_code,
    normalize,
    rule,
    searchable,
    service_error_code,
)
from errord_client._classify.evidence import (
    Evidence,
    argument_evidence,
    framed_parameter,
    names_of,
)
from errord_client._classify.fault import default_fault, fault_of, with_fault

__all__ = [
    "DEFAULT_CLASSES",
    "ERROR_CODE_TIER",
    "EXCEPTION_TYPES",
    "EXCEPTION_TYPE_TIER",
    "GRPC_STATUS_CODES",
    "HTTP_STATUS_CODES",
    "OVERRIDING_PHRASES",
    "OVERRIDING_TIER",
    "PHRASES",
    "PHRASE_TIER",
    "SEARCHED_CHARS",
    "WORDS",
    "WORD_TIER",
    "Evidence",
    "OverrideRule",
    "Rule",
    "Tier",
    "argument_evidence",
    "classify",
    "default_fault",
    "fault_of",
    "framed_parameter",
    "http_status_code",
    "names_of",
    "normalize",
    "rule",
    "searchable",
    "service_error_code",
    "with_fault",
]
