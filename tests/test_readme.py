"""The README's Python examples run as written."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_block_runs(index: int) -> None:
    exec(compile(BLOCKS[index], f"README.md[python {index}]", "exec"), {})


def test_readme_has_python_examples() -> None:
    assert BLOCKS
