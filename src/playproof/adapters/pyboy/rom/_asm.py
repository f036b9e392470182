"""A minimal two-pass SM83 (Game Boy CPU) assembler for the instructions our ROM uses.

Source is one instruction per line in the usual syntax (``ld a, [hl+]``,
``jr nz, .loop``, ``ldh [$40], a``). Labels end with ``:``; a label that
starts with ``.`` is local to the previous global label. Operands may be
registers, conditions, ``[...]`` memory references, numbers (``$ff``,
``%1010``, ``12``) and symbols with ``+``/``-`` offsets. ``db`` and ``dw``
emit data. Only what the playproof ROM needs is supported; anything else is
a :class:`AsmError` naming the line.

>>> asm = Assembler(origin=0x150)
>>> asm.source("start:\\n ld a, $12\\n jr start")
>>> asm.link().hex()
'3e1218fc'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar

__all__ = ["AsmError", "Assembler"]

R8 = {"b": 0, "c": 1, "d": 2, "e": 3, "h": 4, "l": 5, "[hl]": 6, "a": 7}
R16 = {"bc": 0, "de": 1, "hl": 2, "sp": 3}
R16_STACK = {"bc": 0, "de": 1, "hl": 2, "af": 3}
CONDITIONS = {"nz": 0, "z": 1, "nc": 2, "c": 3}
ALU = {"add": 0, "adc": 1, "sub": 2, "sbc": 3, "and": 4, "xor": 5, "or": 6, "cp": 7}
CB_SHIFTS = {"rlc": 0, "rrc": 1, "rl": 2, "rr": 3, "sla": 4, "sra": 5, "swap": 6, "srl": 7}
CB_BITS = {"bit": 0x40, "res": 0x80, "set": 0xC0}
IMPLIED = {
    "nop": b"\x00",
    "halt": b"\x76",
    "di": b"\xf3",
    "ei": b"\xfb",
    "ret": b"\xc9",
    "reti": b"\xd9",
    "cpl": b"\x2f",
    "scf": b"\x37",
    "ccf": b"\x3f",
    "daa": b"\x27",
    "rlca": b"\x07",
    "rrca": b"\x0f",
    "rla": b"\x17",
    "rra": b"\x1f",
}
# Loads between A and memory addressed by a 16-bit register pair.
A_INDIRECT_STORE = {"[bc]": 0x02, "[de]": 0x12, "[hl+]": 0x22, "[hl-]": 0x32}
A_INDIRECT_LOAD = {"[bc]": 0x0A, "[de]": 0x1A, "[hl+]": 0x2A, "[hl-]": 0x3A}

_NUMBER = re.compile(r"^(\$[0-9a-f]+|%[01]+|[0-9]+)$")
_TERM = re.compile(r"[+-]?[^+-]+")


class AsmError(ValueError):
    """The source uses syntax or an instruction this assembler does not support."""


@dataclass(frozen=True, slots=True)
class _Fixup:
    position: int
    expression: str
    kind: str  # "u8", "u16" or "rel8"
    line: str


def _number(text: str) -> int | None:
    if not _NUMBER.match(text):
        return None
    if text.startswith("$"):
        return int(text[1:], 16)
    if text.startswith("%"):
        return int(text[1:], 2)
    return int(text)


class Assembler:
    """Assemble SM83 source into bytes placed at ``origin`` of the address space."""

    def __init__(self, origin: int) -> None:
        self.origin = origin
        self.code = bytearray()
        self.symbols: dict[str, int] = {}
        self._fixups: list[_Fixup] = []
        self._scope = ""

    @property
    def here(self) -> int:
        """The address of the next emitted byte."""
        return self.origin + len(self.code)

    def define(self, symbols: Mapping[str, int]) -> None:
        """Add named constants."""
        for name, value in symbols.items():
            self._set_symbol(name, value)

    def label(self, name: str) -> None:
        """Define ``name`` at the current address."""
        if not name.startswith("."):
            self._scope = name
        self._set_symbol(self._qualify(name), self.here)

    def data(self, blob: bytes) -> None:
        """Emit raw bytes."""
        self.code += blob

    def source(self, text: str) -> None:
        """Assemble every line of ``text`` (comments start with ``;``)."""
        for raw in text.splitlines():
            line = raw.split(";", 1)[0].strip().lower()
            if not line:
                continue
            while ":" in line and not line.startswith(("db ", "dw ")):
                name, _, line = line.partition(":")
                self.label(name.strip())
                line = line.strip()
            if line:
                self._instruction(line)

    def link(self) -> bytes:
        """Resolve every forward reference and return the bytes."""
        for fix in self._fixups:
            value = self._evaluate(fix.expression, fix.line)
            if fix.kind == "rel8":
                offset = value - (self.origin + fix.position + 1)
                if not -128 <= offset <= 127:
                    raise AsmError(f"jump target out of range in {fix.line!r}")
                self.code[fix.position] = offset & 0xFF
            elif fix.kind == "u8":
                self._check_range(value, 0xFF, fix.line)
                self.code[fix.position] = value & 0xFF
            else:
                self._check_range(value, 0xFFFF, fix.line)
                self.code[fix.position : fix.position + 2] = value.to_bytes(2, "little")
        self._fixups.clear()
        return bytes(self.code)

    # -- internals ---------------------------------------------------------

    def _set_symbol(self, name: str, value: int) -> None:
        if name in self.symbols:
            raise AsmError(f"symbol {name!r} defined twice")
        self.symbols[name] = value

    def _qualify(self, name: str) -> str:
        return self._scope + name if name.startswith(".") else name

    @staticmethod
    def _check_range(value: int, top: int, line: str) -> None:
        # Negative values down to -top-1 are accepted as two's complement.
        if not -(top + 1) // 2 <= value <= top:
            raise AsmError(f"value {value} does not fit in {line!r}")

    def _evaluate(self, expression: str, line: str) -> int:
        total = 0
        for term in _TERM.findall(expression.replace(" ", "")):
            sign = -1 if term.startswith("-") else 1
            body = term.lstrip("+-")
            value = _number(body)
            if value is None:
                value = self.symbols.get(body)
            if value is None:
                raise AsmError(f"unknown symbol {body!r} in {line!r}")
            total += sign * value
        return total

    def _expr(self, expression: str, kind: str, line: str) -> None:
        position = len(self.code)
        self.code += b"\x00" * (2 if kind == "u16" else 1)
        qualified = re.sub(r"(?<![\w.])\.[\w]+", lambda m: self._qualify(m.group(0)), expression)
        self._fixups.append(_Fixup(position, qualified, kind, line))

    def _instruction(self, line: str) -> None:
        mnemonic, _, rest = line.partition(" ")
        operands = [part.strip() for part in rest.split(",")] if rest.strip() else []
        if mnemonic in IMPLIED and not operands:
            self.code += IMPLIED[mnemonic]
            return
        handler = self._HANDLERS.get(mnemonic)
        if handler is None:
            raise AsmError(f"unsupported instruction {line!r}")
        handler(self, operands, line)

    def _op_db(self, operands: list[str], line: str) -> None:
        for operand in operands:
            self._expr(operand, "u8", line)

    def _op_dw(self, operands: list[str], line: str) -> None:
        for operand in operands:
            self._expr(operand, "u16", line)

    def _op_ld(self, ops: list[str], line: str) -> None:
        if len(ops) != 2:
            raise AsmError(f"ld needs two operands: {line!r}")
        dst, src = ops
        if dst in R8 and src in R8:
            if dst == src == "[hl]":
                raise AsmError(f"ld [hl], [hl] does not exist: {line!r}")
            self.code.append(0x40 | R8[dst] << 3 | R8[src])
        elif dst in R8 and not src.startswith("["):
            self.code.append(0x06 | R8[dst] << 3)
            self._expr(src, "u8", line)
        elif dst in R16 and src not in R16:
            self.code.append(0x01 | R16[dst] << 4)
            self._expr(src, "u16", line)
        elif dst == "sp" and src == "hl":
            self.code.append(0xF9)
        elif src == "a" and dst in A_INDIRECT_STORE:
            self.code.append(A_INDIRECT_STORE[dst])
        elif dst == "a" and src in A_INDIRECT_LOAD:
            self.code.append(A_INDIRECT_LOAD[src])
        elif src == "a" and dst.startswith("["):
            self.code.append(0xEA)
            self._expr(dst[1:-1], "u16", line)
        elif dst == "a" and src.startswith("["):
            self.code.append(0xFA)
            self._expr(src[1:-1], "u16", line)
        else:
            raise AsmError(f"unsupported ld form: {line!r}")

    def _op_ldh(self, ops: list[str], line: str) -> None:
        if ops == ["[c]", "a"]:
            self.code.append(0xE2)
        elif ops == ["a", "[c]"]:
            self.code.append(0xF2)
        elif len(ops) == 2 and ops[1] == "a" and ops[0].startswith("["):
            self.code.append(0xE0)
            self._expr(ops[0][1:-1], "u8", line)
        elif len(ops) == 2 and ops[0] == "a" and ops[1].startswith("["):
            self.code.append(0xF0)
            self._expr(ops[1][1:-1], "u8", line)
        else:
            raise AsmError(f"unsupported ldh form: {line!r}")

    def _alu(self, ops: list[str], line: str) -> None:
        mnemonic = line.split(" ", 1)[0]
        if len(ops) == 2 and ops[0] == "a":
            ops = ops[1:]
        if mnemonic == "add" and len(ops) == 2 and ops[0] == "hl" and ops[1] in R16:
            self.code.append(0x09 | R16[ops[1]] << 4)
            return
        if len(ops) != 1:
            raise AsmError(f"unsupported {mnemonic} form: {line!r}")
        if ops[0] in R8:
            self.code.append(0x80 | ALU[mnemonic] << 3 | R8[ops[0]])
        else:
            self.code.append(0xC6 | ALU[mnemonic] << 3)
            self._expr(ops[0], "u8", line)

    def _op_incdec(self, ops: list[str], line: str) -> None:
        is_dec = line.startswith("dec")
        if len(ops) != 1:
            raise AsmError(f"unsupported form: {line!r}")
        if ops[0] in R8:
            self.code.append((0x05 if is_dec else 0x04) | R8[ops[0]] << 3)
        elif ops[0] in R16:
            self.code.append((0x0B if is_dec else 0x03) | R16[ops[0]] << 4)
        else:
            raise AsmError(f"unsupported form: {line!r}")

    def _op_stack(self, ops: list[str], line: str) -> None:
        if len(ops) != 1 or ops[0] not in R16_STACK:
            raise AsmError(f"unsupported form: {line!r}")
        base = 0xC5 if line.startswith("push") else 0xC1
        self.code.append(base | R16_STACK[ops[0]] << 4)

    def _op_jp(self, ops: list[str], line: str) -> None:
        if ops in (["hl"], ["[hl]"]):
            self.code.append(0xE9)
            return
        self._branch(ops, line, plain=0xC3, conditional=0xC2, kind="u16")

    def _op_jr(self, ops: list[str], line: str) -> None:
        self._branch(ops, line, plain=0x18, conditional=0x20, kind="rel8")

    def _op_call(self, ops: list[str], line: str) -> None:
        self._branch(ops, line, plain=0xCD, conditional=0xC4, kind="u16")

    def _op_ret(self, ops: list[str], line: str) -> None:
        if len(ops) != 1 or ops[0] not in CONDITIONS:
            raise AsmError(f"unsupported ret form: {line!r}")
        self.code.append(0xC0 | CONDITIONS[ops[0]] << 3)

    def _branch(
        self, ops: list[str], line: str, *, plain: int, conditional: int, kind: str
    ) -> None:
        if len(ops) == 1:
            self.code.append(plain)
            target = ops[0]
        elif len(ops) == 2 and ops[0] in CONDITIONS:
            self.code.append(conditional | CONDITIONS[ops[0]] << 3)
            target = ops[1]
        else:
            raise AsmError(f"unsupported branch form: {line!r}")
        self._expr(target, kind, line)

    def _op_cb_shift(self, ops: list[str], line: str) -> None:
        mnemonic = line.split(" ", 1)[0]
        if len(ops) != 1 or ops[0] not in R8:
            raise AsmError(f"unsupported form: {line!r}")
        self.code += bytes((0xCB, CB_SHIFTS[mnemonic] << 3 | R8[ops[0]]))

    def _op_cb_bit(self, ops: list[str], line: str) -> None:
        mnemonic = line.split(" ", 1)[0]
        bit = _number(ops[0]) if len(ops) == 2 else None
        if bit is None or not 0 <= bit <= 7 or ops[1] not in R8:
            raise AsmError(f"unsupported form: {line!r}")
        self.code += bytes((0xCB, CB_BITS[mnemonic] | bit << 3 | R8[ops[1]]))

    _HANDLERS: ClassVar[dict[str, Callable[[Assembler, list[str], str], None]]] = {
        "db": _op_db,
        "dw": _op_dw,
        "ld": _op_ld,
        "ldh": _op_ldh,
        "inc": _op_incdec,
        "dec": _op_incdec,
        "push": _op_stack,
        "pop": _op_stack,
        "jp": _op_jp,
        "jr": _op_jr,
        "call": _op_call,
        "ret": _op_ret,
        **dict.fromkeys(ALU, _alu),
        **dict.fromkeys(CB_SHIFTS, _op_cb_shift),
        **dict.fromkeys(CB_BITS, _op_cb_bit),
    }
