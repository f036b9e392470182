"""The matrix spec: strict TOML, cells and their names, secrets refused."""

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from playproof.errors import FormatError
from playproof.matrix import MatrixSpec, looks_like_secret, parse_spec
from playproof.matrix._spec import MAX_SPEC_BYTES
from playproof.schemas import render

BASE = """
name = "demo"
targets = ["native/2048", "gym/cartpole"]
seeds = [0, 7]
repetitions = 2
max_turns = 20
budget_usd = 0.5

[[agents]]
name = "walk"
agent = "baseline:random-walk"
agent_seed = 3

[[agents]]
name = "model"
agent = "openai:gpt-4o-mini"
base_url = "http://127.0.0.1:8000/v1"
api_key_env = "OPENAI_API_KEY"
max_turns = 5
[agents.pricing]
input_usd_per_mtok = 0.15
output_usd_per_mtok = 0.6
"""


def test_a_spec_names_every_cell_once_with_a_portable_file_name() -> None:
    spec = parse_spec(BASE)
    cells = spec.cells()
    assert len(cells) == 2 * 2 * 2 * 2
    assert len({c.id for c in cells}) == len(cells)
    assert cells[0].id == "walk__native.2048__s0__r0"
    assert spec.limits(spec.profile("model")) == (5, 0.5)
    assert spec.limits(spec.profile("walk")) == (20, 0.5)


def test_the_config_digest_changes_with_what_shapes_an_episode() -> None:
    spec = parse_spec(BASE)
    changed = parse_spec(BASE.replace("max_turns = 20", "max_turns = 21"))
    walk = spec.profile("walk")
    assert spec.config_digest(walk) != changed.config_digest(changed.profile("walk"))
    assert spec.config_digest(walk) == parse_spec(BASE).config_digest(walk)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("max_turns = 20", 'max_turns = "20"'), "max_turns"),
        (("agent_seed = 3", 'agent_seed = 3\ncolour = "red"'), "colour"),
        (('"gym/cartpole"]', '"native/2048"]'), "targets repeat"),
        (('name = "model"', 'name = "walk"'), "names repeat"),
        (('"gym/cartpole"', '"gym:CartPole-v1"'), "targets"),
        (('name = "walk"', 'name = "../walk"'), "agents.0.name"),
        (("seeds = [0, 7]", "seeds = [0, 0]"), "seeds repeat"),
        (("seeds = [0, 7]", "seeds = [-1]"), "seeds"),
    ],
)
def test_a_malformed_spec_is_refused_with_its_field(change: tuple[str, str], expected: str) -> None:
    with pytest.raises(FormatError, match=expected):
        parse_spec(BASE.replace(*change))


def test_a_spec_that_is_not_toml_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="not valid TOML"):
        parse_spec("targets = [")


def test_too_many_cells_are_refused() -> None:
    seeds = ", ".join(str(i) for i in range(10_000))
    with pytest.raises(FormatError, match="cell limit"):
        parse_spec(BASE.replace("seeds = [0, 7]", f"seeds = [{seeds}]").replace("= 2\n", "= 9\n"))


@pytest.mark.parametrize(
    "line",
    [
        'api_key = "abc"',
        'token = "whatever"',
        'api_key_env = "sk-proj-abcdefghijklmnop1234"',
        'base_url = "https://user:pw@api.example.com/v1"',
        'base_url = "https://api.example.com/v1?api_key=abc"',
    ],
)
def test_a_secret_value_in_a_profile_is_refused(line: str) -> None:
    text = BASE.replace('name = "walk"', f'name = "walk"\n{line}')
    with pytest.raises(FormatError, match="secret"):
        parse_spec(text)


def test_a_secret_inside_an_agent_command_is_refused() -> None:
    text = BASE.replace('"baseline:random-walk"', '"cli:python agent.py --api-key abc123"')
    with pytest.raises(FormatError, match=r"agents\[0\]\.agent"):
        parse_spec(text)


_KEYS = st.one_of(
    st.from_regex(r"sk-[A-Za-z0-9]{20,40}", fullmatch=True),
    st.from_regex(r"ghp_[A-Za-z0-9]{36}", fullmatch=True),
    st.from_regex(r"AKIA[0-9A-Z]{16}", fullmatch=True),
    st.from_regex(r"xoxb-[0-9]{10,12}-[A-Za-z0-9]{20}", fullmatch=True),
    st.from_regex(r"hf_[A-Za-z0-9]{34}", fullmatch=True),
)


@given(key=_KEYS, field=st.sampled_from(["agent", "base_url", "name_of_thing"]))
def test_any_well_known_key_shape_is_refused_wherever_it_appears(key: str, field: str) -> None:
    assert looks_like_secret(key)
    assert looks_like_secret(f"prefix {key} suffix")
    if field == "agent":
        text = BASE.replace('"baseline:random-walk"', json.dumps(f"cli:agent {key}"))
    elif field == "base_url":
        text = BASE.replace('"http://127.0.0.1:8000/v1"', json.dumps(f"http://h/{key}"))
    else:
        text = BASE.replace('name = "demo"', f"name = {json.dumps(key)}")
    with pytest.raises(FormatError, match="secret"):
        parse_spec(text)


@given(
    st.from_regex(r"[a-z][a-z0-9-]{0,30}", fullmatch=True),
    st.from_regex(r"[0-9a-f]{64}", fullmatch=True),
)
def test_names_paths_and_digests_are_not_secrets(name: str, sha: str) -> None:
    assert not looks_like_secret(name)
    assert not looks_like_secret(f"script:agents/{name}.txt")
    assert not looks_like_secret(sha)
    assert not looks_like_secret("http://127.0.0.1:8000/v1")


def test_the_published_schema_is_generated_from_the_model() -> None:
    schema = json.loads(render("matrix-spec"))
    assert schema["title"] == "MatrixSpec"
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"agents", "targets", "seeds", "max_turns"}
    assert MatrixSpec.model_json_schema(by_alias=True)["properties"]["schema"]["default"] == (
        "playproof/matrix/v1"
    )


def test_load_spec_reads_a_file_bounded(tmp_path: Path) -> None:
    from playproof.matrix import load_spec

    path = tmp_path / "spec.toml"
    path.write_text(BASE)
    assert load_spec(path).name == "demo"
    path.write_bytes(b"#" * (2 << 20))
    with pytest.raises(FormatError, match="limit"):
        load_spec(path)


@pytest.mark.parametrize(
    "text",
    ["a = " + "[" * 5000, "a = " + "{ b = " * 5000, ".".join(["a"] * 5000) + " = 1"],
    ids=["arrays", "inline-tables", "dotted-key"],
)
def test_a_deeply_nested_spec_is_a_format_error(text: str) -> None:
    # Well under the size limit, deeper than the parser or the secret scan can recurse.
    assert len(text.encode()) < MAX_SPEC_BYTES
    with pytest.raises(FormatError, match="nested too deeply"):
        parse_spec(text)


def test_names_that_would_share_a_record_file_are_refused() -> None:
    """Agent "walk__x" on native/2048 and agent "walk" on x__native/2048 would both be
    walk__x__native.2048__s0__r0.json: one cell's record taken for the other's."""
    text = BASE.replace('name = "model"', 'name = "walk__x"').replace(
        '"gym/cartpole"]', '"x__native/2048"]'
    )
    with pytest.raises(FormatError, match="same record file name"):
        parse_spec(text)
