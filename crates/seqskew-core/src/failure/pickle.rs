//! A small, bounded pickle decoder for PyTorch Flight Recorder dumps, which `torch.distributed`
//! writes with `pickle.dump` of plain dicts, lists, tuples, strings and numbers.
//!
//! Safety: nothing here imports a name, builds an object or calls code. The opcodes that would
//! (`GLOBAL`, `REDUCE`, `BUILD`, ...) are rejected by name, so a hostile file can only cost the
//! memory and time the [`Limits`] allow. It never causes a panic, a stack overflow or an
//! allocation its own bytes cannot back.
//!
//! Sharing: Python's memo lets one object appear in many places, and a container is memoized
//! *before* it is filled (`EMPTY_LIST`, `BINPUT`, then `APPENDS`). Copying it when it is
//! memoized would copy an empty list. So the stack, the memo and the containers hold indices
//! into an arena of nodes (as Python holds references), and only `STOP` turns the root into an
//! owned [`Value`] tree, copying each shared node wherever it is referenced. That copy can
//! grow exponentially (a list holding a list twice, which holds a list twice, ...). Its size and
//! depth are therefore measured on the arena first, in time linear in the arena, and the tree
//! is built only if both are within the limits.

use std::collections::HashMap;
use std::fmt;

/// A decoded plain-data pickle value. Dict keeps insertion order as pairs.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// An integer beyond i64 (a `LONG`, `LONG1` or `LONG4` too long for it), kept only as a
    /// marker. The dump's counters and times fit in i64; nothing here needs the digits.
    BigInt,
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    Dict(Vec<(Value, Value)>),
}

impl Value {
    /// The value under the string key `key` in a dict. A hostile pickle can set one key twice:
    /// the last pair wins, as it would in Python's dict.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries().iter().rev().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
    }
    pub fn as_str(&self) -> Option<&str> {
        if let Value::Str(s) = self { Some(s) } else { None }
    }
    pub fn as_i64(&self) -> Option<i64> {
        if let Value::Int(i) = self { Some(*i) } else { None }
    }
    /// An Int or a Float as f64 (Python writes `1.0` and `1` for the same duration).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        if let Value::Bool(b) = self { Some(*b) } else { None }
    }
    /// The elements of a List or a Tuple; empty for anything else.
    pub fn items(&self) -> &[Value] {
        match self {
            Value::List(v) | Value::Tuple(v) => v,
            _ => &[],
        }
    }
    /// The pairs of a Dict, in the order they were written; empty for anything else.
    pub fn entries(&self) -> &[(Value, Value)] {
        if let Value::Dict(d) = self { d } else { &[] }
    }
}

/// Why a pickle was refused, and the byte offset of the opcode that refused it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickleError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for PickleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for PickleError {}

/// Bounds on what one pickle may cost.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Containers nested in containers, and MARKs open at once. The limit keeps the derived
    /// recursive `Drop`, `Clone` and `Debug` of [`Value`] far from the stack's end. Real dumps
    /// nest about 5 deep.
    pub max_depth: usize,
    /// Values in the decoded tree, counting every copy of a shared one. A string or bytes value
    /// counts one more per 32 bytes it holds, so the limit bounds the tree's memory too (under
    /// 64 bytes per unit on 64-bit targets). The arena decoding builds first is held to it as
    /// well, and is also bounded by the input's length.
    pub max_values: usize,
    /// Entries in the memo (Python's table of shared objects).
    pub max_memo: usize,
}

impl Default for Limits {
    /// Far above a real dump (a few hundred thousand values for a few thousand entries with
    /// their stack frames), while a hostile file's tree stays near a gigabyte at most.
    fn default() -> Self {
        Limits { max_depth: 256, max_values: 20_000_000, max_memo: 10_000_000 }
    }
}

/// Decodes a whole pickle with [`Limits::default`]. Bytes after `STOP` are ignored.
pub fn decode(bytes: &[u8]) -> Result<Value, PickleError> {
    decode_with(bytes, &Limits::default())
}

/// Decodes a whole pickle within `limits`. Bytes after `STOP` are ignored.
pub fn decode_with(bytes: &[u8], limits: &Limits) -> Result<Value, PickleError> {
    let mut input = Cursor { bytes, pos: 0 };
    let mut machine =
        Machine { limits, nodes: Vec::new(), stack: Vec::new(), metastack: Vec::new(), memo: HashMap::new() };
    loop {
        let at = input.pos;
        let fail = |message: String| PickleError { offset: at, message };
        let Some(&op) = bytes.get(at) else {
            return Err(fail("truncated: the pickle ends before its STOP opcode".into()));
        };
        input.pos += 1;
        match machine.step(op, &mut input) {
            Ok(None) => {}
            Ok(Some(root)) => return machine.measure(root).and_then(|()| machine.build(root)).map_err(fail),
            Err(message) => return Err(fail(message)),
        }
    }
}

/// The opcode bytes, in the order of Python's `pickle.py`, and their names (for messages) in
/// the same order. A byte not listed is not an opcode.
const OPS: &[u8] = b"(.012FIJKLMNPQRSTUVXabcd}eghijl]opqrst)uG\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8bBC\
    \x8c\x8d\x8e\x8f\x90\x91\x92\x93\x94\x95\x96\x97\x98";
const NAMES: &str = "MARK STOP POP POP_MARK DUP FLOAT INT BININT BININT1 LONG BININT2 NONE PERSID BINPERSID \
    REDUCE STRING BINSTRING SHORT_BINSTRING UNICODE BINUNICODE APPEND BUILD GLOBAL DICT EMPTY_DICT APPENDS GET \
    BINGET INST LONG_BINGET LIST EMPTY_LIST OBJ PUT BINPUT LONG_BINPUT SETITEM TUPLE EMPTY_TUPLE SETITEMS \
    BINFLOAT PROTO NEWOBJ EXT1 EXT2 EXT4 TUPLE1 TUPLE2 TUPLE3 NEWTRUE NEWFALSE LONG1 LONG4 BINBYTES \
    SHORT_BINBYTES SHORT_BINUNICODE BINUNICODE8 BINBYTES8 EMPTY_SET ADDITEMS FROZENSET NEWOBJ_EX STACK_GLOBAL \
    MEMOIZE FRAME BYTEARRAY8 NEXT_BUFFER READONLY_BUFFER";

/// An opcode, shown by its name in messages. The name is looked up only when a message is
/// written, so decoding does not pay for the search.
#[derive(Clone, Copy)]
struct Op(u8);

impl Op {
    fn known(self) -> bool {
        OPS.contains(&self.0)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match OPS.iter().position(|&b| b == self.0).and_then(|i| NAMES.split(' ').nth(i)) {
            Some(name) => f.write_str(name),
            None => write!(f, "0x{:02x}", self.0),
        }
    }
}

/// Reads opcode arguments, checking every length against the bytes left before using it.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// The next `len` bytes. A length read from the input is checked here, before anything
    /// is allocated for it, so a 4 GB length in a 10-byte file costs nothing.
    fn take(&mut self, len: u64, name: Op) -> Result<&'a [u8], String> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        match usize::try_from(len).ok().and_then(|n| rest.split_at_checked(n)) {
            Some((head, _)) => {
                self.pos += head.len();
                Ok(head)
            }
            None => Err(format!("truncated: needed {len} bytes for {name}, {} left", rest.len())),
        }
    }
    fn fixed<const N: usize>(&mut self, name: Op) -> Result<[u8; N], String> {
        let head = self.take(N as u64, name)?;
        head.try_into().map_err(|_| format!("truncated: needed {N} bytes for {name}"))
    }
    fn u8(&mut self, name: Op) -> Result<u8, String> {
        self.fixed::<1>(name).map(u8::from_le_bytes)
    }
    fn u32(&mut self, name: Op) -> Result<u32, String> {
        self.fixed(name).map(u32::from_le_bytes)
    }
    fn u64(&mut self, name: Op) -> Result<u64, String> {
        self.fixed(name).map(u64::from_le_bytes)
    }
    /// BINSTRING and LONG4 lengths are signed; Python refuses a negative one.
    fn signed_len(&mut self, name: Op) -> Result<u64, String> {
        let n = self.fixed(name).map(i32::from_le_bytes)?;
        u64::try_from(n).map_err(|_| format!("{name} with a negative length {n}"))
    }
    /// The text arguments of protocol 0, up to (not including) the `\n` that ends them.
    fn line(&mut self, name: Op) -> Result<&'a [u8], String> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let end = rest.iter().position(|&b| b == b'\n');
        let line = end.and_then(|end| rest.get(..end));
        let line = line.ok_or_else(|| format!("truncated: needed a line ending in \\n for {name}"))?;
        self.pos += line.len() + 1;
        Ok(line)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    List,
    Tuple,
    Dict,
}

enum Node {
    /// Anything but a container.
    Leaf(Value),
    /// A container's elements as node indices; a dict's are key, value, key, value, ...
    Seq(Kind, Vec<usize>),
}

/// What the measuring pass knows of a node.
#[derive(Clone, Copy)]
enum Seen {
    New,
    /// On the path being walked: meeting it again means the structure contains itself.
    Open,
    Done {
        weight: usize,
        height: usize,
    },
}

/// Python's unpickler with the object-building half removed. `stack` is the part above the
/// last MARK and `metastack` holds the parts below the open MARKs, as in `pickle.py`, so an
/// opcode cannot reach past a MARK.
struct Machine<'l> {
    limits: &'l Limits,
    nodes: Vec<Node>,
    stack: Vec<usize>,
    metastack: Vec<Vec<usize>>,
    memo: HashMap<u64, usize>,
}

impl Machine<'_> {
    /// Runs one opcode; `Some(root)` at STOP.
    fn step(&mut self, op: u8, input: &mut Cursor<'_>) -> Result<Option<usize>, String> {
        let name = Op(op);
        match op {
            0x80 => {
                let v = input.u8(name)?;
                if v > 5 {
                    return Err(format!("unsupported pickle protocol {v} (this reader knows 0 to 5)"));
                }
            }
            // FRAME only tells a buffered reader how much to fetch; the opcodes follow inline.
            0x95 => {
                input.u64(name)?;
            }
            b'.' => return self.pop(name).map(Some),
            b'(' => {
                if self.metastack.len() >= self.limits.max_depth {
                    return Err(format!("MARKs nested deeper than {} (Limits::max_depth)", self.limits.max_depth));
                }
                self.metastack.push(std::mem::take(&mut self.stack));
            }
            // As in Python, POP on an empty stack pops back to the last MARK.
            b'0' => {
                if self.stack.pop().is_none() {
                    self.pop_mark(name)?;
                }
            }
            b'1' => {
                self.pop_mark(name)?;
            }
            b'2' => {
                let top = self.top(name)?;
                self.stack.push(top);
            }
            b'N' => self.push(Value::None)?,
            0x88 => self.push(Value::Bool(true))?,
            0x89 => self.push(Value::Bool(false))?,
            // Protocols 0 and 1 write True and False as INT `01` and `00`.
            b'I' => match input.line(name)? {
                b"01" => self.push(Value::Bool(true))?,
                b"00" => self.push(Value::Bool(false))?,
                text => self.push(int_text(text, name)?)?,
            },
            b'J' => self.push(Value::Int(input.fixed(name).map(i32::from_le_bytes)?.into()))?,
            b'K' => self.push(Value::Int(input.u8(name)?.into()))?,
            b'M' => self.push(Value::Int(input.fixed(name).map(u16::from_le_bytes)?.into()))?,
            b'L' => {
                let text = input.line(name)?;
                self.push(int_text(text.strip_suffix(b"L").unwrap_or(text), name)?)?;
            }
            0x8a => {
                let len = input.u8(name)?;
                self.push(long_le(input.take(len.into(), name)?))?;
            }
            0x8b => {
                let len = input.signed_len(name)?;
                self.push(long_le(input.take(len, name)?))?;
            }
            b'F' => {
                let text = input.line(name)?;
                let v = std::str::from_utf8(text).ok().and_then(|t| t.trim().parse().ok());
                let v = v.ok_or_else(|| format!("{name} argument {:?} is not a number", lossy(text)))?;
                self.push(Value::Float(v))?;
            }
            b'G' => self.push(Value::Float(input.fixed(name).map(f64::from_be_bytes)?))?,
            b'S' => {
                let text = input.line(name)?;
                let quoted = match text {
                    [q @ (b'\'' | b'"'), inner @ .., end] if q == end => inner,
                    _ => return Err(format!("{name} argument {:?} is not quoted", lossy(text))),
                };
                self.push(Value::Str(latin1(&escape_decode(quoted)?)))?;
            }
            b'T' => {
                let len = input.signed_len(name)?;
                self.push(Value::Str(latin1(input.take(len, name)?)))?;
            }
            b'U' => {
                let len = input.u8(name)?;
                self.push(Value::Str(latin1(input.take(len.into(), name)?)))?;
            }
            b'V' => self.push(Value::Str(raw_unicode_escape(input.line(name)?)?))?,
            b'X' | 0x8c | 0x8d => {
                let len = match op {
                    b'X' => input.u32(name)?.into(),
                    0x8c => input.u8(name)?.into(),
                    _ => input.u64(name)?,
                };
                // Python encodes lone surrogates with "surrogatepass"; a Rust string cannot
                // hold them, so they become U+FFFD rather than an error.
                self.push(Value::Str(lossy(input.take(len, name)?)))?;
            }
            b'B' | b'C' | 0x8e | 0x96 => {
                let len = match op {
                    b'B' => input.u32(name)?.into(),
                    b'C' => input.u8(name)?.into(),
                    _ => input.u64(name)?,
                };
                self.push(Value::Bytes(input.take(len, name)?.to_vec()))?;
            }
            b'}' => self.push_node(Node::Seq(Kind::Dict, Vec::new()))?,
            b'd' => {
                let items = self.pop_mark(name)?;
                check_pairs(&items, name)?;
                self.push_node(Node::Seq(Kind::Dict, items))?;
            }
            b's' => {
                let value = self.pop(name)?;
                let key = self.pop(name)?;
                self.extend(Kind::Dict, vec![key, value], name)?;
            }
            b'u' => {
                let items = self.pop_mark(name)?;
                check_pairs(&items, name)?;
                self.extend(Kind::Dict, items, name)?;
            }
            // Sets become lists: a dump has none, and a Value set would need hashing floats.
            b']' | 0x8f => self.push_node(Node::Seq(Kind::List, Vec::new()))?,
            b'l' | 0x91 => {
                let items = self.pop_mark(name)?;
                self.push_node(Node::Seq(Kind::List, items))?;
            }
            b'a' => {
                let value = self.pop(name)?;
                self.extend(Kind::List, vec![value], name)?;
            }
            b'e' | 0x90 => {
                let items = self.pop_mark(name)?;
                self.extend(Kind::List, items, name)?;
            }
            b')' => self.push_node(Node::Seq(Kind::Tuple, Vec::new()))?,
            b't' => {
                let items = self.pop_mark(name)?;
                self.push_node(Node::Seq(Kind::Tuple, items))?;
            }
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                let from = self.stack.len().checked_sub(n);
                let from = from.ok_or_else(|| format!("{name} needs {n} values on the stack"))?;
                let items = self.stack.split_off(from);
                self.push_node(Node::Seq(Kind::Tuple, items))?;
            }
            b'p' => {
                let key = memo_key(input.line(name)?, name)?;
                self.memo_put(key, name)?;
            }
            b'q' => self.memo_put(input.u8(name)?.into(), name)?,
            b'r' => self.memo_put(input.u32(name)?.into(), name)?,
            0x94 => self.memo_put(self.memo.len() as u64, name)?,
            b'g' => self.memo_get(memo_key(input.line(name)?, name)?, name)?,
            b'h' => self.memo_get(input.u8(name)?.into(), name)?,
            b'j' => self.memo_get(input.u32(name)?.into(), name)?,
            // The opcodes left are those that import, build or call.
            _ if name.known() => {
                return Err(format!(
                    "opcode {name} (0x{op:02x}) would construct an object; flight-recorder dumps contain only plain data"
                ));
            }
            _ => return Err(format!("unknown opcode 0x{op:02x}")),
        }
        Ok(None)
    }

    fn push(&mut self, value: Value) -> Result<(), String> {
        self.push_node(Node::Leaf(value))
    }
    fn push_node(&mut self, node: Node) -> Result<(), String> {
        if self.nodes.len() >= self.limits.max_values {
            return Err(format!("more than {} values (Limits::max_values)", self.limits.max_values));
        }
        self.stack.push(self.nodes.len());
        self.nodes.push(node);
        Ok(())
    }
    fn top(&self, name: Op) -> Result<usize, String> {
        self.stack.last().copied().ok_or_else(|| format!("{name} needs a value on the stack, found none"))
    }
    fn pop(&mut self, name: Op) -> Result<usize, String> {
        self.stack.pop().ok_or_else(|| format!("{name} needs a value on the stack, found none"))
    }
    /// The items above the last MARK; the stack below it becomes the current one again.
    fn pop_mark(&mut self, name: Op) -> Result<Vec<usize>, String> {
        let below = self.metastack.pop().ok_or_else(|| format!("{name} without a MARK before it"))?;
        Ok(std::mem::replace(&mut self.stack, below))
    }
    /// Adds items to the container on top of the stack, which must be of kind `want`.
    fn extend(&mut self, want: Kind, items: Vec<usize>, name: Op) -> Result<(), String> {
        let target = self.top(name)?;
        match self.nodes.get_mut(target) {
            Some(Node::Seq(kind, children)) if *kind == want => {
                children.extend(items);
                Ok(())
            }
            _ => Err(format!("{name} needs a {want:?} on the stack below its items")),
        }
    }
    fn memo_put(&mut self, key: u64, name: Op) -> Result<(), String> {
        let id = self.top(name)?;
        if self.memo.len() >= self.limits.max_memo && !self.memo.contains_key(&key) {
            return Err(format!("more than {} memo entries (Limits::max_memo)", self.limits.max_memo));
        }
        self.memo.insert(key, id);
        Ok(())
    }
    /// Pushes the memoized node itself, not a copy: later APPENDs to it must show everywhere.
    fn memo_get(&mut self, key: u64, name: Op) -> Result<(), String> {
        let id = self.memo.get(&key).copied();
        self.stack.push(id.ok_or_else(|| format!("{name} of memo key {key}, which was never stored"))?);
        Ok(())
    }
    fn children(&self, id: usize) -> &[usize] {
        match self.nodes.get(id) {
            Some(Node::Seq(_, children)) => children,
            _ => &[],
        }
    }

    /// Weighs the tree `root` would become (copies included) and its depth, by a depth-first
    /// walk that remembers each node's result, so shared nodes are walked once. Also refuses
    /// a structure that contains itself, which no tree can hold.
    fn measure(&self, root: usize) -> Result<(), String> {
        let mut seen = vec![Seen::New; self.nodes.len()];
        if let Some(s) = seen.get_mut(root) {
            *s = Seen::Open;
        }
        let mut path = vec![(root, 0_usize)];
        while let Some((id, next)) = path.last_mut() {
            let id = *id;
            if let Some(&child) = self.children(id).get(*next) {
                *next += 1;
                let leaf = match self.nodes.get(child) {
                    Some(Node::Leaf(v)) => Some(v),
                    _ => None,
                };
                match (seen.get_mut(child), leaf) {
                    (Some(s @ Seen::New), Some(v)) => *s = Seen::Done { weight: weight(v), height: 0 },
                    (Some(s @ Seen::New), None) => {
                        *s = Seen::Open;
                        path.push((child, 0));
                    }
                    (Some(Seen::Open), _) => {
                        return Err("the pickle holds a container inside itself, which a tree cannot hold".into());
                    }
                    _ => {}
                }
                continue;
            }
            path.pop();
            let (mut total, mut height) = (1_usize, 1_usize);
            for &child in self.children(id) {
                if let Some(Seen::Done { weight, height: h }) = seen.get(child) {
                    total = total.saturating_add(*weight);
                    height = height.max(h.saturating_add(1));
                }
            }
            if total > self.limits.max_values {
                return Err(format!(
                    "the decoded values, counting each copy of a shared one, would exceed {} (Limits::max_values)",
                    self.limits.max_values
                ));
            }
            if height > self.limits.max_depth {
                return Err(format!("containers nested deeper than {} (Limits::max_depth)", self.limits.max_depth));
            }
            if let Some(s) = seen.get_mut(id) {
                *s = Seen::Done { weight: total, height };
            }
        }
        Ok(())
    }

    /// Copies the arena's tree under `root` into owned values, without recursion. Called
    /// after `measure`, so it ends and its size is known to be within the limits.
    fn build(&self, root: usize) -> Result<Value, String> {
        let mut path: Vec<Frame<'_>> = Vec::new();
        let mut finished = open(&self.nodes, root, &mut path)?;
        loop {
            if let Some(value) = finished.take() {
                match path.last_mut() {
                    Some(frame) => frame.done.push(value),
                    None => return Ok(value),
                }
            }
            let Some(frame) = path.last_mut() else { return Err("internal: nothing built".into()) };
            if let Some((&child, rest)) = frame.todo.split_first() {
                frame.todo = rest;
                finished = open(&self.nodes, child, &mut path)?;
            } else if let Some(frame) = path.pop() {
                finished = Some(match frame.kind {
                    Kind::List => Value::List(frame.done),
                    Kind::Tuple => Value::Tuple(frame.done),
                    Kind::Dict => {
                        let mut items = frame.done.into_iter();
                        let mut pairs = Vec::with_capacity(items.len() / 2);
                        while let (Some(k), Some(v)) = (items.next(), items.next()) {
                            pairs.push((k, v));
                        }
                        Value::Dict(pairs)
                    }
                });
            }
        }
    }
}

/// A container being copied by `build`: the children left to copy and the copies made.
struct Frame<'n> {
    kind: Kind,
    todo: &'n [usize],
    done: Vec<Value>,
}

/// Starts copying node `id`: a leaf is copied at once, a container opens a frame.
fn open<'n>(nodes: &'n [Node], id: usize, path: &mut Vec<Frame<'n>>) -> Result<Option<Value>, String> {
    match nodes.get(id) {
        Some(Node::Leaf(v)) => Ok(Some(v.clone())),
        Some(Node::Seq(kind, todo)) => {
            path.push(Frame { kind: *kind, todo, done: Vec::with_capacity(todo.len()) });
            Ok(None)
        }
        None => Err(format!("internal: node {id} missing")),
    }
}

/// A leaf's share of `Limits::max_values`: one, plus one per 32 bytes of text or bytes, so
/// a big string copied many times through the memo is weighed by its size.
fn weight(v: &Value) -> usize {
    match v {
        Value::Str(s) => 1 + s.len() / 32,
        Value::Bytes(b) => 1 + b.len() / 32,
        _ => 1,
    }
}

fn check_pairs(items: &[usize], name: Op) -> Result<(), String> {
    if items.len().is_multiple_of(2) { Ok(()) } else { Err(format!("{name} with a key but no value")) }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Python 2 `str`s are bytes; reading them as latin-1 keeps every byte as one char.
fn latin1(bytes: &[u8]) -> String {
    bytes.iter().copied().map(char::from).collect()
}

/// A decimal integer (INT, LONG), beyond i64 as `BigInt`.
fn int_text(text: &[u8], name: Op) -> Result<Value, String> {
    let t = std::str::from_utf8(text).unwrap_or_default().trim();
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{name} argument {:?} is not a decimal integer", lossy(text)));
    }
    Ok(t.parse().map_or(Value::BigInt, Value::Int))
}

fn memo_key(text: &[u8], name: Op) -> Result<u64, String> {
    let key = std::str::from_utf8(text).ok().and_then(|t| t.trim().parse().ok());
    key.ok_or_else(|| format!("{name} argument {:?} is not a memo key", lossy(text)))
}

/// LONG1 and LONG4: little-endian two's complement. Python writes the fewest bytes, but a
/// longer form whose extra bytes only extend the sign is still the same number.
fn long_le(bytes: &[u8]) -> Value {
    let negative = bytes.last().is_some_and(|&b| b & 0x80 != 0);
    let fill = if negative { 0xff } else { 0 };
    let (low, high) = bytes.split_at_checked(8).unwrap_or((bytes, &[]));
    if high.iter().any(|&b| b != fill) {
        return Value::BigInt;
    }
    let mut word = [fill; 8];
    for (w, &b) in word.iter_mut().zip(low) {
        *w = b;
    }
    let v = i64::from_le_bytes(word);
    // 2**63 is nine bytes `00 .. 80 00`: its low eight read as i64::MIN, of the wrong sign.
    if (v < 0) == negative { Value::Int(v) } else { Value::BigInt }
}

/// STRING's quoted text, unescaped as Python's `codecs.escape_decode` does.
fn escape_decode(text: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some((&b, tail)) = rest.split_first() {
        rest = tail;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let Some((&e, tail)) = rest.split_first() else { return Err("STRING ends in a lone backslash".into()) };
        rest = tail;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'v' => out.push(11),
            b'\\' | b'\'' | b'"' => out.push(e),
            b'\n' => {}
            b'x' => {
                let hex = rest.get(..2).filter(|h| h.iter().all(u8::is_ascii_hexdigit));
                let v = hex.and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
                out.push(v.ok_or("STRING has a \\x escape without two hex digits")?);
                rest = rest.get(2..).unwrap_or_default();
            }
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                for _ in 0..2 {
                    let Some((&d @ b'0'..=b'7', tail)) = rest.split_first() else { break };
                    v = v * 8 + u32::from(d - b'0');
                    rest = tail;
                }
                out.push(u8::try_from(v % 256).unwrap_or_default());
            }
            // Python keeps an unknown escape as it was written.
            _ => out.extend([b'\\', e]),
        }
    }
    Ok(out)
}

/// UNICODE's text: latin-1 except `\uXXXX` and `\UXXXXXXXX`, as Python's "raw-unicode-escape".
/// Lone surrogates and code points beyond U+10FFFF become U+FFFD (best effort).
fn raw_unicode_escape(text: &[u8]) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((&b, tail)) = rest.split_first() {
        rest = tail;
        let width = match (b, rest.first()) {
            (b'\\', Some(b'u')) => 4,
            (b'\\', Some(b'U')) => 8,
            _ => {
                out.push(char::from(b));
                continue;
            }
        };
        let hex = rest.get(1..=width).filter(|h| h.iter().all(u8::is_ascii_hexdigit));
        let code = hex.and_then(|h| u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        let code =
            code.ok_or_else(|| format!("UNICODE has a truncated \\{} escape", if width == 4 { 'u' } else { 'U' }))?;
        out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
        rest = rest.get(width + 1..).unwrap_or_default();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Value::{BigInt, Bool, Bytes, Float, Int, List, Str, Tuple};

    // Made with Python 3.11 (`lit` writes bytes as a Rust literal, escaping `\`, `"` and
    // everything outside printable ASCII):
    //   fr = <the dict `flight_recorder` builds>
    //   for p in (0, 1, 2, 4): print(lit(pickle.dumps(fr, protocol=p)))
    // Protocols 3 and 5 write this dict byte for byte as 2 and 4 do but for the PROTO byte
    // (3 differs from 2 only for `bytes`, 5 from 4 only for out-of-band buffers), so the
    // tests patch that byte rather than carry two more copies.
    const FR_P0: &[u8] = b"(dp0\nVversion\np1\nV2.9\np2\nsVpg_config\np3\n(dp4\nV0\np5\n(dp6\nVname\np7\ng5\nsVdesc\
        \np8\nVdefault_pg\np9\nsVranks\np10\nV[0, 1]\np11\nsssVpg_status\np12\n(dp13\ng5\n(dp14\nVlast_enqueued_col\
        lective\np15\nI7\nsVlast_started_collective\np16\nI-1\nsVlast_completed_collective\np17\nI6\nsssVentries\np\
        18\n(lp19\n(dp20\nVrecord_id\np21\nI0\nsVpg_id\np22\nI0\nsVprocess_group\np23\n(g5\ng9\ntp24\nsVcollective_\
        seq_id\np25\nI1\nsVtime_created_ns\np26\nL1724779239936775119L\nsVinput_sizes\np27\n(lp28\n(lp29\nI3\naI4\n\
        aasVstate\np30\nVcompleted\np31\nsVtime_discovered_started_ns\np32\nNsVretired\np33\nI01\nsVtimeout_ms\np34\
        \nI600000\nsVis_p2p\np35\nI00\nsVduration_ms\np36\nF1.5\nsVframes\np37\n(lp38\n(dp39\ng7\nVf\np40\nsVfilena\
        me\np41\nVa.py\np42\nsVline\np43\nI3\nsasas.";
    const FR_P1: &[u8] = b"}q\x00(X\x07\x00\x00\x00versionq\x01X\x03\x00\x00\x002.9q\x02X\x09\x00\x00\x00pg_configq\
        \x03}q\x04X\x01\x00\x00\x000q\x05}q\x06(X\x04\x00\x00\x00nameq\x07h\x05X\x04\x00\x00\x00descq\x08X\n\x00\
        \x00\x00default_pgq\x09X\x05\x00\x00\x00ranksq\nX\x06\x00\x00\x00[0, 1]q\x0busX\x09\x00\x00\x00pg_statusq\
        \x0c}q\x0dh\x05}q\x0e(X\x18\x00\x00\x00last_enqueued_collectiveq\x0fK\x07X\x17\x00\x00\x00last_started_coll\
        ectiveq\x10J\xff\xff\xff\xffX\x19\x00\x00\x00last_completed_collectiveq\x11K\x06usX\x07\x00\x00\x00entriesq\
        \x12]q\x13}q\x14(X\x09\x00\x00\x00record_idq\x15K\x00X\x05\x00\x00\x00pg_idq\x16K\x00X\x0d\x00\x00\x00proce\
        ss_groupq\x17(h\x05h\x09tq\x18X\x11\x00\x00\x00collective_seq_idq\x19K\x01X\x0f\x00\x00\x00time_created_nsq\
        \x1aL1724779239936775119L\nX\x0b\x00\x00\x00input_sizesq\x1b]q\x1c]q\x1d(K\x03K\x04eaX\x05\x00\x00\x00state\
        q\x1eX\x09\x00\x00\x00completedq\x1fX\x1a\x00\x00\x00time_discovered_started_nsq NX\x07\x00\x00\x00retiredq\
        !I01\nX\n\x00\x00\x00timeout_msq\"J\xc0'\x09\x00X\x06\x00\x00\x00is_p2pq#I00\nX\x0b\x00\x00\x00duration_msq\
        $G?\xf8\x00\x00\x00\x00\x00\x00X\x06\x00\x00\x00framesq%]q&}q'(h\x07X\x01\x00\x00\x00fq(X\x08\x00\x00\x00fi\
        lenameq)X\x04\x00\x00\x00a.pyq*X\x04\x00\x00\x00lineq+K\x03uauau.";
    const FR_P2: &[u8] = b"\x80\x02}q\x00(X\x07\x00\x00\x00versionq\x01X\x03\x00\x00\x002.9q\x02X\x09\x00\x00\x00pg\
        _configq\x03}q\x04X\x01\x00\x00\x000q\x05}q\x06(X\x04\x00\x00\x00nameq\x07h\x05X\x04\x00\x00\x00descq\x08X\
        \n\x00\x00\x00default_pgq\x09X\x05\x00\x00\x00ranksq\nX\x06\x00\x00\x00[0, 1]q\x0busX\x09\x00\x00\x00pg_sta\
        tusq\x0c}q\x0dh\x05}q\x0e(X\x18\x00\x00\x00last_enqueued_collectiveq\x0fK\x07X\x17\x00\x00\x00last_started_\
        collectiveq\x10J\xff\xff\xff\xffX\x19\x00\x00\x00last_completed_collectiveq\x11K\x06usX\x07\x00\x00\x00entr\
        iesq\x12]q\x13}q\x14(X\x09\x00\x00\x00record_idq\x15K\x00X\x05\x00\x00\x00pg_idq\x16K\x00X\x0d\x00\x00\x00p\
        rocess_groupq\x17h\x05h\x09\x86q\x18X\x11\x00\x00\x00collective_seq_idq\x19K\x01X\x0f\x00\x00\x00time_creat\
        ed_nsq\x1a\x8a\x08\xcfSf\x98\x94\xa5\xef\x17X\x0b\x00\x00\x00input_sizesq\x1b]q\x1c]q\x1d(K\x03K\x04eaX\x05\
        \x00\x00\x00stateq\x1eX\x09\x00\x00\x00completedq\x1fX\x1a\x00\x00\x00time_discovered_started_nsq NX\x07\
        \x00\x00\x00retiredq!\x88X\n\x00\x00\x00timeout_msq\"J\xc0'\x09\x00X\x06\x00\x00\x00is_p2pq#\x89X\x0b\x00\
        \x00\x00duration_msq$G?\xf8\x00\x00\x00\x00\x00\x00X\x06\x00\x00\x00framesq%]q&}q'(h\x07X\x01\x00\x00\x00fq\
        (X\x08\x00\x00\x00filenameq)X\x04\x00\x00\x00a.pyq*X\x04\x00\x00\x00lineq+K\x03uauau.";
    const FR_P4: &[u8] = b"\x80\x04\x95\xf4\x01\x00\x00\x00\x00\x00\x00}\x94(\x8c\x07version\x94\x8c\x032.9\x94\x8c\
        \x09pg_config\x94}\x94\x8c\x010\x94}\x94(\x8c\x04name\x94h\x05\x8c\x04desc\x94\x8c\ndefault_pg\x94\x8c\x05r\
        anks\x94\x8c\x06[0, 1]\x94us\x8c\x09pg_status\x94}\x94h\x05}\x94(\x8c\x18last_enqueued_collective\x94K\x07\
        \x8c\x17last_started_collective\x94J\xff\xff\xff\xff\x8c\x19last_completed_collective\x94K\x06us\x8c\x07ent\
        ries\x94]\x94}\x94(\x8c\x09record_id\x94K\x00\x8c\x05pg_id\x94K\x00\x8c\x0dprocess_group\x94h\x05h\x09\x86\
        \x94\x8c\x11collective_seq_id\x94K\x01\x8c\x0ftime_created_ns\x94\x8a\x08\xcfSf\x98\x94\xa5\xef\x17\x8c\x0b\
        input_sizes\x94]\x94]\x94(K\x03K\x04ea\x8c\x05state\x94\x8c\x09completed\x94\x8c\x1atime_discovered_started\
        _ns\x94N\x8c\x07retired\x94\x88\x8c\ntimeout_ms\x94J\xc0'\x09\x00\x8c\x06is_p2p\x94\x89\x8c\x0bduration_ms\
        \x94G?\xf8\x00\x00\x00\x00\x00\x00\x8c\x06frames\x94]\x94}\x94(h\x07\x8c\x01f\x94\x8c\x08filename\x94\x8c\
        \x04a.py\x94\x8c\x04line\x94K\x03uauau.";

    // a = [1, 2]; pickle.dumps([a, a, {"k": a}], protocol=p): the second and third `a` are GETs
    // of a list memoized before it was filled.
    // big = [2**70, -1, 2**63 - 1, -2**63, 2**64, -2**70]; pickle.dumps(big, protocol=p)
    // MISC_P5: [{1, 2}, frozenset([3]), b"ab", bytearray(b"cd"), "a\\b\nc\u00e9\u20ac", (), (1,),
    //   (1, 2, 3), 0.25, -5, 70000, None], protocol 5
    // MISC_P0: ["a\\b\nc\u00e9\u20ac\U0001f600", 0.25, (), (1,), [], {}, True, False, 2**40], protocol 0
    const SHARED_P0: &[u8] = b"(lp0\n(lp1\nI1\naI2\naag1\na(dp2\nVk\np3\ng1\nsa.";
    const SHARED_P2: &[u8] = b"\x80\x02]q\x00(]q\x01(K\x01K\x02eh\x01}q\x02X\x01\x00\x00\x00kq\x03h\x01se.";
    const BIG_P0: &[u8] = b"(lp0\nL1180591620717411303424L\naI-1\naL9223372036854775807L\naL-9223372036854775808L\n\
        aL18446744073709551616L\naL-1180591620717411303424L\na.";
    const BIG_P1: &[u8] = b"]q\x00(L1180591620717411303424L\nJ\xff\xff\xff\xffL9223372036854775807L\nL-922337203685\
        4775808L\nL18446744073709551616L\nL-1180591620717411303424L\ne.";
    const BIG_P2: &[u8] = b"\x80\x02]q\x00(\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00@J\xff\xff\xff\xff\x8a\x08\xff\
        \xff\xff\xff\xff\xff\xff\x7f\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80\x8a\x09\x00\x00\x00\x00\x00\x00\x00\
        \x00\x01\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\xc0e.";
    const MISC_P5: &[u8] = b"\x80\x05\x95Q\x00\x00\x00\x00\x00\x00\x00]\x94(\x8f\x94(K\x01K\x02\x90(K\x03\x91\x94C\
        \x02ab\x94\x96\x02\x00\x00\x00\x00\x00\x00\x00cd\x94\x8c\na\\b\nc\xc3\xa9\xe2\x82\xac\x94)K\x01\x85\x94K\
        \x01K\x02K\x03\x87\x94G?\xd0\x00\x00\x00\x00\x00\x00J\xfb\xff\xff\xffJp\x11\x01\x00Ne.";
    const MISC_P0: &[u8] = b"(lp0\nVa\\u005cb\\u000ac\xe9\\u20ac\\U0001f600\np1\naF0.25\na(ta(I1\ntp2\na(lp3\na(dp4\
        \naI01\naI00\naL1099511627776L\na.";

    fn s(text: &str) -> Value {
        Str(text.into())
    }
    fn dict(pairs: Vec<(&str, Value)>) -> Value {
        Value::Dict(pairs.into_iter().map(|(k, v)| (s(k), v)).collect())
    }
    fn flight_recorder() -> Value {
        let frame = dict(vec![("name", s("f")), ("filename", s("a.py")), ("line", Int(3))]);
        let entry = dict(vec![
            ("record_id", Int(0)),
            ("pg_id", Int(0)),
            ("process_group", Tuple(vec![s("0"), s("default_pg")])),
            ("collective_seq_id", Int(1)),
            ("time_created_ns", Int(1724779239936775119)),
            ("input_sizes", List(vec![List(vec![Int(3), Int(4)])])),
            ("state", s("completed")),
            ("time_discovered_started_ns", Value::None),
            ("retired", Bool(true)),
            ("timeout_ms", Int(600000)),
            ("is_p2p", Bool(false)),
            ("duration_ms", Float(1.5)),
            ("frames", List(vec![frame])),
        ]);
        let pg = dict(vec![("name", s("0")), ("desc", s("default_pg")), ("ranks", s("[0, 1]"))]);
        let status = dict(vec![
            ("last_enqueued_collective", Int(7)),
            ("last_started_collective", Int(-1)),
            ("last_completed_collective", Int(6)),
        ]);
        dict(vec![
            ("version", s("2.9")),
            ("pg_config", dict(vec![("0", pg)])),
            ("pg_status", dict(vec![("0", status)])),
            ("entries", List(vec![entry])),
        ])
    }
    fn with_proto(bytes: &[u8], protocol: u8) -> Vec<u8> {
        let mut v = bytes.to_vec();
        v[1] = protocol;
        v
    }
    fn all_protocols() -> Vec<Vec<u8>> {
        vec![FR_P0.into(), FR_P1.into(), FR_P2.into(), with_proto(FR_P2, 3), FR_P4.into(), with_proto(FR_P4, 5)]
    }
    fn error(bytes: &[u8]) -> PickleError {
        decode(bytes).expect_err("the pickle should be refused")
    }

    #[test]
    fn a_flight_recorder_dump_in_every_protocol() {
        for (p, bytes) in all_protocols().iter().enumerate() {
            assert_eq!(decode(bytes), Ok(flight_recorder()), "protocol {p}");
            assert_eq!(super::super::looks_like_pickle(bytes), p >= 2, "protocol {p}");
        }
        let dump = decode(FR_P2).unwrap();
        let entry = &dump.get("entries").unwrap().items()[0];
        assert_eq!(dump.get("version").and_then(Value::as_str), Some("2.9"));
        assert_eq!(entry.get("time_created_ns").and_then(Value::as_i64), Some(1724779239936775119));
        assert_eq!(entry.get("duration_ms").and_then(Value::as_f64), Some(1.5));
        assert_eq!(entry.get("timeout_ms").and_then(Value::as_f64), Some(600000.0));
        assert_eq!(entry.get("retired").and_then(Value::as_bool), Some(true));
        assert_eq!(entry.get("process_group").unwrap().items().len(), 2);
        assert_eq!(entry.entries().len(), 13);
        assert_eq!((entry.get("missing"), s("x").items(), s("x").entries()), (None, &[][..], &[][..]));
    }

    #[test]
    fn shared_and_memoized_before_filled() {
        let a = List(vec![Int(1), Int(2)]);
        let want = List(vec![a.clone(), a.clone(), Value::Dict(vec![(s("k"), a)])]);
        assert_eq!(decode(SHARED_P0), Ok(want.clone()));
        assert_eq!(decode(SHARED_P2), Ok(want));
    }

    #[test]
    fn integers_beyond_i64() {
        let want = List(vec![BigInt, Int(-1), Int(i64::MAX), Int(i64::MIN), BigInt, BigInt]);
        for bytes in [BIG_P0, BIG_P1, BIG_P2] {
            assert_eq!(decode(bytes), Ok(want.clone()));
        }
        // Longer than needed but only sign-extended: still in i64. LONG4 too.
        assert_eq!(decode(b"\x80\x02\x8a\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff."), Ok(Int(-1)));
        assert_eq!(decode(b"\x80\x02\x8b\x02\x00\x00\x00\x00\x80."), Ok(Int(-32768)));
        assert_eq!(decode(b"\x80\x02\x8a\x00."), Ok(Int(0)));
    }

    #[test]
    fn the_other_plain_opcodes() {
        let text = "a\\b\nc\u{e9}\u{20ac}";
        let want = List(vec![
            List(vec![Int(1), Int(2)]),
            List(vec![Int(3)]),
            Bytes(b"ab".to_vec()),
            Bytes(b"cd".to_vec()),
            s(text),
            Tuple(vec![]),
            Tuple(vec![Int(1)]),
            Tuple(vec![Int(1), Int(2), Int(3)]),
            Float(0.25),
            Int(-5),
            Int(70000),
            Value::None,
        ]);
        assert_eq!(decode(MISC_P5), Ok(want));
        let want = List(vec![
            s(&format!("{text}\u{1f600}")),
            Float(0.25),
            Tuple(vec![]),
            Tuple(vec![Int(1)]),
            List(vec![]),
            Value::Dict(vec![]),
            Bool(true),
            Bool(false),
            Int(1 << 40),
        ]);
        assert_eq!(decode(MISC_P0), Ok(want));
        // Python 2 strings (STRING, BINSTRING, SHORT_BINSTRING) as latin-1; POP, POP_MARK, DUP.
        assert_eq!(decode(b"S'a\\n\\x41\\101\\'\\q'\n."), Ok(s("a\nAA'\\q")));
        let py2 = Tuple(vec![s("ab"), s("c\u{e9}")]);
        assert_eq!(decode(b"(T\x02\x00\x00\x00abU\x02c\xe9I5\n0t."), Ok(py2));
        assert_eq!(decode(b"N(NN12\x86."), Ok(Tuple(vec![Value::None, Value::None])));
        assert_eq!(decode(b"U\x01a0N."), Ok(Value::None));
        assert_eq!(decode(b"\x80\x02U\x02c\xe9.").unwrap().as_str(), Some("c\u{e9}"));
    }

    #[test]
    fn code_is_refused_by_name() {
        // pickle.dumps(R(), protocol=0) where R.__reduce__ returns (os.system, ("true",)).
        let e = error(b"cos\nsystem\n(Vtrue\np1\ntp2\nRp3\n.");
        assert_eq!(e.offset, 0);
        assert!(e.message.starts_with("opcode GLOBAL (0x63) would construct an object"), "{e}");
        let e = error(b"\x80\x04\x8c\x02os\x8c\x06system\x93\x8c\x04true\x85R.");
        assert_eq!((e.offset, e.to_string().contains("STACK_GLOBAL (0x93)")), (14, true), "{e}");
        for op in [b'R', b'b', b'i', b'o', 0x81, 0x92, b'P', b'Q', 0x82, 0x97, 0x98] {
            assert!(error(&[0x80, 5, op, b'.']).message.contains("would construct an object"));
        }
        assert_eq!(error(b"\x80\x02\xff.").message, "unknown opcode 0xff");
        assert_eq!(
            error(b"\x80\x06N.").to_string(),
            "at byte 0: unsupported pickle protocol 6 (this reader knows 0 to 5)"
        );
    }

    #[test]
    fn every_byte_is_an_opcode_handled_or_refused_or_unknown() {
        assert_eq!(OPS.len(), NAMES.split(' ').count());
        for op in 0..=255_u8 {
            let message = error(&[op]).message;
            assert_eq!(message == format!("unknown opcode 0x{op:02x}"), !OPS.contains(&op), "{message}");
        }
    }

    #[test]
    fn every_prefix_is_an_error() {
        for bytes in all_protocols().iter().map(Vec::as_slice).chain([SHARED_P0, BIG_P2, MISC_P5, MISC_P0]) {
            for end in 0..bytes.len() {
                assert!(decode(&bytes[..end]).is_err(), "prefix of {end} bytes");
            }
        }
        let e = error(&FR_P2[..12]);
        assert_eq!(e.to_string(), "at byte 6: truncated: needed 7 bytes for BINUNICODE, 1 left");
        assert_eq!(error(b"I12").message, "truncated: needed a line ending in \\n for INT");
        // Trailing bytes after STOP are ignored.
        assert_eq!(decode(b"N.garbage"), Ok(Value::None));
    }

    #[test]
    fn exponential_sharing_is_refused_before_it_is_built() {
        // l0 = []; l1 = [l0, l0]; ...; l60 = [l59, l59]: 2**60 lists once copied.
        let mut gets = b"\x80\x02]q\x00".to_vec();
        for i in 1..=60_u8 {
            gets.extend([b']', b'(', b'h', i - 1, b'h', i - 1, b'e', b'q', i]);
        }
        gets.push(b'.');
        // The same with DUP: (((l, l), (l, l)), ...) 64 times.
        let mut dups = b"\x80\x02]".to_vec();
        for _ in 0..64 {
            dups.extend([b'2', 0x86]);
        }
        dups.push(b'.');
        for bytes in [gets, dups] {
            assert!(error(&bytes).message.contains("Limits::max_values"));
        }
        // Within the limits, the copies are made.
        let small = Limits { max_values: 7, ..Limits::default() };
        let want = Tuple(vec![Tuple(vec![List(vec![]), List(vec![])]); 2]);
        assert_eq!(decode_with(b"]2\x862\x86.", &small), Ok(want));
        assert!(decode_with(b"]2\x862\x86.", &Limits { max_values: 6, ..small }).is_err());
        // A string is weighed by its size, so copying a big one is no way round the limit.
        let mut big = b"\x80\x04\x8d\x00\x00\x10\x00\x00\x00\x00\x00".to_vec();
        big.extend(std::iter::repeat_n(b'x', 1 << 20));
        big.extend(b"\x94(");
        big.extend(std::iter::repeat_n(*b"h\x00", 2000).flatten());
        big.extend(b"l.");
        assert!(error(&big).message.contains("Limits::max_values"));
    }

    #[test]
    fn declared_lengths_are_checked_before_allocating() {
        let e = error(b"\x80\x04X\xff\xff\xff\xffabc.");
        assert_eq!(e.message, "truncated: needed 4294967295 bytes for BINUNICODE, 4 left");
        assert!(error(b"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\xffab.").message.contains("BINUNICODE8"));
        assert!(error(b"\x80\x04\x8e\xff\xff\xff\xff\xff\xff\xff\x7fab.").message.contains("BINBYTES8"));
        assert!(error(b"\x80\x02\x8b\xff\xff\xff\x7fab.").message.contains("LONG4"));
        assert!(error(b"\x80\x02\x8b\xff\xff\xff\xffab.").message.contains("negative length"));
        assert!(error(b"T\x00\x00\x00\x80ab.").message.contains("negative length"));
    }

    #[test]
    fn nesting_is_bounded() {
        let nested = |depth: usize| [vec![b']'; depth], vec![b'a'; depth - 1], vec![b'.']].concat();
        let mut v = decode(&nested(256)).unwrap();
        for _ in 1..256 {
            v = v.items()[0].clone();
        }
        assert_eq!(v, List(vec![]));
        assert!(error(&nested(257)).message.contains("Limits::max_depth"));
        assert!(error(&nested(100_000)).message.contains("Limits::max_depth"));
        assert!(error(&[b'('; 300]).message.contains("Limits::max_depth"));
        // l = []; l.append(l); pickle.dumps(l, protocol=2)
        assert!(error(b"\x80\x02]q\x00h\x00a.").message.contains("inside itself"));
    }

    #[test]
    fn memo_and_stack_misuse() {
        assert_eq!(error(b"h\x05.").message, "BINGET of memo key 5, which was never stored");
        assert!(error(b"q\x00.").message.contains("needs a value on the stack"));
        assert!(error(b"NNa.").message.contains("needs a List"));
        assert!(error(b"}(Nd.").message.contains("a key but no value"));
        assert!(error(b"N(e.").message.contains("needs a List"));
        assert!(error(b"NN\x87.").message.contains("needs 3 values"));
        assert!(error(b"e.").message.contains("without a MARK"));
        let few = Limits { max_memo: 2, ..Limits::default() };
        assert!(decode_with(b"Np0\np1\np0\n.", &few).is_ok());
        assert!(decode_with(b"N\x94\x94\x94.", &few).unwrap_err().message.contains("Limits::max_memo"));
    }
}
