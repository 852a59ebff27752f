//! `gfxkit offload-bundler`: clang-offload-bundler's command line, option for option.
//!
//! Also what runs when gfxkit is invoked through a link named `clang-offload-bundler`. The
//! options, the checks between them, their order and the error wording follow
//! clang-offload-bundler 19, so build systems can swap the tools. Exit code 1 on every error,
//! as clang's tool. Intentional differences (documented in `docs/offload-bundler.md`):
//! damaged bundles and CCOB hash mismatches are errors; unknown processors are never mangled;
//! outputs are written only once every check passed, each atomically; `-list` prints entries
//! in header order; CCOB v3 is read and (with `COMPRESSED_BUNDLE_FORMAT_VERSION=3`) written.

use crate::bundler_cl::{self, Options};
use crate::containers as bundles;
use anyhow::Result;
use gfxkit_bundle::ccob;
use gfxkit_bundle::container::{self, Container};
use gfxkit_bundle::unbundle::{check_targets, Extracted, Mode, Targets, UnbundleOptions};
use gfxkit_bundle::EntryId;
use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Arguments of `gfxkit offload-bundler`, passed through unparsed to clang's option syntax.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// clang-offload-bundler options.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

/// Runs `gfxkit offload-bundler`.
pub fn run(args: Args, settings: &gfxkit_io::Settings) -> Result<ExitCode> {
    run_raw(None, &args.args, settings)
}

/// An error as clang-offload-bundler reports it: `<program>: error: <message>`, exit code 1.
struct Fail(String);

impl<T: std::fmt::Display> From<T> for Fail {
    fn from(m: T) -> Fail {
        Fail(m.to_string())
    }
}

type Res<T> = std::result::Result<T, Fail>;

/// How the program names itself in messages.
struct Names {
    /// argv\[0\] as given (`error:` lines), or `gfxkit offload-bundler`.
    full: String,
    /// Its file name (option-parser messages).
    short: String,
}

fn names(argv0: Option<&OsStr>) -> Names {
    let argv0 = argv0.unwrap_or_default().to_string_lossy().into_owned();
    let short = Path::new(&argv0)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if short.starts_with("clang-offload-bundler") {
        Names { full: argv0, short }
    } else {
        let me = "gfxkit offload-bundler".to_owned();
        Names {
            full: me.clone(),
            short: me,
        }
    }
}

/// Runs clang-offload-bundler's command line on `args` (without the program name); `argv0`
/// is the name the program was invoked under when that is `clang-offload-bundler...` (its
/// messages name it), `None` for `gfxkit offload-bundler`.
pub fn run_raw(
    argv0: Option<&OsStr>,
    args: &[OsString],
    settings: &gfxkit_io::Settings,
) -> Result<ExitCode> {
    let n = names(argv0);
    let opts = match bundler_cl::parse(args) {
        Ok(o) => o,
        Err(msgs) => {
            let mut err = std::io::stderr().lock();
            for m in msgs {
                writeln!(err, "{}: {}", n.short, m.replace("{prog}", &n.full))?;
            }
            return Ok(ExitCode::from(1));
        }
    };
    if opts.help {
        let mut out = std::io::stdout().lock();
        out.write_all(bundler_cl::HELP.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    if opts.version {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "gfxkit offload-bundler {} (clang-offload-bundler 19 compatible)",
            env!("CARGO_PKG_VERSION")
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    match drive(&n, opts, settings) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(Fail(msg)) => {
            let mut err = std::io::stderr().lock();
            writeln!(err, "{}: error: {msg}", n.full)?;
            Ok(ExitCode::from(1))
        }
    }
}

/// Settings the environment adds, read the way clang reads them.
#[derive(Debug, Clone)]
struct EnvSettings {
    compress: Option<bool>,
    level: Option<i32>,
    verbose: Option<bool>,
    ccob_version: Option<u16>,
}

fn env_settings(warn: &mut dyn FnMut(String)) -> EnvSettings {
    let get = |k: &str| std::env::var(k).ok();
    let mut s = EnvSettings {
        compress: None,
        level: None,
        verbose: None,
        ccob_version: None,
    };
    if get("OFFLOAD_BUNDLER_IGNORE_ENV_VAR").as_deref() == Some("1") {
        return s;
    }
    if let Some(v) = get("COMPRESSED_BUNDLE_FORMAT_VERSION") {
        match ccob::version_from_env_value(&v) {
            Some(n) => s.ccob_version = Some(n),
            None => warn(format!(
                "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: {v}. Valid values are 2 or 3. Using default version 2."
            )),
        }
    }
    if let Some(v) = get("OFFLOAD_BUNDLER_VERBOSE") {
        s.verbose = Some(v == "1");
    }
    if let Some(v) = get("OFFLOAD_BUNDLER_COMPRESS") {
        s.compress = Some(v == "1");
    }
    if let Some(v) = get("OFFLOAD_BUNDLER_COMPRESSION_LEVEL") {
        match v.parse::<i32>() {
            Ok(l) => s.level = Some(l),
            Err(_) => warn(format!(
                "Warning: Invalid value for OFFLOAD_BUNDLER_COMPRESSION_LEVEL: {v}. Ignoring it."
            )),
        }
    }
    s
}

use gfxkit_bundle::entry_id::StdTarget;

/// clang's `Can't find bundles for A, B, and C` list (sorted): the library's message.
fn missing_list(names: &BTreeSet<&str>) -> String {
    let names: Vec<&str> = names.iter().copied().collect();
    gfxkit_bundle::unbundle::missing_message(&names)
}

/// The whole tool after option parsing: clang's checks in clang's order, then the work.
fn drive(n: &Names, mut o: Options, settings: &gfxkit_io::Settings) -> Res<()> {
    let mut warnings = Vec::new();
    let env = env_settings(&mut |w| warnings.push(w));
    {
        let mut err = std::io::stderr().lock();
        for w in &warnings {
            let _ = writeln!(err, "{w}");
        }
    }
    let warn = |m: &str| {
        let _ = writeln!(std::io::stderr().lock(), "{}: warning: {m}", n.full);
    };
    if o.input_count != 0 && o.inputs_count != 0 {
        return Err("-inputs and -input cannot be used together, use only -input instead".into());
    }
    if !o.inputs_deprecated.is_empty() {
        warn("-inputs is deprecated, use -input instead");
        let extra = std::mem::take(&mut o.inputs_deprecated);
        o.input.extend(extra);
    }
    if o.output_count != 0 && o.outputs_count != 0 {
        return Err(
            "-outputs and -output cannot be used together, use only -output instead".into(),
        );
    }
    if !o.outputs_deprecated.is_empty() {
        warn("-outputs is deprecated, use -output instead");
        let extra = std::mem::take(&mut o.outputs_deprecated);
        o.output.extend(extra);
    }
    let files_type = o.files_type.clone().unwrap_or_default();
    let verbose = o.verbose.or(env.verbose).unwrap_or(false);
    if o.list {
        if o.unbundle {
            return Err("-unbundle and -list cannot be used together".into());
        }
        if o.input.len() != 1 {
            return Err("only one input file supported for -list".into());
        }
        if !o.output.is_empty() {
            return Err("-outputs option is invalid for -list".into());
        }
        if !o.targets.is_empty() {
            return Err("-targets option is invalid for -list".into());
        }
        return list(&o.input[0], &files_type, verbose, settings);
    }
    if o.check_input_archive {
        if !o.unbundle {
            return Err("-check-input-archive cannot be used while bundling".into());
        }
        if files_type != "a" {
            return Err(
                "-check-input-archive can only be used for unbundling archives (-type=a)".into(),
            );
        }
    }
    if o.output.is_empty() {
        return Err("no output file specified!".into());
    }
    if o.targets_count == 0 {
        return Err("for the --targets option: must be specified at least once!".into());
    }
    if o.unbundle {
        if o.input.len() != 1 {
            return Err("only one input file supported in unbundling mode".into());
        }
        if o.output.len() != o.targets.len() {
            return Err(
                "number of output files and targets should match in unbundling mode".into(),
            );
        }
    } else {
        if files_type == "a" {
            return Err("Archive files are only supported for unbundling".into());
        }
        if o.output.len() != 1 {
            return Err("only one output file supported in bundling mode".into());
        }
        if o.input.len() != o.targets.len() {
            return Err("number of input files and targets should match in bundling mode".into());
        }
    }
    let mode = if o.unbundle {
        Mode::Unbundle
    } else {
        Mode::Bundle
    };
    let Targets {
        targets,
        ids,
        host: host_index,
    } = check_targets(&o.targets, mode).map_err(|e| Fail(e.to_string()))?;
    let job = Job {
        files_type,
        targets,
        ids,
        inputs: o.input.clone(),
        outputs: o.output.clone(),
        host_index,
        allow_missing: o.allow_missing_bundles,
        hip_openmp: o.hip_openmp_compatible,
        align: o.bundle_align,
        compress: o.compress.or(env.compress).unwrap_or(false),
        level: o.compression_level.or(env.level),
        ccob_version: env.ccob_version,
        verbose,
        check_archive: o.check_input_archive,
        settings: settings.clone(),
    };
    if o.unbundle {
        if job.files_type == "a" {
            unbundle_archive(&job)
        } else {
            unbundle(&job)
        }
    } else {
        bundle(&job)
    }
}

/// Everything a bundling or unbundling run needs, checked.
struct Job {
    files_type: String,
    targets: Vec<StdTarget>,
    ids: Vec<EntryId>,
    inputs: Vec<String>,
    outputs: Vec<String>,
    host_index: Option<usize>,
    allow_missing: bool,
    hip_openmp: bool,
    align: u32,
    compress: bool,
    level: Option<i32>,
    ccob_version: Option<u16>,
    verbose: bool,
    check_archive: bool,
    /// What inputs are read under.
    settings: gfxkit_io::Settings,
}

/// The container format `-type` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Text with comment markers.
    Text(&'static str),
    /// The binary bundle format.
    Binary,
    /// `-type=o`/`-type=a`: sections of a host object when the reference input is one,
    /// else binary.
    ObjectOrBinary,
}

fn format_of(files_type: &str) -> Res<Format> {
    Ok(match files_type {
        "i" | "ii" | "cui" | "hipi" => Format::Text("//"),
        "d" | "s" => Format::Text("#"),
        "ll" => Format::Text(";"),
        "bc" | "gch" | "ast" => Format::Binary,
        "o" | "a" => Format::ObjectOrBinary,
        other => return Err(format!("'{other}': invalid file type specified").into()),
    })
}

/// Reads an input file as clang does (`-` is standard input); errors in clang's wording.
fn read_input(path: &str, settings: &gfxkit_io::Settings) -> Res<crate::input::Input> {
    let p = if path == "-" { "/dev/stdin" } else { path };
    crate::input::Input::open_with(Path::new(p), &(), settings)
        .map_err(|e| Fail(io_message(path, &e.into())))
}

/// `'<path>': <system message>` like LLVM's file errors.
fn io_message(path: &str, e: &anyhow::Error) -> String {
    for c in e.chain() {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return format!("'{path}': {}", bundles::strerror(io));
        }
    }
    format!("'{path}': {e}")
}

/// Writes one output (`-` is standard output) atomically; bytes that are a slice of `input`'s
/// file are copied from it inside the kernel.
fn write_output(path: &str, bytes: &[u8], input: Option<&crate::input::Input>) -> Res<()> {
    if path == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)
            .and_then(|()| out.flush())
            .map_err(|e| Fail(format!("'{path}': {}", bundles::strerror(&e))))?;
        return Ok(());
    }
    let source = input.and_then(|i| i.file_range(bytes));
    crate::output::write_atomic_copy(Path::new(path), bytes, source)
        .map_err(|e| Fail(io_message(path, &e)))
}

/// Checks that every output can be created before any is written, so that a failing run
/// leaves nothing behind.
fn check_outputs_writable(paths: &[String]) -> Res<()> {
    for p in paths {
        if p == "-" {
            continue;
        }
        let path = Path::new(p);
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(format!("'{p}': Not a directory").into()),
            Err(e) => return Err(format!("'{p}': {}", bundles::strerror(&e)).into()),
        }
        if std::fs::metadata(path).map(|m| m.is_dir()).unwrap_or(false) {
            return Err(format!("'{p}': Is a directory").into());
        }
    }
    Ok(())
}

fn list(input: &str, files_type: &str, verbose: bool, settings: &gfxkit_io::Settings) -> Res<()> {
    let data = read_input(input, settings)?;
    let format = format_of(files_type)?;
    let ids = bundles::list_ids(
        &data,
        to_container(format, &data),
        verbose,
        &settings.limits,
    )
    .map_err(|e| Fail(format!("{input}: {e:#}")))?;
    let mut out = std::io::stdout().lock();
    for id in ids {
        writeln!(out, "{id}").map_err(|e| Fail(e.to_string()))?;
    }
    Ok(())
}

fn to_container(format: Format, reference: &[u8]) -> Container {
    match format {
        Format::Text(c) => Container::Text(c),
        Format::Binary => Container::Binary,
        Format::ObjectOrBinary => Container::for_object(reference),
    }
}

fn unbundle(job: &Job) -> Res<()> {
    let input = &job.inputs[0];
    let data = read_input(input, &job.settings)?;
    let format = format_of(&job.files_type)?;
    let contents = bundles::open_for_unbundling(&data, job.verbose, &job.settings.limits)
        .map_err(|e| Fail(format!("{input}: {e:#}")))?;
    let container = to_container(format, &contents);
    let entries =
        container::entries(&contents, container).map_err(|e| Fail(format!("{input}: {e:#}")))?;
    // Which entry serves which requested target, and what a host-only input gives each
    // target, is the library's rule. It runs with missing bundles allowed so that the missing
    // ones can be named here in the form the drop-in wrote them (`-targets` standardized).
    let listed: Vec<(&str, &[u8])> = entries.iter().map(|e| (e.id, e.payload)).collect();
    let opts = UnbundleOptions {
        allow_missing: true,
        hip_openmp_compatible: job.hip_openmp,
    };
    let got = gfxkit_bundle::unbundle::unbundle(&listed, &contents, &job.ids, &opts).map_err(
        |e| match e.kind {
            gfxkit_bundle::ErrorKind::InvalidEntryId(err) => Fail(format!(
                "{input}: invalid bundle id read from the bundle: {err}"
            )),
            _ => Fail(format!("{input}: {e}")),
        },
    )?;
    let served: Vec<Option<usize>> = got
        .iter()
        .map(|x| match x {
            Extracted::Entry { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    let missing: BTreeSet<&str> = (0..job.targets.len())
        .filter(|&t| served[t].is_none())
        .map(|t| job.targets[t].written.as_str())
        .collect();
    if !job.allow_missing && !missing.is_empty() {
        return Err(missing_list(&missing).into());
    }
    check_outputs_writable(&job.outputs)?;
    if served.iter().all(Option::is_none) {
        // No bundle at all: the input is the host file (the library gave it to the host
        // target whole, nothing to the others).
        let writes = job
            .outputs
            .iter()
            .zip(&got)
            .map(|(out, x)| (out.as_str(), std::borrow::Cow::Borrowed(x.bytes())))
            .collect();
        return write_outputs(writes, &data);
    }
    // Only a host entry serves the host target.
    let host_served = job.host_index.map_or(true, |h| served[h].is_some());
    if !(host_served || job.allow_missing) {
        return Err("Can't find bundle for the host target".into());
    }
    let mut writes = Vec::with_capacity(job.outputs.len());
    for (t, out) in job.outputs.iter().enumerate() {
        let bytes = match served[t] {
            Some(ei) => container::entry_payload(&contents, &entries[ei])
                .map_err(|e| Fail(format!("{input}: {e:#}")))?,
            None => std::borrow::Cow::Borrowed(&[][..]),
        };
        writes.push((out.as_str(), bytes));
    }
    write_outputs(writes, &data)
}

/// Writes several outputs, in parallel when they are distinct files (each still atomic);
/// the first failure in output order is reported. Bytes stored uncompressed in `input` are
/// copied from its file inside the kernel.
fn write_outputs(
    writes: Vec<(&str, std::borrow::Cow<'_, [u8]>)>,
    input: &crate::input::Input,
) -> Res<()> {
    let distinct: BTreeSet<&str> = writes.iter().map(|(p, _)| *p).collect();
    if distinct.len() != writes.len() || distinct.contains("-") {
        for (p, b) in &writes {
            write_output(p, b, Some(input))?;
        }
        return Ok(());
    }
    use rayon::prelude::*;
    let results: Vec<Res<()>> = writes
        .par_iter()
        .map(|(p, b)| write_output(p, b, Some(input)))
        .collect();
    results.into_iter().collect()
}

fn bundle(job: &Job) -> Res<()> {
    let mut inputs = Vec::with_capacity(job.inputs.len());
    for p in &job.inputs {
        inputs.push(read_input(p, &job.settings)?);
    }
    let format = format_of(&job.files_type)?;
    let reference = job.host_index.unwrap_or(0);
    let container = match format {
        // The object form needs a host object to add sections to.
        Format::ObjectOrBinary if job.host_index.is_none() => Container::Binary,
        f => to_container(f, &inputs[reference]),
    };
    let entries: Vec<(&str, &[u8])> = job
        .targets
        .iter()
        .zip(&inputs)
        .map(|(t, d)| (t.written.as_str(), &d[..]))
        .collect();
    check_outputs_writable(&job.outputs)?;
    let bytes = container::write(container, &entries, job.host_index, u64::from(job.align))
        .map_err(|e| Fail(format!("{e:#}")))?;
    let bytes = if job.compress {
        let opts = bundles::compress_options(job.ccob_version, false, job.level, 0);
        let packed = ccob::compress(&bytes, &opts).map_err(|e| Fail(format!("{e:#}")))?;
        if job.verbose {
            bundles::print_compression_stats(&bytes, &packed, job.level.unwrap_or(3));
        }
        packed
    } else {
        bytes
    };
    write_output(&job.outputs[0], &bytes, None)
}

fn unbundle_archive(job: &Job) -> Res<()> {
    let input = &job.inputs[0];
    let data = read_input(input, &job.settings)?;
    let opts = gfxkit_bundle::archive::ArchiveOptions {
        allow_missing: job.allow_missing,
        hip_openmp_compatible: job.hip_openmp,
        check_input: job.check_archive,
        decompress: job.settings.limits.decompress_options(),
    };
    let archives = gfxkit_bundle::archive::unbundle_archive(&data, &job.ids, input, &opts)
        .map_err(|e| Fail(format!("{e:#}")))?;
    check_outputs_writable(&job.outputs)?;
    for (out, bytes) in job.outputs.iter().zip(&archives) {
        write_output(out, bytes, Some(&data))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_lists_read_like_clang() {
        let s = |v: &[&'static str]| missing_list(&v.iter().copied().collect());
        assert_eq!(s(&["a"]), "Can't find bundles for a");
        assert_eq!(s(&["b", "a"]), "Can't find bundles for a and b");
        assert_eq!(s(&["c", "a", "b"]), "Can't find bundles for a, b, and c");
    }
}
