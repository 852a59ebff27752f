//! Walking a package lazily: a tar that is a container image is read as the file system its
//! layers unpack to ([`crate::image`]); any other package member by member: each member is
//! decompressed once, streaming; those whose first bytes cannot start device code are
//! skipped after reading those bytes, nested archives are walked in turn (to
//! [`Options::max_depth`]), and the rest are handed to the caller's function one by one, held
//! in memory when small and otherwise in a [`Spill`] (a temporary file the caller maps).
//!
//! A stream (a `.deb`, an RPM, a compressed tarball, an image's layers) is read in order, so
//! its members are visited on a thread of their own while the walk decompresses the next
//! ones: the decoder and the caller's function run side by side, with at most [`QUEUE`]
//! members read and waiting for their visit. Walked on a rayon pool of one thread, it takes
//! no second thread: each member is visited as it is read.

use crate::detect::{detect, Format, PREFIX_LEN};
use crate::error::{Error, ErrorKind, Result};
use crate::members::{walk_stream, walk_zip, Ctx};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;

pub use crate::members::{
    Bytes, Member, MemberChoice, MemorySpill, Options, Spill, SpillWriter, Visited, Walk,
};

/// Walks the package `data` named `name` (which starts every member path). Zip members are
/// read in parallel; stream formats in order, each member visited while the next is read. Errors for the package as a whole (not a
/// package, an unreadable directory) are returned; errors of members are in the list.
pub fn walk<T: Send>(
    name: &str,
    data: &[u8],
    opts: &Options,
    spill: &dyn Spill,
    visit: &(dyn Fn(Member<'_>) -> T + Sync),
) -> Result<Walk<T>> {
    walk_watched(name, data, opts, spill, visit, &|_| {})
}

/// [`walk`], telling `reading` the path (`package!member`) of each member as its reading
/// starts (before its first bytes are decompressed), for a progress display. Called from
/// the threads that read zip members in parallel. A member is named before it is visited;
/// the visits of a stream's members run beside the reading of the members after them.
pub fn walk_watched<T: Send>(
    name: &str,
    data: &[u8],
    opts: &Options,
    spill: &dyn Spill,
    visit: &(dyn Fn(Member<'_>) -> T + Sync),
    reading: &(dyn Fn(&str) + Sync),
) -> Result<Walk<T>> {
    let prefix = data.get(..PREFIX_LEN).unwrap_or(data);
    let format = detect(prefix).ok_or_else(|| Error::new(name, ErrorKind::NotAPackage))?;
    let total = AtomicU64::new(0);
    let ctx = Ctx {
        opts,
        spill,
        visit,
        reading,
        total: &total,
        layer: None,
    };
    if format == Format::Tar {
        // A `docker save` archive or an OCI image layout in a tar: the file system its
        // layers unpack to.
        let layout = crate::image::TarLayout::index(name, data);
        if layout.is_image() {
            return pipelined(&ctx, |c| crate::image::walk_images(c, name, &layout));
        }
    }
    match format {
        Format::Zip => walk_zip(&ctx, name, data, 0),
        _ => pipelined(&ctx, |c| {
            let mut r: &[u8] = data;
            Ok(walk_stream(c, name, &mut r, format, 0))
        }),
    }
}

/// The most members of a stream read and waiting for their visit (each held in memory up to
/// [`Options::memory_limit`], else spilled).
pub const QUEUE: usize = 2;

/// A visited member's value: computed where the member was read, or by the visiting thread
/// under the member's number.
enum Slot<T> {
    Now(T),
    Later(usize),
}

/// A member handed to the visiting thread, owning what [`Member`] borrows.
struct Job {
    path: String,
    name: String,
    bytes: Bytes,
    layer: Option<String>,
}

/// Runs `walk` with `ctx`'s function moved to a thread of its own: each member read is sent
/// to it (at most [`QUEUE`] waiting) and numbered, and the walk goes on reading the next; the
/// values are put back in the walk's order at the end. A panic of the function is raised
/// again here, as if it had run in place.
fn pipelined<T: Send>(
    ctx: &Ctx<'_, T>,
    walk: impl FnOnce(&Ctx<'_, Slot<T>>) -> Result<Walk<Slot<T>>>,
) -> Result<Walk<T>> {
    let visit = ctx.visit;
    if rayon::current_num_threads() <= 1 {
        // Called on a pool of one thread (a census given one core): no thread beside it; each
        // member is visited in place as it is read.
        let now = |m: Member<'_>| Slot::Now(visit(m));
        let inner = Ctx {
            opts: ctx.opts,
            spill: ctx.spill,
            visit: &now,
            reading: ctx.reading,
            total: ctx.total,
            layer: ctx.layer,
        };
        return Ok(unslotted(walk(&inner)?, Vec::new()));
    }
    let (walked, done) = std::thread::scope(|s| {
        let (tx, rx) = mpsc::sync_channel::<(usize, Job)>(QUEUE);
        let visitor = s.spawn(move || {
            rx.into_iter()
                .map(|(n, job)| (n, visit_job(visit, job)))
                .collect::<Vec<_>>()
        });
        let next = AtomicUsize::new(0);
        let walked = {
            let defer = |m: Member<'_>| -> Slot<T> {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let job = Job {
                    path: m.path.to_owned(),
                    name: m.name.to_owned(),
                    bytes: m.bytes,
                    layer: m.layer.map(str::to_owned),
                };
                match hand_over(&tx, (n, job)) {
                    Ok(()) => Slot::Later(n),
                    // The visiting thread is busy or gone (its function panicked): here, then.
                    Err((_, job)) => Slot::Now(visit_job(visit, job)),
                }
            };
            let inner = Ctx {
                opts: ctx.opts,
                spill: ctx.spill,
                visit: &defer,
                reading: ctx.reading,
                total: ctx.total,
                layer: ctx.layer,
            };
            walk(&inner)
        };
        drop(tx);
        let visited = join_helping(visitor).unwrap_or_else(|p| std::panic::resume_unwind(p));
        let mut done: Vec<Option<T>> = Vec::new();
        done.resize_with(next.load(Ordering::Relaxed), || None);
        for (n, v) in visited {
            done[n] = Some(v);
        }
        (walked, done)
    });
    Ok(unslotted(walked?, done))
}

/// The walk's values, those visited by the visiting thread taken from `done` by number.
fn unslotted<T>(walked: Walk<Slot<T>>, mut done: Vec<Option<T>>) -> Walk<T> {
    walked
        .into_iter()
        .map(|r| {
            r.map(|v| Visited {
                path: v.path,
                size: v.size,
                value: match v.value {
                    Slot::Now(t) => t,
                    Slot::Later(n) => done[n].take().expect("every member sent was visited"),
                },
                layer: v.layer,
            })
        })
        .collect()
}

/// Waits for the visiting thread `visitor` to end. On a thread of rayon's pool, the pool's
/// pending work is done here meanwhile: the visiting thread's own parallel work (reading a
/// member's entries) needs the pool, and with every thread of the pool blocked waiting for
/// its walk's visiting thread (as many packages as cores, walked at once) none would run it.
fn join_helping<T>(visitor: std::thread::ScopedJoinHandle<'_, T>) -> std::thread::Result<T> {
    if rayon::current_thread_index().is_some() {
        while !visitor.is_finished() {
            if rayon::yield_now() != Some(rayon::Yield::Executed) {
                // Nothing to do in the pool: the visit is busy on its own.
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        }
    }
    visitor.join()
}

/// Hands `item` to the visiting thread through `tx`; gives it back when it is to be visited
/// here instead: when the visiting thread is gone, or, on a thread of rayon's pool, when the
/// queue is full. A thread of the pool never waits for the queue (a zip inside a stream, whose
/// members are read in parallel, or a walk run from a parallel iterator): the visiting thread's
/// own parallel work (reading a member's entries) needs the pool, and with every thread of the
/// pool waiting here it would never run. Visiting in place keeps that thread busy instead.
fn hand_over<T>(tx: &mpsc::SyncSender<T>, item: T) -> std::result::Result<(), T> {
    if rayon::current_thread_index().is_none() {
        return tx.send(item).map_err(|mpsc::SendError(item)| item);
    }
    tx.try_send(item).map_err(|e| match e {
        mpsc::TrySendError::Full(item) | mpsc::TrySendError::Disconnected(item) => item,
    })
}

fn visit_job<T>(visit: &(dyn Fn(Member<'_>) -> T + Sync), job: Job) -> T {
    let Job {
        path,
        name,
        bytes,
        layer,
    } = job;
    visit(Member {
        path: &path,
        name: &name,
        bytes,
        layer: layer.as_deref(),
    })
}
