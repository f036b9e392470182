"""Blind discovery of progression channels: a synthetic RAM and the pp-collect Game Boy game."""

import importlib.util

import pytest

from playproof.core.evidence import Evidence
from playproof.core.game import BuildIdentity, GameDescriptor, Platform, VerificationMode
from playproof.core.observation import Observation
from playproof.verify import DiscoveryReport, baseline_suite, discover

ROM = "ab" * 32


class RamGame:
    """A toy console: ``hit`` right after ``wait`` adds 7 to a 2-byte big-endian BCD score at
    0x14-0x15 (mashing ``hit`` scores once); every input
    ticks a 2-byte little-endian frame counter at 0x10; ``die`` loses one of 3 lives at 0x18;
    byte 0x1A holds noise."""

    def __init__(self) -> None:
        self._descriptor = GameDescriptor(
            id="ram",
            vocabulary=("hit", "wait", "die"),
            build=BuildIdentity(id="ram/v1", digest="cd" * 32),
            platform=Platform(family="test", modes=(VerificationMode.REPLAY,)),
        )
        self.ram = bytearray(32)

    @property
    def descriptor(self) -> GameDescriptor:
        return self._descriptor

    def reset(self, seed: int) -> None:
        self.ram = bytearray(32)
        self.ram[0x18] = 3
        self.score = self.frames = 0
        self.previous = "wait"

    def step(self, word: str) -> None:
        self.frames += 1
        self.ram[0x10:0x12] = (self.frames & 0xFFFF).to_bytes(2, "little")
        scores = word == "hit" and self.previous == "wait"
        self.previous = word
        if scores:
            self.score += 7
            digits = f"{self.score % 10000:04d}"
            self.ram[0x14] = int(digits[:2], 16)
            self.ram[0x15] = int(digits[2:], 16)
        if word == "die" and self.ram[0x18]:
            self.ram[0x18] -= 1
        self.ram[0x1A] = (self.frames * 37) & 0xFF

    def read(self) -> dict[str, tuple[int, bytes]]:
        return {"ram": (0x00, bytes(self.ram))}

    def evidence(self) -> Evidence:
        return Evidence()

    def observe(self) -> Observation:
        return Observation(text="")

    def over(self) -> bool | None:
        return None

    def close(self) -> None:
        pass


def _discover_ram() -> DiscoveryReport:
    game = RamGame()
    episodes = [inputs for _, inputs in baseline_suite(game.descriptor.vocabulary, 400, walks=3)]
    reference = ("hit", "wait") * 200
    return discover(
        game, game.read, platform="test", rom_sha256=ROM, episodes=episodes, reference=reference
    )


def test_a_bcd_score_is_grouped_and_ranked_first() -> None:
    report = _discover_ram()
    best = report.channels[0]
    assert (best.address, best.size, best.encoding, best.endian) == (0x14, 2, "bcd", "big")
    assert best.trend == "rising"
    assert best.separates
    assert best.reference_final == 1400
    assert best.others_final < 1400
    by_address = {(c.address, c.size): c for c in report.channels}
    frames = by_address[(0x10, 2)]
    assert frames.encoding == "binary"
    assert frames.endian == "little"
    assert not frames.separates
    lives = by_address[(0x18, 1)]
    assert lives.trend == "falling"
    assert not any(c.address == 0x1A for c in report.channels)
    assert report.rom_sha256 == ROM
    assert report.byte_classes["noisy"] >= 1


def test_discovery_is_deterministic() -> None:
    assert _discover_ram() == _discover_ram()


@pytest.mark.skipif(importlib.util.find_spec("pyboy") is None, reason="needs playproof[pyboy]")
def test_discovery_finds_the_score_channel_of_pp_collect() -> None:
    from playproof.exec import resolve_target
    from playproof.exec._ram import memory_access

    target = resolve_target("pyboy/pp-collect")
    game = target.open(worker=False)
    try:
        read, rom_sha256, family = memory_access(game)
        episodes = [
            inputs
            for _, inputs in baseline_suite(
                game.descriptor.vocabulary, len(target.reference), walks=2
            )
        ]
        report = discover(
            game,
            read,
            platform=family,
            rom_sha256=rom_sha256,
            episodes=episodes,
            reference=target.reference,
        )
    finally:
        game.close()
    score = target.spec.options["channels"]["score"]["address"]
    assert report.channels[0].address == score
    assert report.channels[0].reference_final == 20
    assert report.rom_sha256 == rom_sha256
    assert family == "pyboy"
    assert {area.name for area in report.areas} == {"wram", "hram"}


STACK_BYTES = range(0xDFFA, 0xE000)
"""pp-collect sets SP to 0xE000: the top bytes of work RAM hold its return addresses."""


@pytest.mark.skipif(importlib.util.find_spec("pyboy") is None, reason="needs playproof[pyboy]")
def test_without_a_reference_stack_bytes_rank_after_the_score_of_pp_collect() -> None:
    from playproof.exec import resolve_target
    from playproof.exec._ram import memory_access

    target = resolve_target("pyboy/pp-collect")
    game = target.open(worker=False)
    try:
        read, rom_sha256, family = memory_access(game)
        # Good play is one exploration episode among the baselines, not a declared reference.
        episodes = [
            inputs
            for _, inputs in baseline_suite(
                game.descriptor.vocabulary, len(target.reference), walks=2
            )
        ]
        report = discover(
            game,
            read,
            platform=family,
            rom_sha256=rom_sha256,
            episodes=[*episodes, target.reference],
        )
    finally:
        game.close()
    assert not report.with_reference
    ranks = {c.address: c.rank for c in report.channels}
    score = target.spec.options["channels"]["score"]["address"]
    stack = [rank for address, rank in ranks.items() if address in STACK_BYTES]
    assert stack, "the exploration moves the stack bytes"
    assert ranks[score] < min(stack)
    others = [rank for address, rank in ranks.items() if address not in STACK_BYTES]
    assert max(others) < min(stack)
