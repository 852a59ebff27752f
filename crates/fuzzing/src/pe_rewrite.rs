//! The rewrite of PE32+ images (`gfxkit prune`/`recompress` of a DLL or EXE, with and without
//! `--drop-signature`) and of COFF objects on arbitrary input, with what a Windows loader and
//! linker rely on checked beside the read-back verification of [`crate::prune`].

use gfxkit_host::{discover, InputKind, WrapperTarget};
use gfxkit_shrink::{pe, rewrite, verify};
use object::read::pe::{ImageNtHeaders, ImageOptionalHeader, PeFile64};
use object::LittleEndian as LE;

/// Per section: its name, `VirtualAddress` and `VirtualSize`.
type Sections = Vec<([u8; 8], u32, u32)>;

/// The fields of a PE image a rewrite of its `.hip_fat` must keep: the sections' names and
/// addresses; `SizeOfImage`; the base relocation directory (address, size).
fn layout(file: &PeFile64<'_>) -> (Sections, u32, Option<(u32, u32)>) {
    let sections = file
        .section_table()
        .iter()
        .map(|s| (s.name, s.virtual_address.get(LE), s.virtual_size.get(LE)))
        .collect();
    let relocs = file
        .data_directory(object::pe::IMAGE_DIRECTORY_ENTRY_BASERELOC)
        .map(|d| (d.virtual_address.get(LE), d.size.get(LE)));
    (
        sections,
        file.nt_headers().optional_header().size_of_image(),
        relocs,
    )
}

/// The first byte picks the transform ([`crate::prune::transform`]); the rest is the image.
/// A signed image is rewritten as `--drop-signature` makes it: without its certificate table,
/// which must then be gone. A rewrite either is refused, or gives a file that verifies
/// against its input, parses as a PE32+ image with every section at the same addresses, the
/// same `SizeOfImage` and base relocation directory, a `CheckSum` that is right when the file
/// changed (zero when it was zero), and every `HIPF` wrapper that led to a bundle still leading to one.
pub fn run(data: &[u8]) {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    match InputKind::sniff(input) {
        InputKind::PeImage => {}
        InputKind::CoffObject => return object(selector, input),
        _ => return,
    }
    let unsigned = match pe::without_signature(input) {
        Ok(Some(u)) => {
            let file = PeFile64::parse(&u[..]).expect("an image without its signature parses");
            let dir = file.data_directory(object::pe::IMAGE_DIRECTORY_ENTRY_SECURITY);
            assert!(dir.map_or(true, |d| d.size.get(LE) == 0));
            Some(u)
        }
        Ok(None) | Err(_) => None,
    };
    let input = unsigned.as_deref().unwrap_or(input);
    let Ok(before) = PeFile64::parse(input) else {
        return;
    };
    let Some(bytes) = rewritten(selector, input) else {
        return;
    };
    let after = PeFile64::parse(&bytes[..]).expect("a rewritten image parses");
    assert_eq!(layout(&before), layout(&after));
    let opt = after.nt_headers().optional_header();
    let sum = opt.check_sum();
    if before.nt_headers().optional_header().check_sum() == 0 {
        assert_eq!(sum, 0, "a zero CheckSum stays zero");
    } else if bytes != input {
        // A file rewritten has its sum recomputed (one left as it was keeps its own).
        let field = gfxkit_bytes::offset_within(&bytes, object::pod::bytes_of(opt))
            .expect("the optional header lies in the file") as usize
            + 64;
        assert_eq!(sum, pe::checksum(&bytes, field), "CheckSum recomputed");
    }
    wrappers_still_lead(input, &bytes);
}

/// A COFF object's rewrite either is refused, or gives a file that verifies against its
/// input, parses as a COFF object with the same sections (names and characteristics) and
/// symbol count, whose wrappers still lead to bundles, and whose `.hip_fatbin` section symbol
/// carries the section's JamCRC (where it carried a checksum) and length.
fn object(selector: u8, input: &[u8]) {
    use object::read::coff::{CoffFile, ImageSymbol};
    use object::{Object, ObjectSection};
    let Ok(before) = CoffFile::<&[u8]>::parse(input) else {
        return;
    };
    let Some(bytes) = rewritten(selector, input) else {
        return;
    };
    let after = CoffFile::<&[u8]>::parse(&bytes[..]).expect("a rewritten object parses");
    let shape = |f: &CoffFile<&[u8]>| {
        f.sections()
            .map(|s| (s.name_bytes().map(<[u8]>::to_vec).ok(), s.kind()))
            .collect::<Vec<_>>()
    };
    assert_eq!(shape(&before), shape(&after));
    assert_eq!(
        before.coff_symbol_table().len(),
        after.coff_symbol_table().len()
    );
    wrappers_still_lead(input, &bytes);
    if bytes == input {
        return;
    }
    // The section symbol of the rewritten section: its length and checksum follow the data.
    let Some(fat) = after
        .sections()
        .find(|s| s.name().is_ok_and(gfxkit_host::fatbin::is_fatbin_section))
    else {
        return;
    };
    let contents = fat
        .data()
        .expect("the rewritten section's data lies in the file");
    let table = after.coff_symbol_table();
    for (index, sym) in table.iter() {
        if sym.section_number() != fat.index().0 as i32 || !sym.has_aux_section() {
            continue;
        }
        let aux = table.aux_section(index).expect("the auxiliary record");
        assert_eq!(aux.length.get(LE) as usize, contents.len());
        let sum = aux.check_sum.get(LE);
        assert!(
            sum == 0 || sum == pe::coff::jamcrc(contents),
            "section checksum"
        );
    }
}

/// The rewrite of `input` by the transform `selector` picks, checked to verify against its
/// input; `None` when it is refused.
fn rewritten(selector: u8, input: &[u8]) -> Option<Vec<u8>> {
    let out = rewrite(input, &crate::prune::transform(selector)).ok()?;
    if let Err(e) = verify(input, &out, &Default::default()) {
        panic!("a rewrite that does not verify: {e}");
    }
    Some(out.bytes())
}

/// The rewrite keeps every wrapper, and each that led to a bundle still leads to one.
fn wrappers_still_lead(input: &[u8], bytes: &[u8]) {
    let led = |d: &gfxkit_host::Discovery| {
        d.wrappers
            .iter()
            .filter(|w| matches!(w.target, WrapperTarget::Bundle { .. }))
            .count()
    };
    let (old, new) = (discover(input), discover(bytes));
    assert_eq!(old.wrappers.len(), new.wrappers.len());
    assert!(led(&new) >= led(&old), "a wrapper lost its bundle");
}
