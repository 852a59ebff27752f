//! Tensile indexes in YAML (`TensileLibrary.yaml`: Tensile's host library reads them when
//! rocBLAS is built with `TENSILE_YAML`, as releases before MessagePack were), read by
//! transcoding them into the MessagePack layout of a `.dat` file: the same maps, sequences and
//! scalars, which [`crate::tensile::Index`] then reads as it reads any index.
//!
//! The transcoding streams the YAML parser's events (`yaml-rust2`) into the output: a map or
//! sequence is written with a 32-bit count that is filled in when it closes, so memory is the
//! output's size and a stack as deep as the nesting ([`Limits::max_depth`]). Plain scalars
//! take the types YAML 1.1 gives them (the resolution PyYAML, which writes Tensile's files,
//! applies): `~`/`null`/empty is nil, `true`/`false` (and `yes`/`no`/`on`/`off`) a boolean,
//! decimal, hexadecimal and octal integers, and floats (`.inf`, `.nan` too); quoted scalars and
//! everything else are strings. An alias repeats its anchor's bytes; the output is limited to
//! [`Limits::max_decompressed`], so aliases cannot blow it up. Only the first document is read.
//!
//! Offsets in errors of the index reader then refer to the transcoded bytes (as for a
//! `.dat.zlib` file, to the inflated ones); errors of the YAML itself name the line and
//! column.

use crate::error::{Error, ErrorKind, Result};
use crate::limits::Limits;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// Whether `prefix` (the first bytes of a file) starts a YAML document that may be a Tensile
/// index: comments and blank lines, then `---`, a `%YAML` directive, or the key `library:` or
/// `solutions:` (the index's two keys) at the start of a line.
pub fn looks_like_index(prefix: &[u8]) -> bool {
    let text = match std::str::from_utf8(prefix) {
        Ok(t) => t,
        // Cut in the middle of a character: what comes before it.
        Err(e) => std::str::from_utf8(&prefix[..e.valid_up_to()]).unwrap_or_default(),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.lines()
        .map(str::trim_end)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .is_some_and(|l| {
            l == "---"
                || l.starts_with("--- ")
                || l.starts_with("%YAML")
                || l.starts_with("library:")
                || l.starts_with("solutions:")
        })
}

fn at(mark: Marker, kind: ErrorKind) -> Error {
    Error::at(mark.index() as u64, kind).place(format!(
        "line {}, column {}",
        mark.line(),
        mark.col() + 1
    ))
}

/// An open map or sequence: where its count goes, how many events it holds, its anchor.
struct Open {
    header: usize,
    items: u64,
    map: bool,
    anchor: usize,
    start: usize,
}

/// Transcodes a YAML index into the MessagePack bytes of the same tree (see the module
/// documentation for the typing of scalars and the bounds).
pub fn to_msgpack(yaml: &[u8], limits: &Limits) -> Result<Vec<u8>> {
    let text = std::str::from_utf8(yaml).map_err(|e| {
        Error::at(
            e.valid_up_to() as u64,
            ErrorKind::Msgpack("YAML text that is not UTF-8".into()),
        )
    })?;
    let mut parser = Parser::new_from_str(text);
    let mut out: Vec<u8> = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    // Anchor id -> the bytes of its node in `out`.
    let mut anchors: std::collections::HashMap<usize, (usize, usize)> = Default::default();
    let mut documents = 0usize;
    let mut done = false;
    while !done {
        let (event, mark) = parser.next_token().map_err(|e| {
            at(
                *e.marker(),
                ErrorKind::Inconsistent(format!("not YAML: {}", e.info())),
            )
        })?;
        if out.len() as u64 > limits.max_decompressed {
            return Err(at(
                mark,
                ErrorKind::LimitExceeded {
                    what: "transcoded YAML index size",
                    limit: limits.max_decompressed,
                },
            ));
        }
        match event {
            Event::StreamStart | Event::Nothing => {}
            Event::DocumentStart => documents += 1,
            Event::StreamEnd => done = true,
            Event::DocumentEnd => done = documents > 0 && stack.is_empty() && !out.is_empty(),
            Event::MappingStart(anchor, _) | Event::SequenceStart(anchor, _) => {
                if stack.len() >= limits.max_depth {
                    return Err(at(
                        mark,
                        ErrorKind::LimitExceeded {
                            what: "nesting depth",
                            limit: limits.max_depth as u64,
                        },
                    ));
                }
                let map = matches!(event, Event::MappingStart(..));
                let start = out.len();
                out.push(if map { 0xdf } else { 0xdd });
                out.extend_from_slice(&[0; 4]);
                stack.push(Open {
                    header: start + 1,
                    items: 0,
                    map,
                    anchor,
                    start,
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let Some(o) = stack.pop() else {
                    return Err(at(
                        mark,
                        ErrorKind::Inconsistent("a collection closes that never opened".into()),
                    ));
                };
                let n = if o.map { o.items / 2 } else { o.items };
                let n = u32::try_from(n).map_err(|_| {
                    at(
                        mark,
                        ErrorKind::LimitExceeded {
                            what: "items of one collection",
                            limit: u64::from(u32::MAX),
                        },
                    )
                })?;
                out[o.header..o.header + 4].copy_from_slice(&n.to_be_bytes());
                finished(&mut anchors, &mut stack, (o.start, out.len()), o.anchor);
            }
            Event::Scalar(value, style, anchor, tag) => {
                let start = out.len();
                let quoted =
                    style != TScalarStyle::Plain || tag.as_ref().is_some_and(|t| t.suffix == "str");
                scalar(&mut out, &value, quoted);
                finished(&mut anchors, &mut stack, (start, out.len()), anchor);
            }
            Event::Alias(id) => {
                let Some(&(from, to)) = anchors.get(&id) else {
                    return Err(at(
                        mark,
                        ErrorKind::Inconsistent("an alias to no complete anchored node".into()),
                    ));
                };
                if (out.len() + (to - from)) as u64 > limits.max_decompressed {
                    return Err(at(
                        mark,
                        ErrorKind::LimitExceeded {
                            what: "transcoded YAML index size",
                            limit: limits.max_decompressed,
                        },
                    ));
                }
                out.extend_from_within(from..to);
                finished(&mut anchors, &mut stack, (0, 0), 0);
            }
        }
        // The first document's root is the index; what follows it is not read.
        if documents > 0 && stack.is_empty() && !out.is_empty() {
            done = true;
        }
    }
    if out.is_empty() {
        return Err(Error::at(
            0,
            ErrorKind::MissingField("a YAML document (the index map)"),
        ));
    }
    Ok(out)
}

/// Writes the MessagePack index `bytes` as YAML that [`to_msgpack`] (and Tensile's YAML
/// reader) read back as the same tree: a `---` document of flow collections, one item per
/// line, strings double-quoted with escapes, floats with a point or an exponent (`.inf`,
/// `.nan`), integers, booleans and `null` plain. What a YAML index pruned by `gfxkit prune` is
/// written as. Binary, extension and collection keys have no place in an index and are
/// refused; nesting deeper than `limits.max_depth` too.
pub fn from_msgpack(bytes: &[u8], limits: &Limits) -> Result<Vec<u8>> {
    let mut out = String::from("---\n");
    let mut rd = bytes;
    emit(&mut rd, bytes.len(), &mut out, 0, limits.max_depth)?;
    if !rd.is_empty() {
        return Err(Error::at(
            (bytes.len() - rd.len()) as u64,
            ErrorKind::TrailingBytes(rd.len() as u64),
        ));
    }
    out.push('\n');
    Ok(out.into_bytes())
}

fn emit(rd: &mut &[u8], total: usize, out: &mut String, depth: usize, max: usize) -> Result<()> {
    use rmp::Marker;
    let here = (total - rd.len()) as u64;
    let bad = |what: &str| Error::at(here, ErrorKind::Msgpack(what.to_owned()));
    let Some(&first) = rd.first() else {
        return Err(Error::at(
            here,
            ErrorKind::Truncated {
                what: "a value",
                need: 1,
                have: 0,
            },
        ));
    };
    let mut take = |n: usize| -> Result<u64> {
        let b = rd
            .get(1..1 + n)
            .ok_or_else(|| bad("a container head cut short"))?;
        let v = b.iter().fold(0u64, |a, &x| a << 8 | u64::from(x));
        *rd = &rd[1 + n..];
        Ok(v)
    };
    let (map, n) = match Marker::from_u8(first) {
        Marker::FixMap(n) => (true, take(0)? + u64::from(n)),
        Marker::Map16 => (true, take(2)?),
        Marker::Map32 => (true, take(4)?),
        Marker::FixArray(n) => (false, take(0)? + u64::from(n)),
        Marker::Array16 => (false, take(2)?),
        Marker::Array32 => (false, take(4)?),
        _ => {
            let v = rmpv::decode::read_value(rd).map_err(|e| bad(&e.to_string()))?;
            return scalar_text(&v, out).map_err(bad);
        }
    };
    if depth >= max {
        return Err(Error::at(
            here,
            ErrorKind::LimitExceeded {
                what: "nesting depth",
                limit: max as u64,
            },
        ));
    }
    out.push(if map { '{' } else { '[' });
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        out.push('\n');
        out.push_str(&" ".repeat(depth + 1));
        if map {
            let key_at = (total - rd.len()) as u64;
            if matches!(
                rd.first().map(|&b| Marker::from_u8(b)),
                Some(
                    Marker::FixMap(_)
                        | Marker::Map16
                        | Marker::Map32
                        | Marker::FixArray(_)
                        | Marker::Array16
                        | Marker::Array32
                )
            ) {
                return Err(Error::at(
                    key_at,
                    ErrorKind::Msgpack("a collection as a map key".into()),
                ));
            }
            emit(rd, total, out, depth + 1, max)?;
            out.push_str(": ");
        }
        emit(rd, total, out, depth + 1, max)?;
    }
    out.push(if map { '}' } else { ']' });
    Ok(())
}

/// A scalar as YAML text that reads back as the same value.
fn scalar_text(v: &rmpv::Value, out: &mut String) -> std::result::Result<(), &'static str> {
    use rmpv::Value;
    use std::fmt::Write;
    match v {
        Value::Nil => out.push_str("null"),
        Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Integer(i) => {
            let _ = write!(out, "{i}");
        }
        Value::F32(f) => float_text(f64::from(*f), out),
        Value::F64(f) => float_text(*f, out),
        Value::String(s) => {
            let s = s.as_str().ok_or("a string that is not UTF-8")?;
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    // What YAML does not print as it is (controls, C1, line and paragraph
                    // separators, the byte-order mark, non-characters) is escaped.
                    c if (c as u32) < 0x20
                        || ('\u{7f}'..='\u{9f}').contains(&c)
                        || matches!(
                            c,
                            '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
                        ) =>
                    {
                        let _ = write!(out, "\\u{:04x}", c as u32);
                    }
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Value::Binary(_) => return Err("binary data has no place in an index"),
        Value::Ext(..) => return Err("an extension type has no place in an index"),
        Value::Array(_) | Value::Map(_) => return Err("a collection where a scalar was read"),
    }
    Ok(())
}

fn float_text(f: f64, out: &mut String) {
    use std::fmt::Write;
    if f.is_nan() {
        out.push_str(".nan");
    } else if f.is_infinite() {
        out.push_str(if f > 0.0 { ".inf" } else { "-.inf" });
    } else {
        // `{:?}` always writes a point or an exponent: it reads back as a float.
        let _ = write!(out, "{f:?}");
    }
}

/// A node complete at `bytes` of the output: counted in its parent, remembered by its anchor
/// (0: none).
fn finished(
    anchors: &mut std::collections::HashMap<usize, (usize, usize)>,
    stack: &mut [Open],
    bytes: (usize, usize),
    anchor: usize,
) {
    if anchor != 0 {
        anchors.insert(anchor, bytes);
    }
    if let Some(parent) = stack.last_mut() {
        parent.items += 1;
    }
}

/// Writes one scalar: a quoted one as a string, a plain one as YAML 1.1 resolves it.
fn scalar(out: &mut Vec<u8>, v: &str, quoted: bool) {
    use rmp::encode;
    // Writing into a Vec cannot fail: the results are dropped.
    if !quoted {
        let boolean = match v {
            "" | "~" | "null" | "Null" | "NULL" => {
                let _ = encode::write_nil(out);
                return;
            }
            "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
            "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(false),
            _ => None,
        };
        if let Some(b) = boolean {
            let _ = encode::write_bool(out, b);
            return;
        }
        if let Some(i) = integer(v) {
            let _ = match i {
                Int::Signed(i) => encode::write_sint(out, i).map(|_| ()),
                Int::Unsigned(u) => encode::write_uint(out, u).map(|_| ()),
            };
            return;
        }
        if let Some(f) = float(v) {
            let _ = encode::write_f64(out, f);
            return;
        }
    }
    let _ = encode::write_str(out, v);
}

enum Int {
    Signed(i64),
    Unsigned(u64),
}

/// A YAML 1.1 integer: `[-+]` then decimal digits, `0x` hexadecimal or `0` octal, with `_`
/// between digits.
fn integer(v: &str) -> Option<Int> {
    let (neg, body) = match v.as_bytes().first()? {
        b'-' => (true, &v[1..]),
        b'+' => (false, &v[1..]),
        _ => (false, v),
    };
    if body.is_empty() || body.starts_with('_') || body.ends_with('_') {
        return None;
    }
    let digits: String = body.chars().filter(|&c| c != '_').collect();
    let (radix, digits) = if let Some(h) = digits.strip_prefix("0x") {
        (16, h.to_owned())
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, digits[1..].to_owned())
    } else {
        (10, digits)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u64::from_str_radix(&digits, radix).ok()?;
    if neg {
        let i = 0i64.checked_sub_unsigned(magnitude)?;
        Some(Int::Signed(i))
    } else {
        Some(Int::Unsigned(magnitude))
    }
}

/// A YAML 1.1 float: decimal with a point or an exponent, `.inf`, `.nan`.
fn float(v: &str) -> Option<f64> {
    let body = v.trim_start_matches(['-', '+']);
    match body {
        ".inf" | ".Inf" | ".INF" => {
            return Some(if v.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            })
        }
        ".nan" | ".NaN" | ".NAN" if body.len() == v.len() => return Some(f64::NAN),
        _ => {}
    }
    if v.len() - body.len() > 1 {
        return None;
    }
    let plain: String = v.chars().filter(|&c| c != '_').collect();
    let b = plain.trim_start_matches(['-', '+']);
    let (mantissa, exponent) = match b.find(['e', 'E']) {
        Some(i) => (&b[..i], Some(&b[i + 1..])),
        None => (b, None),
    };
    let point = mantissa.contains('.');
    let mantissa_ok = !mantissa.is_empty()
        && mantissa != "."
        && mantissa.chars().filter(|&c| c == '.').count() <= 1
        && mantissa.chars().all(|c| c.is_ascii_digit() || c == '.');
    let exponent_ok = exponent.map_or(true, |e| {
        let d = e.trim_start_matches(['-', '+']);
        e.len() - d.len() <= 1 && !d.is_empty() && d.chars().all(|c| c.is_ascii_digit())
    });
    if !(mantissa_ok && exponent_ok && (point || exponent.is_some())) {
        return None;
    }
    plain.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(yaml: &str) -> rmpv::Value {
        let b = to_msgpack(yaml.as_bytes(), &Limits::default()).unwrap();
        rmpv::decode::read_value(&mut &b[..]).unwrap()
    }

    #[test]
    fn block_and_flow_styles_make_the_same_tree() {
        let block = "---\nlibrary:\n  rows:\n  - predicate: {type: AMDGPU, value: {type: Processor, value: gfx90a}}\n    library: {index: 3, type: Single}\nsolutions:\n- {index: 3, name: 'Cijk_x', speed: 1.5e+2}\n";
        let flow = "{library: {rows: [{predicate: {type: AMDGPU, value: {type: Processor, value: gfx90a}}, library: {index: 3, type: Single}}]}, solutions: [{index: 3, name: Cijk_x, speed: 150.0}]}";
        assert_eq!(decode(block), decode(flow));
        let v = decode(block);
        let sol = &v["solutions"][0];
        assert_eq!(sol["index"].as_u64(), Some(3));
        assert_eq!(sol["name"].as_str(), Some("Cijk_x"));
        assert_eq!(sol["speed"].as_f64(), Some(150.0));
    }

    #[test]
    fn plain_scalars_take_yaml_11_types_and_quoted_ones_stay_strings() {
        let v = decode("[~, null, true, no, 12, -7, 0x1f, 017, 1_000, 2.5, .inf, -.inf, '12', \"true\", gfx1030, 1e3, 1.2.3, 0x, '-']");
        let a = v.as_array().unwrap();
        assert!(a[0].is_nil() && a[1].is_nil());
        assert_eq!(a[2].as_bool(), Some(true));
        assert_eq!(a[3].as_bool(), Some(false));
        assert_eq!(a[4].as_u64(), Some(12));
        assert_eq!(a[5].as_i64(), Some(-7));
        assert_eq!(a[6].as_u64(), Some(31));
        assert_eq!(a[7].as_u64(), Some(15));
        assert_eq!(a[8].as_u64(), Some(1000));
        assert_eq!(a[9].as_f64(), Some(2.5));
        assert_eq!(a[10].as_f64(), Some(f64::INFINITY));
        assert_eq!(a[11].as_f64(), Some(f64::NEG_INFINITY));
        assert_eq!(a[12].as_str(), Some("12"));
        assert_eq!(a[13].as_str(), Some("true"));
        assert_eq!(a[14].as_str(), Some("gfx1030"));
        assert_eq!(a[15].as_f64(), Some(1000.0));
        assert_eq!(a[16].as_str(), Some("1.2.3"));
        assert_eq!(a[17].as_str(), Some("0x"));
        assert_eq!(a[18].as_str(), Some("-"));
    }

    #[test]
    fn aliases_repeat_their_anchor_within_the_limit() {
        let v = decode("a: &p {type: Single, index: 1}\nb: *p\n");
        assert_eq!(v["a"], v["b"]);
        // A document that doubles itself ten times stays under a small limit, or is refused.
        let mut doc = String::from("a0: &a0 [x, x]\n");
        for i in 1..24 {
            doc.push_str(&format!("a{i}: &a{i} [*a{}, *a{}]\n", i - 1, i - 1));
        }
        let limits = Limits {
            max_decompressed: 1 << 20,
            ..Limits::default()
        };
        let e = to_msgpack(doc.as_bytes(), &limits).unwrap_err();
        assert!(e.to_string().contains("transcoded YAML index size"), "{e}");
    }

    #[test]
    fn damage_names_line_and_column_and_never_panics() {
        let e = to_msgpack(b"library:\n  rows: [1, 2\n", &Limits::default()).unwrap_err();
        assert!(e.to_string().contains("line"), "{e}");
        assert!(to_msgpack(b"\xff\xfe", &Limits::default()).is_err());
        assert!(to_msgpack(b"", &Limits::default()).is_err());
        // Nesting deeper than the limit (the parser's own, or gfxkit's) is refused.
        let deep = "[".repeat(10_000);
        let e = to_msgpack(deep.as_bytes(), &Limits::default()).unwrap_err();
        assert!(e.to_string().contains("limit"), "{e}");
        let limits = Limits {
            max_depth: 8,
            ..Limits::default()
        };
        let e = to_msgpack("[".repeat(20).as_bytes(), &limits).unwrap_err();
        assert!(e.to_string().contains("nesting depth"), "{e}");
        for cut in 0..40 {
            let doc = "---\nlibrary: {rows: [{a: 1}]}\nsolutions: [{index: 0, name: k}]\n";
            let _ = to_msgpack(&doc.as_bytes()[..cut], &Limits::default());
        }
    }

    #[test]
    fn written_yaml_reads_back_as_the_same_tree() {
        let yaml = "---\nlibrary: {rows: [{predicate: {type: AMDGPU, value: {type: Processor, value: gfx90a}}, library: {index: 3, type: Single}}]}\nsolutions:\n- {index: 3, name: \"Cijk \\\"x\\\"\\ty\", speed: 1.5e+2, n: ~, ok: true, neg: -4, inf: .inf, small: 0.1, key: [1, 2.0]}\n";
        let mp = to_msgpack(yaml.as_bytes(), &Limits::default()).unwrap();
        let written = from_msgpack(&mp, &Limits::default()).unwrap();
        let back = to_msgpack(&written, &Limits::default()).unwrap();
        let value = |b: &[u8]| rmpv::decode::read_value(&mut &b[..]).unwrap();
        assert_eq!(
            value(&mp),
            value(&back),
            "{}",
            String::from_utf8_lossy(&written)
        );
        assert!(looks_like_index(&written));
        // Minimal MessagePack heads (as Tensile writes them) read the same.
        let mut minimal = Vec::new();
        rmpv::encode::write_value(&mut minimal, &value(&mp)).unwrap();
        let again = from_msgpack(&minimal, &Limits::default()).unwrap();
        assert_eq!(again, written);
        // What has no place in an index is refused, with the offset.
        let mut bin = Vec::new();
        rmpv::encode::write_value(
            &mut bin,
            &rmpv::Value::Array(vec![rmpv::Value::Binary(vec![1])]),
        )
        .unwrap();
        let e = from_msgpack(&bin, &Limits::default()).unwrap_err();
        assert!(e.to_string().contains("binary"), "{e}");
        assert!(from_msgpack(&minimal[..minimal.len() - 1], &Limits::default()).is_err());
    }

    #[test]
    fn the_first_lines_tell_an_index() {
        assert!(looks_like_index(b"---\nlibrary:\n"));
        assert!(looks_like_index(b"# made by Tensile\n\nlibrary:\n  rows:"));
        assert!(looks_like_index(b"solutions:\n- {index: 0}"));
        assert!(!looks_like_index(b"- {MinimumRequiredVersion: 4.2.0}"));
        assert!(!looks_like_index(b"\x82\xa9solutions"));
    }
}
