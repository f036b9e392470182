"""The target registry: entry points, packaged folders, pins and missing extras."""

import json
from importlib import metadata
from pathlib import Path

import pytest

from playproof.errors import FormatError, TargetError
from playproof.targets import Target, TargetSpec, get_target, list_targets, load_target_dir
from playproof.targets import _registry as registry

PACKAGED = {
    "native/2048",
    "ale/breakout",
    "gym/cartpole",
    "gym/frozenlake",
    "retro/airstriker",
    "pyboy/pp-collect",
}


def test_every_packaged_target_is_registered_through_entry_points() -> None:
    assert {t.name for t in list_targets()} >= PACKAGED


def test_unknown_target_names_the_known_ones() -> None:
    with pytest.raises(TargetError, match="native/2048"):
        get_target("native/nope")


def test_missing_library_names_the_extra_to_install() -> None:
    base = get_target("native/2048")
    spec = base.spec.model_copy(update={"factory": "no_such_module_here:make", "extra": "ale"})
    with pytest.raises(TargetError, match=r"pip install 'playproof\[ale\]'"):
        Target(spec=spec, contract=base.contract, reference=base.reference).open()


def test_a_changed_build_is_refused() -> None:
    base = get_target("native/2048")
    spec = base.spec.model_copy(update={"build_digest": "0" * 64})
    with pytest.raises(TargetError, match="the build changed"):
        Target(spec=spec, contract=base.contract, reference=base.reference).open()


def test_target_folder_errors_are_typed(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="cannot read"):
        load_target_dir(tmp_path)
    folder = get_target("native/2048").folder
    assert folder is not None
    for name in ("target.json", "contract.json", "reference.txt"):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    assert load_target_dir(tmp_path).name == "native/2048"
    (tmp_path / "reference.txt").write_bytes(b"up\n\xff\xfe\n")
    with pytest.raises(FormatError, match="not UTF-8"):
        load_target_dir(tmp_path)
    spec = json.loads((folder / "target.json").read_text())
    spec["name"] = "no slash"
    (tmp_path / "target.json").write_text(json.dumps(spec))
    with pytest.raises(FormatError):
        load_target_dir(tmp_path)


def test_spec_rejects_unknown_fields() -> None:
    data = get_target("native/2048").spec.model_dump()
    data["surprise"] = 1
    with pytest.raises(ValueError, match="surprise"):
        TargetSpec.model_validate(data)


def test_a_broken_entry_point_hides_no_other_target(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plug-in that fails to load costs only itself: other targets still resolve."""
    real = registry._discover()
    broken = metadata.EntryPoint(
        name="aaa-broken", value="playproof_no_such_module:target", group=registry.ENTRY_POINT_GROUP
    )
    missing = metadata.EntryPoint(
        name="solo-missing", value="playproof_no_such_module:x", group=registry.ENTRY_POINT_GROUP
    )
    entries = {"aaa-broken": broken, "solo-missing": missing, **real}
    monkeypatch.setattr(registry, "_discover", lambda: entries)
    assert registry.get_target("native/2048").name == "native/2048"
    # The broken entry asked for by name: its own load error, not "unknown".
    with pytest.raises(TargetError, match="solo-missing failed to load"):
        registry.get_target("solo/missing")
    unknown = r"unknown target 'nope/none'.*failed to load: aaa-broken"
    with pytest.raises(TargetError, match=unknown):
        registry.get_target("nope/none")
