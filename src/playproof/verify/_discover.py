"""Blind discovery of progression channels in emulator memory.

Play an exploration (input logs chosen without knowing the game), read the
memory areas after every input, and classify every byte: constant, rising
(never falls within an episode), falling (never rises), toggling (two values)
or noisy. Adjacent bytes are then combined into 2- and 3-byte channels, in
binary or BCD and either byte order, whenever the combination only rises
although its low byte wraps (a score past 255, or past 99 in BCD). Channels
are ranked: rising before falling, then by how much the final value varies
between policies (a score does, a frame counter does not), then by how rarely
it changes. The result is a discovery document pinned to the ROM digest.

Bytes that behave like the CPU stack rank after every other channel: on a
platform whose stack sits at the top of a memory area (the Game Boy's work RAM
and high RAM), a changing byte near the top of an area whose 16-bit word only
ever takes code addresses is a saved return address, not a score, however
steadily it seems to rise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import pairwise
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from playproof.core.game import Game

__all__ = [
    "DISCOVERY_SCHEMA",
    "DiscoveredChannel",
    "DiscoveryReport",
    "MemoryArea",
    "MemoryReader",
    "discover",
]

DISCOVERY_SCHEMA = "playproof/discovery/v1"
MAX_CHANNELS = 64
"""Ranked channels kept in a discovery document."""
MAX_SNAPSHOTS = 200_000
"""Memory snapshots one discovery may hold (episodes x inputs)."""

BUSY_DIVISOR = 20
"""A channel changing on more than 1 in 20 inputs is a clock or an activity counter."""
STACK_WINDOW = 64
"""Bytes at the top of a memory area checked for stack use (a stack grows down from there)."""
CODE_ADDRESSES: Mapping[str, tuple[range, ...]] = {
    # Game Boy: ROM code after the interrupt vectors, and the high-RAM routines.
    "pyboy": (range(0x0100, 0x8000), range(0xFF80, 0xFFFF)),
}
"""Per platform, where code lives: a stack word holding only these values is a return address."""

MemoryReader = Callable[[], Mapping[str, tuple[int, bytes]]]
"""Reads every memory area of the current state: name -> (base address, bytes)."""

Trend = Literal["rising", "falling"]
Encoding = Literal["binary", "bcd"]
Endian = Literal["little", "big"]


class MemoryArea(BaseModel):
    """One memory area the discovery read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    base: int
    size: int


class DiscoveredChannel(BaseModel):
    """A candidate progression channel."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rank: int
    area: str
    address: int
    size: Annotated[int, Field(ge=1, le=3)]
    encoding: Encoding
    endian: Endian
    trend: Trend
    changes: int
    """Snapshots (over every episode) at which the value changed."""
    episodes_changed: int
    distinct_finals: int
    """Distinct final values over the episodes (policies that play better end higher)."""
    max_value: int
    reference_final: int | None
    """The final value in the reference episode, when one was played."""
    others_final: int
    """The highest (rising) or lowest (falling) final value over the other episodes."""
    separates: bool
    """The reference ends beyond every other episode (a channel good play moves)."""


class DiscoveryReport(BaseModel):
    """A discovery document: where progression lives in this ROM's memory."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["playproof/discovery/v1"] = Field("playproof/discovery/v1", alias="schema")
    platform: str
    rom_sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    areas: tuple[MemoryArea, ...]
    seed: int
    episodes: int
    with_reference: bool
    snapshots: int
    byte_classes: dict[str, int]
    channels: tuple[DiscoveredChannel, ...]


_Series = list[list[int]]  # per episode, one value per snapshot


def _record(
    game: Game, read: MemoryReader, seed: int, episodes: Sequence[Sequence[str]]
) -> tuple[dict[str, tuple[int, list[list[bytes]]]], int]:
    recorded: dict[str, tuple[int, list[list[bytes]]]] = {}
    total = 0
    for inputs in episodes:
        game.reset(seed)
        snapshots = [read()]
        for word in inputs:
            game.step(word)
            snapshots.append(read())
        total += len(snapshots)
        if total > MAX_SNAPSHOTS:
            raise ValueError(f"discovery is limited to {MAX_SNAPSHOTS} memory snapshots")
        for name in snapshots[0]:
            base = snapshots[0][name][0]
            recorded.setdefault(name, (base, []))[1].append([s[name][1] for s in snapshots])
    return recorded, total


def _changed(episodes: list[list[bytes]]) -> list[int]:
    """Offsets of bytes that differ anywhere from the first snapshot (one big-int XOR each)."""
    first = int.from_bytes(episodes[0][0], "little")
    mask = 0
    for snapshots in episodes:
        for snap in snapshots:
            mask |= int.from_bytes(snap, "little") ^ first
    return [i for i in range(len(episodes[0][0])) if mask >> (8 * i) & 0xFF]


def _trend(series: _Series) -> Trend | None:
    rising = all(b >= a for s in series for a, b in pairwise(s))
    falling = all(b <= a for s in series for a, b in pairwise(s))
    moved = any(a != b for s in series for a, b in pairwise(s))
    if not moved:
        return None
    return "rising" if rising else "falling" if falling else None


def _bcd(value: int) -> bool:
    return all((value >> shift) & 0xF <= 9 for shift in range(0, 24, 4))


def _bcd_value(value: int, size: int) -> int:
    total = 0
    for index in reversed(range(size * 2)):
        total = total * 10 + ((value >> (4 * index)) & 0xF)
    return total


def _combine(
    episodes: list[list[bytes]], offset: int, size: int, endian: Endian, encoding: Encoding
) -> _Series | None:
    series: _Series = []
    for snapshots in episodes:
        values: list[int] = []
        for snap in snapshots:
            raw = int.from_bytes(snap[offset : offset + size], endian)
            if encoding == "bcd":
                if not _bcd(raw):
                    return None
                raw = _bcd_value(raw, size)
            values.append(raw)
        series.append(values)
    return series


def _single(episodes: list[list[bytes]], offset: int) -> _Series:
    return [[snap[offset] for snap in snapshots] for snapshots in episodes]


def _candidates(
    episodes: list[list[bytes]], changed: list[int]
) -> Iterator[tuple[int, int, Endian, Encoding, _Series, Trend]]:
    """Every (offset, size, endian, encoding) whose value only rises or only falls."""
    changed_set = set(changed)
    trends = {offset: _trend(_single(episodes, offset)) for offset in changed}
    for offset in changed:
        series = _single(episodes, offset)
        trend = trends[offset]
        if trend is not None:
            values = {v for s in series for v in s}
            bcd = all(_bcd(v) for v in values) and max(values) >= 0x10
            yield offset, 1, "little", "bcd" if bcd else "binary", series, trend
        for size in (2, 3):
            window = range(offset, offset + size)
            # Only windows of changing bytes, one of which already only rises or falls.
            if not all(i in changed_set for i in window):
                break
            if not any(trends[i] is not None for i in window):
                continue
            for endian in ("little", "big"):
                for encoding in ("binary", "bcd"):
                    combined = _combine(episodes, offset, size, endian, encoding)
                    if combined is None:
                        continue
                    combined_trend = _trend(combined)
                    if combined_trend is not None:
                        yield offset, size, endian, encoding, combined, combined_trend


def _classify(episodes: list[list[bytes]], changed: list[int], total_bytes: int) -> dict[str, int]:
    classes = {
        "constant": total_bytes - len(changed),
        "rising": 0,
        "falling": 0,
        "toggling": 0,
        "noisy": 0,
    }
    for offset in changed:
        series = _single(episodes, offset)
        trend = _trend(series)
        if trend is not None:
            classes[trend] += 1
        elif len({v for s in series for v in s}) <= 2:
            classes["toggling"] += 1
        else:
            classes["noisy"] += 1
    return classes


def discover(
    game: Game,
    read: MemoryReader,
    *,
    platform: str,
    rom_sha256: str,
    episodes: Sequence[Sequence[str]],
    reference: Sequence[str] | None = None,
    seed: int = 0,
) -> DiscoveryReport:
    """Play ``episodes`` (and the ``reference``, if any) from ``seed``; rank memory channels.

    With a reference, channels on which it ends beyond every other episode
    rank first: progression is what good play moves and trivial play does not.
    """
    played = [*episodes, *([reference] if reference is not None else [])]
    recorded, total = _record(game, read, seed, played)
    areas: list[MemoryArea] = []
    classes = {"constant": 0, "rising": 0, "falling": 0, "toggling": 0, "noisy": 0}
    found: list[tuple[tuple[int, ...], dict[str, object]]] = []
    for name in sorted(recorded):
        base, area_episodes = recorded[name]
        size = len(area_episodes[0][0])
        areas.append(MemoryArea(name=name, base=base, size=size))
        changed = _changed(area_episodes)
        for key, value in _classify(area_episodes, changed, size).items():
            classes[key] += value
        stack = _stack_offsets(area_episodes, changed, CODE_ADDRESSES.get(platform, ()))
        found.extend(_channels(name, base, area_episodes, changed, reference is not None, stack))
    found.sort(key=lambda item: item[0])
    channels = tuple(
        DiscoveredChannel.model_validate({**fields, "rank": rank})
        for rank, (_, fields) in enumerate(found[:MAX_CHANNELS], start=1)
    )
    return DiscoveryReport(
        platform=platform,
        rom_sha256=rom_sha256,
        areas=tuple(areas),
        seed=seed,
        episodes=len(played),
        with_reference=reference is not None,
        snapshots=total,
        byte_classes=classes,
        channels=channels,
    )


def _stack_offsets(
    episodes: list[list[bytes]], changed: list[int], code: tuple[range, ...]
) -> set[int]:
    """Offsets of changing bytes near the top of the area that hold halves of return addresses.

    A byte counts when a little-endian 16-bit word it belongs to moves, and every
    value the word moves to is a code address of the platform (``code``).
    """
    if not code:
        return set()
    size = len(episodes[0][0])
    stack: set[int] = set()
    for offset in changed:
        if offset < size - STACK_WINDOW:
            continue
        for low in (offset - 1, offset):
            if low < 0 or low + 1 >= size:
                continue
            moved = {
                int.from_bytes(snap[low : low + 2], "little")
                for snapshots in episodes
                for snap in snapshots
                if snap[low : low + 2] != snapshots[0][low : low + 2]
            }
            if moved and all(any(value in area for area in code) for value in moved):
                stack.add(offset)
                break
    return stack


def _channels(
    name: str,
    base: int,
    episodes: list[list[bytes]],
    changed: list[int],
    has_reference: bool,
    stack: set[int],
) -> list[tuple[tuple[int, ...], dict[str, object]]]:
    picked: dict[int, tuple[int, Endian, Encoding, _Series, Trend]] = {}
    covered: set[int] = set()
    # Widest first so a 2-byte score claims its bytes before its high byte is listed alone.
    options = sorted(_candidates(episodes, changed), key=lambda c: (-c[1], c[0], c[2], c[3]))
    for offset, size, endian, encoding, series, trend in options:
        span = set(range(offset, offset + size))
        if span & covered:
            continue
        if size > 1 and not _needs_width(series, episodes, offset, size, endian):
            continue
        covered |= span
        picked[offset] = (size, endian, encoding, series, trend)
    result: list[tuple[tuple[int, ...], dict[str, object]]] = []
    for offset, (size, endian, encoding, series, trend) in picked.items():
        changes = sum(1 for s in series for a, b in pairwise(s) if a != b)
        steps = max(1, sum(len(s) - 1 for s in series))
        finals = len({s[-1] for s in series})
        top = max(values) if (values := [s[-1] for s in series]) else 0
        ref_final = series[-1][-1] if has_reference else None
        others = [s[-1] for s in (series[:-1] if has_reference else series)] or [0]
        if trend == "rising":
            others_final = max(others)
            separates = ref_final is not None and ref_final > others_final
        else:
            others_final = min(others)
            separates = ref_final is not None and ref_final < others_final
        flag = top <= 1 and trend == "rising"
        rungs = len(set(series[-1])) if has_reference else len({v for x in series for v in x})
        busy = changes * BUSY_DIVISOR > steps
        fields: dict[str, object] = {
            "area": name,
            "address": base + offset,
            "size": size,
            "encoding": encoding,
            "endian": endian,
            "trend": trend,
            "changes": changes,
            "episodes_changed": sum(1 for s in series if s[0] != s[-1]),
            "distinct_finals": finals,
            "max_value": max(v for s in series for v in s),
            "reference_final": ref_final,
            "others_final": others_final,
            "separates": separates,
        }
        # Flags (0 -> 1) and falling channels are rarely what a score ladder wants; a
        # return address on the stack never is.
        on_stack = any(i in stack for i in range(offset, offset + size))
        rank_key = (
            int(on_stack),
            int(flag) * 2 + (0 if trend == "rising" else 1),
            -int(separates),
            int(busy),
            -rungs,
            changes * 1000 // steps,
            base + offset,
        )
        result.append((rank_key, fields))
    return result


def _needs_width(
    series: _Series, episodes: list[list[bytes]], offset: int, size: int, endian: Endian
) -> bool:
    """A multi-byte channel is real only when its low byte wraps and higher bytes carry."""
    low = offset if endian == "little" else offset + size - 1
    high_bytes = [i for i in range(offset, offset + size) if i != low]
    high_moves = any(
        snapshots[0][i] != snap[i]
        for snapshots in episodes
        for snap in snapshots
        for i in high_bytes
    )
    low_series = [[snap[low] for snap in snapshots] for snapshots in episodes]
    if not high_moves or _trend(low_series) is not None or not series:
        return False
    order = list(range(offset, offset + size))
    if endian == "big":
        order.reverse()  # least significant first
    # Carry: a more significant byte changes only when the byte below it changes too.
    for lower, upper in pairwise(order):
        for snapshots in episodes:
            for before, after in pairwise(snapshots):
                if before[upper] != after[upper] and before[lower] == after[lower]:
                    return False
    return True
