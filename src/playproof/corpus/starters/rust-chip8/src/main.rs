//! Starter CHIP-8 candidate: speaks the corpus protocol (PROTOCOL.md) on stdin/stdout.
//!
//! It loads programs, takes pokes and key events and answers every request the
//! grader sends, but `Machine::run_frame` executes nothing yet, so the screen
//! stays dark and every case fails. Write the interpreter there.
//!
//! The build is checked: no `unsafe`, no build script, no procedural macro, no
//! crate outside the task's vendored set, and the binary may not start processes.

use std::io::{self, BufRead, Read, Write};

const MEMORY: usize = 4096;
const PROGRAM_START: usize = 0x200;
const WIDTH: usize = 64;
const HEIGHT: usize = 32;
const MAX_LINE: usize = 256;

struct Machine {
    memory: Vec<u8>,
    display: Vec<u8>,
    keys: [bool; 16],
    v: [u8; 16],
    i: u16,
    pc: u16,
    delay: u8,
    sound: u8,
}

impl Machine {
    fn new(program: &[u8]) -> Machine {
        let mut memory = vec![0u8; MEMORY];
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
        }
    }

    /// One 1/60 s frame: up to `ipf` instructions, then the timers tick.
    fn run_frame(&mut self, _ipf: u32) {
        // TODO: fetch, decode and execute up to `_ipf` instructions here.
        self.delay = self.delay.saturating_sub(1);
        self.sound = self.sound.saturating_sub(1);
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
            ["HELLO", ..] => Ok(b"OK playproof-corpus/1 rust-starter\n".to_vec()),
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
                    machine.run_frame(ipf);
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
