//! The instruction of a case written as LLVM IR, the way compiler engineers write it:
//!
//! ```text
//! load atomic i32, ptr addrspace(1) %p syncscope("agent") acquire, align 4
//! %old = atomicrmw add ptr addrspace(3) %p, i32 %v syncscope("workgroup-one-as") acq_rel
//! cmpxchg ptr %p, i32 %c, i32 %v seq_cst acquire
//! store volatile i32 %v, ptr addrspace(1) %p, align 4, !nontemporal !0
//! fence syncscope("workgroup") release, !mmra !{!"amdgpu-synchronize-as", !"local"}
//! ```
//!
//! Parsed into the [`Case`] key: the address space from `ptr addrspace(N)` (a bare `ptr` is
//! generic), the scope from `syncscope` (none is `system`), `volatile`, `!nontemporal` and
//! `!amdgpu.last.use` as flags, a fence's `!mmra` address spaces (either tag,
//! `amdgpu-synchronize-as` or LLVM 19's `amdgpu-as`). An `atomicrmw` or `cmpxchg` returns the
//! old value when it has a result (`%old = ...`). The model covers 32-bit accesses
//! (`i32`) and `atomicrmw add`. Errors name the token and its byte position.

use crate::case::{AddrSpace, Case, Flags, Kind, Mmra, Ordering, Scope};
use std::fmt;

/// LLVM IR text that is not an instruction the model covers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad LLVM IR instruction at byte {offset}{}: {why}", token_text(.token))]
pub struct IrParseError {
    /// Byte offset of the token in the text.
    pub offset: usize,
    /// The token found there (empty at the end of the text).
    pub token: String,
    /// What was expected.
    pub why: String,
}

fn token_text(t: &str) -> String {
    if t.is_empty() {
        " (end of text)".to_owned()
    } else {
        format!(" (`{t}`)")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tok<'a> {
    text: &'a str,
    offset: usize,
}

/// Splits the text into words (`addrspace`, `%p`, `!0`, `!nontemporal`, `i32`), quoted strings
/// and single punctuation characters.
fn tokens(text: &str) -> Result<Vec<Tok<'_>>, IrParseError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let word = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b'$');
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += 1;
            }
            if i == bytes.len() {
                return Err(IrParseError {
                    offset: start,
                    token: text[start..].to_owned(),
                    why: "unterminated string".into(),
                });
            }
            i += 1;
        } else if matches!(c, b'%' | b'@' | b'!') && i + 1 < bytes.len() && word(bytes[i + 1]) {
            i += 1;
            while i < bytes.len() && word(bytes[i]) {
                i += 1;
            }
        } else if word(c) {
            while i < bytes.len() && word(bytes[i]) {
                i += 1;
            }
        } else {
            // One character; step over a whole UTF-8 sequence so slicing stays on boundaries.
            i += text[i..].chars().next().map_or(1, char::len_utf8);
        }
        out.push(Tok {
            text: &text[start..i],
            offset: start,
        });
    }
    Ok(out)
}

struct Parser<'a> {
    toks: Vec<Tok<'a>>,
    pos: usize,
    end: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<Tok<'a>> {
        self.toks.get(self.pos).copied()
    }

    fn err_at(&self, t: Option<Tok<'a>>, why: impl Into<String>) -> IrParseError {
        IrParseError {
            offset: t.map_or(self.end, |t| t.offset),
            token: t.map_or(String::new(), |t| t.text.to_owned()),
            why: why.into(),
        }
    }

    fn err(&self, why: impl Into<String>) -> IrParseError {
        self.err_at(self.peek(), why)
    }

    fn next(&mut self, what: &str) -> Result<Tok<'a>, IrParseError> {
        let t = self
            .peek()
            .ok_or_else(|| self.err(format!("expected {what}")))?;
        self.pos += 1;
        Ok(t)
    }

    fn eat(&mut self, text: &str) -> bool {
        if self.peek().is_some_and(|t| t.text == text) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, text: &str) -> Result<(), IrParseError> {
        if self.eat(text) {
            Ok(())
        } else {
            Err(self.err(format!("expected `{text}`")))
        }
    }

    /// `i32`: the only access width the model covers.
    fn ty(&mut self) -> Result<(), IrParseError> {
        let t = self.next("a type")?;
        if t.text == "i32" {
            Ok(())
        } else {
            Err(self.err_at(Some(t), "expected `i32` (the model covers 32-bit accesses)"))
        }
    }

    /// A value operand: `%v`, `@g` or a number.
    fn value(&mut self) -> Result<(), IrParseError> {
        let t = self.next("a value")?;
        let ok = t.text.starts_with('%')
            || t.text.starts_with('@')
            || t.text.parse::<i64>().is_ok()
            || matches!(t.text, "undef" | "poison");
        if ok {
            Ok(())
        } else {
            Err(self.err_at(Some(t), "expected a value (`%v`, `@g` or a constant)"))
        }
    }

    /// `ptr [addrspace(N)] %p`.
    fn pointer(&mut self) -> Result<AddrSpace, IrParseError> {
        let t = self.next("`ptr`")?;
        if t.text != "ptr" {
            return Err(self.err_at(Some(t), "expected `ptr` (opaque pointer type)"));
        }
        let mut a = AddrSpace::Generic;
        if self.eat("addrspace") {
            self.expect("(")?;
            let n = self.next("an address-space number")?;
            a = n
                .text
                .parse::<u32>()
                .ok()
                .and_then(|v| AddrSpace::ALL.into_iter().find(|a| a.number() == v))
                .ok_or_else(|| {
                    self.err_at(
                        Some(n),
                        "expected address space 0 (generic), 1 (global), 2 (region), 3 (local), \
                         4 (constant) or 5 (private)",
                    )
                })?;
            self.expect(")")?;
        }
        self.value()?;
        Ok(a)
    }

    /// `[syncscope("name")]`; none is `system`.
    fn scope(&mut self) -> Result<Scope, IrParseError> {
        if !self.eat("syncscope") {
            return Ok(Scope::ALL[4]);
        }
        self.expect("(")?;
        let t = self.next("a quoted scope name")?;
        let name = t
            .text
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .ok_or_else(|| self.err_at(Some(t), "expected a quoted scope name"))?;
        let s = Scope::by_name(name).ok_or_else(|| {
            self.err_at(
                Some(t),
                "unknown sync scope (expected singlethread, wavefront, workgroup, cluster, agent, \
                 or one of them with -one-as, or one-as)",
            )
        })?;
        self.expect(")")?;
        Ok(s)
    }

    fn ordering(&mut self) -> Result<(Ordering, Tok<'a>), IrParseError> {
        let t = self.next("an ordering")?;
        let o = ORDERINGS
            .into_iter()
            .find(|o| o.name() == t.text)
            .ok_or_else(|| {
                self.err_at(
                    Some(t),
                    "expected an ordering (unordered, monotonic, acquire, release, acq_rel, seq_cst)",
                )
            })?;
        Ok((o, t))
    }

    /// The trailing `, align N` and `, !kind !N` attachments.
    fn trailer(&mut self, flags: &mut Flags, mmra: &mut Option<Mmra>) -> Result<(), IrParseError> {
        while self.eat(",") {
            let t = self.next("`align` or a metadata attachment")?;
            match t.text {
                "align" => {
                    let n = self.next("an alignment")?;
                    if n.text.parse::<u32>().is_err() {
                        return Err(self.err_at(Some(n), "expected an alignment in bytes"));
                    }
                }
                "!nontemporal" => {
                    flags.nontemporal = true;
                    self.metadata()?;
                }
                "!amdgpu.last.use" => {
                    flags.last_use = true;
                    self.metadata()?;
                }
                "!mmra" => {
                    if mmra.is_none() {
                        return Err(self.err_at(Some(t), "!mmra applies to fences only"));
                    }
                    *mmra = Some(self.mmra()?);
                }
                _ => {
                    return Err(self.err_at(
                        Some(t),
                        "expected `align N`, `!nontemporal`, `!amdgpu.last.use` or `!mmra`",
                    ))
                }
            }
        }
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.err("unexpected text after the instruction")),
        }
    }

    /// A metadata operand whose content does not matter: `!0` or `!{...}`.
    fn metadata(&mut self) -> Result<(), IrParseError> {
        let t = self.next("metadata (`!0` or `!{...}`)")?;
        if t.text == "!" {
            self.expect("{")?;
            let mut depth = 1;
            while depth > 0 {
                let t = self.next("`}`")?;
                match t.text {
                    "{" => depth += 1,
                    "}" => depth -= 1,
                    _ => {}
                }
            }
            return Ok(());
        }
        if t.text.starts_with('!') {
            Ok(())
        } else {
            Err(self.err_at(Some(t), "expected metadata (`!0` or `!{...}`)"))
        }
    }

    /// The address spaces of an `!mmra` attachment written inline:
    /// `!{!"amdgpu-synchronize-as", !"local"}` or a pair of such nodes.
    fn mmra(&mut self) -> Result<Mmra, IrParseError> {
        let open = self.next("`!{`")?;
        if open.text != "!" || !self.eat("{") {
            return Err(self.err_at(
                Some(open),
                "expected the restriction written inline: !{!\"amdgpu-synchronize-as\", !\"global\"} \
                 (numbered metadata cannot be resolved from one instruction)",
            ));
        }
        let (mut global, mut local) = (false, false);
        let nested = self.peek().is_some_and(|t| t.text == "!")
            && self.toks.get(self.pos + 1).is_some_and(|t| t.text == "{");
        if nested {
            // A node of nodes: !{!{tag, a}, !{tag, b}}.
            loop {
                self.expect("!")?;
                self.expect("{")?;
                self.mmra_pair(&mut global, &mut local)?;
                if !self.eat(",") {
                    break;
                }
            }
            self.expect("}")?;
        } else {
            self.mmra_pair(&mut global, &mut local)?;
        }
        Ok(match (global, local) {
            (true, true) => Mmra::GlobalLocal,
            (true, false) => Mmra::Global,
            (false, true) => Mmra::Local,
            (false, false) => unreachable!("mmra_pair sets one"),
        })
    }

    /// `!"tag", !"space"}` (after the opening brace).
    fn mmra_pair(&mut self, global: &mut bool, local: &mut bool) -> Result<(), IrParseError> {
        self.expect("!")?;
        let tag = self.next("the MMRA tag")?;
        if !matches!(tag.text, "\"amdgpu-synchronize-as\"" | "\"amdgpu-as\"") {
            return Err(self.err_at(
                Some(tag),
                "expected the MMRA tag \"amdgpu-synchronize-as\" (or LLVM 19's \"amdgpu-as\")",
            ));
        }
        self.expect(",")?;
        self.expect("!")?;
        let v = self.next("an address space name")?;
        match v.text {
            "\"global\"" => *global = true,
            "\"local\"" => *local = true,
            _ => {
                return Err(self.err_at(Some(v), "expected \"global\" or \"local\""));
            }
        }
        self.expect("}")
    }
}

const ORDERINGS: [Ordering; 6] = [
    Ordering::Unordered,
    Ordering::Monotonic,
    Ordering::Acquire,
    Ordering::Release,
    Ordering::AcqRel,
    Ordering::SeqCst,
];

/// Parses one LLVM IR memory instruction into its case.
pub fn parse_instruction(text: &str) -> Result<Case, IrParseError> {
    let mut p = Parser {
        toks: tokens(text)?,
        pos: 0,
        end: text.len(),
    };
    // An optional result: `%x =`.
    let mut has_result = false;
    if p.peek().is_some_and(|t| t.text.starts_with('%'))
        && p.toks.get(1).is_some_and(|t| t.text == "=")
    {
        p.pos = 2;
        has_result = true;
    }
    let op = p.next("an instruction (load, store, atomicrmw, cmpxchg, fence)")?;
    let mut flags = Flags::default();
    let mut mmra = None;
    let mut case = Case {
        kind: Kind::Load,
        addr_space: None,
        ordering: None,
        failure: None,
        scope: None,
        ret: None,
        flags,
        mmra: None,
    };
    let mut order_tok = None;
    match op.text {
        "load" | "store" => {
            let atomic = p.eat("atomic");
            flags.volatile = p.eat("volatile");
            let load = op.text == "load";
            case.kind = match (load, atomic) {
                (true, false) => Kind::Load,
                (false, false) => Kind::Store,
                (true, true) => Kind::LoadAtomic,
                (false, true) => Kind::StoreAtomic,
            };
            p.ty()?;
            if !load {
                p.value()?;
            }
            p.expect(",")?;
            case.addr_space = Some(p.pointer()?);
            if atomic {
                case.scope = Some(p.scope()?);
                let (o, t) = p.ordering()?;
                case.ordering = Some(o);
                order_tok = Some(t);
            }
        }
        "atomicrmw" => {
            case.kind = Kind::AtomicRmw;
            flags.volatile = p.eat("volatile");
            let rmw = p.next("an atomicrmw operation")?;
            if rmw.text != "add" {
                return Err(p.err_at(
                    Some(rmw),
                    "the model covers `atomicrmw add` (every operation lowers alike)",
                ));
            }
            case.addr_space = Some(p.pointer()?);
            p.expect(",")?;
            p.ty()?;
            p.value()?;
            case.scope = Some(p.scope()?);
            let (o, t) = p.ordering()?;
            case.ordering = Some(o);
            order_tok = Some(t);
            case.ret = Some(has_result);
        }
        "cmpxchg" => {
            case.kind = Kind::Cmpxchg;
            p.eat("weak");
            flags.volatile = p.eat("volatile");
            case.addr_space = Some(p.pointer()?);
            for _ in 0..2 {
                p.expect(",")?;
                p.ty()?;
                p.value()?;
            }
            case.scope = Some(p.scope()?);
            let (o, t) = p.ordering()?;
            case.ordering = Some(o);
            order_tok = Some(t);
            let (f, ft) = p.ordering()?;
            if !matches!(
                f,
                Ordering::Monotonic | Ordering::Acquire | Ordering::SeqCst
            ) {
                return Err(p.err_at(
                    Some(ft),
                    "a cmpxchg failure ordering is monotonic, acquire or seq_cst",
                ));
            }
            case.failure = Some(f);
            case.ret = Some(has_result);
        }
        "fence" => {
            case.kind = Kind::Fence;
            case.scope = Some(p.scope()?);
            let (o, t) = p.ordering()?;
            case.ordering = Some(o);
            order_tok = Some(t);
            mmra = Some(Mmra::None);
        }
        _ => {
            return Err(p.err_at(
                Some(op),
                "expected an instruction (load, store, atomicrmw, cmpxchg, fence)",
            ))
        }
    }
    p.trailer(&mut flags, &mut mmra)?;
    if has_result && matches!(case.kind, Kind::Store | Kind::StoreAtomic | Kind::Fence) {
        return Err(IrParseError {
            offset: 0,
            token: p.toks[0].text.to_owned(),
            why: format!("{} has no result", op.text),
        });
    }
    case.flags = flags;
    case.mmra = mmra;
    case.validate().map_err(|why| {
        // The ordering is what most often makes a parsed instruction invalid.
        let at = if why.contains("ordering") {
            order_tok
        } else {
            Some(op)
        };
        p.err_at(at, why)
    })?;
    Ok(case)
}

impl Case {
    /// The case of an LLVM IR instruction (see [`parse_instruction`]).
    pub fn from_llvm_ir(text: &str) -> Result<Case, IrParseError> {
        parse_instruction(text)
    }

    /// The case as an LLVM IR instruction on `%p` (value `%v`, comparand `%c`), spelling a fence
    /// restriction with `mmra_tag`; [`parse_instruction`] reads it back.
    pub fn to_llvm_ir(&self, mmra_tag: &str) -> String {
        IrText {
            case: self,
            tag: mmra_tag,
        }
        .to_string()
    }
}

struct IrText<'a> {
    case: &'a Case,
    tag: &'a str,
}

impl fmt::Display for IrText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.case;
        let ptr = match c.addr_space {
            None | Some(AddrSpace::Generic) => "ptr %p".to_owned(),
            Some(a) => format!("ptr addrspace({}) %p", a.number()),
        };
        let vol = if c.flags.volatile { " volatile" } else { "" };
        let scope = c.scope.map(|s| s.llvm_syncscope()).unwrap_or_default();
        let ord = c.ordering.map(|o| o.name()).unwrap_or_default();
        // Result names: a load's value `%x`, a returning atomicrmw's `%x`, a returning
        // cmpxchg's pair `%r`.
        let result = match (c.kind, c.ret) {
            (Kind::Cmpxchg, Some(true)) => "%r = ",
            (_, Some(true)) => "%x = ",
            _ => "",
        };
        match c.kind {
            Kind::Load => write!(f, "%x = load{vol} i32, {ptr}, align 4")?,
            Kind::Store => write!(f, "store{vol} i32 %v, {ptr}, align 4")?,
            Kind::LoadAtomic => {
                write!(f, "%x = load atomic{vol} i32, {ptr}{scope} {ord}, align 4")?
            }
            Kind::StoreAtomic => {
                write!(f, "store atomic{vol} i32 %v, {ptr}{scope} {ord}, align 4")?
            }
            Kind::AtomicRmw => write!(
                f,
                "{result}atomicrmw{vol} add {ptr}, i32 %v{scope} {ord}, align 4"
            )?,
            Kind::Cmpxchg => write!(
                f,
                "{result}cmpxchg{vol} {ptr}, i32 %c, i32 %v{scope} {ord} {}, align 4",
                c.failure.map(|o| o.name()).unwrap_or_default()
            )?,
            Kind::Fence => write!(f, "fence{scope} {ord}")?,
        }
        if c.flags.nontemporal {
            f.write_str(", !nontemporal !0")?;
        }
        if c.flags.last_use {
            f.write_str(", !amdgpu.last.use !1")?;
        }
        let tag = self.tag;
        match c.mmra {
            Some(Mmra::Global) => write!(f, ", !mmra !{{!\"{tag}\", !\"global\"}}")?,
            Some(Mmra::Local) => write!(f, ", !mmra !{{!\"{tag}\", !\"local\"}}")?,
            Some(Mmra::GlobalLocal) => write!(
                f,
                ", !mmra !{{!{{!\"{tag}\", !\"global\"}}, !{{!\"{tag}\", !\"local\"}}}}"
            )?,
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_examples_parse() {
        for (ir, key) in [
            (
                "load atomic i32, ptr addrspace(1) %p syncscope(\"agent\") acquire, align 4",
                "load_atomic;as=global;ord=acquire;scope=agent",
            ),
            (
                "fence syncscope(\"workgroup\") release",
                "fence;ord=release;scope=workgroup;mmra=none",
            ),
            (
                "%old = atomicrmw add ptr addrspace(3) %p, i32 %v syncscope(\"workgroup-one-as\") acq_rel",
                "atomicrmw;as=local;ord=acq_rel;scope=workgroup-one-as;ret=ret;op=add",
            ),
            (
                "cmpxchg weak ptr %p, i32 %c, i32 1 seq_cst acquire, align 4",
                "cmpxchg;as=generic;ord=seq_cst;ford=acquire;scope=system;ret=noret",
            ),
            (
                "store volatile i32 %v, ptr addrspace(1) %p, align 4, !nontemporal !0",
                "store;as=global;flags=volatile+nontemporal",
            ),
            (
                "store atomic i32 %v, ptr addrspace(5) %p syncscope(\"one-as\") monotonic, align 4",
                "store_atomic;as=private;ord=monotonic;scope=one-as",
            ),
            (
                "fence syncscope(\"agent\") acq_rel, !mmra !{!\"amdgpu-synchronize-as\", !\"local\"}",
                "fence;ord=acq_rel;scope=agent;mmra=local",
            ),
            (
                "%x = load i32, ptr addrspace(4) %p, align 4, !amdgpu.last.use !{}",
                "load;as=constant;flags=lastuse",
            ),
            (
                "load atomic i32, ptr addrspace(1) %p syncscope(\"cluster\") acquire, align 4",
                "load_atomic;as=global;ord=acquire;scope=cluster",
            ),
            (
                "fence syncscope(\"cluster-one-as\") release",
                "fence;ord=release;scope=cluster-one-as;mmra=none",
            ),
        ] {
            let c = parse_instruction(ir).unwrap_or_else(|e| panic!("{ir}: {e}"));
            assert_eq!(c.to_string(), key, "{ir}");
        }
    }

    #[test]
    fn every_case_round_trips_through_ir_text() {
        for c in Case::all_with_cluster() {
            for tag in ["amdgpu-synchronize-as", "amdgpu-as"] {
                let ir = c.to_llvm_ir(tag);
                assert_eq!(parse_instruction(&ir), Ok(c), "{ir}");
            }
        }
    }

    #[test]
    fn errors_name_the_token_and_its_position() {
        for (ir, offset, token, why) in [
            (
                "load atomic i32, ptr addrspace(1) %p syncscope(\"agent\") release, align 4",
                56,
                "release",
                "cannot have ordering",
            ),
            ("load atomic i64, ptr %p acquire", 12, "i64", "32-bit"),
            (
                "fence syncscope(\"gpu\") acquire",
                16,
                "\"gpu\"",
                "unknown sync scope",
            ),
            ("load i32, ptr addrspace(7) %p", 24, "7", "address space"),
            ("fence acquire extra", 14, "extra", "unexpected text"),
            (
                "atomicrmw xchg ptr %p, i32 %v monotonic",
                10,
                "xchg",
                "atomicrmw add",
            ),
            ("load atomic i32, ptr %p", 23, "", "ordering"),
            ("frobnicate", 0, "frobnicate", "expected an instruction"),
            (
                "cmpxchg ptr %p, i32 %c, i32 %v acq_rel release",
                39,
                "release",
                "failure ordering",
            ),
        ] {
            let e = parse_instruction(ir).unwrap_err();
            assert_eq!((e.offset, e.token.as_str()), (offset, token), "{ir}: {e}");
            assert!(e.why.contains(why), "{ir}: {e}");
            assert!(e.to_string().contains(&format!("byte {offset}")), "{e}");
        }
    }

    #[test]
    fn never_panics_on_cut_text() {
        let ir = "%old = cmpxchg volatile ptr addrspace(1) %p, i32 %c, i32 %v syncscope(\"agent\") acq_rel acquire, align 4, !mmra !{!{!\"amdgpu-as\", !\"global\"}, !{!\"amdgpu-as\", !\"local\"}}";
        for (i, _) in ir.char_indices() {
            let _ = parse_instruction(&ir[..i]);
        }
        let _ = parse_instruction("load \u{e9}\"");
    }
}
