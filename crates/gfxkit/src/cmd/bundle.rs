//! `gfxkit bundle`: make an offload bundle from code objects.

use crate::containers;
use anyhow::{bail, Context, Result};
use gfxkit_bundle::EntryId;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `gfxkit bundle`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Each INPUT is FILE or FILE:ID. ID is an entry ID (hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+) or a
bare target ID (gfx90a:xnack+, meaning a HIP entry); without it the target ID is read from the
code object's ELF header. The split is at the last ':' that starts an entry ID or a processor
name, so file names may contain ':'.

The bundle is laid out like clang's HIP driver does: an empty host entry first
(host-x86_64-unknown-linux--, or the file given with --host), then the inputs in the order
given, payloads aligned to 4096 bytes. IDs are written in canonical form, with a four-field
triple (hipv4-amdgcn-amd-amdhsa--gfx906, never the legacy hip-amdgcn-amd-amdhsa-gfx906). LLVM
main's amdgpu triples are accepted (hip-amdgpu9.0a-amd-amdhsa--gfx90a) and kept as written.
As with LLVM 22's bundler, two entries for one target are an error, however spelled (hip and
hipv4, amdgcn and amdgpu9.0a), and so are two that clang's bundler would refuse together
(gfx90a with gfx90a:xnack+). The drop-in clang-offload-bundler keeps LLVM 19's behaviour.

--compress follows LLVM 19's defaults (CCOB v2, zstd level 3) so that every HIP runtime in the
field reads the result; LLVM 22 and main write v3 by default: --ccob-version 3 for that.

Examples:
  gfxkit bundle -o app.hipfb gfx906.co gfx90a.co:gfx90a:xnack+
  gfxkit bundle -o app.hipfb --compress a.co:hipv4-amdgcn-amd-amdhsa--gfx1100
  gfxkit bundle -o app.hipfb --target gfx1030 --input k.co

Exit codes: 0 written; 2 an error.")]
pub struct Args {
    /// Code objects, as FILE or FILE:ID.
    inputs: Vec<String>,
    /// Entry or target IDs for the --input files, pairwise in order.
    #[arg(long = "target", short = 't', value_name = "ID")]
    targets: Vec<String>,
    /// Files for the --target IDs, pairwise in order.
    #[arg(long = "input", short = 'i', value_name = "FILE")]
    input_files: Vec<PathBuf>,
    /// Output bundle.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
    /// Host entry payload (default: an empty host entry).
    #[arg(long, value_name = "FILE", conflicts_with = "no_host")]
    host: Option<PathBuf>,
    /// Host entry ID.
    #[arg(long, value_name = "ID", default_value = "host-x86_64-unknown-linux--")]
    host_id: String,
    /// Write no host entry.
    #[arg(long)]
    no_host: bool,
    /// Payload alignment in bytes.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..))]
    align: u64,
    /// Compress the bundle (CCOB).
    #[arg(long)]
    compress: bool,
    /// CCOB version when compressing (default 2, as LLVM 19; LLVM 22 writes 3).
    #[arg(long, value_name = "2|3", value_parser = clap::value_parser!(u16).range(2..=3))]
    ccob_version: Option<u16>,
    /// Compression method.
    #[arg(long, value_name = "zstd|zlib", value_parser = ["zstd", "zlib"])]
    method: Option<String>,
    /// Compression level (zstd 1-22, default 3; zlib 0-9, default 6).
    #[arg(long, allow_hyphen_values = true)]
    level: Option<i32>,
}

/// Whether `s` starts like an entry ID or a target ID (an offload kind, or a known processor).
fn starts_id(s: &str) -> bool {
    ["host-", "hip-", "hipv4-", "openmp-"]
        .iter()
        .any(|k| s.starts_with(k))
        || gfxkit_spec::Processor::by_name(s.split(':').next().unwrap_or("")).is_some()
}

/// Splits `FILE:ID` at the last ':' that starts an ID.
fn split_input(s: &str) -> (&str, Option<&str>) {
    for (i, _) in s.match_indices(':').collect::<Vec<_>>().into_iter().rev() {
        let rest = &s[i + 1..];
        if rest.is_empty() || !starts_id(rest) {
            continue;
        }
        // The earliest such ':' wins for IDs with features (gfx90a:xnack+).
        let mut j = i;
        while let Some(k) = s[..j].rfind(':') {
            if starts_id(&s[k + 1..]) {
                j = k;
            } else {
                break;
            }
        }
        return (&s[..j], Some(&s[j + 1..]));
    }
    (s, None)
}

/// The entry ID for a code object: the one given, or one read from its ELF header.
fn entry_id(file: &str, given: Option<&str>, data: &[u8]) -> Result<EntryId> {
    match given {
        Some(id) => Ok(gfxkit_inventory::extract::requested_id(id)?),
        None => {
            let co = gfxkit_code_object::CodeObject::parse(data).with_context(|| {
                format!("{file}: not an AMDGPU code object; give its ID as {file}:<ID>")
            })?;
            let tid = co.target_id().with_context(|| {
                format!("{file}: cannot tell its target ID; give it as {file}:<ID>")
            })?;
            Ok(EntryId::hip(tid))
        }
    }
}

/// Runs `gfxkit bundle`.
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    if args.targets.len() != args.input_files.len() {
        bail!(
            "--target and --input come in pairs: {} targets, {} inputs",
            args.targets.len(),
            args.input_files.len()
        );
    }
    let mut specs: Vec<(String, Option<String>)> = args
        .inputs
        .iter()
        .map(|s| {
            let (f, id) = split_input(s);
            (f.to_owned(), id.map(str::to_owned))
        })
        .collect();
    for (t, f) in args.targets.iter().zip(&args.input_files) {
        specs.push((f.display().to_string(), Some(t.clone())));
    }
    if specs.is_empty() {
        bail!("no input code objects given");
    }
    let mut files = Vec::with_capacity(specs.len() + 1);
    let mut ids: Vec<EntryId> = Vec::new();
    if !args.no_host {
        let host_id = EntryId::parse(&args.host_id)?;
        if !host_id.is_host() {
            bail!("--host-id {} is not a host entry ID", args.host_id);
        }
        ids.push(host_id);
        files.push(match &args.host {
            Some(p) => Some(crate::input::Input::open_with(p, &(), settings)?),
            None => None,
        });
    }
    for (file, id) in &specs {
        let data = crate::input::Input::open_with(std::path::Path::new(file), &(), settings)?;
        ids.push(entry_id(file, id.as_deref(), &data)?);
        files.push(Some(data));
    }
    // The bundler's conflict rule, per kind and triple (the library's).
    if let Some((b, a)) = gfxkit_bundle::unbundle::find_conflict(ids.iter().enumerate()) {
        let (a, b) = (&ids[a], &ids[b]);
        let why = gfxkit_bundle::unbundle::conflict_reason(b.target(), a.target());
        return Err(anyhow::anyhow!(why).context(format!("cannot bundle {b} with {a}")));
    }
    // One entry per target, whatever its spelling (hip/hipv4, amdgcn or amdgpu<subarch>): the
    // runtime takes hip and hipv4 alike, so both would be ambiguous.
    for (i, a) in ids.iter().enumerate() {
        if let Some(b) = ids[..i].iter().find(|b| a.same_target(b)) {
            bail!("duplicate target: {a} and {b} name the same code object target");
        }
    }
    let written: Vec<String> = ids.iter().map(EntryId::canonical).collect();
    let entries: Vec<(&str, &[u8])> = written
        .iter()
        .zip(&files)
        .map(|(id, f)| (id.as_str(), f.as_deref().unwrap_or(&[])))
        .collect();
    let bytes = gfxkit_bundle::write_bundle(&entries, args.align)?;
    let bytes = if args.compress {
        gfxkit_bundle::ccob::compress(
            &bytes,
            &containers::compress_options(
                args.ccob_version,
                args.method.as_deref() == Some("zlib"),
                args.level,
                gfxkit_bundle::codec::default_workers(),
            ),
        )?
    } else {
        if args.ccob_version.is_some() || args.method.is_some() || args.level.is_some() {
            bail!("--ccob-version, --method and --level need --compress");
        }
        bytes
    };
    crate::output::write_atomic(&args.output, &bytes)?;
    let mut err = std::io::stderr().lock();
    use std::io::Write;
    writeln!(
        err,
        "{}: {} entries, {} bytes",
        args.output.display(),
        written.len(),
        bytes.len()
    )?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::split_input;

    #[test]
    fn inputs_split_at_the_id() {
        assert_eq!(split_input("a.co"), ("a.co", None));
        assert_eq!(
            split_input("a.co:gfx90a:xnack+"),
            ("a.co", Some("gfx90a:xnack+"))
        );
        assert_eq!(
            split_input("dir:x/a.co:hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"),
            ("dir:x/a.co", Some("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"))
        );
        assert_eq!(split_input("a.co:gfx1100"), ("a.co", Some("gfx1100")));
        assert_eq!(split_input("odd:name.co"), ("odd:name.co", None));
    }
}
