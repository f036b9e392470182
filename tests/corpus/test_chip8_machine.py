"""The CHIP-8 interpreter's instructions, one by one: COSMAC VIP quirks, flags, timers, drawing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from playproof.corpus.chip8.machine import (
    DISPLAY_WIDTH,
    FONT_ADDRESS,
    PROGRAM_START,
    STACK_DEPTH,
    Chip8,
    Chip8Fault,
)

byte = st.integers(min_value=0, max_value=255)


def machine(*words: int) -> Chip8:
    """A machine whose program is these 16-bit instructions."""
    return Chip8(b"".join(w.to_bytes(2, "big") for w in words))


def run(chip: Chip8, steps: int) -> None:
    for _ in range(steps):
        chip.step()


def lit(chip: Chip8) -> set[tuple[int, int]]:
    return {(i % DISPLAY_WIDTH, i // DISPLAY_WIDTH) for i, p in enumerate(chip.display) if p}


# -- shifts use VY (8xy6 / 8xyE) -------------------------------------------------------------


@given(vx=byte, vy=byte)
def test_8xy6_shifts_vy_right_into_vx_and_keeps_the_bit_shifted_out(vx: int, vy: int) -> None:
    chip = machine(0x6000 | vx, 0x6100 | vy, 0x8016)
    run(chip, 3)
    assert chip.v[0] == vy >> 1
    assert chip.v[1] == vy
    assert chip.v[0xF] == vy & 1


@given(vx=byte, vy=byte)
def test_8xye_shifts_vy_left_into_vx_and_keeps_the_bit_shifted_out(vx: int, vy: int) -> None:
    chip = machine(0x6000 | vx, 0x6100 | vy, 0x801E)
    run(chip, 3)
    assert chip.v[0] == (vy << 1) & 0xFF
    assert chip.v[0xF] == vy >> 7


def test_a_shift_into_vf_leaves_the_flag_not_the_result() -> None:
    chip = machine(0x6103, 0x8F16)  # VF = V1 >> 1, then VF = the bit shifted out
    run(chip, 2)
    assert chip.v[0xF] == 1


# -- arithmetic flags --------------------------------------------------------------------------


@given(a=byte, b=byte)
def test_add_and_subtract_set_carry_and_no_borrow(a: int, b: int) -> None:
    for op, value, flag in (
        (0x8014, (a + b) & 0xFF, int(a + b > 0xFF)),
        (0x8015, (a - b) & 0xFF, int(a >= b)),
        (0x8017, (b - a) & 0xFF, int(b >= a)),
    ):
        chip = machine(0x6000 | a, 0x6100 | b, op)
        run(chip, 3)
        assert (chip.v[0], chip.v[0xF]) == (value, flag)


@pytest.mark.parametrize("op", [0x8011, 0x8012, 0x8013])
def test_logic_instructions_reset_vf(op: int) -> None:
    chip = machine(0x6F05, 0x600C, 0x610A, op)
    run(chip, 4)
    assert chip.v[0xF] == 0
    assert chip.v[0] == {0x1: 0xC | 0xA, 0x2: 0xC & 0xA, 0x3: 0xC ^ 0xA}[op & 0xF]


# -- Fx33, Fx55, Fx65, Fx1E, Fx29 --------------------------------------------------------------


@given(value=byte)
def test_fx33_stores_the_three_decimal_digits(value: int) -> None:
    chip = machine(0x6000 | value, 0xA300, 0xF033)
    run(chip, 3)
    assert list(chip.memory[0x300:0x303]) == [value // 100, value // 10 % 10, value % 10]
    assert chip.i == 0x300


def test_save_and_load_move_i_past_the_last_register() -> None:
    chip = machine(0x6011, 0x6122, 0x6233, 0xA300, 0xF255, 0xA300, 0xF165)
    run(chip, 5)
    assert list(chip.memory[0x300:0x303]) == [0x11, 0x22, 0x33]
    assert chip.i == 0x303
    run(chip, 2)
    assert chip.i == 0x302


def test_fx29_points_at_the_digit_sprite() -> None:
    chip = machine(0x600B, 0xF029)
    run(chip, 2)
    assert chip.i == FONT_ADDRESS + 5 * 0xB


# -- jumps, calls, skips ----------------------------------------------------------------------


def test_bnnn_jumps_to_nnn_plus_v0() -> None:
    chip = machine(0x6004, 0x6120, 0xB300)
    run(chip, 3)
    assert chip.pc == 0x304


def test_calls_return_and_overflow() -> None:
    chip = machine(0x2206, 0x0000, 0x0000, 0x00EE)
    run(chip, 2)
    assert (chip.pc, chip.stack) == (PROGRAM_START + 2, [])
    looping = machine(0x2200)
    run(looping, STACK_DEPTH)
    with pytest.raises(Chip8Fault, match="stack overflow"):
        looping.step()


def test_unknown_and_machine_code_instructions_are_faults() -> None:
    with pytest.raises(Chip8Fault, match="machine-code"):
        machine(0x0123).step()
    with pytest.raises(Chip8Fault, match="unknown opcode 5121"):
        machine(0x5121).step()


# -- drawing: XOR, collision, wrapping the start, clipping the rest -----------------------------


def test_drawing_twice_erases_and_reports_the_collision() -> None:
    chip = machine(0xA000 | FONT_ADDRESS, 0xD015, 0xD015)
    run(chip, 2)
    assert chip.v[0xF] == 0
    assert lit(chip)
    chip.step()
    assert chip.v[0xF] == 1
    assert not lit(chip)


def test_sprites_are_clipped_at_the_right_and_bottom_edges() -> None:
    # The "0" glyph (4 wide, 5 high) at (62, 30): only columns 62-63 and rows 30-31 show.
    chip = machine(0xA000 | FONT_ADDRESS, 0x603E, 0x611E, 0xD015)
    run(chip, 4)
    assert lit(chip) == {(62, 30), (63, 30), (62, 31)}


def test_the_start_position_wraps() -> None:
    chip = machine(0xA000 | FONT_ADDRESS, 0x6042, 0x6121, 0xD011)  # (66, 33) is (2, 1)
    run(chip, 4)
    assert lit(chip) == {(2, 1), (3, 1), (4, 1), (5, 1)}


def test_a_draw_ends_the_frame() -> None:
    chip = machine(0xA000 | FONT_ADDRESS, 0xD011, 0x6001, 0x6102, 0x1208)
    chip.run_frame(10)
    assert chip.instructions == 2
    assert chip.v[0] == 0
    chip.run_frame(10)
    assert chip.v[:2] == [1, 2]


# -- timers and keys ---------------------------------------------------------------------------


def test_timers_count_down_once_per_frame_and_stop_at_zero() -> None:
    chip = machine(0x6003, 0xF015, 0xF018, 0x1206)
    chip.run_frames(2, 5)
    assert (chip.delay, chip.sound) == (1, 1)
    chip.run_frames(5, 5)
    assert (chip.delay, chip.sound) == (0, 0)
    chip2 = machine(0x6009, 0xF015, 0xF107)
    run(chip2, 3)
    assert chip2.v[1] == 9


def test_fx0a_waits_for_a_press_and_its_release_while_timers_run() -> None:
    chip = machine(0x6005, 0xF015, 0xF20A, 0x1206)
    chip.press(7)  # held before the wait: does not count
    chip.run_frames(3, 4)
    assert chip.pc == PROGRAM_START + 4
    assert chip.delay == 2
    chip.release(7)
    chip.press(0xA)
    chip.run_frames(2, 4)
    assert chip.pc == PROGRAM_START + 4  # pressed, not yet released
    chip.release(0xA)
    chip.run_frame(4)
    assert chip.v[2] == 0xA
    assert chip.pc == PROGRAM_START + 6


def test_key_skips_read_the_key_named_by_vx() -> None:
    chip = machine(0x6003, 0xE09E, 0x6101, 0xE0A1, 0x6201)
    chip.press(3)
    run(chip, 4)
    assert chip.v[1] == 0  # skipped: key 3 is down
    assert chip.v[2] == 1  # not skipped: key 3 is not up


@given(seed_steps=st.integers(min_value=1, max_value=50))
def test_random_numbers_are_the_same_on_every_run(seed_steps: int) -> None:
    program = [0xC0FF] * seed_steps
    first, second = machine(*program), machine(*program)
    run(first, seed_steps)
    run(second, seed_steps)
    assert first.v == second.v


def test_programs_of_a_wrong_size_are_refused() -> None:
    with pytest.raises(Chip8Fault):
        Chip8(b"")
    with pytest.raises(Chip8Fault):
        Chip8(bytes(4096 - PROGRAM_START + 1))
