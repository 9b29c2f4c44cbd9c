//! A small pickle encoder (protocol 2) for the benchmark's Flight Recorder dumps: plain dicts,
//! lists, 2-tuples, strings, integers, booleans and `None`, written as Python's own pickler
//! writes them. Strings are memoized (`BINPUT` the first time, `BINGET` after), as the
//! dumps PyTorch writes repeat every key by reference; containers are not (nothing shares them).

use std::collections::HashMap;

/// A value to pickle.
#[derive(Clone, Debug, PartialEq)]
pub enum Py {
    None,
    Bool(bool),
    Int(i64),
    Str(String),
    List(Vec<Py>),
    /// A 2-tuple (`process_group` is `("0", "default_pg")`).
    Pair(Box<Py>, Box<Py>),
    /// String keys, in order.
    Dict(Vec<(&'static str, Py)>),
}

impl From<&str> for Py {
    fn from(s: &str) -> Self {
        Py::Str(s.to_owned())
    }
}

impl From<String> for Py {
    fn from(s: String) -> Self {
        Py::Str(s)
    }
}

impl From<i64> for Py {
    fn from(i: i64) -> Self {
        Py::Int(i)
    }
}

impl From<bool> for Py {
    fn from(b: bool) -> Self {
        Py::Bool(b)
    }
}

mod op {
    pub const PROTO: u8 = 0x80;
    pub const STOP: u8 = b'.';
    pub const MARK: u8 = b'(';
    pub const NONE: u8 = b'N';
    pub const NEWTRUE: u8 = 0x88;
    pub const NEWFALSE: u8 = 0x89;
    pub const BININT: u8 = b'J';
    pub const BININT1: u8 = b'K';
    pub const BININT2: u8 = b'M';
    pub const LONG1: u8 = 0x8a;
    pub const BINUNICODE: u8 = b'X';
    pub const EMPTY_LIST: u8 = b']';
    pub const APPEND: u8 = b'a';
    pub const APPENDS: u8 = b'e';
    pub const TUPLE2: u8 = 0x86;
    pub const EMPTY_DICT: u8 = b'}';
    pub const SETITEM: u8 = b's';
    pub const SETITEMS: u8 = b'u';
    pub const BINPUT: u8 = b'q';
    pub const LONG_BINPUT: u8 = b'r';
    pub const BINGET: u8 = b'h';
    pub const LONG_BINGET: u8 = b'j';
}

/// Python's pickler writes a container's items in batches of this many (`pickle._BATCHSIZE`).
const BATCH: usize = 1000;

/// Writes `value` as a protocol-2 pickle.
pub fn dumps(value: &Py) -> Vec<u8> {
    let mut p = Pickler { out: vec![op::PROTO, 2], memo: HashMap::new() };
    p.value(value);
    p.out.push(op::STOP);
    p.out
}

struct Pickler<'a> {
    out: Vec<u8>,
    memo: HashMap<&'a str, u32>,
}

impl<'a> Pickler<'a> {
    fn value(&mut self, value: &'a Py) {
        match value {
            Py::None => self.out.push(op::NONE),
            Py::Bool(b) => self.out.push(if *b { op::NEWTRUE } else { op::NEWFALSE }),
            Py::Int(i) => self.int(*i),
            Py::Str(s) => self.str(s),
            Py::List(items) => {
                self.out.push(op::EMPTY_LIST);
                self.batched(items.len(), op::APPEND, op::APPENDS, |p, i| p.value(&items[i]));
            }
            Py::Pair(a, b) => {
                self.value(a);
                self.value(b);
                self.out.push(op::TUPLE2);
            }
            Py::Dict(pairs) => {
                self.out.push(op::EMPTY_DICT);
                self.batched(pairs.len(), op::SETITEM, op::SETITEMS, |p, i| {
                    p.str(pairs[i].0);
                    p.value(&pairs[i].1);
                });
            }
        }
    }

    /// A container's `n` items: one with `single`, more between `MARK` and `many`, a batch at
    /// a time (as `pickle._batch_appends` and `_batch_setitems` do).
    fn batched(&mut self, n: usize, single: u8, many: u8, mut item: impl FnMut(&mut Self, usize)) {
        let mut start = 0;
        while start < n {
            let end = (start + BATCH).min(n);
            if end - start == 1 {
                item(self, start);
                self.out.push(single);
            } else {
                self.out.push(op::MARK);
                (start..end).for_each(|i| item(self, i));
                self.out.push(many);
            }
            start = end;
        }
    }

    /// `BININT1`, `BININT2`, `BININT` or `LONG1`: the shortest, as `save_long` picks it.
    fn int(&mut self, i: i64) {
        if let Ok(small) = u8::try_from(i) {
            self.out.extend([op::BININT1, small]);
        } else if let Ok(short) = u16::try_from(i) {
            self.out.push(op::BININT2);
            self.out.extend(short.to_le_bytes());
        } else if let Ok(word) = i32::try_from(i) {
            self.out.push(op::BININT);
            self.out.extend(word.to_le_bytes());
        } else {
            // Little-endian two's complement, without the bytes the sign does not need.
            let bytes = i.to_le_bytes();
            let mut n = bytes.len();
            while n > 1 {
                let (top, next) = (bytes[n - 1], bytes[n - 2]);
                let redundant = (top == 0 && next & 0x80 == 0) || (top == 0xff && next & 0x80 != 0);
                if !redundant {
                    break;
                }
                n -= 1;
            }
            self.out.extend([op::LONG1, n as u8]);
            self.out.extend_from_slice(&bytes[..n]);
        }
    }

    fn str(&mut self, s: &'a str) {
        if let Some(&index) = self.memo.get(s) {
            match u8::try_from(index) {
                Ok(small) => self.out.extend([op::BINGET, small]),
                Err(_) => {
                    self.out.push(op::LONG_BINGET);
                    self.out.extend(index.to_le_bytes());
                }
            }
            return;
        }
        self.out.push(op::BINUNICODE);
        self.out.extend(u32::try_from(s.len()).unwrap_or(u32::MAX).to_le_bytes());
        self.out.extend_from_slice(s.as_bytes());
        let index = u32::try_from(self.memo.len()).unwrap_or(u32::MAX);
        match u8::try_from(index) {
            Ok(small) => self.out.extend([op::BINPUT, small]),
            Err(_) => {
                self.out.push(op::LONG_BINPUT);
                self.out.extend(index.to_le_bytes());
            }
        }
        self.memo.insert(s, index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_python_writes() {
        // pickle.dumps({"a": [1, 300, 70000, -1, 1 << 40], "b": ("a", None), "c": [True]}, protocol=2)
        // with the string memo only (Python also memoizes the containers: q\x00 after `}` etc.).
        let value = Py::Dict(vec![
            ("a", Py::List(vec![1.into(), 300.into(), 70000.into(), (-1).into(), (1_i64 << 40).into()])),
            ("b", Py::Pair(Box::new("a".into()), Box::new(Py::None))),
            ("c", Py::List(vec![true.into()])),
        ]);
        let expected: &[u8] = b"\x80\x02}(X\x01\x00\x00\x00aq\x00](K\x01M,\x01Jp\x11\x01\x00J\xff\xff\xff\xff\x8a\x06\x00\x00\x00\x00\x00\x01eX\x01\x00\x00\x00bq\x01h\x00N\x86X\x01\x00\x00\x00cq\x02]\x88au.";
        assert_eq!(dumps(&value), expected);
    }

    #[test]
    fn long1_is_minimal() {
        // As Python writes them: pickle.dumps(i, protocol=2)
        let long = |i: i64| dumps(&Py::Int(i))[2..].to_vec();
        assert_eq!(long(1 << 31), b"\x8a\x05\x00\x00\x00\x80\x00.");
        assert_eq!(long(-(1 << 31) - 1), b"\x8a\x05\xff\xff\xff\x7f\xff.");
        assert_eq!(long(i64::MAX), b"\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f.");
        assert_eq!(long(i64::MIN), b"\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80.");
    }
}
