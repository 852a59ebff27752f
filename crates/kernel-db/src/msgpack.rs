//! A bounds-checked MessagePack cursor over borrowed bytes: value heads (through
//! [`rmp::Marker`]), borrowed strings, and skipping a value without building it.
//!
//! Values are read in place, so a 117 MB index costs what the typed view keeps, not a tree of
//! `rmpv::Value`s. Every error carries the offset of the value it concerns.

use crate::error::{Error, ErrorKind, Result};
use rmp::Marker;

/// The head of one MessagePack value: its type and, for containers, strings and binaries, its
/// length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Head {
    Nil,
    Bool(bool),
    Uint(u64),
    Int(i64),
    Float(f64),
    Str(u32),
    Bin(u32),
    Array(u32),
    Map(u32),
    Ext(u32),
}

impl Head {
    /// A name for messages ("map of 3", "string").
    pub(crate) fn describe(self) -> String {
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
    /// Byte offset of the value in the index.
    pub offset: u64,
    /// The value's MessagePack bytes.
    pub bytes: &'a [u8],
}

impl<'a> Raw<'a> {
    /// The value as a string, if it is one.
    pub fn as_str(&self) -> Option<&'a str> {
        let mut c = Cursor::new(self.bytes);
        c.str().ok()
    }

    /// The value as an integer, if it is one that fits an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        let mut c = Cursor::new(self.bytes);
        match c.head().ok()? {
            Head::Uint(v) => i64::try_from(v).ok(),
            Head::Int(v) => Some(v),
            _ => None,
        }
    }

    /// The value decoded as an [`rmpv::Value`] (nesting bounded by
    /// [`MAX_DEPTH`](crate::limits::MAX_DEPTH)).
    pub fn to_value(&self) -> Result<rmpv::Value> {
        let mut rd = self.bytes;
        rmpv::decode::read_value_with_max_depth(&mut rd, crate::limits::MAX_DEPTH)
            .map_err(|e| Error::at(self.offset, ErrorKind::Msgpack(e.to_string())))
    }
}

/// A cursor over MessagePack bytes.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Cursor<'a> {
        Cursor { data, pos: 0 }
    }

    /// A cursor at `pos` of the same bytes.
    pub(crate) fn at(&self, pos: usize) -> Cursor<'a> {
        Cursor {
            data: self.data,
            pos,
        }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn offset(&self) -> u64 {
        self.pos as u64
    }

    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    pub(crate) fn bytes_between(&self, start: usize, end: usize) -> &'a [u8] {
        self.data.get(start..end).unwrap_or(&[])
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

    /// Reads the head of the next value; for strings, binaries and extensions the payload
    /// follows (read it with [`Cursor::skip_bytes`] or use [`Cursor::str`]).
    pub(crate) fn head(&mut self) -> Result<Head> {
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

    /// Skips `n` payload bytes of the value that started at `start`.
    pub(crate) fn skip_bytes(&mut self, n: u32, start: usize) -> Result<&'a [u8]> {
        self.take(n as usize, "MessagePack value", start)
    }

    /// Reads a string, borrowed.
    pub(crate) fn str(&mut self) -> Result<&'a str> {
        let start = self.pos;
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

    /// Reads a non-negative integer.
    pub(crate) fn uint(&mut self, expected: &'static str) -> Result<u64> {
        let start = self.pos;
        match self.head()? {
            Head::Uint(v) => Ok(v),
            other => Err(unexpected(start, expected, other)),
        }
    }

    /// Reads a number (integer or float) as `f64`.
    pub(crate) fn number(&mut self) -> Result<f64> {
        let start = self.pos;
        match self.head()? {
            Head::Uint(v) => Ok(v as f64),
            Head::Int(v) => Ok(v as f64),
            Head::Float(v) => Ok(v),
            other => Err(unexpected(start, "a number", other)),
        }
    }

    /// Reads an array head, its length checked against the bytes left (each element takes at
    /// least one).
    pub(crate) fn array(&mut self, expected: &'static str) -> Result<u32> {
        let start = self.pos;
        match self.head()? {
            Head::Array(n) => {
                self.check_room(u64::from(n), start)?;
                Ok(n)
            }
            other => Err(unexpected(start, expected, other)),
        }
    }

    /// Reads a map head, its length checked against the bytes left.
    pub(crate) fn map(&mut self, expected: &'static str) -> Result<u32> {
        let start = self.pos;
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

    /// Skips one whole value of any type and returns its bytes. The walk is iterative (a
    /// count of values still to skip), so deep nesting costs no stack; the count never
    /// exceeds the bytes left.
    pub(crate) fn skip(&mut self) -> Result<Raw<'a>> {
        let start = self.pos;
        let mut pending: u64 = 1;
        while pending > 0 {
            pending -= 1;
            let here = self.pos;
            match self.head()? {
                Head::Str(n) | Head::Bin(n) | Head::Ext(n) => {
                    self.skip_bytes(n, here)?;
                }
                Head::Array(n) => pending += u64::from(n),
                Head::Map(n) => pending += 2 * u64::from(n),
                _ => {}
            }
            if pending > self.remaining() as u64 {
                return Err(Error::at(
                    here as u64,
                    ErrorKind::Truncated {
                        what: "container",
                        need: pending,
                        have: self.remaining() as u64,
                    },
                ));
            }
        }
        Ok(Raw {
            offset: start as u64,
            bytes: self.bytes_between(start, self.pos),
        })
    }
}

pub(crate) fn unexpected(start: usize, expected: &'static str, found: Head) -> Error {
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
        let mut c = Cursor::new(&buf);
        let raw = c.skip().unwrap();
        assert_eq!(raw.bytes.len(), buf.len());
        assert_eq!(c.remaining(), 0);
        for cut in 0..buf.len() {
            let mut c = Cursor::new(&buf[..cut]);
            let e = c.skip().unwrap_err();
            assert!(matches!(e.kind, ErrorKind::Truncated { .. }), "{cut}: {e}");
        }
    }

    #[test]
    fn a_huge_declared_array_is_refused_before_looping() {
        let buf = [0xdd, 0xff, 0xff, 0xff, 0xff, 0x01];
        let e = Cursor::new(&buf).skip().unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Truncated { .. }));
        assert_eq!(e.offset, Some(0));
    }

    #[test]
    fn reserved_marker_is_an_error_with_its_offset() {
        let buf = [0x92, 0x01, 0xc1];
        let e = Cursor::new(&buf).skip().unwrap_err();
        assert_eq!(e.offset, Some(2));
        assert!(matches!(e.kind, ErrorKind::Msgpack(_)));
    }
}
