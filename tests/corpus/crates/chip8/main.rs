//! A small, honest CHIP-8 interpreter (COSMAC VIP behaviour) for the Rust task test:
//! the starter's protocol loop with `Machine::run_frame` written.

use std::io::{self, BufRead, Read, Write};

const MEMORY: usize = 4096;
const PROGRAM_START: usize = 0x200;
const WIDTH: usize = 64;
const HEIGHT: usize = 32;
const MAX_LINE: usize = 256;

const FONT: [u8; 80] = [
    0xF0, 0x90, 0x90, 0x90, 0xF0, 0x20, 0x60, 0x20, 0x20, 0x70, 0xF0, 0x10, 0xF0, 0x80, 0xF0,
    0xF0, 0x10, 0xF0, 0x10, 0xF0, 0x90, 0x90, 0xF0, 0x10, 0x10, 0xF0, 0x80, 0xF0, 0x10, 0xF0,
    0xF0, 0x80, 0xF0, 0x90, 0xF0, 0xF0, 0x10, 0x20, 0x40, 0x40, 0xF0, 0x90, 0xF0, 0x90, 0xF0,
    0xF0, 0x90, 0xF0, 0x10, 0xF0, 0xF0, 0x90, 0xF0, 0x90, 0x90, 0xE0, 0x90, 0xE0, 0x90, 0xE0,
    0xF0, 0x80, 0x80, 0x80, 0xF0, 0xE0, 0x90, 0x90, 0x90, 0xE0, 0xF0, 0x80, 0xF0, 0x80, 0xF0,
    0xF0, 0x80, 0xF0, 0x80, 0x80,
];
const FONT_ADDRESS: usize = 0x50;

struct Machine {
    memory: Vec<u8>,
    display: Vec<u8>,
    keys: [bool; 16],
    v: [u8; 16],
    i: u16,
    pc: u16,
    delay: u8,
    sound: u8,
    stack: Vec<u16>,
    seed: u16,
    waiting: bool,
    held: [bool; 16],
    pressed: Option<usize>,
}

impl Machine {
    fn new(program: &[u8]) -> Machine {
        let mut memory = vec![0u8; MEMORY];
        memory[FONT_ADDRESS..FONT_ADDRESS + FONT.len()].copy_from_slice(&FONT);
        memory[PROGRAM_START..PROGRAM_START + program.len()].copy_from_slice(program);
        Machine {
            memory,
            display: vec![0u8; WIDTH * HEIGHT],
            keys: [false; 16],
            v: [0; 16],
            i: 0,
            pc: PROGRAM_START as u16,
            delay: 0,
            sound: 0,
            stack: Vec::new(),
            seed: 0x2A,
            waiting: false,
            held: [false; 16],
            pressed: None,
        }
    }

    fn run_frame(&mut self, ipf: u32) -> Result<(), String> {
        for _ in 0..ipf {
            if self.step()? {
                break;
            }
        }
        self.delay = self.delay.saturating_sub(1);
        self.sound = self.sound.saturating_sub(1);
        Ok(())
    }

    fn random(&mut self) -> u8 {
        let mut x = self.seed;
        x ^= x << 7;
        x ^= x >> 9;
        x ^= x << 8;
        self.seed = x;
        (x & 0xFF) as u8
    }

    fn get_key(&mut self, x: usize) -> bool {
        if !self.waiting {
            self.waiting = true;
            self.held = self.keys;
            self.pressed = None;
        }
        match self.pressed {
            None => {
                for k in 0..16 {
                    self.held[k] = self.held[k] && self.keys[k];
                }
                for k in 0..16 {
                    if self.keys[k] && !self.held[k] {
                        self.pressed = Some(k);
                        break;
                    }
                }
                false
            }
            Some(k) => {
                if self.keys[k] {
                    return false;
                }
                self.v[x] = k as u8;
                self.waiting = false;
                self.pressed = None;
                true
            }
        }
    }

    fn at(&self, offset: u16) -> usize {
        (self.i.wrapping_add(offset) & 0xFFF) as usize
    }

    /// One instruction; true when it drew (the frame ends there).
    fn step(&mut self) -> Result<bool, String> {
        let pc = self.pc as usize;
        let op = ((self.memory[pc & 0xFFF] as u16) << 8) | self.memory[(pc + 1) & 0xFFF] as u16;
        self.pc = (self.pc + 2) & 0xFFF;
        let x = ((op >> 8) & 0xF) as usize;
        let y = ((op >> 4) & 0xF) as usize;
        let nn = (op & 0xFF) as u8;
        let nnn = op & 0xFFF;
        let bad = || format!("unknown opcode {:04X}", op);
        match op >> 12 {
            0x0 => match op {
                0x00E0 => self.display.iter_mut().for_each(|p| *p = 0),
                0x00EE => self.pc = self.stack.pop().ok_or_else(|| "empty stack".to_string())?,
                _ => return Err(bad()),
            },
            0x1 => self.pc = nnn,
            0x2 => {
                if self.stack.len() >= 16 {
                    return Err("stack overflow".to_string());
                }
                self.stack.push(self.pc);
                self.pc = nnn;
            }
            0x3 => {
                if self.v[x] == nn {
                    self.pc = (self.pc + 2) & 0xFFF;
                }
            }
            0x4 => {
                if self.v[x] != nn {
                    self.pc = (self.pc + 2) & 0xFFF;
                }
            }
            0x5 => {
                if self.v[x] == self.v[y] {
                    self.pc = (self.pc + 2) & 0xFFF;
                }
            }
            0x6 => self.v[x] = nn,
            0x7 => self.v[x] = self.v[x].wrapping_add(nn),
            0x8 => {
                let (vx, vy) = (self.v[x], self.v[y]);
                let (value, flag) = match op & 0xF {
                    0x0 => (vy, None),
                    0x1 => (vx | vy, Some(0)),
                    0x2 => (vx & vy, Some(0)),
                    0x3 => (vx ^ vy, Some(0)),
                    0x4 => (vx.wrapping_add(vy), Some((vx as u16 + vy as u16 > 0xFF) as u8)),
                    0x5 => (vx.wrapping_sub(vy), Some((vx >= vy) as u8)),
                    0x6 => (vy >> 1, Some(vy & 1)),
                    0x7 => (vy.wrapping_sub(vx), Some((vy >= vx) as u8)),
                    0xE => (vy << 1, Some(vy >> 7)),
                    _ => return Err(bad()),
                };
                self.v[x] = value;
                if let Some(flag) = flag {
                    self.v[0xF] = flag;
                }
            }
            0x9 => {
                if self.v[x] != self.v[y] {
                    self.pc = (self.pc + 2) & 0xFFF;
                }
            }
            0xA => self.i = nnn,
            0xB => self.pc = (nnn + self.v[0] as u16) & 0xFFF,
            0xC => self.v[x] = self.random() & nn,
            0xD => {
                self.draw(self.v[x] as usize, self.v[y] as usize, (op & 0xF) as u16);
                return Ok(true);
            }
            0xE => {
                let down = self.keys[(self.v[x] & 0xF) as usize];
                match nn {
                    0x9E if down => self.pc = (self.pc + 2) & 0xFFF,
                    0xA1 if !down => self.pc = (self.pc + 2) & 0xFFF,
                    0x9E | 0xA1 => {}
                    _ => return Err(bad()),
                }
            }
            _ => match nn {
                0x07 => self.v[x] = self.delay,
                0x0A => {
                    if !self.get_key(x) {
                        self.pc = pc as u16;
                    }
                }
                0x15 => self.delay = self.v[x],
                0x18 => self.sound = self.v[x],
                0x1E => self.i = self.i.wrapping_add(self.v[x] as u16),
                0x29 => self.i = (FONT_ADDRESS as u16) + 5 * (self.v[x] & 0xF) as u16,
                0x33 => {
                    let value = self.v[x];
                    let (a, b, c) = (self.at(0), self.at(1), self.at(2));
                    self.memory[a] = value / 100;
                    self.memory[b] = value / 10 % 10;
                    self.memory[c] = value % 10;
                }
                0x55 => {
                    for r in 0..=x {
                        let a = self.at(r as u16);
                        self.memory[a] = self.v[r];
                    }
                    self.i = self.i.wrapping_add(x as u16 + 1);
                }
                0x65 => {
                    for r in 0..=x {
                        self.v[r] = self.memory[self.at(r as u16)];
                    }
                    self.i = self.i.wrapping_add(x as u16 + 1);
                }
                _ => return Err(bad()),
            },
        }
        Ok(false)
    }

    fn draw(&mut self, x: usize, y: usize, rows: u16) {
        let (x, y) = (x % WIDTH, y % HEIGHT);
        let mut collided = 0;
        for row in 0..rows {
            let line = y + row as usize;
            if line >= HEIGHT {
                break;
            }
            let bits = self.memory[self.at(row)];
            for column in 0..8 {
                if bits & (0x80 >> column) == 0 {
                    continue;
                }
                let at = x + column;
                if at >= WIDTH {
                    break;
                }
                let pixel = &mut self.display[line * WIDTH + at];
                if *pixel == 1 {
                    collided = 1;
                }
                *pixel ^= 1;
            }
        }
        self.v[0xF] = collided;
    }
}

fn parse(text: &str, max: u64) -> Result<u64, String> {
    let value = if let Some(hex) = text.strip_prefix("0x") {
        u64::from_str_radix(hex, 16)
    } else {
        text.parse::<u64>()
    };
    match value {
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!("bad number {}", text)),
    }
}

fn key(text: &str) -> Result<usize, String> {
    match u8::from_str_radix(text, 16) {
        Ok(k) if text.len() == 1 => Ok(k as usize),
        _ => Err(format!("bad key {}", text)),
    }
}

struct Session {
    machine: Option<Machine>,
    ipf: u32,
}

impl Session {
    fn need(&mut self) -> Result<&mut Machine, String> {
        self.machine.as_mut().ok_or_else(|| "no program loaded".to_string())
    }

    /// The reply to one request (`OK ...\n`, or `DATA n\n` and the bytes).
    fn handle(&mut self, words: &[&str], input: &mut impl Read) -> Result<Vec<u8>, String> {
        match words {
            ["HELLO", ..] => Ok(b"OK playproof-corpus/1 rust-test-interpreter\n".to_vec()),
            ["PLATFORM", "chip8", ipf] => {
                self.ipf = parse(ipf, 1000)? as u32;
                Ok(b"OK\n".to_vec())
            }
            ["LOAD", size] => {
                let size = parse(size, (MEMORY - PROGRAM_START) as u64)? as usize;
                let mut program = vec![0u8; size];
                input.read_exact(&mut program).map_err(|e| e.to_string())?;
                self.machine = Some(Machine::new(&program));
                Ok(b"OK\n".to_vec())
            }
            ["POKE", address, value] => {
                let address = parse(address, (MEMORY - 1) as u64)? as usize;
                let value = parse(value, 255)? as u8;
                self.need()?.memory[address] = value;
                Ok(b"OK\n".to_vec())
            }
            ["FRAMES", count] => {
                let count = parse(count, 1_000_000)?;
                let ipf = self.ipf;
                let machine = self.need()?;
                for _ in 0..count {
                    machine.run_frame(ipf)?;
                }
                Ok(b"OK\n".to_vec())
            }
            ["SCREEN"] => {
                let mut reply = format!("DATA {}\n", WIDTH * HEIGHT).into_bytes();
                reply.extend_from_slice(&self.need()?.display);
                Ok(reply)
            }
            ["REGS"] => {
                let m = self.need()?;
                let mut text = String::from("OK");
                for (n, value) in m.v.iter().enumerate() {
                    text.push_str(&format!(" V{:X}={:02x}", n, value));
                }
                text.push_str(&format!(
                    " I={:04x} PC={:04x} DT={:02x} ST={:02x}\n",
                    m.i, m.pc, m.delay, m.sound
                ));
                Ok(text.into_bytes())
            }
            ["PRESS", k] => {
                let k = key(k)?;
                self.need()?.keys[k] = true;
                Ok(b"OK\n".to_vec())
            }
            ["RELEASE", k] => {
                let k = key(k)?;
                self.need()?.keys[k] = false;
                Ok(b"OK\n".to_vec())
            }
            _ => Err("not implemented".to_string()),
        }
    }
}

fn main() {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut output = stdout.lock();
    let mut session = Session { machine: None, ipf: 15 };
    let mut line = String::new();
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.len() > MAX_LINE {
            break;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"QUIT") {
            let _ = output.write_all(b"OK\n");
            let _ = output.flush();
            break;
        }
        let reply = match session.handle(&words, &mut input) {
            Ok(reply) => reply,
            Err(message) => format!("ERR {}\n", message).into_bytes(),
        };
        if output.write_all(&reply).and_then(|_| output.flush()).is_err() {
            break;
        }
    }
}
