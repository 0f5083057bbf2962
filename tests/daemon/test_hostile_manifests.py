"""A hostile or careless manifest cannot hang errord: alias bombs wherever a
value can go, files too large, too many or not files at all, ``!!python`` tags, text
that is not UTF-8 and regular expressions that backtrack each get a clear
``file:line`` problem, or a bounded, prompt result; ``errord check`` says the same
whatever the hash seed; and the daemon keeps answering meanwhile.

Nothing here measures time: each bound holds by construction, and a regression shows
as a subprocess or RPC running into its (generous) timeout.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from errord_client import ErrordClient, pb
from grpc_health.v1 import health_pb2, health_pb2_grpc

from errord.decide.arguments.validators import CallValidator, example_arguments
from errord.decide.classify import classify
from errord.decide.manifest import ClassificationRule
from errord.decide.model import ErrorClass, ToolFailure
from errord.errors import ManifestError
from errord.manifests.directory import MAX_FILES, MAX_TOTAL_BYTES
from errord.manifests.file_text import MAX_FILE_BYTES
from errord.manifests.files import load_manifest_dir
from errord.manifests.root import ManifestRoot
from errord.manifests.yaml_bounds import MAX_EXPANDED
from tests.helpers import errord_command, start_process, subprocess_env

TIMEOUT = 120.0
"""Seconds any one subprocess or RPC here may take: only a hang comes near it."""
BACKTRACKING = "(a|aa)+$"
"""Python's re takes seconds on 37 characters of ``a`` and one ``!``, and doubles with
each character more; RE2 takes microseconds."""
ADVERSARIAL = "a" * 36 + "!"
"""37 characters: seconds for Python's re."""
HOPELESS = "a" * 64 + "!"
"""Centuries for Python's re: a regression runs into the timeout."""


def laughs(indent: str, levels: int = 10) -> list[str]:
    """A billion laughs: ``a9`` expands to 2 * 9**9 strings in ten lines."""
    lines = [f"{indent}a0: &a0 [lol, lol]"]
    lines += [f"{indent}a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return lines


def doubling_all_of(indent: str, levels: int) -> list[str]:
    """``s{n}`` is ``allOf: [s{n-1}, s{n-1}]``: 2**n copies of ``{type: string}``."""
    lines = [f"{indent}s0: &s0 {{type: string}}"]
    lines += [f"{indent}s{i}: &s{i} {{allOf: [*s{i - 1}, *s{i - 1}]}}" for i in range(1, levels)]
    return lines


TOOL = ["tools:", "  - name: t"]

BOMBS = {
    "top-level": ["x:", *laughs("  "), "tools: []"],
    "default": [*TOOL, "    default:", *laughs("      ")],
    "parameters-examples": [
        *TOOL,
        "    parameters:",
        "      type: object",
        "      properties:",
        "        q:",
        "          type: string",
        "          examples:",
        "            - bomb:",
        *laughs("                "),
    ],
    "parameters-defs": [*TOOL, "    parameters:", "      $defs:", *laughs("        ")],
    "nested-allOf": [
        *TOOL,
        "    parameters:",
        "      $defs:",
        *doubling_all_of("        ", 40),
        "      properties: {q: *s39}",
    ],
    "key": ["tools: []", "? {" + ", ".join(line.strip() for line in laughs("")) + "}", ": 1"],
}


def write(directory: Path, name: str, lines: list[str] | str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(lines if isinstance(lines, str) else "\n".join(lines) + "\n")
    return path


def problems(directory: Path, root: ManifestRoot | None = None) -> list[str]:
    with pytest.raises(ManifestError) as raised:
        load_manifest_dir(directory, root=root)
    return [str(problem) for problem in raised.value.problems]


# Aliases.


@pytest.mark.parametrize("place", BOMBS)
def test_an_alias_bomb_is_refused_on_the_line_where_it_grows_too_large(
    tmp_path: Path, place: str
) -> None:
    path = write(tmp_path, "bomb.yaml", BOMBS[place])
    text = path.read_text().splitlines()

    [problem] = problems(tmp_path)

    located = re.fullmatch(rf"{re.escape(str(path))}:(\d+): (.*)", problem)
    assert located is not None, problem
    assert f"more than {MAX_EXPANDED:,} characters and values once its aliases" in located[2]
    assert "&" in text[int(located[1]) - 1]  # an anchor's line, inside the bomb


def test_an_alias_bomb_small_enough_for_the_file_is_refused_by_the_schema_bound(
    tmp_path: Path,
) -> None:
    """2**12 copies of a schema fit in the document's bound, not in a schema's."""
    lines = [*TOOL, "    parameters:", "      $defs:", *doubling_all_of("        ", 13)]
    path = write(tmp_path, "t.yaml", [*lines, "      properties: {q: *s12}"])

    [problem] = problems(tmp_path)

    assert problem.startswith(f"{path}:4: tools[0].parameters: JSON Schema too large: ")
    assert "values (keys included, aliases counted at each use), more than 10,000" in problem


def test_a_default_that_aliases_make_large_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", [*TOOL, "    default:", *laughs("      ", levels=6)])

    [problem] = problems(tmp_path)

    assert problem.startswith(f"{path}:4: tools[0].default: default too large: ")


def test_aliases_nesting_deeper_than_they_are_written_are_refused(tmp_path: Path) -> None:
    """Each anchor is one level deeper than the one it names: written 2 levels deep,
    the value nests 150."""
    lines = [*TOOL, "    default:", "      d0: &d0 [x]"]
    lines += [f"      d{i}: &d{i} [*d{i - 1}]" for i in range(1, 150)]
    write(tmp_path, "t.yaml", lines)

    [problem] = problems(tmp_path)

    assert problem.endswith(": nested more than 100 levels deep")


def test_aliases_within_the_bounds_still_load(tmp_path: Path) -> None:
    lines = [
        *TOOL,
        "    parameters:",
        "      type: object",
        "      properties:",
        "        origin: &airport {type: string, pattern: '^[A-Z]{3}$'}",
        "        destination: *airport",
        "      required: [origin, destination]",
    ]
    write(tmp_path, "t.yaml", lines)

    snapshot = load_manifest_dir(tmp_path)

    validator = snapshot.validators.for_tool("t")
    assert validator is not None
    assert [v.parameter for v in validator.validate({"origin": "CDG", "destination": "x"})] == [
        "destination"
    ]


# Files.


def test_a_50_mb_file_is_refused_without_being_read(tmp_path: Path) -> None:
    path = write(tmp_path, "big.yaml", "tools: []\n")
    os.truncate(path, 50 * 1024 * 1024)  # sparse: nothing to read but NUL bytes

    assert problems(tmp_path) == [
        f"{path}: 52,428,800 bytes, more than the {MAX_FILE_BYTES:,} a manifest file may have;"
        " not read (split the tools across files)"
    ]


def test_more_than_the_total_bytes_in_all_is_refused_before_any_file_is_read(
    tmp_path: Path,
) -> None:
    for index in range(MAX_TOTAL_BYTES // MAX_FILE_BYTES + 1):
        os.truncate(write(tmp_path, f"m{index}.yaml", "tools: []\n"), MAX_FILE_BYTES)

    [problem] = problems(tmp_path)

    assert problem.startswith(f"{tmp_path}: its manifest files have ")
    assert f"more than the {MAX_TOTAL_BYTES:,} a directory may have in all" in problem


@pytest.fixture(scope="module")
def five_thousand_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("many")
    for index in range(5000):
        (directory / f"m{index:04}.yaml").write_text("tools: [{name: 1, bad: key}]\n")
    return directory


def test_5000_files_are_refused_before_any_is_read(five_thousand_files: Path) -> None:
    assert problems(five_thousand_files) == [
        f"{five_thousand_files}: 5,000 manifest files, more than the {MAX_FILES:,}"
        " a directory may hold; nothing was read (put more tools in each file)"
    ]


def test_python_tags_are_refused_on_their_lines(tmp_path: Path) -> None:
    lines = [
        *TOOL,
        "    default: !!python/object/apply:os.system [echo pwned]",
        "    description: !!python/name:os.system",
        "    parameters: !!python/object:collections.OrderedDict {type: object}",
    ]
    path = write(tmp_path, "t.yaml", lines)

    assert problems(tmp_path) == [
        f"{path}:3: YAML tag '!!python/object/apply:os.system' refused:"
        " a manifest is plain data, errord runs no code",
        f"{path}:4: YAML tag '!!python/name:os.system' refused:"
        " a manifest is plain data, errord runs no code",
        f"{path}:5: YAML tag '!!python/object:collections.OrderedDict' refused:"
        " a manifest is plain data, errord runs no code",
    ]


def test_another_tag_on_a_collection_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", [*TOOL, "    default: !!set {a, b}"])

    assert problems(tmp_path) == [f"{path}:3: unsupported YAML tag 'tag:yaml.org,2002:set'"]


def test_a_symbolic_link_loop_is_a_problem_not_a_silent_skip(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").symlink_to("loop.yaml")
    write(tmp_path, "ok.yaml", "tools: [{name: fine}]\n")

    assert problems(tmp_path) == [
        f"{tmp_path / 'loop.yaml'}: cannot read file: a loop of symbolic links"
        " (Too many levels of symbolic links)"
    ]


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda path: os.mkfifo(path), "a named pipe"),
        (lambda path: path.symlink_to("/dev/zero"), "a character device"),
    ],
    ids=["fifo", "device"],
)
def test_a_file_that_is_not_a_regular_file_is_a_problem_and_never_blocks(
    tmp_path: Path, make: Callable[[Path], None], kind: str
) -> None:
    """A FIFO with no writer would block a plain open; /dev/zero would never end (the
    link to it is followed under a root that holds /dev: ``manifests_root = "/"``)."""
    make(tmp_path / "tools.yaml")

    assert problems(tmp_path, ManifestRoot.at(Path("/"))) == [
        f"{tmp_path / 'tools.yaml'}: not a regular file ({kind}); a manifest must be one"
    ]


def test_a_directory_named_like_a_manifest_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "old.yaml").mkdir()
    write(tmp_path, "t.yaml", "tools: [{name: fine}]\n")

    assert load_manifest_dir(tmp_path).names == {"fine"}


def test_text_that_is_not_utf8_is_a_problem_naming_its_position(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_bytes(b"tools:\n  - name: ok\n    description: \xff\xfe\n")

    assert problems(tmp_path) == [f"{path}: not UTF-8 text: invalid start byte at byte 37"]


# Regular expressions.


def test_a_backtracking_rule_pattern_loads_and_runs_in_linear_time(tmp_path: Path) -> None:
    write(
        tmp_path,
        "t.yaml",
        [*TOOL, f"    classification: [{{message: '{BACKTRACKING}', class: permanent}}]"],
    )
    [manifest] = load_manifest_dir(tmp_path)

    def class_of(message: str) -> str:
        return classify(ToolFailure(message=message), manifest.classification, "t").rule

    assert class_of("a" * 37) == "manifest:t:classification[0]"
    assert class_of(ADVERSARIAL) != "manifest:t:classification[0]"
    assert class_of(HOPELESS * 60) != "manifest:t:classification[0]"
    # The rule reads the first 4,096 characters, which end in a run of a's.
    assert class_of(ADVERSARIAL * 1000) == "manifest:t:classification[0]"


def test_a_rule_reads_the_first_4096_characters_of_the_message_as_the_default_rules_do() -> None:
    rule = ClassificationRule(ErrorClass.PERMANENT, message=re.compile("needle"))

    assert classify(ToolFailure(message="x" * 4090 + "needle"), [rule]).rule.startswith("manifest")
    assert not classify(ToolFailure(message="x" * 4091 + "needle"), [rule]).rule.startswith(
        "manifest"
    )


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(a)\1", "invalid escape sequence: \\1 (RE2 has no backreferences;"),
        ("(?=a)b", "invalid perl operator: (?= (RE2 has no lookarounds;"),
        (r"quota\Z", "invalid escape sequence: \\Z (RE2 writes the end of the text \\z;"),
    ],
    ids=["backreference", "lookahead", "python-end-anchor"],
)
def test_a_rule_pattern_re2_cannot_run_is_a_problem_on_its_line(
    tmp_path: Path, pattern: str, why: str
) -> None:
    path = write(
        tmp_path,
        "t.yaml",
        [*TOOL, "    classification:", f"      - {{message: '{pattern}', class: permanent}}"],
    )

    [problem] = problems(tmp_path)

    prefix = f"{path}:4: tools[0].classification[0].message: regular expression RE2 cannot run: "
    assert problem.startswith(prefix + why)
    assert problem.endswith("errord runs manifest patterns with RE2, in linear time)")


def test_schema_patterns_run_in_linear_time_on_values_and_property_names() -> None:
    validator = CallValidator.compile(
        {
            "type": "object",
            "properties": {"q": {"type": "string", "pattern": f"^{BACKTRACKING}"}},
            "patternProperties": {f"^{BACKTRACKING}": {"type": "integer"}},
            "additionalProperties": False,
        }
    )

    violations = validator.validate({"q": HOPELESS, HOPELESS: 1})

    assert sorted((v.kind.value, v.parameter[:5]) for v in violations) == [
        ("invalid_format", "q"),
        ("unexpected_parameter", '["aaa'),
    ]
    assert validator.validate({"q": "aaa", "aaaa": 1}) == ()


@pytest.mark.parametrize(
    ("schema", "where", "why"),
    [
        (
            "{properties: {q: {pattern: '(?<!x)y'}}}",
            "tools[0].parameters.properties.q.pattern",
            "JSON Schema pattern '(?<!x)y': invalid perl operator: (?<!",
        ),
        (
            "{patternProperties: {'(a)\\1': {}}}",
            "tools[0].parameters.patternProperties",
            "JSON Schema patternProperties '(a)\\\\1': invalid escape sequence: \\1",
        ),
        (
            "{patternProperties: {'^x': {}}, unevaluatedProperties: false}",
            "tools[0].parameters.patternProperties",
            "JSON Schema patternProperties cannot be used with unevaluatedProperties",
        ),
    ],
    ids=["lookbehind", "backreference-in-name", "with-unevaluatedProperties"],
)
def test_a_schema_pattern_re2_cannot_run_is_a_problem_naming_its_field(
    tmp_path: Path, schema: str, where: str, why: str
) -> None:
    path = write(tmp_path, "t.yaml", [*TOOL, f"    parameters: {schema}"])

    [problem] = problems(tmp_path)

    assert problem.startswith(f"{path}:3: {where}: {why}")
    with pytest.raises(ValueError, match="JSON Schema pattern"):
        CallValidator.compile({"properties": {"q": {"pattern": "(?=x)"}}})


def test_an_example_never_builds_a_string_longer_than_its_bound() -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string", "pattern": "^a", "minLength": 10**9}},
        "required": ["q"],
    }

    assert example_arguments(schema) == {}


# errord check, and the daemon.


def hostile_directory(directory: Path) -> None:
    """One of each hostile file that a directory may hold while still being read."""
    for place, lines in BOMBS.items():
        write(directory, f"bomb-{place}.yaml", lines)
    write(directory, "python.yaml", [*TOOL, "    default: !!python/object/apply:os.system [id]"])
    write(
        directory,
        "patterns.yaml",
        [
            "tools:",
            "  - name: p",
            "    classification: [{message: '(a)\\1', class: permanent}]",
            "    parameters: {properties: {q: {pattern: '(?=x)'}}}",
        ],
    )
    write(
        directory,
        "schemas.yaml",
        [
            "tools:",
            "  - name: defs",
            "    parameters: {$defs: {x: {type: 5, minimum: no}, y: {enum: 3}, z: {required: 1}}}",
            "  - name: huge",
            "    parameters: {enum: [" + ", ".join(["x" * 200] * 2) + "], type: 5}",
        ],
    )
    os.truncate(write(directory, "big.yaml", ""), 50 * 1024 * 1024)
    (directory / "loop.yaml").symlink_to("loop.yaml")
    os.mkfifo(directory / "pipe.yaml")
    (directory / "latin1.yaml").write_bytes("tools: [{name: caf\xe9}]\n".encode("latin-1"))


def check(directory: Path, seed: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        errord_command("check", str(directory)),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=subprocess_env(PYTHONHASHSEED=seed),
        check=False,
    )


def test_check_lists_a_problem_per_hostile_file_the_same_whatever_the_hash_seed(
    tmp_path: Path,
) -> None:
    hostile_directory(tmp_path)
    names = sorted(path.name for path in tmp_path.iterdir())

    first, second = check(tmp_path, "0"), check(tmp_path, "1")

    assert (first.returncode, second.returncode) == (1, 1)
    assert first.stdout + first.stderr == second.stdout + second.stderr
    lines = first.stderr.splitlines()
    assert lines[-1].startswith(f"{tmp_path}: ")
    assert sorted({line.split(":", 1)[0].rsplit("/", 1)[-1] for line in lines[:-1]}) == names
    assert all(len(line) < 500 for line in lines)  # no value quoted whole
    assert "Traceback" not in first.stderr


def test_check_of_5000_files_is_one_problem(five_thousand_files: Path) -> None:
    result = check(five_thousand_files, "0")

    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{five_thousand_files}: 5,000 manifest files, more than the 1,000 a directory may hold;"
        " nothing was read (put more tools in each file)",
        f"{five_thousand_files}: 1 problem",
    ]


class HealthPoller:
    """Asks the daemon's health from a thread until stopped; keeps every answer."""

    def __init__(self, address: str) -> None:
        self.answers: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(address,))
        self._thread.start()

    def _run(self, address: str) -> None:
        with grpc.insecure_channel(address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            while not self._stop.wait(0.02):
                try:
                    answer = health.Check(health_pb2.HealthCheckRequest(), timeout=TIMEOUT)
                    self.answers.append(
                        health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
                    )
                except grpc.RpcError as error:
                    self.answers.append(f"failed: {error.code()}")

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join(TIMEOUT)
        return self.answers


GUARDED = f"""\
tools:
  - name: search
    classification:
      - message: '{BACKTRACKING}'
        class: permanent
    parameters:
      type: object
      properties: {{q: {{type: string, pattern: '^{BACKTRACKING}'}}}}
"""


def test_the_daemon_answers_adversarial_messages_and_hostile_reloads_promptly(
    tmp_path: Path,
) -> None:
    tools = tmp_path / "tools"
    write(tools, "search.yaml", GUARDED)
    daemon = start_process(
        "--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"), "--manifests", str(tools)
    )
    try:
        poller = HealthPoller(daemon.address)
        try:
            with ErrordClient(daemon.address) as errord:

                def report(turn: str, message: str) -> pb.RecoveryDecision:
                    return errord.report_failure(
                        turn_id=turn,
                        call_id="c",
                        tool="search",
                        attempt=1,
                        http_status=400,
                        message=message,
                        arguments={"q": message},
                        timeout=TIMEOUT,
                    ).decision

                adversarial = report("adversarial", ADVERSARIAL)
                hopeless = report("hopeless", HOPELESS * 60)
                matching = report("matching", "a" * 40)
                long = report("long", ADVERSARIAL * 400)  # the rule reads 4,096 characters
                assert "classification[0]" not in adversarial.classification.rule
                assert "classification[0]" not in hopeless.classification.rule
                assert matching.classification.rule == "manifest:search:classification[0]"
                assert long.classification.rule == "manifest:search:classification[0]"

                for path in tools.iterdir():
                    path.unlink()
                hostile_directory(tools)
                daemon.process.send_signal(signal.SIGHUP)
                refused = wait_for_line(daemon.lines, "manifest reload refused")
                kept = report("after", "a" * 40)
                assert kept.classification.rule == "manifest:search:classification[0]"
        finally:
            answers = poller.stop()
        assert answers
        assert set(answers) == {"SERVING"}
        assert "Traceback" not in daemon.stderr
        assert refused
    finally:
        assert daemon.terminate(signal.SIGTERM) == 0


def wait_for_line(lines: list[str], text: str) -> str:
    """The first line of ``lines`` (filled by another thread) holding ``text``."""
    found = threading.Event()
    result: list[str] = []

    def look() -> None:
        while not found.is_set():
            hits = [line for line in list(lines) if text in line]
            if hits:
                result.append(hits[0])
                found.set()
            else:
                found.wait(0.05)

    watcher = threading.Thread(target=look, daemon=True)
    watcher.start()
    watcher.join(TIMEOUT)
    found.set()
    assert result, f"no line with {text!r} in:\n{''.join(lines)}"
    return result[0]
