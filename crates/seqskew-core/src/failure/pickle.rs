//! A small, bounded pickle decoder for PyTorch Flight Recorder dumps, which `torch.distributed`
//! writes with `pickle.dump` of plain dicts, lists, tuples, strings and numbers.
//!
//! Safety: nothing here imports a name, builds an object or calls code. The opcodes that would
//! (`GLOBAL`, `REDUCE`, `BUILD`, ...) are rejected by name, so a hostile file can only cost the
//! memory and time the [`Limits`] allow. It never causes a panic, a stack overflow or an
//! allocation its own bytes cannot back.
//!
//! Shape: decoding fills an arena, the [`Tree`], and nothing is copied out of it: readers walk
//! it through [`Node`], a copyable view. Strings borrow the input wherever its bytes already are
//! the text (the UTF-8 opcodes, ASCII byte strings); only escaped and latin-1 ones are owned.
//! The elements of every container live in one shared array, as runs (one per `APPENDS` or
//! `SETITEMS` batch, merged when they follow each other), and MARKs are positions in the one
//! stack: a container costs no allocation of its own. BININT1's small integers, None, True and
//! False are made once per tree. Memo keys, which Python numbers 0, 1, 2, ..., index a dense
//! array.
//!
//! Sharing: Python's memo lets one object appear in many places, and a container is memoized
//! *before* it is filled (`EMPTY_LIST`, `BINPUT`, then `APPENDS`), so the stack and the memo hold
//! node indices, as Python holds references. A walk that follows every reference can then meet
//! far more values than the arena holds (a list holding a list twice, which holds a list twice,
//! ...), and a container can be put inside itself. So a returned tree is one that no walk can
//! lose itself in: acyclic, at most [`Limits::max_depth`] containers deep, and at most
//! [`Limits::max_values`] values met by a walk of it. Each container counts what a walk of it
//! meets and how deep it goes as it is filled, from the counts its elements carry on the stack,
//! and is refused at the opcode that passes a limit. The counts stay exact while no container is
//! filled after it was pushed a second time (by a GET or DUP): Python shares a container once it
//! is whole, and dumps share their stack frames that way. Otherwise the counts may be too low
//! (or the container inside itself), and `STOP` measures the tree again, in time linear in the
//! arena. Any walk of a returned tree (a reader, `Debug`) therefore ends, within the limits.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

/// A decoded pickle: an arena of values borrowing the input's bytes, and its root. Acyclic, at
/// most [`Limits::max_depth`] containers deep, and at most [`Limits::max_values`] values when a
/// walk counts each shared value once per reference to it.
pub struct Tree<'a> {
    slots: Vec<Slot>,
    /// The strings `Slot::Str` points to.
    texts: Vec<Cow<'a, str>>,
    /// The byte strings `Slot::Bytes` points to.
    blobs: Vec<&'a [u8]>,
    /// The containers' elements, as runs; a dict's are key, value, key, value, ...
    children: Vec<u32>,
    runs: Vec<Run>,
    root: u32,
}

impl Tree<'_> {
    /// The decoded value (the object `pickle.load` would return).
    pub fn root(&self) -> Node<'_> {
        Node { tree: self, id: self.root }
    }
}

impl fmt::Debug for Tree<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.root().fmt(f)
    }
}

/// One value of a [`Tree`]: a view to read it by, as cheap to copy as a reference.
#[derive(Clone, Copy)]
pub struct Node<'t> {
    tree: &'t Tree<'t>,
    id: u32,
}

/// What a [`Node`] holds. Sets and frozensets read as lists (a dump has none, and a set of
/// values would need hashing floats).
pub enum Value<'t> {
    None,
    Bool(bool),
    Int(i64),
    /// An integer beyond i64 (a `LONG`, `LONG1` or `LONG4` too long for it), kept only as a
    /// marker. The dump's counters and times fit in i64; nothing here needs the digits.
    BigInt,
    Float(f64),
    Str(&'t str),
    Bytes(&'t [u8]),
    List(Items<'t>),
    Tuple(Items<'t>),
    Dict(Entries<'t>),
}

impl<'t> Node<'t> {
    pub fn value(self) -> Value<'t> {
        let tree = self.tree;
        match tree.slots.get(self.id as usize) {
            None | Some(Slot::None) => Value::None,
            Some(Slot::Bool(b)) => Value::Bool(*b),
            Some(Slot::Int(i)) => Value::Int(*i),
            Some(Slot::BigInt) => Value::BigInt,
            Some(Slot::Float(f)) => Value::Float(*f),
            Some(Slot::Str(index)) => tree.texts.get(*index as usize).map_or(Value::None, |s| Value::Str(s)),
            Some(Slot::Bytes(index)) => tree.blobs.get(*index as usize).map_or(Value::None, |b| Value::Bytes(b)),
            Some(Slot::Seq(seq)) => {
                let items = Items::of(tree, seq);
                match seq.kind {
                    Kind::List => Value::List(items),
                    Kind::Tuple => Value::Tuple(items),
                    Kind::Dict => Value::Dict(Entries(items)),
                }
            }
        }
    }
    /// The value under the string key `key` in a dict. A hostile pickle can set one key twice:
    /// the last pair wins, as it would in Python's dict.
    pub fn get(self, key: &str) -> Option<Node<'t>> {
        self.entries().filter(|(k, _)| k.as_str() == Some(key)).last().map(|(_, v)| v)
    }
    pub fn as_str(self) -> Option<&'t str> {
        if let Value::Str(s) = self.value() { Some(s) } else { None }
    }
    pub fn as_i64(self) -> Option<i64> {
        if let Value::Int(i) = self.value() { Some(i) } else { None }
    }
    /// An Int or a Float as f64 (Python writes `1.0` and `1` for the same duration).
    pub fn as_f64(self) -> Option<f64> {
        match self.value() {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            _ => None,
        }
    }
    pub fn as_bool(self) -> Option<bool> {
        if let Value::Bool(b) = self.value() { Some(b) } else { None }
    }
    /// The elements of a List or a Tuple; none for anything else.
    pub fn items(self) -> Items<'t> {
        match self.value() {
            Value::List(items) | Value::Tuple(items) => items,
            _ => Items::empty(self.tree),
        }
    }
    /// The pairs of a Dict, in the order they were written; none for anything else.
    pub fn entries(self) -> Entries<'t> {
        match self.value() {
            Value::Dict(entries) => entries,
            _ => Entries(Items::empty(self.tree)),
        }
    }
}

/// Values `Debug` shows at most: a tree within the limits can still stand for millions of
/// them, and a message needs a few. It also bounds the recursion.
const DEBUG_SHOWN: usize = 1000;

impl fmt::Debug for Node<'_> {
    /// Python's notation, cut with `…` after `DEBUG_SHOWN` values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut budget = DEBUG_SHOWN;
        debug(*self, f, &mut budget)
    }
}

fn debug(node: Node<'_>, f: &mut fmt::Formatter<'_>, budget: &mut usize) -> fmt::Result {
    let Some(left) = budget.checked_sub(1) else { return f.write_str("…") };
    *budget = left;
    match node.value() {
        Value::None => f.write_str("None"),
        Value::Bool(b) => f.write_str(if b { "True" } else { "False" }),
        Value::Int(i) => write!(f, "{i}"),
        Value::BigInt => f.write_str("<int beyond i64>"),
        Value::Float(x) => write!(f, "{x:?}"),
        Value::Str(s) => write!(f, "{s:?}"),
        Value::Bytes(b) => write!(f, "b{:?}", String::from_utf8_lossy(b)),
        Value::List(items) => debug_seq(items.map(|item| (None, item)), "[", "]", f, budget),
        Value::Tuple(items) => debug_seq(items.map(|item| (None, item)), "(", ")", f, budget),
        Value::Dict(entries) => debug_seq(entries.map(|(k, v)| (Some(k), v)), "{", "}", f, budget),
    }
}

/// A container's elements (a dict's as `key: value`), stopping once the budget is spent.
fn debug_seq<'t>(
    elements: impl Iterator<Item = (Option<Node<'t>>, Node<'t>)>,
    open: &str,
    close: &str,
    f: &mut fmt::Formatter<'_>,
    budget: &mut usize,
) -> fmt::Result {
    f.write_str(open)?;
    for (i, (key, value)) in elements.enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        if *budget == 0 {
            f.write_str("…")?;
            break;
        }
        if let Some(key) = key {
            debug(key, f, budget)?;
            f.write_str(": ")?;
        }
        debug(value, f, budget)?;
    }
    f.write_str(close)
}

/// The elements of a List or a Tuple, or all the keys and values of a Dict, in order.
#[derive(Clone)]
pub struct Items<'t> {
    tree: &'t Tree<'t>,
    /// What is left of the run being read.
    run: std::slice::Iter<'t, u32>,
    next_run: u32,
    remaining: usize,
}

impl<'t> Items<'t> {
    fn of(tree: &'t Tree<'t>, seq: &Seq) -> Self {
        Items { tree, run: [].iter(), next_run: seq.first_run, remaining: seq.len as usize }
    }
    fn empty(tree: &'t Tree<'t>) -> Self {
        Items { tree, run: [].iter(), next_run: NO_RUN, remaining: 0 }
    }
}

impl<'t> Iterator for Items<'t> {
    type Item = Node<'t>;
    fn next(&mut self) -> Option<Node<'t>> {
        // Runs only link to runs made after them, so this ends.
        loop {
            if let Some(&id) = self.run.next() {
                self.remaining = self.remaining.saturating_sub(1);
                return Some(Node { tree: self.tree, id });
            }
            let run = self.tree.runs.get(self.next_run as usize)?;
            let (start, len) = (run.start as usize, run.len as usize);
            self.run = self.tree.children.get(start..start.saturating_add(len)).unwrap_or_default().iter();
            self.next_run = run.next;
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Items<'_> {}

/// The key-value pairs of a Dict, in the order they were written.
#[derive(Clone)]
pub struct Entries<'t>(Items<'t>);

impl<'t> Iterator for Entries<'t> {
    type Item = (Node<'t>, Node<'t>);
    fn next(&mut self) -> Option<Self::Item> {
        Some((self.0.next()?, self.0.next()?))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let pairs = self.0.remaining / 2;
        (pairs, Some(pairs))
    }
}

impl ExactSizeIterator for Entries<'_> {}

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
    /// Containers nested in containers, and MARKs open at once. The limit keeps recursive walks
    /// of a tree (a reader's, `Debug`) far from the stack's end. Real dumps nest about 5 deep.
    pub max_depth: usize,
    /// Values the opcodes make, and values a walk of the tree can meet, counting every
    /// reference to a shared one. There a string or bytes value counts one more per 32 bytes
    /// it holds, so the limit also bounds what a reader copying every value it meets could
    /// allocate (under 64 bytes per unit). Counts past 2^32 are refused whatever the limit.
    pub max_values: usize,
    /// Entries in the memo (Python's table of shared objects).
    pub max_memo: usize,
}

impl Default for Limits {
    /// Far above a real dump (a few hundred thousand values for a few thousand entries with
    /// their stack frames), while a hostile file's walk stays near a gigabyte at most.
    fn default() -> Self {
        Limits { max_depth: 256, max_values: 20_000_000, max_memo: 10_000_000 }
    }
}

/// Decodes a whole pickle with [`Limits::default`]. Bytes after `STOP` are ignored.
pub fn decode(bytes: &[u8]) -> Result<Tree<'_>, PickleError> {
    decode_with(bytes, &Limits::default())
}

/// Decodes a whole pickle within `limits`. Bytes after `STOP` are ignored.
pub fn decode_with<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Tree<'a>, PickleError> {
    // The arena counts in u32: every count is below the input's length.
    if u32::try_from(bytes.len()).is_err() {
        return Err(PickleError { offset: 0, message: "over 4 GiB: too large for this reader".into() });
    }
    let mut input = Cursor { bytes, pos: 0 };
    let mut machine = Machine::new(limits, bytes.len());
    loop {
        let at = input.pos;
        let fail = |message: String| PickleError { offset: at, message };
        let Some(&op) = bytes.get(at) else {
            return Err(fail("truncated: the pickle ends before its STOP opcode".into()));
        };
        input.pos += 1;
        match machine.step(op, &mut input) {
            Ok(None) => {}
            Ok(Some(root)) => return machine.finish(root).map_err(fail),
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
            None => Err(self.truncated(len, name)),
        }
    }
    #[cold]
    fn truncated(&self, len: u64, name: Op) -> String {
        let left = self.bytes.len().saturating_sub(self.pos);
        format!("truncated: needed {len} bytes for {name}, {left} left")
    }
    // The fixed-size reads are the decoder's most frequent work (a BINGET's key): inlined, and
    // without going through `take`.
    #[inline]
    fn fixed<const N: usize>(&mut self, name: Op) -> Result<[u8; N], String> {
        let end = self.pos.saturating_add(N);
        match self.bytes.get(self.pos..end).and_then(|head| <[u8; N]>::try_from(head).ok()) {
            Some(head) => {
                self.pos = end;
                Ok(head)
            }
            None => Err(self.truncated(N as u64, name)),
        }
    }
    #[inline]
    fn u8(&mut self, name: Op) -> Result<u8, String> {
        match self.bytes.get(self.pos) {
            Some(&byte) => {
                self.pos += 1;
                Ok(byte)
            }
            None => Err(self.truncated(1, name)),
        }
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

/// One value in the arena, in 24 bytes (text and bytes by their index in the tree's lists of
/// them), since a dump decodes to hundreds of thousands.
enum Slot {
    None,
    Bool(bool),
    Int(i64),
    BigInt,
    Float(f64),
    Str(u32),
    Bytes(u32),
    Seq(Seq),
}

/// A container: its elements (the runs from `first_run` on, `len` in all), and what a walk of
/// it meets, counted as it is filled.
struct Seq {
    kind: Kind,
    /// Pushed a second time (by a GET or DUP), so it may be in more than one place.
    shared: bool,
    len: u32,
    first_run: u32,
    last_run: u32,
    /// The values a walk of it meets (as `Limits::max_values` counts them) and how many
    /// containers deep it goes. Exact until a shared container is filled (`Machine::stale`),
    /// and never more than the truth.
    weight: u32,
    height: u32,
}

/// The values made once per tree and pushed wherever they occur, at the start of the arena:
/// BININT1's 256 integers, then None, True and False. Dumps write thousands of them, and a
/// leaf met through many references costs a walk no more than as many copies would.
const SMALL_INTS: u32 = 256;
const NONE_ID: u32 = SMALL_INTS;
const TRUE_ID: u32 = SMALL_INTS + 1;
const FALSE_ID: u32 = SMALL_INTS + 2;

/// No run: the end of a container's chain of runs (or an empty container's first).
const NO_RUN: u32 = u32::MAX;

/// Consecutive elements of one container in `Tree::children`, and the run its elements go on
/// in (`NO_RUN` for none).
struct Run {
    start: u32,
    len: u32,
    next: u32,
}

/// A value on the stack or in the memo: its node and, as in [`Seq`], its weight and height (a
/// leaf's height is 0). A container's are as they were when it was pushed or memoized, so
/// they are read again from the arena when the memo gives it back.
#[derive(Clone, Copy)]
struct Held {
    id: u32,
    weight: u32,
    height: u32,
}

/// Python's memo. Python's pickler numbers keys 0, 1, 2, ... (and `MEMOIZE` takes the next
/// number), so they index `dense`; any other key goes to `sparse`, so that no allocation
/// follows a key's value. A key is in one of the two, never both.
#[derive(Default)]
struct Memo {
    dense: Vec<Held>,
    /// SipHash, not a faster hash: these keys are the input's choice.
    sparse: HashMap<u64, Held>,
}

impl Memo {
    fn len(&self) -> usize {
        self.dense.len() + self.sparse.len()
    }
    #[inline]
    fn get(&self, key: u64) -> Option<Held> {
        let dense = usize::try_from(key).ok().and_then(|i| self.dense.get(i));
        // Hashing costs more than the rest of a BINGET: skipped while nothing is sparse.
        let sparse = || if self.sparse.is_empty() { None } else { self.sparse.get(&key) };
        dense.or_else(sparse).copied()
    }
    /// Stores (or, as in Python, replaces) `key`; `false` when it is new and the memo full.
    fn put(&mut self, key: u64, value: Held, max: usize) -> bool {
        let index = usize::try_from(key).ok();
        if let Some(slot) = index.and_then(|i| self.dense.get_mut(i)) {
            *slot = value;
            return true;
        }
        let replacing = !self.sparse.is_empty() && self.sparse.contains_key(&key);
        if !replacing && self.len() >= max {
            return false;
        }
        if !replacing && index == Some(self.dense.len()) {
            self.dense.push(value);
        } else {
            self.sparse.insert(key, value);
        }
        true
    }
}

/// Python's unpickler with the object-building half removed. `marks` holds where each open
/// MARK's items start in `stack`; as in `pickle.py`, an opcode cannot reach below the last one.
struct Machine<'a, 'l> {
    limits: &'l Limits,
    tree: Tree<'a>,
    stack: Vec<Held>,
    marks: Vec<usize>,
    memo: Memo,
    /// Whether a shared container was filled: the weights and heights counted before, in the
    /// containers it is in, may be too low (or it may now be inside itself), so STOP measures
    /// the tree. Python's memo shares a container once it is whole, so dumps never do this.
    stale: bool,
    /// Values made by the opcodes so far (a value made once per tree counts each time).
    made: usize,
}

impl<'a, 'l> Machine<'a, 'l> {
    /// A machine for `input_len` bytes of pickle. The arena is sized from it as a dump fills
    /// it (a value per 10 bytes, a container's element per 4, a run per 16; growing past that
    /// is only slower), since growing copies what is there; this stays within what the input
    /// backs.
    fn new(limits: &'l Limits, input_len: usize) -> Self {
        let made_once = (0..SMALL_INTS).map(|i| Slot::Int(i.into()));
        let mut slots = Vec::with_capacity(made_once.len() + 3 + input_len / 10);
        slots.extend(made_once.chain([Slot::None, Slot::Bool(true), Slot::Bool(false)]));
        let (children, runs) = (Vec::with_capacity(input_len / 4), Vec::with_capacity(input_len / 16));
        let tree = Tree { slots, texts: Vec::new(), blobs: Vec::new(), children, runs, root: 0 };
        Machine { limits, tree, stack: Vec::new(), marks: Vec::new(), memo: Memo::default(), stale: false, made: 0 }
    }

    /// Runs one opcode; `Some(root)` at STOP.
    fn step(&mut self, op: u8, input: &mut Cursor<'a>) -> Result<Option<u32>, String> {
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
            b'.' => return self.pop(name).map(|root| Some(root.id)),
            b'(' => {
                if self.marks.len() >= self.limits.max_depth {
                    return Err(format!("MARKs nested deeper than {} (Limits::max_depth)", self.limits.max_depth));
                }
                self.marks.push(self.stack.len());
            }
            // As in Python, POP on an empty stack pops back to the last MARK.
            b'0' => {
                if self.stack.len() > self.floor() {
                    self.stack.pop();
                } else {
                    self.close_mark(name)?;
                }
            }
            b'1' => {
                let mark = self.close_mark(name)?;
                self.stack.truncate(mark);
            }
            b'2' => {
                let top = self.top(name)?;
                self.push_again(top);
            }
            b'N' => self.push_made(NONE_ID)?,
            0x88 => self.push_made(TRUE_ID)?,
            0x89 => self.push_made(FALSE_ID)?,
            // Protocols 0 and 1 write True and False as INT `01` and `00`.
            b'I' => match input.line(name)? {
                b"01" => self.push_made(TRUE_ID)?,
                b"00" => self.push_made(FALSE_ID)?,
                text => self.push_scalar(int_text(text, name)?)?,
            },
            b'J' => self.push_scalar(Slot::Int(input.fixed(name).map(i32::from_le_bytes)?.into()))?,
            b'K' => self.push_made(input.u8(name)?.into())?,
            b'M' => self.push_scalar(Slot::Int(input.fixed(name).map(u16::from_le_bytes)?.into()))?,
            b'L' => {
                let text = input.line(name)?;
                self.push_scalar(int_text(text.strip_suffix(b"L").unwrap_or(text), name)?)?;
            }
            0x8a => {
                let len = input.u8(name)?;
                self.push_scalar(long_le(input.take(len.into(), name)?))?;
            }
            0x8b => {
                let len = input.signed_len(name)?;
                self.push_scalar(long_le(input.take(len, name)?))?;
            }
            b'F' => {
                let text = input.line(name)?;
                let v = std::str::from_utf8(text).ok().and_then(|t| t.trim().parse().ok());
                let v = v.ok_or_else(|| format!("{name} argument {:?} is not a number", lossy(text)))?;
                self.push_scalar(Slot::Float(v))?;
            }
            b'G' => self.push_scalar(Slot::Float(input.fixed(name).map(f64::from_be_bytes)?))?,
            b'S' => {
                let text = input.line(name)?;
                let quoted = match text {
                    [q @ (b'\'' | b'"'), inner @ .., end] if q == end => inner,
                    _ => return Err(format!("{name} argument {:?} is not quoted", lossy(text))),
                };
                self.push_str(latin1(&escape_decode(quoted)?).into_owned().into())?;
            }
            b'T' => {
                let len = input.signed_len(name)?;
                self.push_str(latin1(input.take(len, name)?))?;
            }
            b'U' => {
                let len = input.u8(name)?;
                self.push_str(latin1(input.take(len.into(), name)?))?;
            }
            b'V' => self.push_str(raw_unicode_escape(input.line(name)?)?.into())?,
            b'X' | 0x8c | 0x8d => {
                let len = match op {
                    b'X' => input.u32(name)?.into(),
                    0x8c => input.u8(name)?.into(),
                    _ => input.u64(name)?,
                };
                // Python encodes lone surrogates with "surrogatepass"; a Rust string cannot
                // hold them, so they become U+FFFD rather than an error. Checking first is
                // faster for the valid text that dumps hold.
                let bytes = input.take(len, name)?;
                let text = std::str::from_utf8(bytes).map_or_else(|_| String::from_utf8_lossy(bytes), Cow::Borrowed);
                self.push_str(text)?;
            }
            b'B' | b'C' | 0x8e | 0x96 => {
                let len = match op {
                    b'B' => input.u32(name)?.into(),
                    b'C' => input.u8(name)?.into(),
                    _ => input.u64(name)?,
                };
                self.push_bytes(input.take(len, name)?)?;
            }
            b'}' => self.push_seq(Seq::empty(Kind::Dict))?,
            b'd' => {
                let mark = self.close_mark(name)?;
                self.check_pairs(mark, name)?;
                self.collect(Kind::Dict, mark, name)?;
            }
            b's' => self.extend_top(Kind::Dict, 2, name)?,
            b'u' => {
                let mark = self.close_mark(name)?;
                self.check_pairs(mark, name)?;
                self.extend(Kind::Dict, mark, name)?;
            }
            b']' | 0x8f => self.push_seq(Seq::empty(Kind::List))?,
            b'l' | 0x91 => {
                let mark = self.close_mark(name)?;
                self.collect(Kind::List, mark, name)?;
            }
            b'a' => self.extend_top(Kind::List, 1, name)?,
            b'e' | 0x90 => {
                let mark = self.close_mark(name)?;
                self.extend(Kind::List, mark, name)?;
            }
            b')' => self.push_seq(Seq::empty(Kind::Tuple))?,
            b't' => {
                let mark = self.close_mark(name)?;
                self.collect(Kind::Tuple, mark, name)?;
            }
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                let from = self.stack.len().checked_sub(n).filter(|&from| from >= self.floor());
                let from = from.ok_or_else(|| format!("{name} needs {n} values on the stack"))?;
                self.collect(Kind::Tuple, from, name)?;
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

    /// Counts a value made, against `Limits::max_values`.
    #[inline]
    fn count_made(&mut self) -> Result<(), String> {
        if self.made >= self.limits.max_values {
            return Err(format!("more than {} values (Limits::max_values)", self.limits.max_values));
        }
        self.made += 1;
        Ok(())
    }
    /// Adds a value to the arena (not yet to the stack).
    #[inline]
    fn add_slot(&mut self, slot: Slot) -> Result<u32, String> {
        self.count_made()?;
        let id = u32::try_from(self.tree.slots.len()).map_err(|_| too_many())?;
        self.tree.slots.push(slot);
        Ok(id)
    }
    /// Pushes one of the values made once per tree (`SMALL_INTS`, `NONE_ID`, ...).
    #[inline]
    fn push_made(&mut self, id: u32) -> Result<(), String> {
        self.count_made()?;
        self.stack.push(Held { id, weight: 1, height: 0 });
        Ok(())
    }
    /// Adds a leaf of `weight` (its share of `Limits::max_values`) and pushes it.
    fn push_leaf(&mut self, slot: Slot, weight: usize) -> Result<(), String> {
        let weight = u32::try_from(weight).map_err(|_| too_many())?;
        let id = self.add_slot(slot)?;
        self.stack.push(Held { id, weight, height: 0 });
        Ok(())
    }
    fn push_scalar(&mut self, slot: Slot) -> Result<(), String> {
        self.push_leaf(slot, 1)
    }
    fn push_str(&mut self, text: Cow<'a, str>) -> Result<(), String> {
        let index = u32::try_from(self.tree.texts.len()).map_err(|_| too_many())?;
        self.push_leaf(Slot::Str(index), sized_weight(text.len()))?;
        self.tree.texts.push(text);
        Ok(())
    }
    fn push_bytes(&mut self, bytes: &'a [u8]) -> Result<(), String> {
        let index = u32::try_from(self.tree.blobs.len()).map_err(|_| too_many())?;
        self.push_leaf(Slot::Bytes(index), sized_weight(bytes.len()))?;
        self.tree.blobs.push(bytes);
        Ok(())
    }
    /// Adds a container and pushes it.
    fn push_seq(&mut self, seq: Seq) -> Result<(), String> {
        let (weight, height) = (seq.weight, seq.height);
        let id = self.add_slot(Slot::Seq(seq))?;
        self.stack.push(Held { id, weight, height });
        Ok(())
    }
    /// Pushes a value once more (DUP, GET). A container becomes shared, and what it holds now
    /// is read from the arena: it may have been filled since `held` was taken.
    fn push_again(&mut self, held: Held) {
        let mut held = held;
        // Only a container has a height.
        if held.height > 0
            && let Some(Slot::Seq(seq)) = self.tree.slots.get_mut(held.id as usize)
        {
            seq.shared = true;
            (held.weight, held.height) = (seq.weight, seq.height);
        }
        self.stack.push(held);
    }
    /// The tree of `root`. Its containers' weights and depths were checked as they were filled;
    /// only when those may be too low is it measured again.
    fn finish(self, root: u32) -> Result<Tree<'a>, String> {
        let mut tree = self.tree;
        tree.root = root;
        if self.stale {
            measure(&tree, self.limits)?;
        }
        Ok(tree)
    }
    /// Where the items above the last MARK start (0 without one).
    fn floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }
    fn top(&self, name: Op) -> Result<Held, String> {
        let top = self.stack.last().copied().filter(|_| self.stack.len() > self.floor());
        top.ok_or_else(|| format!("{name} needs a value on the stack, found none"))
    }
    fn pop(&mut self, name: Op) -> Result<Held, String> {
        let top = self.top(name)?;
        self.stack.pop();
        Ok(top)
    }
    /// Closes the last MARK: its items are `stack[mark..]`, and the stack below it is the
    /// current one again.
    fn close_mark(&mut self, name: Op) -> Result<usize, String> {
        self.marks.pop().ok_or_else(|| format!("{name} without a MARK before it"))
    }
    fn check_pairs(&self, from: usize, name: Op) -> Result<(), String> {
        if self.stack.len().saturating_sub(from).is_multiple_of(2) {
            Ok(())
        } else {
            Err(format!("{name} with a key but no value"))
        }
    }
    /// Replaces `stack[from..]` with a new container of kind `kind` holding them.
    fn collect(&mut self, kind: Kind, from: usize, name: Op) -> Result<(), String> {
        let items = self.stack.get(from..).unwrap_or_default();
        let mut seq = Seq::empty(kind);
        let Tree { children, runs, .. } = &mut self.tree;
        seq.fill(items, self.limits, name, children, runs)?;
        self.stack.truncate(from);
        self.push_seq(seq)
    }
    /// APPEND and SETITEM: the top `n` values go into the container below them.
    fn extend_top(&mut self, want: Kind, n: usize, name: Op) -> Result<(), String> {
        let from = self.stack.len().checked_sub(n).filter(|&from| from >= self.floor());
        let from = from.ok_or_else(|| format!("{name} needs a value on the stack, found none"))?;
        self.extend(want, from, name)
    }
    /// Moves `stack[from..]` into the container just below them, which must be of kind `want`.
    fn extend(&mut self, want: Kind, from: usize, name: Op) -> Result<(), String> {
        let below = from.checked_sub(1).filter(|&at| at >= self.floor());
        let target = below.and_then(|at| Some((at, *self.stack.get(at)?)));
        let (items, limits) = (self.stack.get(from..).unwrap_or_default(), self.limits);
        let Tree { slots, children, runs, .. } = &mut self.tree;
        let seq = target.and_then(|(_, held)| match slots.get_mut(held.id as usize) {
            Some(Slot::Seq(seq)) if seq.kind == want => Some(seq),
            _ => None,
        });
        let (Some((at, held)), Some(seq)) = (target, seq) else {
            return Err(format!("{name} needs a {want:?} on the stack below its items"));
        };
        self.stale |= seq.shared;
        seq.fill(items, limits, name, children, runs)?;
        let grown = Held { id: held.id, weight: seq.weight, height: seq.height };
        self.stack.truncate(from);
        if let Some(target) = self.stack.get_mut(at) {
            *target = grown;
        }
        Ok(())
    }
    fn memo_put(&mut self, key: u64, name: Op) -> Result<(), String> {
        let held = self.top(name)?;
        if self.memo.put(key, held, self.limits.max_memo) {
            Ok(())
        } else {
            Err(format!("more than {} memo entries (Limits::max_memo)", self.limits.max_memo))
        }
    }
    /// Pushes the memoized node itself, not a copy: later APPENDs to it must show everywhere.
    /// Always inlined: half the opcodes of a dump are BINGETs, and a call costs as much as
    /// the rest of one.
    #[inline(always)]
    fn memo_get(&mut self, key: u64, name: Op) -> Result<(), String> {
        let held = self.memo.get(key);
        let held = held.ok_or_else(|| format!("{name} of memo key {key}, which was never stored"))?;
        self.push_again(held);
        Ok(())
    }
}

fn too_many() -> String {
    "more values than this reader can index".into()
}

fn too_heavy(limits: &Limits) -> String {
    format!(
        "the decoded values, counting each copy of a shared one, would exceed {} (Limits::max_values)",
        limits.max_values
    )
}

fn too_deep(limits: &Limits) -> String {
    format!("containers nested deeper than {} (Limits::max_depth)", limits.max_depth)
}

impl Seq {
    fn empty(kind: Kind) -> Self {
        Seq { kind, shared: false, len: 0, first_run: NO_RUN, last_run: NO_RUN, weight: 1, height: 1 }
    }
    /// Adds `items` at the end, counting them in its weight and height and refusing what
    /// passes the limits (one pass over them: every container of a dump is filled this way).
    /// They go on the last run when it ends where the next run would start (nothing was put in
    /// `children` since), else on a new run. An error leaves the arena half filled: it ends
    /// the decoding.
    fn fill(
        &mut self,
        items: &[Held],
        limits: &Limits,
        name: Op,
        children: &mut Vec<u32>,
        runs: &mut Vec<Run>,
    ) -> Result<(), String> {
        if items.is_empty() {
            return Ok(());
        }
        // Fewer than 2^32 items (each took a byte of input) of under 2^32 each: no overflow.
        let (mut weight, mut deepest) = (u64::from(self.weight), 0);
        let start = children.len();
        children.extend(items.iter().map(|held| {
            weight += u64::from(held.weight);
            deepest = deepest.max(held.height);
            held.id
        }));
        let height = self.height.max(deepest.saturating_add(1));
        if usize::try_from(weight).map_or(true, |weight| weight > limits.max_values) {
            return Err(format!("{name}: {}", too_heavy(limits)));
        }
        if height as usize > limits.max_depth {
            return Err(format!("{name}: {}", too_deep(limits)));
        }
        self.weight = u32::try_from(weight).map_err(|_| too_many())?;
        self.height = height;
        let (Ok(start), Ok(end)) = (u32::try_from(start), u32::try_from(children.len())) else {
            return Err(too_many());
        };
        // A run lies within `children`, so these sums stay at most `end`.
        let count = end - start;
        self.len = self.len.checked_add(count).ok_or_else(too_many)?;
        let last = runs.get_mut(self.last_run as usize);
        if let Some(run) = last.filter(|run| run.start + run.len == start) {
            run.len += count;
            return Ok(());
        }
        let new = u32::try_from(runs.len()).ok().filter(|&new| new != NO_RUN).ok_or_else(too_many)?;
        match runs.get_mut(self.last_run as usize) {
            Some(last) => last.next = new,
            None => self.first_run = new,
        }
        self.last_run = new;
        runs.push(Run { start, len: count, next: NO_RUN });
        Ok(())
    }
}

/// What a node counts for in a walk.
enum Weighed<'t> {
    /// A leaf, and its share of `Limits::max_values`.
    Leaf(usize),
    /// A container, and its elements.
    Container(&'t Seq),
}

impl Tree<'_> {
    fn weigh(&self, id: u32) -> Weighed<'_> {
        match self.slots.get(id as usize) {
            Some(Slot::Seq(seq)) => Weighed::Container(seq),
            Some(Slot::Str(index)) => {
                Weighed::Leaf(sized_weight(self.texts.get(*index as usize).map_or(0, |s| s.len())))
            }
            Some(Slot::Bytes(index)) => {
                Weighed::Leaf(sized_weight(self.blobs.get(*index as usize).map_or(0, |b| b.len())))
            }
            _ => Weighed::Leaf(1),
        }
    }
}

/// A string's or bytes' share of `Limits::max_values`: one, plus one per 32 bytes, so a big
/// string met many times through the memo is weighed by its size.
fn sized_weight(len: usize) -> usize {
    1 + len / 32
}

/// What the measuring pass knows of a container.
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

/// A container on the measuring pass's path: its elements left and what those done add up to.
struct Measuring<'t> {
    id: u32,
    elements: Items<'t>,
    weight: usize,
    height: usize,
}

impl<'t> Measuring<'t> {
    /// Container `id`, just met: itself, so far.
    fn start(tree: &'t Tree<'t>, id: u32, seq: &Seq) -> Self {
        Measuring { id, elements: Items::of(tree, seq), weight: 1, height: 1 }
    }
    /// Counts an element of `weight` values, `height` containers deep.
    fn add(&mut self, weight: usize, height: usize) {
        self.weight = self.weight.saturating_add(weight);
        self.height = self.height.max(height.saturating_add(1));
    }
}

/// Weighs the tree the root stands for (every reference to a shared value counted) and its
/// depth, by a depth-first walk that remembers each container's result, so that each is walked
/// once. Also refuses a structure that contains itself, which no walk could finish.
fn measure(tree: &Tree<'_>, limits: &Limits) -> Result<(), String> {
    let Weighed::Container(root) = tree.weigh(tree.root) else { return Ok(()) };
    let mut seen = vec![Seen::New; tree.slots.len()];
    if let Some(s) = seen.get_mut(tree.root as usize) {
        *s = Seen::Open;
    }
    let mut path = vec![Measuring::start(tree, tree.root, root)];
    while let Some(frame) = path.last_mut() {
        if let Some(child) = frame.elements.next() {
            match tree.weigh(child.id) {
                Weighed::Leaf(weight) => frame.add(weight, 0),
                Weighed::Container(seq) => match seen.get_mut(child.id as usize) {
                    Some(Seen::Done { weight, height }) => frame.add(*weight, *height),
                    // The path is as long as the walk is deep: past the limit, that is the answer.
                    Some(Seen::New) if path.len() >= limits.max_depth => return Err(too_deep(limits)),
                    Some(s @ Seen::New) => {
                        *s = Seen::Open;
                        path.push(Measuring::start(tree, child.id, seq));
                    }
                    _ => return Err("the pickle holds a container inside itself, which a tree cannot hold".into()),
                },
            }
            continue;
        }
        let Some(Measuring { id, weight, height, .. }) = path.pop() else { break };
        if weight > limits.max_values {
            return Err(too_heavy(limits));
        }
        if height > limits.max_depth {
            return Err(too_deep(limits));
        }
        if let Some(s) = seen.get_mut(id as usize) {
            *s = Seen::Done { weight, height };
        }
        if let Some(parent) = path.last_mut() {
            parent.add(weight, height);
        }
    }
    Ok(())
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Python 2 `str`s are bytes; reading them as latin-1 keeps every byte as one char. ASCII
/// (nearly all of them) is the same text in UTF-8, so it is borrowed.
fn latin1(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) if bytes.is_ascii() => Cow::Borrowed(text),
        _ => Cow::Owned(bytes.iter().copied().map(char::from).collect()),
    }
}

/// A decimal integer (INT, LONG), beyond i64 as `BigInt`.
fn int_text(text: &[u8], name: Op) -> Result<Slot, String> {
    let t = std::str::from_utf8(text).unwrap_or_default().trim();
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{name} argument {:?} is not a decimal integer", lossy(text)));
    }
    Ok(t.parse().map_or(Slot::BigInt, Slot::Int))
}

fn memo_key(text: &[u8], name: Op) -> Result<u64, String> {
    let key = std::str::from_utf8(text).ok().and_then(|t| t.trim().parse().ok());
    key.ok_or_else(|| format!("{name} argument {:?} is not a memo key", lossy(text)))
}

/// LONG1 and LONG4: little-endian two's complement. Python writes the fewest bytes, but a
/// longer form whose extra bytes only extend the sign is still the same number.
fn long_le(bytes: &[u8]) -> Slot {
    let negative = bytes.last().is_some_and(|&b| b & 0x80 != 0);
    let fill = if negative { 0xff } else { 0 };
    let (low, high) = bytes.split_at_checked(8).unwrap_or((bytes, &[]));
    if high.iter().any(|&b| b != fill) {
        return Slot::BigInt;
    }
    let mut word = [fill; 8];
    for (w, &b) in word.iter_mut().zip(low) {
        *w = b;
    }
    let v = i64::from_le_bytes(word);
    // 2**63 is nine bytes `00 .. 80 00`: its low eight read as i64::MIN, of the wrong sign.
    if (v < 0) == negative { Slot::Int(v) } else { Slot::BigInt }
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
    use Owned::{BigInt, Bool, Bytes, Dict, Float, Int, List, Str, Tuple};

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

    /// An owned copy of a decoded value, to compare with `==`.
    #[derive(Debug, Clone, PartialEq)]
    enum Owned {
        None,
        Bool(bool),
        Int(i64),
        BigInt,
        Float(f64),
        Str(String),
        Bytes(Vec<u8>),
        List(Vec<Owned>),
        Tuple(Vec<Owned>),
        Dict(Vec<(Owned, Owned)>),
    }

    /// Copies every value a walk of `node` meets. The recursion and the copies are bounded:
    /// a decoded tree is acyclic, at most `Limits::max_depth` deep, and a walk of it meets at
    /// most `Limits::max_values` values.
    fn owned(node: Node<'_>) -> Owned {
        match node.value() {
            Value::None => Owned::None,
            Value::Bool(b) => Bool(b),
            Value::Int(i) => Int(i),
            Value::BigInt => BigInt,
            Value::Float(f) => Float(f),
            Value::Str(s) => Str(s.to_owned()),
            Value::Bytes(b) => Bytes(b.to_vec()),
            Value::List(items) => List(items.map(owned).collect()),
            Value::Tuple(items) => Tuple(items.map(owned).collect()),
            Value::Dict(entries) => Dict(entries.map(|(k, v)| (owned(k), owned(v))).collect()),
        }
    }
    fn decoded(bytes: &[u8]) -> Result<Owned, PickleError> {
        decode(bytes).map(|tree| owned(tree.root()))
    }
    fn decoded_with(bytes: &[u8], limits: &Limits) -> Result<Owned, PickleError> {
        decode_with(bytes, limits).map(|tree| owned(tree.root()))
    }
    fn s(text: &str) -> Owned {
        Str(text.into())
    }
    fn dict(pairs: Vec<(&str, Owned)>) -> Owned {
        Dict(pairs.into_iter().map(|(k, v)| (s(k), v)).collect())
    }
    fn flight_recorder() -> Owned {
        let frame = dict(vec![("name", s("f")), ("filename", s("a.py")), ("line", Int(3))]);
        let entry = dict(vec![
            ("record_id", Int(0)),
            ("pg_id", Int(0)),
            ("process_group", Tuple(vec![s("0"), s("default_pg")])),
            ("collective_seq_id", Int(1)),
            ("time_created_ns", Int(1724779239936775119)),
            ("input_sizes", List(vec![List(vec![Int(3), Int(4)])])),
            ("state", s("completed")),
            ("time_discovered_started_ns", Owned::None),
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
    /// `]` then `2\x86` (DUP, TUPLE2) `times` times: a tuple of two references to the tuple
    /// below, 2**times lists once expanded.
    fn doubled(times: usize) -> Vec<u8> {
        [&b"\x80\x02]"[..], &b"2\x86".repeat(times), b"."].concat()
    }

    #[test]
    fn a_flight_recorder_dump_in_every_protocol() {
        for (p, bytes) in all_protocols().iter().enumerate() {
            assert_eq!(decoded(bytes), Ok(flight_recorder()), "protocol {p}");
            assert_eq!(crate::failure::evidence::looks_like_pickle(bytes), p >= 2, "protocol {p}");
        }
        let tree = decode(FR_P2).unwrap();
        let dump = tree.root();
        let entry = dump.get("entries").unwrap().items().next().unwrap();
        assert_eq!(dump.get("version").and_then(Node::as_str), Some("2.9"));
        assert_eq!(entry.get("time_created_ns").and_then(Node::as_i64), Some(1724779239936775119));
        assert_eq!(entry.get("duration_ms").and_then(Node::as_f64), Some(1.5));
        assert_eq!(entry.get("timeout_ms").and_then(Node::as_f64), Some(600000.0));
        assert_eq!(entry.get("retired").and_then(Node::as_bool), Some(true));
        assert_eq!(entry.get("process_group").unwrap().items().len(), 2);
        assert_eq!(entry.entries().len(), 13);
        let text = entry.get("state").unwrap();
        assert_eq!((entry.get("missing").is_none(), text.items().len(), text.entries().len()), (true, 0, 0));
        assert_eq!((text.as_i64(), text.as_f64(), text.as_bool(), dump.as_str()), (None, None, None, None));
    }

    #[test]
    fn text_borrows_the_input_where_it_can() {
        let tree = decode(FR_P4).unwrap();
        let version = tree.root().get("version").and_then(Node::as_str).unwrap();
        assert!(FR_P4.as_ptr_range().contains(&version.as_ptr()), "SHORT_BINUNICODE is borrowed");
        // Latin-1 beyond ASCII is not UTF-8, so it is copied; ASCII is borrowed.
        let input = b"(U\x02c\xe9U\x02abt.";
        let tree = decode(input).unwrap();
        let texts: Vec<_> = tree.root().items().map(|n| n.as_str().unwrap()).collect();
        assert_eq!(texts, ["c\u{e9}", "ab"]);
        assert!(!input.as_ptr_range().contains(&texts[0].as_ptr()));
        assert!(input.as_ptr_range().contains(&texts[1].as_ptr()));
        // Invalid UTF-8 in BINUNICODE becomes U+FFFD.
        assert_eq!(decoded(b"\x80\x04\x8c\x02a\xff."), Ok(s("a\u{fffd}")));
    }

    #[test]
    fn shared_and_memoized_before_filled() {
        let a = List(vec![Int(1), Int(2)]);
        let want = List(vec![a.clone(), a.clone(), Dict(vec![(s("k"), a)])]);
        assert_eq!(decoded(SHARED_P0), Ok(want.clone()));
        assert_eq!(decoded(SHARED_P2), Ok(want));
    }

    #[test]
    fn a_container_filled_in_batches_between_others() {
        // l = [1, 2]; [3] built and popped; l got back from the memo, then 4 and 5 appended:
        // l's elements are two runs with [3]'s between them.
        let input = b"\x80\x02]q\x00(K\x01K\x02e]q\x01(K\x03e0h\x00(K\x04K\x05e.";
        let tree = decode(input).unwrap();
        assert_eq!(owned(tree.root()), List(vec![Int(1), Int(2), Int(4), Int(5)]));
        let mut items = tree.root().items();
        assert_eq!(items.len(), 4);
        items.nth(2);
        assert_eq!((items.len(), items.next().and_then(Node::as_i64), items.next().is_none()), (1, Some(5), true));
        // SETITEM one pair at a time, and protocol 0's APPEND one item at a time.
        assert_eq!(decoded(b"}K\x01K\x02sK\x03K\x04s."), Ok(Dict(vec![(Int(1), Int(2)), (Int(3), Int(4))])));
        assert_eq!(decoded(b"(lp0\nI1\naI2\na."), Ok(List(vec![Int(1), Int(2)])));
        // A key set twice: the last pair wins.
        let tree = decode(b"\x80\x02}(X\x01\x00\x00\x00kq\x00K\x01h\x00K\x02u.").unwrap();
        assert_eq!(tree.root().get("k").and_then(Node::as_i64), Some(2));
    }

    #[test]
    fn memo_keys_out_of_order() {
        // Keys 5, then MEMOIZE (the memo's length, 1), then a far key: nothing allocated for it.
        let input = b"\x80\x04(K\x07q\x05K\x08\x94K\x09r\xff\xff\xff\xffh\x01h\x05j\xff\xff\xff\xfft.";
        assert_eq!(decoded(input), Ok(Tuple(vec![Int(7), Int(8), Int(9), Int(8), Int(7), Int(9)])));
        // Key 1 first (sparse), then 0 (dense), then 1 replaced and read back; 2 follows the dense ones.
        let input = b"\x80\x02(K\x07q\x01K\x08q\x00K\x09q\x01K\x0aq\x02h\x01h\x00h\x02t.";
        assert_eq!(decoded(input), Ok(Tuple(vec![Int(7), Int(8), Int(9), Int(10), Int(9), Int(8), Int(10)])));
        let three = Limits { max_memo: 3, ..Limits::default() };
        assert!(decode_with(input, &three).is_ok());
        let two = Limits { max_memo: 2, ..Limits::default() };
        assert!(decode_with(input, &two).unwrap_err().message.contains("Limits::max_memo"));
    }

    #[test]
    fn integers_beyond_i64() {
        let want = List(vec![BigInt, Int(-1), Int(i64::MAX), Int(i64::MIN), BigInt, BigInt]);
        for bytes in [BIG_P0, BIG_P1, BIG_P2] {
            assert_eq!(decoded(bytes), Ok(want.clone()));
        }
        // Longer than needed but only sign-extended: still in i64. LONG4 too.
        assert_eq!(decoded(b"\x80\x02\x8a\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff."), Ok(Int(-1)));
        assert_eq!(decoded(b"\x80\x02\x8b\x02\x00\x00\x00\x00\x80."), Ok(Int(-32768)));
        assert_eq!(decoded(b"\x80\x02\x8a\x00."), Ok(Int(0)));
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
            Owned::None,
        ]);
        assert_eq!(decoded(MISC_P5), Ok(want));
        let want = List(vec![
            s(&format!("{text}\u{1f600}")),
            Float(0.25),
            Tuple(vec![]),
            Tuple(vec![Int(1)]),
            List(vec![]),
            Dict(vec![]),
            Bool(true),
            Bool(false),
            Int(1 << 40),
        ]);
        assert_eq!(decoded(MISC_P0), Ok(want));
        // Python 2 strings (STRING, BINSTRING, SHORT_BINSTRING) as latin-1; POP, POP_MARK, DUP.
        assert_eq!(decoded(b"S'a\\n\\x41\\101\\'\\q'\n."), Ok(s("a\nAA'\\q")));
        let py2 = Tuple(vec![s("ab"), s("c\u{e9}")]);
        assert_eq!(decoded(b"(T\x02\x00\x00\x00abU\x02c\xe9I5\n0t."), Ok(py2));
        assert_eq!(decoded(b"N(NN12\x86."), Ok(Tuple(vec![Owned::None, Owned::None])));
        assert_eq!(decoded(b"U\x01a0N."), Ok(Owned::None));
        assert_eq!(decode(b"\x80\x02U\x02c\xe9.").unwrap().root().as_str(), Some("c\u{e9}"));
    }

    #[test]
    fn debug_is_python_like_and_bounded() {
        let tree = decode(SHARED_P2).unwrap();
        assert_eq!(format!("{tree:?}"), "[[1, 2], [1, 2], {\"k\": [1, 2]}]");
        let tree = decode(MISC_P5).unwrap();
        assert_eq!(
            format!("{tree:?}"),
            "[[1, 2], [3], b\"ab\", b\"cd\", \"a\\\\b\\nc\u{e9}\u{20ac}\", (), (1), (1, 2, 3), 0.25, -5, 70000, None]"
        );
        assert_eq!(format!("{:?}", decode(BIG_P2).unwrap().root().items().next().unwrap()), "<int beyond i64>");
        assert_eq!(format!("{:?}", decode(b"\x88.").unwrap()), "True");
        // 2**20 lists within the limits: Debug shows a thousand values and stops.
        let input = doubled(20);
        let tree = decode(&input).unwrap();
        let shown = format!("{tree:?}");
        assert!(shown.len() < 10_000 && shown.contains('…'), "{} bytes", shown.len());
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
        assert_eq!(decoded(b"N.garbage"), Ok(Owned::None));
    }

    #[test]
    fn exponential_sharing_is_refused_before_it_is_walked() {
        // l0 = []; l1 = [l0, l0]; ...; l60 = [l59, l59]: 2**60 lists once expanded.
        let mut gets = b"\x80\x02]q\x00".to_vec();
        for i in 1..=60_u8 {
            gets.extend([b']', b'(', b'h', i - 1, b'h', i - 1, b'e', b'q', i]);
        }
        gets.push(b'.');
        // The same with DUP: (((l, l), (l, l)), ...) 64 times.
        // Refused as soon as a container's count passes the limit, at the opcode that fills it.
        for (bytes, op) in [(gets, "APPENDS"), (doubled(64), "TUPLE2")] {
            let e = error(&bytes);
            assert!(e.message.starts_with(op) && e.message.contains("Limits::max_values"), "{e}");
            assert!(e.offset < bytes.len() - 1, "{e}");
        }
        // Within the limits, every reference is walked.
        let small = Limits { max_values: 7, ..Limits::default() };
        let want = Tuple(vec![Tuple(vec![List(vec![]), List(vec![])]); 2]);
        assert_eq!(decoded_with(b"]2\x862\x86.", &small), Ok(want));
        assert!(decode_with(b"]2\x862\x86.", &Limits { max_values: 6, ..small }).is_err());
        // A shared list filled after it was put in a tuple twice: its counts grew after the
        // tuple's were taken, so STOP measures the whole tree again (1 + 6 + 6 values).
        let late = b"\x80\x02]q\x00h\x00\x86h\x00(K\x01K\x02K\x03K\x04K\x05e0.";
        let filled = List((1..=5).map(Int).collect());
        assert_eq!(decoded_with(late, &Limits { max_values: 13, ..small }), Ok(Tuple(vec![filled.clone(), filled])));
        let e = decode_with(late, &Limits { max_values: 12, ..small }).unwrap_err();
        assert_eq!((e.offset, e.message.contains("Limits::max_values")), (late.len() - 1, true), "{e}");
        // Values popped never reach the tree, and a walk does not meet them: two 64-byte
        // strings (3 each) popped, then the root, within 5 all the same.
        let popped = [&b"\x80\x04\x8c\x40"[..], &[b'x'; 64], b"0\x8c\x40", &[b'y'; 64], b"0N."].concat();
        assert_eq!(decoded_with(&popped, &Limits { max_values: 5, ..small }), Ok(Owned::None));
        // A string is weighed by its size, so meeting a big one many times is no way round the limit.
        let mut big = b"\x80\x04\x8d\x00\x00\x10\x00\x00\x00\x00\x00".to_vec();
        big.extend(std::iter::repeat_n(b'x', 1 << 20));
        big.extend(b"\x94(");
        big.extend(std::iter::repeat_n(*b"h\x00", 2000).flatten());
        big.extend(b"l.");
        assert!(error(&big).message.contains("Limits::max_values"));
        // The arena itself is held to the limit too, at the opcode that passes it.
        let e = decode_with(b"(NNNNt.", &Limits { max_values: 3, ..Limits::default() }).unwrap_err();
        assert_eq!((e.offset, e.message.as_str()), (4, "more than 3 values (Limits::max_values)"));
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
        let input = nested(256);
        let tree = decode(&input).unwrap();
        let mut node = tree.root();
        for _ in 1..256 {
            node = node.items().next().unwrap();
        }
        assert_eq!(owned(node), List(vec![]));
        assert!(error(&nested(257)).message.contains("Limits::max_depth"));
        assert!(error(&nested(100_000)).message.contains("Limits::max_depth"));
        assert!(error(&[b'('; 300]).message.contains("Limits::max_depth"));
        // A shared list put five deep, then given five more levels through the memo: the depth
        // counted as containers were filled is 6, the tree's 11, which STOP measures.
        let late = b"\x80\x02]q\x000]]]]]h\x00aaaaah\x00]]]]]aaaaa0.";
        let e = decode_with(late, &Limits { max_depth: 10, ..Limits::default() }).unwrap_err();
        assert_eq!((e.offset, e.message.contains("Limits::max_depth")), (late.len() - 1, true), "{e}");
        assert!(decode_with(late, &Limits { max_depth: 11, ..Limits::default() }).is_ok());
        // l = []; l.append(l); pickle.dumps(l, protocol=2)
        assert!(error(b"\x80\x02]q\x00h\x00a.").message.contains("inside itself"));
        // A dict holding itself as a value, one level down: {"k": [d]}.
        assert!(error(b"\x80\x02}q\x00X\x01\x00\x00\x00k]h\x00as.").message.contains("inside itself"));
    }

    #[test]
    fn memo_and_stack_misuse() {
        assert_eq!(error(b"h\x05.").message, "BINGET of memo key 5, which was never stored");
        assert!(error(b"q\x00.").message.contains("needs a value on the stack"));
        assert!(error(b"NNa.").message.contains("needs a List"));
        assert!(error(b"}(Nd.").message.contains("a key but no value"));
        assert!(error(b"}(Nu.").message.contains("a key but no value"));
        assert!(error(b"N(e.").message.contains("needs a List"));
        assert!(error(b"N(Ns.").message.contains("needs a value on the stack"));
        assert!(error(b"NN\x87.").message.contains("needs 3 values"));
        assert!(error(b"N(N\x86.").message.contains("needs 2 values"));
        assert!(error(b"N(.").message.contains("needs a value on the stack"));
        assert!(error(b"e.").message.contains("without a MARK"));
        // POP on an empty stack above a MARK pops the MARK, as in Python.
        assert_eq!(decoded(b"N(0."), Ok(Owned::None));
        let few = Limits { max_memo: 2, ..Limits::default() };
        assert!(decode_with(b"Np0\np1\np0\n.", &few).is_ok());
        assert!(decode_with(b"N\x94\x94\x94.", &few).unwrap_err().message.contains("Limits::max_memo"));
    }
}
