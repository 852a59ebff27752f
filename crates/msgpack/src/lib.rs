//! A bounds-checked MessagePack reader over borrowed bytes: value heads (through
//! [`rmp::Marker`]), borrowed strings, and stepping over a value without building it.
//!
//! Values are read in place, so a 117 MB Tensile index or a code object's metadata note costs
//! what the reader keeps, not a tree of `rmpv` values. Every length is checked against the
//! bytes left before it is used, a container's claimed count against the bytes left (each
//! value takes at least one), and every error carries the offset of the value it concerns.
//! Read by `gfxkit-kernel-db` (Tensile indexes, hipBLASLt mappings) and `gfxkit-code-object`
//! (the `NT_AMDGPU_METADATA` note).

#![forbid(unsafe_code)]

use rmp::Marker;

/// What is wrong at an offset of the bytes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("at byte {offset}: {kind}")]
pub struct Error {
    /// Byte offset of the value concerned, from the start of the reader's bytes.
    pub offset: u64,
    /// What is wrong.
    pub kind: ErrorKind,
}

/// What is wrong with MessagePack bytes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A value runs past the end of the bytes.
    #[error("{what} runs past the end ({need} bytes needed, {have} present)")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes (or, for a container, values) needed from the offset.
        need: u64,
        /// Bytes present from the offset.
        have: u64,
    },
    /// A byte that is not a valid marker (0xc1), text that is not UTF-8, nesting beyond a
    /// bound, or what the decoder refuses.
    #[error("MessagePack: {0}")]
    Msgpack(String),
    /// A value of another type than the reader requires.
    #[error("expected {expected}, found {found}")]
    Unexpected {
        /// What the reader requires.
        expected: &'static str,
        /// What was found.
        found: String,
    },
}

impl Error {
    /// An error at byte `offset`.
    pub fn at(offset: u64, kind: ErrorKind) -> Error {
        Error { offset, kind }
    }
}

/// The result of reading MessagePack.
pub type Result<T> = std::result::Result<T, Error>;

/// The head of one MessagePack value: its type and, for containers, strings and binaries, its
/// length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Head {
    /// `nil`.
    Nil,
    /// A boolean.
    Bool(bool),
    /// A non-negative integer.
    Uint(u64),
    /// A negative integer (or one written in a signed format).
    Int(i64),
    /// A float (32-bit ones widened).
    Float(f64),
    /// A string of this many bytes.
    Str(u32),
    /// Binary data of this many bytes.
    Bin(u32),
    /// An array of this many values.
    Array(u32),
    /// A map of this many entries (twice as many values).
    Map(u32),
    /// An extension value of this many bytes, its type byte included.
    Ext(u32),
}

impl Head {
    /// A name for messages ("map of 3", "string of 4 bytes").
    pub fn describe(self) -> String {
        match self {
            Head::Nil => "nil".into(),
            Head::Bool(b) => format!("boolean {b}"),
            Head::Uint(v) => format!("integer {v}"),
            Head::Int(v) => format!("integer {v}"),
            Head::Float(v) => format!("float {v}"),
            Head::Str(n) => format!("string of {n} bytes"),
            Head::Bin(n) => format!("binary of {n} bytes"),
            Head::Array(n) => format!("array of {n}"),
            Head::Map(n) => format!("map of {n}"),
            Head::Ext(n) => format!("extension of {n} bytes"),
        }
    }
}

/// A value kept undecoded: its offset and its bytes (decode with [`Raw::to_value`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raw<'a> {
    /// Byte offset of the value in the bytes read.
    pub offset: u64,
    /// The value's MessagePack bytes.
    pub bytes: &'a [u8],
}

impl<'a> Raw<'a> {
    /// The value as a string, if it is one.
    pub fn as_str(&self) -> Option<&'a str> {
        let mut c = Reader::new(self.bytes);
        c.str().ok()
    }

    /// The value as an integer, if it is one that fits an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        let mut c = Reader::new(self.bytes);
        match c.head().ok()? {
            Head::Uint(v) => i64::try_from(v).ok(),
            Head::Int(v) => Some(v),
            _ => None,
        }
    }

    /// The value decoded as an [`rmpv::Value`], nested at most `max_depth` deep (as
    /// `rmpv` counts it).
    pub fn to_value(&self, max_depth: usize) -> Result<rmpv::Value> {
        let mut rd = self.bytes;
        rmpv::decode::read_value_with_max_depth(&mut rd, max_depth)
            .map_err(|e| Error::at(self.offset, ErrorKind::Msgpack(e.to_string())))
    }

    /// The value decoded as an [`rmpv::ValueRef`] borrowing its strings, nested at most
    /// `max_depth` deep (as `rmpv` counts it).
    pub fn to_value_ref(&self, max_depth: usize) -> Result<rmpv::ValueRef<'a>> {
        let mut rd = self.bytes;
        rmpv::decode::read_value_ref_with_max_depth(&mut rd, max_depth)
            .map_err(|e| Error::at(self.offset, ErrorKind::Msgpack(e.to_string())))
    }
}

/// A reader of MessagePack values in place: a position in borrowed bytes.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `data`.
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0 }
    }

    /// A reader of the same bytes at byte `pos`.
    pub fn at(&self, pos: usize) -> Reader<'a> {
        Reader {
            data: self.data,
            pos,
        }
    }

    /// Where the reader is.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Where the reader is, as an offset for errors.
    pub fn offset(&self) -> u64 {
        self.pos as u64
    }

    /// Bytes after the reader.
    pub fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    fn take(&mut self, n: usize, what: &'static str, start: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n);
        match end.and_then(|end| self.data.get(self.pos..end)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(Error::at(
                start as u64,
                ErrorKind::Truncated {
                    what,
                    need: (self.pos - start + n) as u64,
                    have: (self.data.len() - start) as u64,
                },
            )),
        }
    }

    fn be(&mut self, n: usize, start: usize) -> Result<u64> {
        let b = self.take(n, "MessagePack value", start)?;
        Ok(b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }

    /// Reads one value's head (its marker and length fields), leaving the reader at the
    /// value's data (a string's bytes, a container's first value).
    pub fn head(&mut self) -> Result<Head> {
        let start = self.pos;
        let byte = self.take(1, "MessagePack value", start)?[0];
        Ok(match Marker::from_u8(byte) {
            Marker::FixPos(v) => Head::Uint(u64::from(v)),
            Marker::FixNeg(v) => Head::Int(i64::from(v)),
            Marker::FixMap(n) => Head::Map(u32::from(n)),
            Marker::FixArray(n) => Head::Array(u32::from(n)),
            Marker::FixStr(n) => Head::Str(u32::from(n)),
            Marker::Null => Head::Nil,
            Marker::False => Head::Bool(false),
            Marker::True => Head::Bool(true),
            Marker::Reserved => {
                return Err(Error::at(
                    start as u64,
                    ErrorKind::Msgpack("reserved marker 0xc1".into()),
                ))
            }
            Marker::Bin8 => Head::Bin(self.be(1, start)? as u32),
            Marker::Bin16 => Head::Bin(self.be(2, start)? as u32),
            Marker::Bin32 => Head::Bin(self.be(4, start)? as u32),
            // The type byte is counted into the payload.
            Marker::Ext8 => Head::Ext(self.be(1, start)? as u32 + 1),
            Marker::Ext16 => Head::Ext(self.be(2, start)? as u32 + 1),
            Marker::Ext32 => Head::Ext((self.be(4, start)? as u32).saturating_add(1)),
            Marker::FixExt1 => Head::Ext(2),
            Marker::FixExt2 => Head::Ext(3),
            Marker::FixExt4 => Head::Ext(5),
            Marker::FixExt8 => Head::Ext(9),
            Marker::FixExt16 => Head::Ext(17),
            Marker::F32 => Head::Float(f64::from(f32::from_bits(self.be(4, start)? as u32))),
            Marker::F64 => Head::Float(f64::from_bits(self.be(8, start)?)),
            Marker::U8 => Head::Uint(self.be(1, start)?),
            Marker::U16 => Head::Uint(self.be(2, start)?),
            Marker::U32 => Head::Uint(self.be(4, start)?),
            Marker::U64 => Head::Uint(self.be(8, start)?),
            Marker::I8 => Head::Int(i64::from(self.be(1, start)? as u8 as i8)),
            Marker::I16 => Head::Int(i64::from(self.be(2, start)? as u16 as i16)),
            Marker::I32 => Head::Int(i64::from(self.be(4, start)? as u32 as i32)),
            Marker::I64 => Head::Int(self.be(8, start)? as i64),
            Marker::Str8 => Head::Str(self.be(1, start)? as u32),
            Marker::Str16 => Head::Str(self.be(2, start)? as u32),
            Marker::Str32 => Head::Str(self.be(4, start)? as u32),
            Marker::Array16 => Head::Array(self.be(2, start)? as u32),
            Marker::Array32 => Head::Array(self.be(4, start)? as u32),
            Marker::Map16 => Head::Map(self.be(2, start)? as u32),
            Marker::Map32 => Head::Map(self.be(4, start)? as u32),
        })
    }

    /// Takes the next `n` bytes (the data of a head read at `start`, named in errors).
    pub fn skip_bytes(&mut self, n: u32, start: usize) -> Result<&'a [u8]> {
        self.take(n as usize, "MessagePack value", start)
    }

    /// Reads a string value (UTF-8).
    pub fn str(&mut self) -> Result<&'a str> {
        let start = self.pos;
        // A fixstr (the keys and names of most files) by its one byte; anything else, or one
        // that runs past the end, by the general reader.
        if let Some(&b @ 0xa0..=0xbf) = self.data.get(start) {
            let end = start + 1 + usize::from(b & 0x1f);
            if let Some(bytes) = self.data.get(start + 1..end) {
                self.pos = end;
                return std::str::from_utf8(bytes).map_err(|e| {
                    Error::at(start as u64, ErrorKind::Msgpack(format!("string: {e}")))
                });
            }
        }
        match self.head()? {
            Head::Str(n) => {
                let b = self.skip_bytes(n, start)?;
                std::str::from_utf8(b).map_err(|e| {
                    Error::at(start as u64, ErrorKind::Msgpack(format!("string: {e}")))
                })
            }
            other => Err(unexpected(start, "a string", other)),
        }
    }

    /// Reads a map key: a string value's bytes, checked to be UTF-8 as [`Reader::str`] checks
    /// them. For the many keys of a large map, matched against names as bytes: an ASCII key
    /// (every key of the files read) is checked without building a `str`.
    #[inline]
    pub fn key(&mut self) -> Result<&'a [u8]> {
        let start = self.pos;
        if let Some(&b @ 0xa0..=0xbf) = self.data.get(start) {
            let end = start + 1 + usize::from(b & 0x1f);
            if let Some(bytes) = self.data.get(start + 1..end).filter(|b| b.is_ascii()) {
                self.pos = end;
                return Ok(bytes);
            }
        }
        self.str().map(str::as_bytes)
    }

    /// Reads a non-negative integer; anything else is [`ErrorKind::Unexpected`] naming
    /// `expected`.
    #[inline]
    pub fn uint(&mut self, expected: &'static str) -> Result<u64> {
        let start = self.pos;
        // A positive fixint, and uint 8, 16, 32 and 64, by their bytes.
        let width = match self.data.get(start) {
            Some(&b @ 0x00..=0x7f) => {
                self.pos += 1;
                return Ok(u64::from(b));
            }
            Some(&b @ 0xcc..=0xcf) => 1usize << (b - 0xcc),
            _ => 0,
        };
        if let Some(field) = self
            .data
            .get(start + 1..start + 1 + width)
            .filter(|_| width > 0)
        {
            self.pos = start + 1 + width;
            return Ok(field.iter().fold(0u64, |n, &x| (n << 8) | u64::from(x)));
        }
        match self.head()? {
            Head::Uint(v) => Ok(v),
            other => Err(unexpected(start, expected, other)),
        }
    }

    /// Reads an integer or a float, as a float.
    pub fn number(&mut self) -> Result<f64> {
        let start = self.pos;
        match self.head()? {
            Head::Uint(v) => Ok(v as f64),
            Head::Int(v) => Ok(v as f64),
            Head::Float(v) => Ok(v),
            other => Err(unexpected(start, "a number", other)),
        }
    }

    /// Reads an array's head: its length, checked against the bytes left.
    pub fn array(&mut self, expected: &'static str) -> Result<u32> {
        let start = self.pos;
        if let Some(&b @ 0x90..=0x9f) = self.data.get(start) {
            self.pos += 1;
            let n = u32::from(b & 0x0f);
            self.check_room(u64::from(n), start)?;
            return Ok(n);
        }
        match self.head()? {
            Head::Array(n) => {
                self.check_room(u64::from(n), start)?;
                Ok(n)
            }
            other => Err(unexpected(start, expected, other)),
        }
    }

    /// Reads a map's head: its number of entries, checked against the bytes left.
    pub fn map(&mut self, expected: &'static str) -> Result<u32> {
        let start = self.pos;
        if let Some(&b @ 0x80..=0x8f) = self.data.get(start) {
            self.pos += 1;
            let n = u32::from(b & 0x0f);
            self.check_room(u64::from(n) * 2, start)?;
            return Ok(n);
        }
        match self.head()? {
            Head::Map(n) => {
                self.check_room(u64::from(n) * 2, start)?;
                Ok(n)
            }
            other => Err(unexpected(start, expected, other)),
        }
    }

    fn check_room(&self, values: u64, start: usize) -> Result<()> {
        if values > self.remaining() as u64 {
            return Err(Error::at(
                start as u64,
                ErrorKind::Truncated {
                    what: "container",
                    need: values,
                    have: self.remaining() as u64,
                },
            ));
        }
        Ok(())
    }

    /// Steps over one value, whole, and returns it undecoded. Iterative: nesting costs a
    /// counter, not a stack; the count of values still to step over never exceeds the bytes
    /// left.
    #[inline]
    pub fn skip(&mut self) -> Result<Raw<'a>> {
        self.skip_scalar().map_or_else(|| self.skip_walk(), Ok)
    }

    /// A value that is not an array or a map (or is an empty one), stepped over by its head
    /// alone; `None`, the reader unmoved, for anything else and for what does not read.
    #[inline(always)]
    fn skip_scalar(&mut self) -> Option<Raw<'a>> {
        let start = self.pos;
        match step(self.data, start) {
            Some((n, 0)) if n <= self.remaining() => {
                self.pos = start + n;
                Some(Raw {
                    offset: start as u64,
                    bytes: &self.data[start..self.pos],
                })
            }
            _ => None,
        }
    }

    /// [`Reader::skip`] of any value.
    #[inline(never)]
    fn skip_walk(&mut self) -> Result<Raw<'a>> {
        let start = self.pos;
        let data = self.data;
        let len = data.len();
        let mut pos = start;
        let mut pending: u64 = 1;
        while pending > 0 {
            pending -= 1;
            // Every well-formed value by its first bytes alone; the general reader only for
            // what does not read, to say why.
            match step(data, pos) {
                Some((n, values)) if n <= len - pos => {
                    pos += n;
                    pending += values;
                    // Each value still to come takes a byte: a container's count, or a
                    // string that leaves too few bytes for its siblings, is refused here.
                    if pending > (len - pos) as u64 {
                        self.pos = pos;
                        return Err(self.too_many(pos - n, pending));
                    }
                }
                _ => (pos, pending) = self.skip_head(pos, pending)?,
            }
        }
        self.pos = pos;
        Ok(Raw {
            offset: start as u64,
            bytes: &self.data[start..self.pos],
        })
    }

    /// [`Reader::skip`] of a value that is likely to repeat most of `like`, a value stepped
    /// over before: where its bytes, from a value inside it on, equal those of the value at the
    /// same step of `like`'s walk with as many values still to come, the walk jumps over the
    /// longest run of whole values they share in one comparison of bytes; the rest is walked
    /// as [`Reader::skip`] walks it. With the value, the number of its values walked one by
    /// one (0 when it is `like` whole). The same result and the same errors as
    /// [`Reader::skip`]: the walk is decided by the bytes and the count of values still to
    /// come alone, and a jump is taken only where the bytes left hold everything that count
    /// can need.
    pub fn skip_like(&mut self, like: &Trace<'_>) -> Result<(Raw<'a>, usize)> {
        if let Some(raw) = self.skip_scalar() {
            return Ok((raw, 1));
        }
        let start = self.pos;
        let data = self.data;
        let len = data.len();
        let mut pos = start;
        let mut pending: u64 = 1;
        // The step of the walk (the values started so far), and those walked one by one.
        let (mut s, mut walked) = (0, 0);
        while pending > 0 {
            if let Some(&(q, before)) = like.steps.get(s) {
                let q = q as usize;
                // `like`'s values from step `s` on lie in its last `like.bytes.len() - q`
                // bytes, each taking one at least: with as many left here, no value still to
                // come can run past the end where it did not in `like`.
                if u64::from(before) == pending && len - pos >= like.bytes.len() - q {
                    let same = common_prefix(&data[pos..], &like.bytes[q..]);
                    let t = like.last_at.get(q + same).map_or(0, |&t| t as usize);
                    if t > s {
                        let (at, left) = like.steps[t];
                        pos += at as usize - q;
                        pending = u64::from(left);
                        s = t;
                        continue;
                    }
                }
            }
            s += 1;
            walked += 1;
            pending -= 1;
            match step(data, pos) {
                Some((n, values)) if n <= len - pos => {
                    pos += n;
                    pending += values;
                    if pending > (len - pos) as u64 {
                        self.pos = pos;
                        return Err(self.too_many(pos - n, pending));
                    }
                }
                _ => (pos, pending) = self.skip_head(pos, pending)?,
            }
        }
        self.pos = pos;
        Ok((
            Raw {
                offset: start as u64,
                bytes: &data[start..pos],
            },
            walked,
        ))
    }

    /// One step of [`Reader::skip_walk`] by the general reader, for a value that does not
    /// read: it says why. The position and the count of values still to step over after it.
    #[cold]
    #[inline(never)]
    fn skip_head(&mut self, pos: usize, mut pending: u64) -> Result<(usize, u64)> {
        self.pos = pos;
        match self.head()? {
            Head::Str(n) | Head::Bin(n) | Head::Ext(n) => {
                self.skip_bytes(n, pos)?;
            }
            Head::Array(n) => pending += u64::from(n),
            Head::Map(n) => pending += 2 * u64::from(n),
            _ => {}
        }
        if pending > self.remaining() as u64 {
            return Err(self.too_many(pos, pending));
        }
        Ok((self.pos, pending))
    }

    /// [`Reader::skip`] that also records where each array or map inside the value (itself
    /// included) spanning at least `min_len` bytes starts and ends, as `(start, end)` in the
    /// order they end: a parser that looks at a value's keys before reading it steps over
    /// those containers again in one jump ([`Reader::skip_known`]) instead of walking them.
    pub fn skip_recording(
        &mut self,
        min_len: usize,
        ends: &mut Vec<(usize, usize)>,
    ) -> Result<Raw<'a>> {
        self.walk(usize::MAX, |start, end| {
            if end - start >= min_len {
                ends.push((start, end));
            }
        })
    }

    /// Steps over the value at the reader: in one jump when `ends` (sorted by start, from
    /// [`Reader::skip_recording`] over the same bytes) knows where it ends, else as
    /// [`Reader::skip`] does.
    #[inline]
    pub fn skip_known(&mut self, ends: &[(usize, usize)]) -> Result<Raw<'a>> {
        if let Some(raw) = self.skip_scalar() {
            return Ok(raw);
        }
        let start = self.pos;
        // A short array or map of scalars (a matching table's key) is read before it is
        // looked up.
        if let Some((n, values)) = step(self.data, start) {
            if let Some(end) = start
                .checked_add(n)
                .filter(|&at| at <= self.data.len())
                .and_then(|at| scalars(self.data, at, values))
            {
                self.pos = end;
                return Ok(Raw {
                    offset: start as u64,
                    bytes: &self.data[start..end],
                });
            }
        }
        let container = matches!(self.data.get(start), Some(0x80..=0x9f | 0xdc..=0xdf));
        if let Some(i) = container
            .then(|| ends.binary_search_by_key(&start, |e| e.0).ok())
            .flatten()
        {
            self.pos = ends[i].1;
            return Ok(Raw {
                offset: start as u64,
                bytes: &self.data[start..self.pos],
            });
        }
        self.skip_walk()
    }

    /// Steps over `bytes` when the value bytes at the reader begin with them (a map head and
    /// a key a reader expects, matched whole); whether they did. The reader moves only when
    /// they did.
    #[inline]
    pub fn eat(&mut self, bytes: &[u8]) -> bool {
        let found = self
            .data
            .get(self.pos..)
            .is_some_and(|rest| rest.starts_with(bytes));
        if found {
            self.pos += bytes.len();
        }
        found
    }

    /// The bytes after the reader.
    pub fn rest(&self) -> &'a [u8] {
        self.data.get(self.pos..).unwrap_or_default()
    }

    /// The bytes from `start` (a position before the reader) to the reader: a value or run of
    /// values just read.
    pub fn since(&self, start: usize) -> Option<&'a [u8]> {
        self.data.get(start..self.pos)
    }

    /// Steps over the value at the reader when it has `shape` ([`Shape::matches`]) and returns
    /// it undecoded; `None`, the reader unmoved, otherwise.
    #[inline]
    pub fn eat_shape(&mut self, shape: &Shape) -> Option<Raw<'a>> {
        if !shape.matches(self.data, self.pos) {
            return None;
        }
        let start = self.pos;
        let bytes = self.data.get(start..start + shape.len)?;
        self.pos = start + shape.len;
        Some(Raw {
            offset: start as u64,
            bytes,
        })
    }

    /// Steps over an array of at most 15 scalars (no array or map inside: a matching table's
    /// key of problem sizes), by its bytes alone; `None`, the reader unmoved, for any other
    /// value and for one cut short.
    #[inline]
    pub fn skip_scalar_array(&mut self) -> Option<Raw<'a>> {
        let start = self.pos;
        let count = match self.data.get(start)? {
            &b @ 0x90..=0x9f => u64::from(b & 0x0f),
            _ => return None,
        };
        let end = scalars(self.data, start + 1, count)?;
        self.pos = end;
        Some(Raw {
            offset: start as u64,
            bytes: &self.data[start..end],
        })
    }

    /// [`Reader::skip`], refusing a value whose arrays and maps nest more than `max_depth`
    /// deep (a scalar is depth 0, `[1]` depth 1): for values a recursive decoder reads next.
    pub fn skip_nested(&mut self, max_depth: usize) -> Result<Raw<'a>> {
        self.walk(max_depth, |_, _| {})
    }

    /// The walk of [`Reader::skip_nested`] and [`Reader::skip_recording`]: steps over one
    /// value with a stack of the open arrays and maps, calling `closed(start, end)` as each
    /// ends, and refusing one that holds something more than `max_depth` containers deep.
    fn walk(&mut self, max_depth: usize, mut closed: impl FnMut(usize, usize)) -> Result<Raw<'a>> {
        let start = self.pos;
        // Open containers: where each started and the values it still holds.
        let mut open: Vec<(usize, u64)> = Vec::new();
        let mut left: u64 = 1;
        loop {
            while left == 0 {
                match open.pop() {
                    Some((at, l)) => {
                        closed(at, self.pos);
                        left = l;
                    }
                    None => {
                        return Ok(Raw {
                            offset: start as u64,
                            bytes: &self.data[start..self.pos],
                        })
                    }
                }
            }
            left -= 1;
            let here = self.pos;
            let items = match step(self.data, self.pos) {
                Some((n, values)) if n <= self.remaining() => {
                    self.pos += n;
                    values
                }
                // What does not read: the general reader says why.
                _ => match self.head()? {
                    Head::Str(n) | Head::Bin(n) | Head::Ext(n) => {
                        self.skip_bytes(n, here)?;
                        0
                    }
                    Head::Array(n) => u64::from(n),
                    Head::Map(n) => 2 * u64::from(n),
                    _ => 0,
                },
            };
            if matches!(self.data[here], 0x80..=0x9f | 0xdc..=0xdf) {
                if items > 0 && open.len() >= max_depth {
                    return Err(Error::at(
                        here as u64,
                        ErrorKind::Msgpack(format!("nested more than {max_depth} levels deep")),
                    ));
                }
                if items > self.remaining() as u64 {
                    return Err(self.too_many(here, items));
                }
                // A small container of scalars, or of scalars and small containers of
                // scalars one level down (a Tensile matching table's entries and the problem
                // sizes of their keys), is stepped over here, without opening it; the inner
                // containers are closed first, as the walk below closes them.
                let nest = open.len() + 1 < max_depth;
                if let Some((end, inner)) = small(self.data, self.pos, items, nest) {
                    for &(at, inner_end) in inner.iter() {
                        closed(at, inner_end);
                    }
                    self.pos = end;
                    closed(here, end);
                    continue;
                }
                open.push((here, left));
                left = items;
            }
        }
    }

    fn too_many(&self, at: usize, values: u64) -> Error {
        Error::at(
            at as u64,
            ErrorKind::Truncated {
                what: "container",
                need: values,
                have: self.remaining() as u64,
            },
        )
    }
}

/// The containers inside a [`small`] one: where each starts and ends, in the order they end.
struct Inner {
    list: [(usize, usize); INNER],
    len: usize,
}

impl Inner {
    fn iter(&self) -> impl Iterator<Item = &(usize, usize)> {
        self.list.iter().take(self.len)
    }
}

/// A value with the state of a walk through it at each value it holds, what
/// [`Reader::skip_like`] compares the values after it against: where each value starts (from
/// the value's first byte) and how many values were still to come there, then the value's
/// length and 0; and, for a container, for each byte the last of those values to start at or
/// before it.
#[derive(Debug, Clone, Default)]
pub struct Trace<'a> {
    bytes: &'a [u8],
    steps: Vec<(u32, u32)>,
    last_at: Vec<u32>,
}

impl<'a> Trace<'a> {
    /// The longest value traced: a trace of a container takes four bytes for each of its
    /// bytes, and eight for each value it holds.
    pub const MAX: usize = 1 << 16;

    /// The trace of `value`, the bytes of one whole value (as [`Reader::skip`] returns it), at
    /// most [`Trace::MAX`] bytes; `None` for anything else.
    pub fn of(value: &'a [u8]) -> Option<Trace<'a>> {
        if value.is_empty() || value.len() > Trace::MAX {
            return None;
        }
        if let Some((n, 0)) = step(value, 0) {
            // A scalar: compared whole, never jumped into.
            return (n == value.len()).then(|| Trace {
                bytes: value,
                steps: vec![(0, 1), (n as u32, 0)],
                last_at: Vec::new(),
            });
        }
        let mut trace = Trace {
            bytes: value,
            steps: Vec::new(),
            last_at: Vec::with_capacity(value.len() + 1),
        };
        let (mut pos, mut pending) = (0usize, 1u64);
        while pending > 0 {
            let (n, values) = step(value, pos).filter(|&(n, _)| n <= value.len() - pos)?;
            trace.steps.push((pos as u32, u32::try_from(pending).ok()?));
            let here = (trace.steps.len() - 1) as u32;
            trace.last_at.resize(pos + n, here);
            pending = pending - 1 + values;
            pos += n;
        }
        (pos == value.len()).then_some(())?;
        trace.steps.push((pos as u32, 0));
        trace.last_at.push((trace.steps.len() - 1) as u32);
        Some(trace)
    }

    /// The value's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// How many values the value holds, itself included.
    pub fn values(&self) -> usize {
        self.steps.len() - 1
    }
}

/// How many bytes `a` and `b` share from their start: compared 32 at a time, then eight at
/// a time in the 32 that differ.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const WIDE: usize = 32;
    const W: usize = 8;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut same = 0;
    for (x, y) in a.chunks_exact(WIDE).zip(b.chunks_exact(WIDE)) {
        if x != y {
            break;
        }
        same += WIDE;
    }
    let (a, b) = (&a[same..], &b[same..]);
    let mut more = 0;
    for (x, y) in a.chunks_exact(W).zip(b.chunks_exact(W)) {
        let (Some(x), Some(y)) = (x.first_chunk::<W>(), y.first_chunk::<W>()) else {
            break;
        };
        let differ = u64::from_le_bytes(*x) ^ u64::from_le_bytes(*y);
        if differ != 0 {
            return same + more + (differ.trailing_zeros() / 8) as usize;
        }
        more += W;
    }
    same + more
        + a[more..]
            .iter()
            .zip(&b[more..])
            .take_while(|(x, y)| x == y)
            .count()
}

/// The layout of one short value ([`Shape::LEN`] bytes at most) by the bytes that decide it:
/// every marker (the class of a fixint, which is its own value), the heads of maps and arrays
/// with their counts, and the strings whole; the bytes of numbers are left out. A value whose
/// bytes agree with those is laid out the same way, value by value (each marker fixes where the
/// next value starts), whatever numbers it holds: a reader of many values of one form, such as
/// the entries of a Tensile matching table (`{"key": [sizes], "index": N}`), checks each one
/// against the shape of the one before in a few instructions instead of stepping through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    mask: [u8; Shape::LEN],
    want: [u8; Shape::LEN],
    len: usize,
}

impl Shape {
    /// The longest value a shape describes.
    pub const LEN: usize = 32;

    /// The shape of `bytes`, exactly one value made of fixmaps, fixarrays, fixstrs, nil,
    /// booleans, integers and floats, at most [`Shape::LEN`] bytes; `None` for anything else.
    pub fn of(bytes: &[u8]) -> Option<Shape> {
        if bytes.len() > Shape::LEN {
            return None;
        }
        let mut shape = Shape {
            mask: [0; Shape::LEN],
            want: [0; Shape::LEN],
            len: bytes.len(),
        };
        let (mut pos, mut pending) = (0usize, 1u32);
        while pending > 0 {
            pending -= 1;
            let b = *bytes.get(pos)?;
            // The bytes compared whole, the bytes of a number after them, the values inside.
            let (exact, payload, values) = match b {
                0x00..=0x7f | 0xe0..=0xff => {
                    // A fixint: one byte whose top bits say so.
                    let class = if b < 0x80 { 0x80 } else { 0xe0 };
                    *shape.mask.get_mut(pos)? = class;
                    *shape.want.get_mut(pos)? = b & class;
                    pos += 1;
                    continue;
                }
                0x80..=0x8f => (1, 0, 2 * u32::from(b & 0x0f)),
                0x90..=0x9f => (1, 0, u32::from(b & 0x0f)),
                0xa0..=0xbf => (1 + usize::from(b & 0x1f), 0, 0),
                0xc0 | 0xc2 | 0xc3 => (1, 0, 0),
                0xcc | 0xd0 => (1, 1, 0),
                0xcd | 0xd1 => (1, 2, 0),
                0xca | 0xce | 0xd2 => (1, 4, 0),
                0xcb | 0xcf | 0xd3 => (1, 8, 0),
                _ => return None,
            };
            for i in pos..pos + exact {
                *shape.mask.get_mut(i)? = 0xff;
                *shape.want.get_mut(i)? = *bytes.get(i)?;
            }
            pos += exact + payload;
            pending += values;
        }
        (pos == bytes.len()).then_some(shape)
    }

    /// The bytes of a value of this shape.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the shape is of no value (never: every value takes a byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the bytes at `pos` of `data` hold a value of this shape, then exactly
    /// [`Shape::len`] bytes long. Looks at [`Shape::LEN`] bytes from `pos`: `false` where fewer
    /// are left.
    #[inline]
    pub fn matches(&self, data: &[u8], pos: usize) -> bool {
        let Some(window) = data
            .get(pos..)
            .and_then(|rest| rest.first_chunk::<{ Shape::LEN }>())
        else {
            return false;
        };
        let differ = window
            .iter()
            .zip(&self.mask)
            .zip(&self.want)
            .fold(0u8, |d, ((&b, &m), &w)| d | ((b & m) ^ w));
        differ == 0
    }
}

/// For each first byte of a value, when that byte alone tells: the bytes of the value's head
/// and data (contained values not included) and how many values it contains; `(0, 0)` when
/// the length is in the bytes after it (str, bin, ext 8/16/32, array and map 16/32, which
/// [`step`] reads) and for the reserved marker. What [`step`] looks up for the markers
/// 0xc0-0xdf (the others it reads by arithmetic). Fixext 1, 2, 4, 8 and 16 count their type
/// byte.
const BY_FIRST_BYTE: [(u8, u8); 256] = by_first_byte();

const fn by_first_byte() -> [(u8, u8); 256] {
    let mut table = [(0u8, 0u8); 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        table[i] = match b {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (1, 0),
            0x80..=0x8f => (1, 2 * (b & 0x0f)),
            0x90..=0x9f => (1, b & 0x0f),
            0xa0..=0xbf => (1 + (b & 0x1f), 0),
            0xcc | 0xd0 => (2, 0),
            0xcd | 0xd1 => (3, 0),
            0xca | 0xce | 0xd2 => (5, 0),
            0xcb | 0xcf | 0xd3 => (9, 0),
            0xd4 => (3, 0),
            0xd5 => (4, 0),
            0xd6 => (6, 0),
            0xd7 => (10, 0),
            0xd8 => (18, 0),
            _ => (0, 0),
        };
        i += 1;
    }
    table
}

/// The most values [`small`] and [`scalars`] read in one container.
const SMALL: usize = 16;

/// The most containers [`small`] steps over inside one (a matching table's entry holds one,
/// its key); one with more is walked.
const INNER: usize = 4;

/// Where `count` values from `pos` end when each is a scalar that [`step`] reads or, when
/// `nest`, a container of at most [`SMALL`] such scalars (no deeper), for counts up to
/// [`SMALL`]; with the inner containers. `None` otherwise.
#[inline(always)]
fn small(data: &[u8], mut pos: usize, count: u64, nest: bool) -> Option<(usize, Inner)> {
    if count > SMALL as u64 {
        return None;
    }
    let mut inner = Inner {
        list: [(0, 0); INNER],
        len: 0,
    };
    for _ in 0..count {
        let b = *data.get(pos)?;
        let (n, values) = step(data, pos)?;
        if n > data.len() - pos {
            return None;
        }
        if matches!(b, 0x80..=0x9f | 0xdc..=0xdf) {
            if !nest {
                return None;
            }
            let end = scalars(data, pos + n, values)?;
            *inner.list.get_mut(inner.len)? = (pos, end);
            inner.len += 1;
            pos = end;
        } else {
            pos += n;
        }
    }
    Some((pos, inner))
}

/// Where `count` values from `pos` end when each is a scalar that [`step`] reads (no array or
/// map), for counts up to [`SMALL`]; `None` otherwise.
#[inline(always)]
fn scalars(data: &[u8], mut pos: usize, count: u64) -> Option<usize> {
    if count > SMALL as u64 {
        return None;
    }
    for _ in 0..count {
        match (data.get(pos)?, step(data, pos)?) {
            (0x80..=0x9f | 0xdc..=0xdf, _) => return None,
            (_, (n, 0)) if n <= data.len() - pos => pos += n,
            _ => return None,
        }
    }
    Some(pos)
}

/// The value at `pos` by its head alone: the bytes of the head and data it spans (contained
/// values not included), and how many values it contains; `None` for the reserved marker and
/// a length field cut short. The marker table of the MessagePack specification, in the form
/// [`Reader::skip`] steps through fastest.
#[inline(always)]
fn step(data: &[u8], pos: usize) -> Option<(usize, u64)> {
    let b = *data.get(pos)?;
    // The one-byte markers most values use (fixint, fixmap, fixarray, fixstr) by arithmetic,
    // not the table: stepping through values is a chain of loads, each waiting for the one
    // before, and this keeps a second load out of every link.
    match b & 0xe0 {
        0xa0 => return Some((1 + usize::from(b & 0x1f), 0)),
        // A fixmap (0x8_) holds twice its count of values, a fixarray (0x9_) its count.
        0x80 => return Some((1, u64::from(b & 0x0f) << (!b >> 4 & 1))),
        0xc0 => {}
        _ => return Some((1, 0)),
    }
    let be = |width: usize| -> Option<usize> {
        let field = data.get(pos + 1..pos + 1 + width)?;
        Some(field.iter().fold(0usize, |n, &x| (n << 8) | usize::from(x)))
    };
    if let (n @ 1.., values) = BY_FIRST_BYTE[usize::from(b)] {
        return Some((usize::from(n), u64::from(values)));
    }
    Some(match b {
        // bin and str 8, 16, 32.
        0xc4 | 0xd9 => (2 + be(1)?, 0),
        0xc5 | 0xda => (3 + be(2)?, 0),
        0xc6 | 0xdb => (5 + be(4)?, 0),
        // ext 8, 16, 32: the length, the type byte, the data.
        0xc7 => (3 + be(1)?, 0),
        0xc8 => (4 + be(2)?, 0),
        0xc9 => (6 + be(4)?, 0),
        0xdc => (3, be(2)? as u64),
        0xdd => (5, be(4)? as u64),
        0xde => (3, 2 * be(2)? as u64),
        0xdf => (5, 2 * be(4)? as u64),
        // The reserved marker 0xc1.
        _ => return None,
    })
}

/// [`ErrorKind::Unexpected`] for a value read at `start`.
pub fn unexpected(start: usize, expected: &'static str, found: Head) -> Error {
    Error::at(
        start as u64,
        ErrorKind::Unexpected {
            expected,
            found: found.describe(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `{"key": [sizes], "index": n}` as Tensile writes a matching table entry, padded to
    /// [`Shape::LEN`] bytes with `pad` after it.
    fn entry(sizes: &[u64], index: u64, pad: u8) -> Vec<u8> {
        let mut b = b"\x82\xa3key".to_vec();
        rmp::encode::write_array_len(&mut b, sizes.len() as u32).unwrap();
        for &s in sizes {
            rmp::encode::write_uint(&mut b, s).unwrap();
        }
        b.extend_from_slice(b"\xa5index");
        rmp::encode::write_uint(&mut b, index).unwrap();
        b.resize(b.len().max(Shape::LEN), pad);
        b
    }

    #[test]
    fn a_shape_matches_values_laid_out_alike_and_nothing_else() {
        let first = entry(&[128, 4096, 1, 77], 3, 0);
        let len = first.len() - first.iter().rev().take_while(|&&b| b == 0).count();
        let shape = Shape::of(&first[..len]).unwrap();
        assert_eq!(shape.len(), len);
        // Other numbers of the same widths, whatever follows the value.
        for other in [
            entry(&[200, 65535, 0, 1], 99, 0xc1),
            entry(&[129, 256, 127, 0], 0, 0x92),
        ] {
            assert!(shape.matches(&other, 0), "{other:x?}");
            let mut r = Reader::new(&other);
            assert_eq!(r.eat_shape(&shape).unwrap().bytes.len(), len);
            assert_eq!(r.pos(), len);
        }
        // A number of another width, another count, another key, an index that is not a
        // fixint: each laid out differently.
        for other in [
            entry(&[128, 70000, 1, 77], 3, 0),
            entry(&[128, 4096, 1, 77, 5], 3, 0),
            entry(&[128, 4096, 1], 3, 0),
            entry(&[128, 4096, 1, 77], 300, 0),
            entry(&[128, 4096, 1, 0xcc], 3, 0),
            {
                let mut e = first.clone();
                e[3] = b'y';
                e
            },
        ] {
            assert!(!shape.matches(&other, 0), "{other:x?}");
            let mut r = Reader::new(&other);
            assert!(r.eat_shape(&shape).is_none());
            assert_eq!(r.pos(), 0);
        }
        // Fewer bytes left than a shape looks at, and positions past the end.
        assert!(!shape.matches(&first[..Shape::LEN - 1], 0));
        assert!(!shape.matches(&first, 1));
        assert!(!shape.matches(&first, usize::MAX));
        // A negative fixint is a class of its own.
        let neg = Shape::of(&[0x92, 0xff, 0x01]).unwrap();
        let mut b = [0u8; Shape::LEN];
        b[..3].copy_from_slice(&[0x92, 0xe0, 0x7f]);
        assert!(neg.matches(&b, 0));
        b[1] = 0x01;
        assert!(!neg.matches(&b, 0));
    }

    #[test]
    fn only_short_values_of_fixed_forms_have_a_shape() {
        assert!(
            Shape::of(&entry(&[1; 15], 1, 0)).is_none(),
            "padding is more values"
        );
        assert!(Shape::of(&[0x91, 0xd9, 1, b'a']).is_none(), "str 8");
        assert!(Shape::of(&[0x91, 0xc4, 1, 0]).is_none(), "bin 8");
        assert!(Shape::of(&[0xdc, 0, 1, 1]).is_none(), "array 16");
        assert!(Shape::of(&[0x92, 1]).is_none(), "cut short");
        assert!(Shape::of(&[0x91, 1, 2]).is_none(), "two values");
        assert!(Shape::of(&[0xc1]).is_none(), "reserved");
        assert!(Shape::of(&[]).is_none());
        assert!(Shape::of(&[0xdd; 40]).is_none(), "too long");
        let floats = [0x92, 0xca, 0, 0, 0, 0, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(Shape::of(&floats).unwrap().len(), floats.len());
    }

    #[test]
    fn skip_walks_nested_values_and_stops_at_truncation() {
        let mut buf = Vec::new();
        rmp::encode::write_map_len(&mut buf, 2).unwrap();
        rmp::encode::write_str(&mut buf, "a").unwrap();
        rmp::encode::write_array_len(&mut buf, 3).unwrap();
        rmp::encode::write_uint(&mut buf, 70000).unwrap();
        rmp::encode::write_f64(&mut buf, 1.5).unwrap();
        rmp::encode::write_bin(&mut buf, b"xyz").unwrap();
        rmp::encode::write_str(&mut buf, "b").unwrap();
        rmp::encode::write_nil(&mut buf).unwrap();
        let mut c = Reader::new(&buf);
        let raw = c.skip().unwrap();
        assert_eq!(raw.bytes.len(), buf.len());
        assert_eq!(c.remaining(), 0);
        for cut in 0..buf.len() {
            let mut c = Reader::new(&buf[..cut]);
            let e = c.skip().unwrap_err();
            assert!(matches!(e.kind, ErrorKind::Truncated { .. }), "{cut}: {e}");
        }
    }

    #[test]
    fn a_huge_declared_array_is_refused_before_looping() {
        let buf = [0xdd, 0xff, 0xff, 0xff, 0xff, 0x01];
        let e = Reader::new(&buf).skip().unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Truncated { .. }));
        assert_eq!(e.offset, 0);
    }

    #[test]
    fn nested_skip_bounds_depth_and_agrees_with_skip() {
        let mut v = rmpv::Value::from(1u8);
        for _ in 0..5 {
            v = rmpv::Value::Array(vec![v, rmpv::Value::from("x")]);
        }
        let mut buf = Vec::new();
        rmpv::encode::write_value(&mut buf, &v).unwrap();
        assert_eq!(
            Reader::new(&buf).skip_nested(5).unwrap().bytes.len(),
            buf.len()
        );
        let e = Reader::new(&buf).skip_nested(4).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Msgpack(_)), "{e}");
        assert_eq!(Reader::new(&buf).skip().unwrap().bytes.len(), buf.len());
    }

    /// Any MessagePack tree a few levels deep.
    fn tree() -> impl proptest::strategy::Strategy<Value = rmpv::Value> {
        use proptest::prelude::*;
        use rmpv::Value;
        let leaf = prop_oneof![
            Just(Value::Nil),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f32>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            ".{0,40}".prop_map(Value::from),
            prop::collection::vec(any::<u8>(), 0..300).prop_map(Value::from),
            (any::<i8>(), prop::collection::vec(any::<u8>(), 0..20))
                .prop_map(|(t, d)| Value::Ext(t, d)),
        ];
        leaf.prop_recursive(6, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec((inner.clone(), inner), 0..8).prop_map(Value::Map),
            ]
        })
    }

    proptest::proptest! {
        /// On encoded trees, their prefixes and corruptions, the skips step over exactly
        /// what the decoder reads and accept nothing it refuses; the containers the recording
        /// skip notes are exactly where `skip` and `skip_known` end.
        #[test]
        fn skips_agree_with_the_decoder_on_trees(
            v in tree(),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
            edits in proptest::collection::vec(
                (proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<u8>()),
                0..4,
            ),
        ) {
            let mut bytes = Vec::new();
            rmpv::encode::write_value(&mut bytes, &v).unwrap();
            let whole = bytes.len();
            proptest::prop_assert_eq!(Reader::new(&bytes).skip().map(|r| r.bytes.len()), Ok(whole));
            proptest::prop_assert_eq!(Reader::new(&bytes).skip_nested(6).map(|r| r.bytes.len()), Ok(whole));
            for (at, b) in edits {
                let i = at.index(whole);
                bytes[i] = b;
            }
            let damaged = &bytes[..cut.index(whole + 1)];
            let mut rd = damaged;
            let decoded = rmpv::decode::read_value_ref_with_max_depth(&mut rd, 1024)
                .map(|_| damaged.len() - rd.len());
            let fast = Reader::new(damaged).skip().map(|r| r.bytes.len());
            let nested = Reader::new(damaged).skip_nested(1024).map(|r| r.bytes.len());
            let mut ends = Vec::new();
            let recorded = Reader::new(damaged).skip_recording(0, &mut ends).map(|r| r.bytes.len());
            proptest::prop_assert_eq!(fast.as_ref().ok(), nested.as_ref().ok());
            proptest::prop_assert_eq!(fast.as_ref().ok(), recorded.as_ref().ok());
            if let Ok(n) = fast {
                proptest::prop_assert_eq!(Some(n), decoded.ok());
                // Every container recorded is one value whose extent `skip` finds too, and
                // `skip_known` jumps over each as `skip` walks it.
                ends.sort_unstable();
                for &(start, end) in &ends {
                    let walked = Reader::new(damaged).at(start).skip().map(|r| start + r.bytes.len());
                    proptest::prop_assert_eq!(walked, Ok(end));
                    let jumped = Reader::new(damaged).at(start).skip_known(&ends).map(|r| start + r.bytes.len());
                    proptest::prop_assert_eq!(jumped, Ok(end));
                }
                proptest::prop_assert_eq!(Reader::new(damaged).skip_known(&ends).map(|r| r.bytes.len()), Ok(n));
            }
        }

        /// A walk that jumps over what a value shares with one read before ends where `skip`
        /// ends and fails as `skip` fails, with the reader in the same place, on the value
        /// itself, on another, and on their prefixes and corruptions; where a shape of the
        /// value before matches, `skip` steps over exactly that shape's bytes.
        #[test]
        fn a_skip_like_another_value_is_a_skip(
            like in tree(),
            other in tree(),
            same in proptest::prelude::any::<bool>(),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
            edits in proptest::collection::vec(
                (proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<u8>()),
                0..4,
            ),
        ) {
            let encode = |v: &rmpv::Value| {
                let mut b = Vec::new();
                rmpv::encode::write_value(&mut b, v).unwrap();
                b
            };
            let like = encode(&like);
            let mut bytes = if same { like.clone() } else { encode(&other) };
            let whole = bytes.len();
            for (at, b) in edits {
                let i = at.index(whole);
                bytes[i] = b;
            }
            let data = &bytes[..cut.index(whole + 1)];
            if let Some(trace) = Trace::of(&like) {
                proptest::prop_assert_eq!(trace.bytes(), &like[..]);
                let (mut walked, mut jumped) = (Reader::new(data), Reader::new(data));
                let want = walked.skip().map(|r| r.bytes.len());
                let got = jumped.skip_like(&trace).map(|(r, _)| r.bytes.len());
                proptest::prop_assert_eq!(got, want);
                proptest::prop_assert_eq!(jumped.pos(), walked.pos());
                if data == &like[..] {
                    let (_, one_by_one) = Reader::new(data).skip_like(&trace).unwrap();
                    proptest::prop_assert!(one_by_one <= 1);
                }
            }
            if let Some(shape) = Shape::of(&like) {
                let mut padded = data.to_vec();
                padded.resize(data.len().max(Shape::LEN), 0xc1);
                if shape.matches(&padded, 0) {
                    let n = Reader::new(&padded).skip().map(|r| r.bytes.len());
                    proptest::prop_assert_eq!(n, Ok(shape.len()));
                    proptest::prop_assert_eq!(Shape::of(&padded[..shape.len()]), Some(shape));
                }
            }
        }

        /// The skips step over exactly what the decoder reads, and refuse what it refuses
        /// (the decoder's own depth bound is not in play at this size).
        #[test]
        fn skips_agree_with_the_decoder(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let mut rd = &bytes[..];
            let decoded = rmpv::decode::read_value_ref_with_max_depth(&mut rd, 1024)
                .map(|_| bytes.len() - rd.len());
            let fast = Reader::new(&bytes).skip().map(|r| r.bytes.len());
            let nested = Reader::new(&bytes).skip_nested(1024).map(|r| r.bytes.len());
            let recorded = Reader::new(&bytes).skip_recording(0, &mut Vec::new()).map(|r| r.bytes.len());
            proptest::prop_assert_eq!(fast.as_ref().ok(), nested.as_ref().ok());
            proptest::prop_assert_eq!(fast.as_ref().ok(), recorded.as_ref().ok());
            // The reader is the stricter: it refuses the reserved marker 0xc1, which the
            // decoder reads as nil.
            if let Ok(n) = fast {
                proptest::prop_assert_eq!(Some(n), decoded.ok());
            } else if decoded.is_ok() {
                proptest::prop_assert!(bytes.contains(&0xc1));
            }
        }
    }

    #[test]
    fn the_recording_walk_records_small_containers_of_scalars() {
        // [{"k": [1, 300, "ab", nil], "i": 5}, [], [[2]]]
        let mut buf = Vec::new();
        rmp::encode::write_array_len(&mut buf, 3).unwrap();
        rmp::encode::write_map_len(&mut buf, 2).unwrap();
        rmp::encode::write_str(&mut buf, "k").unwrap();
        let small = buf.len();
        rmp::encode::write_array_len(&mut buf, 4).unwrap();
        rmp::encode::write_uint(&mut buf, 1).unwrap();
        rmp::encode::write_uint(&mut buf, 300).unwrap();
        rmp::encode::write_str(&mut buf, "ab").unwrap();
        rmp::encode::write_nil(&mut buf).unwrap();
        let small_end = buf.len();
        rmp::encode::write_str(&mut buf, "i").unwrap();
        rmp::encode::write_uint(&mut buf, 5).unwrap();
        let map_end = buf.len();
        rmp::encode::write_array_len(&mut buf, 0).unwrap();
        rmp::encode::write_array_len(&mut buf, 1).unwrap();
        rmp::encode::write_array_len(&mut buf, 1).unwrap();
        rmp::encode::write_uint(&mut buf, 2).unwrap();
        let mut ends = Vec::new();
        let raw = Reader::new(&buf).skip_recording(0, &mut ends).unwrap();
        assert_eq!(raw.bytes.len(), buf.len());
        ends.sort_unstable();
        let n = buf.len();
        assert_eq!(
            ends,
            [
                (0, n),
                (1, map_end),
                (small, small_end),
                (map_end, map_end + 1),
                (map_end + 1, n),
                (map_end + 2, n),
            ]
        );
        // The innermost array of scalars is still one level of nesting.
        let e = Reader::new(&buf).skip_nested(2).unwrap_err();
        assert_eq!(e.offset, small as u64);
        assert_eq!(
            Reader::new(&buf).skip_nested(3).unwrap().bytes.len(),
            buf.len()
        );
        // Cut inside the string of the small array: the string is named.
        let cut = &buf[..small + 7];
        let e = Reader::new(cut)
            .skip_recording(0, &mut Vec::new())
            .unwrap_err();
        assert_eq!(e.offset, small as u64 + 5, "{e}");
        assert!(matches!(e.kind, ErrorKind::Truncated { .. }), "{e}");
    }

    #[test]
    fn reserved_marker_is_an_error_with_its_offset() {
        let buf = [0x92, 0x01, 0xc1];
        let e = Reader::new(&buf).skip().unwrap_err();
        assert_eq!(e.offset, 2);
        assert!(matches!(e.kind, ErrorKind::Msgpack(_)));
    }

    /// The shortcuts of `key`, `uint` and `skip_known` answer as the general readers do: the
    /// same values, positions and errors.
    #[test]
    fn the_shortcuts_read_as_the_general_readers() {
        let mut strs = Vec::new();
        for k in ["index", "nämé", ""] {
            rmp::encode::write_str(&mut strs, k).unwrap();
        }
        let long = "k".repeat(40);
        rmp::encode::write_str(&mut strs, &long).unwrap();
        let (mut a, mut b) = (Reader::new(&strs), Reader::new(&strs));
        for _ in 0..4 {
            assert_eq!(a.key().unwrap(), b.str().unwrap().as_bytes());
            assert_eq!(a.pos(), b.pos());
        }
        for bad in [&[0xa2, 0xff, 0x41][..], &[0xa3, b'a'], &[0x01], &[]] {
            assert_eq!(
                Reader::new(bad).key(),
                Reader::new(bad).str().map(str::as_bytes)
            );
        }

        let mut ints = Vec::new();
        for v in [5u64, 200, 60_000, 70_000, 1 << 40] {
            rmp::encode::write_uint(&mut ints, v).unwrap();
        }
        let mut c = Reader::new(&ints);
        for v in [5u64, 200, 60_000, 70_000, 1 << 40] {
            let at = c.pos();
            assert_eq!(c.uint("n").unwrap(), v);
            assert_eq!(
                c.pos() - at,
                Reader::new(&ints).at(at).skip().unwrap().bytes.len()
            );
        }
        for cut in [&[0xcd, 0x01][..], &[0xcf, 0, 0, 0], &[0xd0, 0xff], &[0xc0]] {
            let general = match Reader::new(cut).head() {
                Ok(Head::Uint(v)) => Ok(v),
                Ok(h) => Err(unexpected(0, "n", h)),
                Err(e) => Err(e),
            };
            assert!(general.is_err());
            assert_eq!(Reader::new(cut).uint("n"), general);
        }

        // A short array of scalars, a map holding one, and a longer array, each stepped over
        // with and without a record of where containers end.
        let mut vals = Vec::new();
        rmp::encode::write_array_len(&mut vals, 4).unwrap();
        for v in [1u64, 2, 300, 4] {
            rmp::encode::write_uint(&mut vals, v).unwrap();
        }
        rmp::encode::write_map_len(&mut vals, 1).unwrap();
        rmp::encode::write_str(&mut vals, "key").unwrap();
        rmp::encode::write_array_len(&mut vals, 2).unwrap();
        rmp::encode::write_f64(&mut vals, 0.5).unwrap();
        rmp::encode::write_nil(&mut vals).unwrap();
        rmp::encode::write_array_len(&mut vals, 20).unwrap();
        for v in 0..20u64 {
            rmp::encode::write_uint(&mut vals, v).unwrap();
        }
        let mut ends = Vec::new();
        let mut whole = vals.clone();
        whole.insert(0, 0x93);
        Reader::new(&whole).skip_recording(0, &mut ends).unwrap();
        ends.sort_unstable();
        // Less the outer array: positions in `vals`.
        let ends: Vec<(usize, usize)> = ends[1..].iter().map(|&(s, e)| (s - 1, e - 1)).collect();
        assert_eq!(ends.len(), 4);
        for known in [&ends[..], &[]] {
            let (mut a, mut b) = (Reader::new(&vals), Reader::new(&vals));
            for _ in 0..3 {
                assert_eq!(a.skip_known(known).unwrap(), b.skip().unwrap());
            }
            assert_eq!(a.remaining(), 0);
        }
        let cut = &vals[..3];
        assert_eq!(Reader::new(cut).skip_known(&[]), Reader::new(cut).skip());
    }

    #[test]
    fn the_first_byte_table_agrees_with_the_general_reader() {
        // Wherever the table answers, the general reader (`head`, then the data it says
        // follows) spans the same bytes and values, whatever follows the marker; where it
        // does not, the length is in the bytes after the marker, or the marker is reserved.
        for b in 0..=255u8 {
            let (n, values) = BY_FIRST_BYTE[usize::from(b)];
            for fill in [0x00, 0xff] {
                let mut data = vec![fill; 40];
                data[0] = b;
                let mut c = Reader::new(&data);
                let head = c.head();
                if n == 0 {
                    let lengthy = matches!(b, 0xc4..=0xc9 | 0xd9..=0xdf);
                    assert!(lengthy || head.is_err(), "marker {b:#04x}");
                    continue;
                }
                let (data_len, contained) = match head.unwrap() {
                    Head::Str(k) | Head::Bin(k) | Head::Ext(k) => (k as usize, 0),
                    Head::Array(k) => (0, u64::from(k)),
                    Head::Map(k) => (0, 2 * u64::from(k)),
                    _ => (0, 0),
                };
                assert_eq!(
                    (c.pos() + data_len, contained),
                    (usize::from(n), u64::from(values)),
                    "marker {b:#04x}"
                );
            }
        }
    }

    #[test]
    fn every_marker_is_stepped_over_as_the_general_reader_reads_it() {
        // `step` (the one-byte markers by arithmetic, the others by the table and their length
        // fields) spans what `head` and the data it announces span, for every first byte
        // followed by bytes that make short and long lengths; it refuses what `head` refuses.
        for b in 0..=255u8 {
            for fill in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                let mut data = vec![fill; 40];
                data[0] = b;
                let mut c = Reader::new(&data);
                let expected = c.head().ok().map(|head| match head {
                    Head::Str(k) | Head::Bin(k) | Head::Ext(k) => (c.pos() + k as usize, 0),
                    Head::Array(k) => (c.pos(), u64::from(k)),
                    Head::Map(k) => (c.pos(), 2 * u64::from(k)),
                    _ => (c.pos(), 0),
                });
                // Past the end either way is past the end (the general reader's 32-bit
                // extension length saturates).
                let past = |s: Option<(usize, u64)>| s.map(|(n, v)| (n.min(data.len() + 1), v));
                assert_eq!(
                    past(step(&data, 0)),
                    past(expected),
                    "marker {b:#04x}, then {fill:#04x}"
                );
            }
        }
    }

    #[test]
    fn a_short_array_of_scalars_and_expected_bytes_are_stepped_over_or_left() {
        let mut b = Vec::new();
        rmp::encode::write_map_len(&mut b, 2).unwrap();
        rmp::encode::write_str(&mut b, "key").unwrap();
        rmp::encode::write_array_len(&mut b, 5).unwrap();
        for v in [1u64, 200, 70_000, 5_000_000_000] {
            rmp::encode::write_uint(&mut b, v).unwrap();
        }
        rmp::encode::write_sint(&mut b, -3).unwrap();
        let mut c = Reader::new(&b);
        assert!(!c.eat(b"\x82\xa3kex"));
        assert_eq!(c.pos(), 0);
        assert!(c.eat(b"\x82\xa3key"));
        let key = c.skip_scalar_array().unwrap();
        assert_eq!(key, Reader::new(&b).at(5).skip().unwrap());
        assert_eq!(c.remaining(), 0);
        // A string with a length field is a scalar too, spanning what `skip` spans.
        let str8 = [0x91, 0xd9, 0x01, b'x'];
        let mut c = Reader::new(&str8);
        assert_eq!(c.skip_scalar_array(), Reader::new(&str8).skip().ok());
        assert_eq!(c.remaining(), 0);
        // Cut short, nested, an empty map, not an array: left to the general reader, the
        // reader where it was.
        for bytes in [
            &b[5..b.len() - 1],
            &[0x91, 0x91, 0x01][..],
            &[0x91, 0xd9, 0x02, b'x'][..],
            &[0x91, 0x80][..],
            &[0x81, 0x01, 0x01][..],
            &[][..],
        ] {
            let mut c = Reader::new(bytes);
            assert_eq!(c.skip_scalar_array(), None, "{bytes:02x?}");
            assert_eq!(c.pos(), 0);
        }
        assert!(!Reader::new(b"\x82").eat(b"\x82\xa3key"));
    }
}
