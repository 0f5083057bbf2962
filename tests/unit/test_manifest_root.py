"""errord reads as manifests only files under the manifests' root that no user but their
owner may write: a symbolic link inside the root is followed, one leading out of it is
refused before its target is opened (also when a directory on the way is swapped for a
link between the check and the open), a directory reached through ``..`` or a link out of
the root is refused, and so is a file or directory its group or every user may write, or
another user owns, each with what to run; ReplayManifests' directory is checked the same
way, and a daemon with no root replays its own manifests only."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest
from errord_client import pb

from errord.cli.main import main
from errord.config import Settings
from errord.errors import InvalidRequest, ManifestError, NoManifestDirectory
from errord.manifests.file_text import UnreadableFile, read_text
from errord.manifests.files import load_manifest_dir
from errord.manifests.root import ManifestRoot
from errord.wire.replay import replay_request_from_proto, replayed_directory

TOOLS = "tools:\n  - name: {name}\n"


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    """A 0600 file outside the root (``tmp_path / "root"``) holding a unique string that
    would be quoted if it were read: ``expected a mapping with 'tools', got '...'``."""
    secret = tmp_path / "secret"
    secret.mkdir()
    path = secret / "canary"
    path.write_text(f"root:*:20228:{secrets.token_hex(16)}\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The root, with the manifests directory ``tools.d`` in it."""
    (tmp_path / "root" / "tools.d").mkdir(parents=True)
    return tmp_path / "root"


def write(path: Path, name: str) -> Path:
    path.write_text(TOOLS.format(name=name))
    return path


def problems(directory: Path, root: Path) -> list[str]:
    with pytest.raises(ManifestError) as raised:
        load_manifest_dir(directory, root=ManifestRoot.at(root))
    return [str(problem) for problem in raised.value.problems]


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The real path of every file opened with os.open from now on."""
    paths: list[str] = []
    real_open = os.open

    def spied(path: str | Path, flags: int, *args: int, **kwargs: int) -> int:
        paths.append(os.path.realpath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spied)
    return paths


# Symbolic links.


def test_a_symbolic_link_inside_the_root_is_followed(root: Path) -> None:
    (root / "shared").mkdir()
    write(root / "shared" / "search.yaml", "search")
    (root / "tools.d" / "search.yaml").symlink_to("../shared/search.yaml")

    assert load_manifest_dir(root / "tools.d", root=ManifestRoot.at(root)).names == {"search"}


def test_a_symbolic_link_out_of_the_root_is_refused_and_its_target_never_opened(
    root: Path, canary: Path, opened: list[str]
) -> None:
    link = root / "tools.d" / "a.yaml"
    link.symlink_to(canary)
    write(root / "tools.d" / "b.yaml", "fine")

    assert problems(root / "tools.d", root) == [
        f"{link}: a symbolic link leading outside {root}, where manifests are read"
        " (manifests_root); not read"
    ]
    assert str(canary) not in opened
    assert str(root / "tools.d" / "b.yaml") in opened  # the spy sees what is read


def test_by_default_the_root_is_the_manifests_directorys_real_parent(
    root: Path, canary: Path
) -> None:
    (root / "tools.d" / "a.yaml").symlink_to(canary)

    with pytest.raises(ManifestError) as raised:
        load_manifest_dir(root / "tools.d")

    [problem] = raised.value.problems
    assert f"a symbolic link leading outside {root}," in problem.message
    assert canary.read_text().strip() not in str(raised.value)


def test_a_directory_swapped_for_a_link_between_the_check_and_the_open_is_refused_unread(
    root: Path, canary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path was checked (resolved) while ``sub`` was a directory of the root; by the
    open, ``sub`` is a link out of it: the file opened is checked on its descriptor."""
    (root / "tools.d" / "sub").symlink_to(canary.parent)
    checked = str(root / "tools.d" / "sub" / "canary")
    real_realpath = os.path.realpath

    def resolved_before_the_swap(path: str | Path, **kwargs: bool) -> str:
        return checked if str(path) == checked else real_realpath(path, **kwargs)

    monkeypatch.setattr(os.path, "realpath", resolved_before_the_swap)

    with pytest.raises(UnreadableFile) as raised:
        read_text(Path(checked), ManifestRoot.at(root))

    assert raised.value.message == (
        f"changed while it was opened: the file opened is outside {root}, where manifests"
        " are read (manifests_root); not read"
    )


@pytest.mark.parametrize("proc", [True, False], ids=["proc", "no-proc"])
def test_the_file_open_on_a_descriptor_is_under_the_root_or_not(
    root: Path, canary: Path, monkeypatch: pytest.MonkeyPatch, proc: bool
) -> None:
    """Through /proc/self/fd, else the path opened must still be real and the same file."""
    if not proc:

        def no_proc(path: str) -> str:
            raise FileNotFoundError(path)

        monkeypatch.setattr(os, "readlink", no_proc)
    inside = write(root / "tools.d" / "a.yaml", "a")
    manifests_root = ManifestRoot.at(root)
    for path, held in ((inside, True), (canary, False)):
        descriptor = os.open(path, os.O_RDONLY)
        try:
            assert manifests_root.holds_opened(descriptor, str(path)) is held
        finally:
            os.close(descriptor)


def test_a_directory_reached_through_dot_dot_or_a_link_out_of_the_root_is_refused(
    root: Path, canary: Path
) -> None:
    write(canary.parent / "tools.yaml", "outside")
    (root / "elsewhere").symlink_to(canary.parent)

    for directory in (root / ".." / "secret", root / "tools.d" / ".." / ".." / "secret"):
        assert problems(directory, root) == [
            f"{directory}: outside {root}, where manifests are read (manifests_root);"
            " nothing was read"
        ]
    assert problems(root / "elsewhere", root) == [
        f"{root / 'elsewhere'}: a symbolic link leading outside {root}, where manifests are"
        " read (manifests_root); nothing was read"
    ]


def test_a_root_is_a_directory_and_what_is_under_it_not_a_name_that_begins_alike(
    tmp_path: Path,
) -> None:
    manifests_root = ManifestRoot.at(tmp_path / "root")
    assert manifests_root.holds(tmp_path / "root")
    assert manifests_root.holds(tmp_path / "root" / "tools.d")
    assert not manifests_root.holds(tmp_path / "rootless")
    assert not manifests_root.holds(tmp_path)


def test_the_configured_root_is_the_setting_else_the_manifests_real_parent_else_none(
    root: Path, tmp_path: Path
) -> None:
    (tmp_path / "link.d").symlink_to(root / "tools.d")

    assert ManifestRoot.configured(tmp_path / "link.d", None) == ManifestRoot(root)
    assert ManifestRoot.configured(tmp_path / "link.d", tmp_path) == ManifestRoot(tmp_path)
    assert ManifestRoot.configured(None, None) is None


# Who may write.


@pytest.mark.parametrize(
    ("mode", "writers"),
    [(0o664, "its group"), (0o646, "every user"), (0o666, "its group and every user")],
)
def test_a_manifest_another_user_may_write_is_refused_naming_its_mode_and_the_fix(
    root: Path, mode: int, writers: str
) -> None:
    path = write(root / "tools.d" / "t.yaml", "t")
    path.chmod(mode)

    assert problems(root / "tools.d", root) == [
        f"{path}: writable by {writers} (mode {mode:04o}): another user could change it;"
        f" not read (run: chmod go-w {path})"
    ]


def test_a_manifests_directory_another_user_may_write_is_refused_whole(root: Path) -> None:
    write(root / "tools.d" / "t.yaml", "t")
    (root / "tools.d").chmod(0o1777)  # sticky, as /tmp: others may still add files

    assert problems(root / "tools.d", root) == [
        f"{root / 'tools.d'}: writable by its group and every user (mode 1777): another"
        f" user could change it; nothing was read (run: chmod go-w {root / 'tools.d'})"
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a file away")
def test_a_manifest_another_user_owns_is_refused(root: Path) -> None:
    path = write(root / "tools.d" / "t.yaml", "t")
    os.chown(path, 4242, -1)

    assert problems(root / "tools.d", root) == [
        f"{path}: owned by uid 4242, neither root nor errord's user (uid 0); not read"
        f" (run: chown 0 {path})"
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a file away")
def test_a_symbolic_link_another_user_made_is_not_followed_even_inside_the_root(
    root: Path,
) -> None:
    """Its owner may point it at any file of the root whenever they like."""
    target = write(root / "shared.yaml", "shared")
    link = root / "tools.d" / "t.yaml"
    link.symlink_to(target)
    os.lchown(link, 4242, -1)

    assert problems(root / "tools.d", root) == [
        f"{link}: a symbolic link owned by uid 4242, neither root nor errord's user (uid 0);"
        f" not read (run: chown -h 0 {link})"
    ]


def test_check_reports_a_loose_manifest_as_a_problem(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`errord check DIR && systemctl reload errord` must not pass what the daemon refuses."""
    path = write(root / "tools.d" / "t.yaml", "t")
    path.chmod(0o664)

    assert main(["check", str(root / "tools.d")]) == 1
    assert f"{path}: writable by its group (mode 0664)" in capsys.readouterr().err


# The directory a replay is asked for.


def test_a_replay_takes_a_directory_under_the_root_and_nothing_else(
    root: Path, canary: Path
) -> None:
    settings = Settings(manifests=root / "tools.d")
    (root / "try.d").mkdir()
    (root / "out.d").symlink_to(canary.parent)

    assert replayed_directory(root / "try.d", settings) == root / "try.d"
    assert replayed_directory(None, settings) == root / "tools.d"
    for outside in (canary.parent, root / ".." / "secret", root / "out.d"):
        with pytest.raises(InvalidRequest) as refused:
            replayed_directory(outside, settings)
        [violation] = refused.value.violations
        assert violation.field == "manifests_dir"
        assert violation.description == (
            f"{outside} is outside {root}, where this errord reads manifests (manifests_root)"
        )


def test_manifests_root_widens_or_narrows_what_a_replay_may_read(root: Path, canary: Path) -> None:
    settings = Settings(manifests=root / "tools.d", manifests_root=canary.parent.parent)

    assert replayed_directory(canary.parent, settings) == canary.parent


def test_a_daemon_without_manifests_or_a_root_replays_its_own_manifests_only(
    root: Path,
) -> None:
    settings = Settings()

    assert replayed_directory(None, settings) is None
    with pytest.raises(NoManifestDirectory) as refused:
        replayed_directory(root / "tools.d", settings)
    assert str(refused.value) == (
        "manifests_dir: this errord has no manifests directory and no manifests_root, so it"
        " replays its own manifests only (an empty manifests_dir); to replay another"
        " directory, set manifests_root in its settings to a directory above it"
    )


def test_a_relative_directory_is_refused_it_would_be_the_daemons_working_directorys() -> None:
    with pytest.raises(InvalidRequest) as refused:
        replay_request_from_proto(pb.ReplayManifestsRequest(manifests_dir="../etc"))
    assert str(refused.value) == (
        "manifests_dir: must be an absolute path (a directory on errord's host)"
    )
