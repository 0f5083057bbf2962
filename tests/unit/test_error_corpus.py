"""The classifier against real error messages: each entry of fixtures/error_corpus.yaml
comes out with the code and class its recovery needs, and the whole corpus stays above
an accuracy floor (xfail entries included, so a known miss still costs accuracy)."""

from __future__ import annotations

from typing import Any

import pytest

from errord.decide.classify import classify
from errord.decide.model import Classification, ErrorClass, ErrorCode
from tests.harness import corpus_failure, load_error_corpus

CORPUS = load_error_corpus()
CODE_FLOOR = 0.9
CLASS_FLOOR = 0.95


def expected(entry: dict[str, Any]) -> tuple[ErrorCode, ErrorClass]:
    return ErrorCode(entry["code"]), ErrorClass(entry["class"])


def outcome(verdict: Classification) -> tuple[ErrorCode, ErrorClass]:
    return verdict.code, verdict.error_class


def corpus_case(entry: dict[str, Any]) -> Any:
    marks = [pytest.mark.xfail(reason=entry["xfail"], strict=True)] if "xfail" in entry else []
    return pytest.param(entry, id=entry["id"], marks=marks)


def test_the_corpus_is_large_and_every_entry_names_its_source() -> None:
    ids = [entry["id"] for entry in CORPUS]
    assert len(CORPUS) >= 170
    assert len(set(ids)) == len(ids)
    assert all(entry["source"] for entry in CORPUS)


@pytest.mark.parametrize("entry", [corpus_case(entry) for entry in CORPUS])
def test_a_real_error_message_gets_the_code_and_class_its_recovery_needs(
    entry: dict[str, Any],
) -> None:
    verdict = classify(corpus_failure(entry))
    assert outcome(verdict) == expected(entry), verdict.rule


def test_accuracy_over_the_whole_corpus_stays_above_the_floor() -> None:
    verdicts = [(classify(corpus_failure(entry)), expected(entry)) for entry in CORPUS]
    code_accuracy = sum(v.code is code for v, (code, _) in verdicts) / len(verdicts)
    class_accuracy = sum(v.error_class is cls for v, (_, cls) in verdicts) / len(verdicts)
    print(
        f"\n{len(verdicts)} real error messages: code accuracy {code_accuracy:.3f}, "
        f"class accuracy {class_accuracy:.3f}"
    )
    assert code_accuracy >= CODE_FLOOR
    assert class_accuracy >= CLASS_FLOOR
