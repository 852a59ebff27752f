//! A format added from outside gfxkit's crates, through the public interface only: a toy
//! container (a magic, then one offload bundle) that every per-file command reads once it
//! is in the [`Formats`] a run is given, and none reads without it. Two of them: `TOYCONT1`,
//! which a prune keeps or drops whole, and `TOYWRAP1`, whose bundle a prune rewrites.

use gfxkit_inventory::database::DbMember;
use gfxkit_inventory::digest::{Digest, Digesting};
use gfxkit_inventory::doctor::Examined;
use gfxkit_inventory::kernels::KernelListing;
use gfxkit_inventory::list::FileListing;
use gfxkit_inventory::select::Selection;
use gfxkit_inventory::verify::Verification;
use gfxkit_inventory::Inventory;
use gfxkit_io::extract::{ExtractError, Plan, Wanted};
use gfxkit_io::format::{Around, File, Format, Formats, Inspection, Sized, Whole};
use gfxkit_io::prune_file::Pruned;
use gfxkit_io::whole;
use gfxkit_kpack::search::Loader;
use gfxkit_spec::rocm::Rules;
use gfxkit_target_id::TargetId;
use gfxkit_testkit::HipBuild;
use std::path::{Path, PathBuf};

const MAGIC: &[u8] = b"TOYCONT1";
const WRAP: &[u8] = b"TOYWRAP1";

/// The toy container: its device code is the bundle after the magic. A prune keeps or drops
/// it whole.
struct Toy;

impl Toy {
    fn inner<'d>(file: &File<'d>) -> &'d [u8] {
        &file.data[MAGIC.len()..]
    }
}

/// The toy wrapper: the same container with its own magic, whose bundle a prune rewrites
/// (and which reads as a toy container for everything else).
struct Wrap;

impl Wrap {
    /// The rewrite of the bundle inside `file`, with `shift` added to the offsets of its
    /// report (the wrapper's magic before it in the file, or, to go back, taken away).
    fn moved(report: &mut gfxkit_shrink::report::Report, shift: i64) {
        let by = |x: &mut u64| *x = x.wrapping_add_signed(shift);
        by(&mut report.size_before);
        by(&mut report.size_after);
        for b in report.regions.iter_mut().flat_map(|r| r.bundles.iter_mut()) {
            by(&mut b.offset);
            by(&mut b.new_offset);
        }
    }
}

impl Format for Wrap {
    fn name(&self) -> &'static str {
        "toy wrapper"
    }

    fn claims(&self, file: &File<'_>) -> bool {
        file.data.starts_with(WRAP)
    }

    fn found_in_walk(&self, _: &Path, prefix: &[u8]) -> bool {
        prefix.starts_with(WRAP)
    }

    fn list(&self, file: &File<'_>, check: bool, around: &Around) -> FileListing {
        Toy.list(file, check, around)
    }

    fn size(&self, file: &File<'_>, check: bool, around: &Around) -> Sized {
        Toy.size(file, check, around)
    }

    fn verify(
        &self,
        file: &File<'_>,
        around: &Around,
    ) -> (gfxkit_inventory::Result<Verification>, Vec<String>) {
        Toy.verify(file, around)
    }

    fn kernels(
        &self,
        file: &File<'_>,
        wanted: Option<&TargetId>,
        demangle: bool,
        around: &Around,
    ) -> Result<KernelListing, gfxkit_io::Error> {
        Toy.kernels(file, wanted, demangle, around)
    }

    fn digests(
        &self,
        file: &File<'_>,
        how: Digesting,
        around: &Around,
    ) -> Result<(Vec<Digest>, Vec<String>), gfxkit_io::Error> {
        Toy.digests(file, how, around)
    }

    fn database_member(&self, _: &File<'_>) -> Option<DbMember> {
        None
    }

    fn examine(
        &self,
        file: &File<'_>,
        devices: &[TargetId],
        loader: Loader,
        rules: Option<&Rules>,
    ) -> Examined {
        Toy.examine(file, devices, loader, rules)
    }

    fn select(
        &self,
        file: &File<'_>,
        device: &TargetId,
        loader: Loader,
        rules: Option<&Rules>,
    ) -> Selection {
        Toy.select(file, device, loader, rules)
    }

    fn extract<'d>(
        &self,
        file: &File<'d>,
        explicit: bool,
        wanted: &mut Wanted,
    ) -> Result<Option<Plan<'d>>, ExtractError> {
        Toy.extract(file, explicit, wanted)
    }

    fn inspect(&self, file: &File<'_>) -> Inspection {
        Toy.inspect(file)
    }

    fn kind(&self, _: &File<'_>) -> String {
        "toy-wrapper".to_owned()
    }

    /// Never whole: its bundle is rewritten.
    fn whole_targets(&self, _: &File<'_>, _: &str) -> Result<Option<Whole>, gfxkit_io::Error> {
        Ok(None)
    }

    /// Rewritten when the selection changes its bundle, kept otherwise.
    fn prune(
        &self,
        file: &File<'_>,
        rel: &str,
        t: &gfxkit_shrink::Transform,
    ) -> Result<Pruned, gfxkit_io::Error> {
        use gfxkit_inventory::prune::TreeAction;
        let done = self.rewrite(file, t)?;
        let mut p = Pruned::copied(rel, "toy-wrapper", file.data.len() as u64);
        p.file.action = if done.report.changed() {
            TreeAction::Rewritten
        } else {
            TreeAction::Kept
        };
        p.file.size_after = done.report.size_after;
        p.file.targets = done
            .report
            .targets_before()
            .into_iter()
            .filter(|t| *t != "host")
            .map(str::to_owned)
            .collect();
        p.file.targets.sort();
        p.keeps = done.report.keeps_device_code();
        p.file.report = Some(done.report);
        Ok(p)
    }

    /// The magic, then the bundle rewritten as `gfxkit_shrink` rewrites a bundle file.
    fn rewrite<'d>(
        &self,
        file: &File<'d>,
        t: &gfxkit_shrink::Transform,
    ) -> Result<gfxkit_shrink::report::Rewritten<'d>, gfxkit_io::Error> {
        let inner = gfxkit_shrink::rewrite_without_digests(Toy::inner(file), t)
            .map_err(|e| gfxkit_io::Error::new(file.path, gfxkit_io::ErrorKind::Prune(e)))?;
        let mut output = gfxkit_shrink::Output::of(WRAP);
        output.append(inner.output);
        let mut report = inner.report;
        Wrap::moved(&mut report, WRAP.len() as i64);
        Ok(gfxkit_shrink::report::Rewritten { output, report })
    }

    /// The magic, and the bundle after it as `gfxkit_shrink` checks a rewritten bundle.
    fn verify_rewrite(
        &self,
        file: &File<'_>,
        back: &[u8],
        done: &gfxkit_shrink::report::Rewritten<'_>,
    ) -> Result<(), gfxkit_shrink::Error> {
        let Some(bundle) = back.strip_prefix(WRAP) else {
            return Err(gfxkit_shrink::Error::at(
                0,
                gfxkit_shrink::ErrorKind::Verify("the toy wrapper's magic is gone".into()),
            ));
        };
        let mut report = done.report.clone();
        Wrap::moved(&mut report, -(WRAP.len() as i64));
        gfxkit_shrink::verify_bytes(Toy::inner(file), bundle, &report, &file.limits)
    }
}

impl Format for Toy {
    fn name(&self) -> &'static str {
        "toy container"
    }

    fn claims(&self, file: &File<'_>) -> bool {
        file.data.starts_with(MAGIC)
    }

    fn found_in_walk(&self, _: &Path, prefix: &[u8]) -> bool {
        prefix.starts_with(MAGIC)
    }

    fn list(&self, file: &File<'_>, check: bool, _: &Around) -> FileListing {
        let inv = Inventory::of(Toy::inner(file));
        gfxkit_inventory::list::list(&file.name(), &inv, check)
    }

    fn size(&self, file: &File<'_>, check: bool, _: &Around) -> Sized {
        Sized {
            survey: gfxkit_inventory::size::survey_with(
                Toy::inner(file),
                check,
                &Default::default(),
            ),
            reached: Vec::new(),
            is_kpack_archive: false,
        }
    }

    fn verify(
        &self,
        file: &File<'_>,
        _: &Around,
    ) -> (gfxkit_inventory::Result<Verification>, Vec<String>) {
        let inv = Inventory::of(Toy::inner(file));
        (
            gfxkit_inventory::verify::verify(&file.name(), &inv),
            Vec::new(),
        )
    }

    fn kernels(
        &self,
        file: &File<'_>,
        wanted: Option<&TargetId>,
        demangle: bool,
        _: &Around,
    ) -> Result<KernelListing, gfxkit_io::Error> {
        let (kernels, errors) = gfxkit_inventory::kernels::file_rows(
            &file.name(),
            Toy::inner(file),
            wanted,
            demangle,
            &Default::default(),
        )
        .map_err(|e| gfxkit_io::Error::new(file.path, gfxkit_io::ErrorKind::Locate(e)))?;
        Ok(KernelListing {
            kernels,
            errors,
            ..Default::default()
        })
    }

    fn digests(
        &self,
        file: &File<'_>,
        how: Digesting,
        _: &Around,
    ) -> Result<(Vec<Digest>, Vec<String>), gfxkit_io::Error> {
        gfxkit_inventory::digest::file_digests(
            &file.name(),
            Toy::inner(file),
            how,
            &Default::default(),
        )
        .map_err(|e| gfxkit_io::Error::new(file.path, gfxkit_io::ErrorKind::Locate(e)))
    }

    fn database_member(&self, _: &File<'_>) -> Option<DbMember> {
        None
    }

    fn examine(
        &self,
        file: &File<'_>,
        _: &[TargetId],
        _: Loader,
        rules: Option<&Rules>,
    ) -> Examined {
        let inv = Inventory::of(Toy::inner(file));
        let mut e = gfxkit_inventory::doctor::examine(&inv);
        e.release = rules.map(|r| gfxkit_inventory::release::Refused::of(r, &inv));
        e
    }

    fn select(
        &self,
        file: &File<'_>,
        device: &TargetId,
        _: Loader,
        rules: Option<&Rules>,
    ) -> Selection {
        let inv = Inventory::of(Toy::inner(file));
        gfxkit_inventory::select::select_on(&file.name(), &inv, device, rules)
    }

    fn extract<'d>(
        &self,
        file: &File<'d>,
        explicit: bool,
        wanted: &mut Wanted,
    ) -> Result<Option<Plan<'d>>, ExtractError> {
        Plan::bundles(file.path, Inventory::of(Toy::inner(file)), explicit, wanted)
    }

    fn inspect(&self, _: &File<'_>) -> Inspection {
        Inspection::CodeObject {
            hint: " (it is a toy container: see `gfxkit extract`)",
        }
    }

    fn kind(&self, _: &File<'_>) -> String {
        "toy".to_owned()
    }

    /// The targets of its bundle's entries: a prune keeps or drops it whole.
    fn whole_targets(&self, file: &File<'_>, _: &str) -> Result<Option<Whole>, gfxkit_io::Error> {
        let inv = Inventory::of(Toy::inner(file));
        let listed = gfxkit_inventory::list::list(&file.name(), &inv, false);
        let targets = listed
            .bundles
            .iter()
            .flat_map(|b| &b.entries)
            .filter_map(|e| e.target_id.clone())
            .collect();
        Ok(Some(("toy", targets)))
    }

    fn prune(
        &self,
        file: &File<'_>,
        rel: &str,
        t: &gfxkit_shrink::Transform,
    ) -> Result<Pruned, gfxkit_io::Error> {
        let (kind, targets) = self.whole_targets(file, rel)?.expect("always some");
        Ok(Pruned::whole(
            rel,
            kind,
            targets,
            file.data.len() as u64,
            &t.selection,
        ))
    }
}

/// A toy container of a clang-19 bundle for `archs` with `kernels` kernels, at `dir/name`.
fn toy(dir: &Path, name: &str, archs: &[&str], kernels: usize) -> PathBuf {
    toy_of(MAGIC, dir, name, archs, kernels)
}

/// [`toy`] with the magic `magic`.
fn toy_of(magic: &[u8], dir: &Path, name: &str, archs: &[&str], kernels: usize) -> PathBuf {
    let source = gfxkit_testkit::hip_kernels(kernels);
    let bundle = HipBuild::new(&source, archs).build(dir, &format!("{name}.src"));
    let mut bytes = magic.to_vec();
    bytes.extend(std::fs::read(&bundle).unwrap());
    std::fs::remove_file(&bundle).unwrap();
    let out = dir.join(name);
    std::fs::write(&out, bytes).unwrap();
    out
}

#[test]
fn a_format_added_through_the_interface_is_read_by_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    std::fs::create_dir_all(&old).unwrap();
    std::fs::create_dir_all(&new).unwrap();
    let a = toy(&old, "kernels.toy", &["gfx906", "gfx90a"], 2);
    let b = toy(&new, "kernels.toy", &["gfx906", "gfx90a", "gfx1100"], 3);
    let standard = Formats::standard();
    let with_toy = Formats::standard().with(Toy);
    assert_eq!(
        with_toy.names(),
        [
            "kpack archive",
            "kernel database",
            "toy container",
            "binary"
        ]
    );
    let mine = File::at(&a, &[]);
    assert_eq!(with_toy.of(&mine).name(), "binary");
    let bytes = std::fs::read(&a).unwrap();
    assert_eq!(with_toy.of(&File::at(&a, &bytes)).name(), "toy container");
    assert_eq!(standard.of(&File::at(&a, &bytes)).name(), "binary");

    // list
    let opts = whole::ListOptions::default();
    let listed = whole::list(std::slice::from_ref(&a), opts, &with_toy, &()).unwrap();
    let targets: Vec<&str> = listed[0].bundles[0]
        .entries
        .iter()
        .filter_map(|e| e.target_id.as_deref())
        .collect();
    assert_eq!(targets, ["gfx906", "gfx90a"], "{listed:?}");
    let plain = whole::list(std::slice::from_ref(&a), opts, &standard, &()).unwrap();
    assert!(plain[0].bundles.is_empty(), "{plain:?}");

    // size
    let opts = whole::SizeOptions::default();
    let sized = whole::size(std::slice::from_ref(&b), &opts, &with_toy, &()).unwrap();
    assert_eq!(sized.files.len(), 1, "{:?}", sized.errors);
    assert!(sized.stored > 0);
    let plain = whole::size(std::slice::from_ref(&b), &opts, &standard, &()).unwrap();
    assert!(plain.files.is_empty());

    // verify
    let verified = whole::verify(std::slice::from_ref(&b), false, &with_toy, &()).unwrap();
    assert!(verified.errors.is_empty(), "{:?}", verified.errors);
    assert_eq!(verified.files.len(), 1);
    // Three device entries and the bundle's empty host entry.
    assert!(
        verified.files[0].ok && verified.files[0].entries == 4,
        "{:?}",
        verified.files[0]
    );
    let plain = whole::verify(std::slice::from_ref(&b), false, &standard, &()).unwrap();
    assert!(plain.files.is_empty() && !plain.errors.is_empty());

    // kernels
    let gfx1100: TargetId = "gfx1100".parse().unwrap();
    let k = whole::kernels(
        std::slice::from_ref(&b),
        Some(&gfx1100),
        false,
        &with_toy,
        &(),
    )
    .unwrap();
    assert_eq!(k.kernels.len(), 3, "{:?}", k.errors);
    assert!(k
        .kernels
        .iter()
        .all(|r| r.target_id.as_deref() == Some("gfx1100")));
    let plain = whole::kernels(std::slice::from_ref(&b), None, false, &standard, &()).unwrap();
    assert!(plain.kernels.is_empty());

    // diff: the code objects of both sides, compared
    let d = whole::diff(&old, &new, &with_toy, &()).unwrap();
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let text = serde_json::to_string(&d).unwrap();
    assert!(text.contains("gfx1100"), "{text}");
    let plain = whole::diff(&old, &new, &standard, &()).unwrap();
    assert!(!serde_json::to_string(&plain).unwrap().contains("gfx1100"));

    // select, doctor, check: the runtime's choice among the toy's code objects.
    let loader = Loader::Current;
    let s = whole::select_on(
        std::slice::from_ref(&b),
        &gfx1100,
        None,
        loader,
        None,
        &with_toy,
        &(),
    )
    .unwrap();
    assert_eq!(
        s.files[0].bundles[0].selected.as_deref(),
        Some("hipv4-amdgcn-amd-amdhsa--gfx1100"),
        "{:?}",
        s.files
    );
    let plain = whole::select_on(
        std::slice::from_ref(&b),
        &gfx1100,
        None,
        loader,
        None,
        &standard,
        &(),
    )
    .unwrap();
    assert!(plain.files.iter().all(|f| f.bundles.is_empty()));
    let gfx942: TargetId = "gfx942".parse().unwrap();
    let counts = gfxkit_inventory::database::CuCounts::none();
    let devices = [gfx1100, gfx942];
    let d = whole::doctor_on(
        std::slice::from_ref(&b),
        &devices,
        &counts,
        loader,
        None,
        &with_toy,
        &(),
    )
    .unwrap();
    assert_eq!(d.files.len(), 1);
    assert_eq!(d.files[0].runs_on.get("gfx1100"), Some(&true));
    assert_eq!(d.files[0].runs_on.get("gfx942"), Some(&false));
    let c = whole::check_on(
        std::slice::from_ref(&a),
        std::slice::from_ref(&gfx1100),
        false,
        loader,
        None,
        &with_toy,
        &(),
    )
    .unwrap();
    assert_eq!(c.files.len(), 1);
    assert!(!c.files[0].ok, "kernels.toy of old/ has no gfx1100 code");

    // census: the input row named by the format, a row per code object
    let rows = gfxkit_io::census::rows(&b, "fleet/kernels.toy", &with_toy, true, &Around::new());
    assert_eq!(rows.input.kind, "toy");
    assert_eq!(rows.input.status, "ok", "{:?}", rows.input.error);
    let mut processors: Vec<_> = rows
        .code_objects
        .iter()
        .filter_map(|r| r.processor.as_deref())
        .collect();
    processors.sort();
    assert_eq!(processors, ["gfx1100", "gfx906", "gfx90a"]);
    let plain = gfxkit_io::census::rows(&b, "fleet/kernels.toy", &standard, true, &Around::new());
    assert!(plain.code_objects.is_empty() && plain.input.kind != "toy");

    // extract: the code objects a target selects, with the bytes the bundle holds
    let bytes = std::fs::read(&b).unwrap();
    let file = File::at(&b, &bytes);
    let gfx90a = gfxkit_inventory::extract::requested_id("gfx90a").unwrap();
    let mut wanted = Wanted::new(vec![gfx90a]);
    let plan = with_toy
        .of(&file)
        .extract(&file, true, &mut wanted)
        .unwrap()
        .expect("the toy holds device code");
    assert_eq!(wanted.unmatched(), None);
    let done = plan
        .produce(
            None,
            gfxkit_bundle::ccob::HashCheck::Error,
            &|item, data, _| Ok((item.file_name("kernels"), data.to_vec())),
        )
        .unwrap();
    let names: Vec<&str> = done.items.iter().map(|(_, (n, _), _)| n.as_str()).collect();
    assert_eq!(names, ["kernels.0.hipv4-amdgcn-amd-amdhsa--gfx90a.co"]);
    let co = &done.items[0].1 .1;
    let found = gfxkit_code_object::CodeObject::parse(co).unwrap();
    assert_eq!(found.target_id().unwrap().to_string(), "gfx90a");
    // Every entry but the empty host one.
    let mut all = Wanted::new(Vec::new());
    let plan = with_toy.of(&file).extract(&file, true, &mut all).unwrap();
    assert_eq!(plan.map(|p| p.len()), Some(3));
    let plain = standard
        .of(&file)
        .extract(&file, true, &mut Wanted::new(Vec::new()));
    assert!(
        matches!(plain, Err(ExtractError::NoDeviceCode(_))),
        "{:?}",
        plain.err()
    );
    assert!(matches!(
        with_toy.of(&file).inspect(&file),
        Inspection::CodeObject { hint } if hint.contains("toy")
    ));

    // prune of a tree: the toy kept or dropped whole by its targets
    use gfxkit_inventory::prune::TreeAction;
    use gfxkit_io::tree::{prune_tree, TreeOutput};
    use gfxkit_shrink::{Conversion, EntryFilter, Pattern, Transform};
    let prune = |formats: &Formats, keep: &str| {
        let t = Transform {
            selection: EntryFilter::Keep(vec![Pattern::parse(keep).unwrap()]),
            conversion: Conversion::Keep,
            limits: Default::default(),
        };
        prune_tree(formats, &new, &t, TreeOutput::DryRun, true).unwrap()
    };
    let kept = prune(&with_toy, "gfx1100");
    let toy_file = &kept.files[0];
    assert_eq!(toy_file.kind, "toy");
    assert_eq!(toy_file.action, TreeAction::Kept);
    assert_eq!(toy_file.targets, ["gfx1100", "gfx906", "gfx90a"]);
    let dropped = prune(&with_toy, "gfx942");
    assert_eq!(dropped.files[0].action, TreeAction::Dropped);
    assert_eq!(dropped.files[0].size_after, 0);
    assert!(dropped.size_after < kept.size_after);
    let written = tmp.path().join("pruned");
    let t = Transform {
        selection: EntryFilter::Drop(vec![Pattern::parse("gfx906").unwrap()]),
        conversion: Conversion::Keep,
        limits: Default::default(),
    };
    prune_tree(&with_toy, &new, &t, TreeOutput::Dir(&written), false).unwrap();
    assert_eq!(std::fs::read(written.join("kernels.toy")).unwrap(), bytes);
    let plain = prune(&standard, "gfx942");
    assert_eq!(plain.files[0].kind, "file");
    assert_eq!(plain.files[0].action, TreeAction::Copied);
}

/// `prune` of one file and of a tree reach a format's rewrite through the door: a toy a prune
/// keeps or drops whole is refused on its own, saying what it holds; the toy wrapper's bundle
/// is rewritten, to the same bytes on its own and in a tree, and read back through its format.
#[test]
fn a_format_added_through_the_interface_is_pruned_through_it() {
    use gfxkit_io::rewrite::{rewrite_file, Original};
    use gfxkit_io::tree::{prune_tree, TreeOutput};
    use gfxkit_shrink::{Conversion, EntryFilter, Pattern, Transform};
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let whole_toy = toy(tmp.path(), "kernels.toy", &["gfx906", "gfx90a"], 2);
    let wrap = toy_of(
        WRAP,
        &tree,
        "kernels.wrap",
        &["gfx906", "gfx90a", "gfx1100"],
        2,
    );
    let standard = Formats::standard();
    let formats = Formats::standard().with(Toy).with(Wrap);
    let keep = |target: &str| Transform {
        selection: EntryFilter::Keep(vec![Pattern::parse(target).unwrap()]),
        conversion: Conversion::Keep,
        limits: Default::default(),
    };
    let prune_one = |formats: &Formats, input: &Path, t: &Transform, out: &Path| {
        let data = std::fs::read(input).unwrap();
        let opts = written_to(out, formats);
        rewrite_file(input, Original::Bytes(&data), t, &opts, &|_| {})
    };

    // The whole toy: refused, nothing written.
    let out = tmp.path().join("kernels.out");
    let e = prune_one(&formats, &whole_toy, &keep("gfx90a"), &out).unwrap_err();
    assert!(
        matches!(e.kind(), gfxkit_io::ErrorKind::Whole(m)
            if m.contains("a toy file for gfx906, gfx90a") && m.contains("keep it")),
        "{e}"
    );
    assert!(!out.exists());

    // The wrapper on its own: its bundle keeps gfx90a alone, behind its magic.
    let one = tmp.path().join("one.wrap");
    let report = prune_one(&formats, &wrap, &keep("gfx90a"), &one).unwrap();
    assert!(report.changed(), "{report:?}");
    let bytes = std::fs::read(&one).unwrap();
    assert!(bytes.starts_with(WRAP));
    assert!(bytes.len() < std::fs::metadata(&wrap).unwrap().len() as usize);
    let listed = whole::list(
        std::slice::from_ref(&one),
        whole::ListOptions::default(),
        &formats,
        &(),
    )
    .unwrap();
    let targets: Vec<&str> = listed[0].bundles[0]
        .entries
        .iter()
        .filter_map(|e| e.target_id.as_deref())
        .collect();
    assert_eq!(targets, ["gfx90a"], "{listed:?}");
    let verified = whole::verify(std::slice::from_ref(&one), false, &formats, &()).unwrap();
    assert!(verified.files[0].ok, "{:?}", verified.files);
    // Without the format, no rewrite knows the file: refused, nothing written.
    let plain = tmp.path().join("plain.wrap");
    let e = prune_one(&standard, &wrap, &keep("gfx90a"), &plain).unwrap_err();
    assert!(format!("{e:?}").contains("no known magic"), "{e:?}");
    assert!(!plain.exists());

    // In a tree: decided by the format, written by it, the same bytes as on its own.
    let decided = prune_tree(&formats, &tree, &keep("gfx90a"), TreeOutput::DryRun, false).unwrap();
    let file = &decided.files[0];
    assert_eq!(file.kind, "toy-wrapper");
    assert_eq!(file.action, gfxkit_inventory::prune::TreeAction::Rewritten);
    assert_eq!(file.targets, ["gfx1100", "gfx906", "gfx90a"]);
    assert_eq!(file.size_after, bytes.len() as u64);
    let written = tmp.path().join("pruned");
    prune_tree(
        &formats,
        &tree,
        &keep("gfx90a"),
        TreeOutput::Dir(&written),
        false,
    )
    .unwrap();
    assert_eq!(std::fs::read(written.join("kernels.wrap")).unwrap(), bytes);
}

/// A rewrite by `formats` written to `out`.
fn written_to<'p>(out: &'p Path, formats: &'p Formats) -> gfxkit_io::rewrite::RewriteOptions<'p> {
    gfxkit_io::rewrite::RewriteOptions {
        target: Some(out),
        like: None,
        durability: gfxkit_io::Durability::Rename,
        allow_empty: false,
        drop_signature: false,
        digests: true,
        formats,
        source: None,
    }
}

/// The members of a tar holding `files` (name, path on disk), in that order.
fn tarball(out: &Path, files: &[(&str, &Path)]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for (name, path) in files {
        let bytes = std::fs::read(path).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(&mut h, name, &bytes[..]).unwrap();
    }
    let bytes = tar.into_inner().unwrap();
    std::fs::write(out, &bytes).unwrap();
    bytes
}

/// The toys inside a package: read by `list`, `size` and `verify` as members, recompressed
/// and pruned by the package rewrite, once the formats a run is given hold them; the standard
/// formats do not even read those members.
#[test]
fn a_format_added_through_the_interface_is_read_inside_packages() {
    use gfxkit_io::package::rewrite_package;
    use gfxkit_shrink::{Conversion, EntryFilter, Method, Pattern, Transform};
    let tmp = tempfile::tempdir().unwrap();
    let toy_file = toy(tmp.path(), "kernels.toy", &["gfx906", "gfx90a"], 2);
    let wrap_file = toy_of(
        WRAP,
        tmp.path(),
        "kernels.wrap",
        &["gfx906", "gfx90a", "gfx1100"],
        2,
    );
    let pkg = tmp.path().join("toys.tar");
    let data = tarball(
        &pkg,
        &[
            ("share/kernels.toy", &toy_file),
            ("share/kernels.wrap", &wrap_file),
        ],
    );
    let standard = Formats::standard();
    let formats = Formats::standard().with(Toy).with(Wrap);
    assert!(formats.member_choice().wants("share/kernels.toy", MAGIC));
    assert!(!standard.member_choice().wants("share/kernels.toy", MAGIC));
    let member = |name: &str| format!("{}!share/{name}", pkg.display());

    // list: each toy a member with its bundle's targets.
    let opts = whole::ListOptions::default();
    let listed = whole::list(std::slice::from_ref(&pkg), opts, &formats, &()).unwrap();
    let targets = |path: &str| -> Vec<String> {
        let f = listed.iter().find(|f| f.path == path).expect(path);
        f.bundles
            .iter()
            .flat_map(|b| &b.entries)
            .filter_map(|e| e.target_id.clone())
            .collect()
    };
    assert_eq!(targets(&member("kernels.toy")), ["gfx906", "gfx90a"]);
    assert_eq!(
        targets(&member("kernels.wrap")),
        ["gfx1100", "gfx906", "gfx90a"]
    );
    let plain = whole::list(std::slice::from_ref(&pkg), opts, &standard, &()).unwrap();
    assert!(
        plain.iter().all(|f| f.bundles.is_empty()),
        "{:?}",
        plain.iter().map(|f| &f.path).collect::<Vec<_>>()
    );

    // size and verify: both members.
    let sized = whole::size(
        std::slice::from_ref(&pkg),
        &whole::SizeOptions::default(),
        &formats,
        &(),
    )
    .unwrap();
    assert_eq!(sized.files.len(), 2, "{:?}", sized.errors);
    let verified = whole::verify(std::slice::from_ref(&pkg), false, &formats, &()).unwrap();
    assert_eq!(verified.files.len(), 2, "{:?}", verified.errors);
    assert!(verified.files.iter().all(|f| f.ok), "{:?}", verified.files);

    let rewrite = |formats: &Formats, t: &Transform, out: &Path| {
        let opts = written_to(out, formats);
        rewrite_package(&pkg.display().to_string(), &data, t, &opts).unwrap()
    };
    let members = |path: &Path| -> Vec<(String, Vec<u8>)> {
        let mut a = tar::Archive::new(std::fs::File::open(path).unwrap());
        a.entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let name = e.path().unwrap().display().to_string();
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut e, &mut bytes).unwrap();
                (name, bytes)
            })
            .collect()
    };

    // recompress: the wrapper's bundle compressed behind its magic; the whole toy, which no
    // format rewrites, as it was. Without the formats, nothing is read, nothing changes.
    let compress = Transform {
        selection: EntryFilter::All,
        conversion: Conversion::Compressed {
            version: 3,
            method: Method::Zstd,
            level: None,
        },
        limits: Default::default(),
    };
    let out = tmp.path().join("compressed.tar");
    let done = rewrite(&formats, &compress, &out);
    let changed: Vec<&str> = done.changed.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(changed, [member("kernels.wrap")]);
    let written = members(&out);
    assert_eq!(
        written[0],
        (
            "share/kernels.toy".to_owned(),
            std::fs::read(&toy_file).unwrap()
        )
    );
    assert_eq!(written[1].0, "share/kernels.wrap");
    assert!(written[1].1.starts_with(WRAP));
    assert_eq!(&written[1].1[WRAP.len()..][..4], b"CCOB");
    let relisted = whole::list(std::slice::from_ref(&out), opts, &formats, &()).unwrap();
    assert_eq!(relisted.len(), 2);
    let plain = tmp.path().join("plain.tar");
    assert!(rewrite(&standard, &compress, &plain).changed.is_empty());

    // prune: the whole toy dropped, the wrapper's bundle cut to the kept target.
    let keep = Transform {
        selection: EntryFilter::Keep(vec![Pattern::parse("gfx1100").unwrap()]),
        conversion: Conversion::Keep,
        limits: Default::default(),
    };
    let out = tmp.path().join("pruned.tar");
    rewrite(&formats, &keep, &out);
    let written = members(&out);
    assert_eq!(
        written.len(),
        1,
        "{:?}",
        written.iter().map(|m| &m.0).collect::<Vec<_>>()
    );
    assert_eq!(written[0].0, "share/kernels.wrap");
    let relisted = whole::list(std::slice::from_ref(&out), opts, &formats, &()).unwrap();
    let kept: Vec<String> = relisted[0]
        .bundles
        .iter()
        .flat_map(|b| &b.entries)
        .filter_map(|e| e.target_id.clone())
        .collect();
    assert_eq!(kept, ["gfx1100"]);
}
