//! Byte mutations: flips, deletions, duplications, splices, and tokens that reach past a
//! parser's first checks (repeated to make deep nesting and long chains).

/// A small, seeded random source (xorshift64*): runs repeat from their seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// In `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// The largest input made: far above what any seed holds, below what makes one run slow.
pub const MAX_INPUT: usize = 256 * 1024;

/// Tokens of the files' languages and values that broke flymc before.
const TOKENS: &[&str] = &[
    "(",
    ")",
    "!",
    "-",
    " || ",
    " && ",
    " + ",
    " == ",
    "n0.x",
    "n.x",
    "m.x",
    "any(",
    "all(",
    "count(",
    "unique(n.x per n.y)",
    "take(n.x, 1)",
    "len(",
    "kept(n.x at n.y in n.z)",
    "ever_agree(n.x)",
    "ever_unique(n.x per n.y)",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "n18446744073709551615",
    "n3000000",
    "@n2000000",
    " n0->n4294967296",
    "crash n99999999",
    "\\u001b]0;x\\u0007",
    "\\u009b",
    "\u{1b}[2J",
    "\u{9b}",
    "\u{0}",
    "\n::error::x\n",
    "\"",
    "'",
    "[",
    "]",
    "{",
    "}",
    "[[property]]\nname = \"p\"\nalways = '",
    "[[check]]\n",
    "=",
    ",",
    "\n",
    "1e999",
    "-0",
    "\"\"",
    "null",
    "true",
];

/// `input` changed one to four times; splices draw from `corpus`.
pub fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..=rng.below(4) {
        once(rng, &mut out, corpus);
        out.truncate(MAX_INPUT);
    }
    out
}

fn once(rng: &mut Rng, out: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    let len = out.len();
    let at = rng.below(len + 1);
    match rng.below(8) {
        0 if len > 0 => {
            let i = rng.below(len);
            out[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            out[i] = [0, 0x1b, 0x7f, 0xff, b'"', b'(', b')', b'\n', b'9', b'!'][rng.below(10)];
        }
        2 if at < len => {
            let end = (at + 1 + rng.below(16)).min(len);
            out.drain(at..end);
        }
        3 if at < len => {
            let end = (at + 1 + rng.below(64)).min(len);
            let piece = out[at..end].to_vec();
            let to = rng.below(len + 1);
            out.splice(to..to, piece);
        }
        4 | 5 => {
            let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
            // Mostly once; sometimes thousands of times (nesting, chains, runs).
            let times = match rng.below(8) {
                0 => 1 + rng.below(5000),
                1 => 1 + rng.below(100),
                _ => 1,
            };
            let piece = t.repeat(times);
            out.splice(at..at, piece);
        }
        6 if !corpus.is_empty() => {
            let other = &corpus[rng.below(corpus.len())];
            let from = rng.below(other.len() + 1);
            out.truncate(at);
            out.extend_from_slice(&other[from..]);
        }
        _ => {
            // Replace a number-looking run of digits with a huge one.
            if let Some(i) = (at..len).find(|&i| out[i].is_ascii_digit()) {
                let end = (i..len).find(|&j| !out[j].is_ascii_digit()).unwrap_or(len);
                let big = ["18446744073709551615", "4294967296", "3000000", "0"][rng.below(4)];
                out.splice(i..end, big.bytes());
            }
        }
    }
}
