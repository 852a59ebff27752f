//! `walk_watched` tells the path of each member as its reading starts, nested ones and
//! skipped ones too, before the member is visited.

use gfxkit_package::{walk_watched, Member, MemorySpill, Options, Result, Walk};
use std::sync::Mutex;

/// An ELF shared object's first bytes: a member worth visiting.
const ELF: &[u8] = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0\x3e\0rest";

/// `walk_watched` of the tar `tar`, named `p.tar`, each member visited by `visit`; the
/// reading of members not told.
fn walk_tar<T: Send>(tar: &[u8], visit: &(dyn Fn(Member<'_>) -> T + Sync)) -> Result<Walk<T>> {
    walk_watched(
        "p.tar",
        tar,
        &Options::default(),
        &MemorySpill,
        visit,
        &|_| {},
    )
}

fn tar_of(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut t = tar::Builder::new(Vec::new());
    for (n, b) in members {
        let mut h = tar::Header::new_gnu();
        h.set_size(b.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        t.append_data(&mut h, n, *b).unwrap();
    }
    t.into_inner().unwrap()
}

#[test]
fn each_member_is_named_before_it_is_read() {
    let elf = ELF.to_vec();
    let inner = tar_of(&[("lib/a.so", &elf)]);
    let outer = tar_of(&[
        ("doc/readme.txt", b"text, skipped by its first bytes"),
        ("inner.tar", &inner),
        ("lib/b.so", &elf),
    ]);
    let events = Mutex::new(Vec::new());
    let walked = walk_watched(
        "p.tar",
        &outer,
        &Options::default(),
        &MemorySpill,
        &|m| events.lock().unwrap().push(format!("visit {}", m.path)),
        &|p| events.lock().unwrap().push(format!("read {p}")),
    )
    .unwrap();
    assert_eq!(walked.len(), 2);
    let events = events.into_inner().unwrap();
    // Members are read in archive order; each is visited after it is named (its visit may
    // run beside the reading of the members after it).
    let reads: Vec<&str> = events
        .iter()
        .filter_map(|e| e.strip_prefix("read "))
        .collect();
    assert_eq!(
        reads,
        [
            "p.tar!doc/readme.txt",
            "p.tar!inner.tar",
            "p.tar!inner.tar!lib/a.so",
            "p.tar!lib/b.so",
        ]
    );
    for m in ["p.tar!inner.tar!lib/a.so", "p.tar!lib/b.so"] {
        let read = events.iter().position(|e| *e == format!("read {m}"));
        let visit = events.iter().position(|e| *e == format!("visit {m}"));
        assert!(
            read.is_some() && visit.is_some() && read < visit,
            "{events:?}"
        );
    }
}

/// A stream's members are visited on a thread beside the reading: the values come back in
/// archive order whatever order the visits end in, and a visit that panics is raised again
/// from the walk.
#[test]
fn visits_beside_the_reading_keep_the_archive_order_and_raise_a_panic() {
    let elf = ELF.to_vec();
    let names: Vec<String> = (0..40).map(|i| format!("lib/l{i:02}.so")).collect();
    let members: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &elf[..])).collect();
    let tar = tar_of(&members);
    let walked = walk_tar(&tar, &|m| {
        // Early members take longest: a visit that finished out of order would show.
        let i: u64 = m.name[5..7].parse().unwrap();
        std::thread::sleep(std::time::Duration::from_micros((40 - i) * 50));
        m.name.to_owned()
    })
    .unwrap();
    let got: Vec<String> = walked.into_iter().map(|r| r.unwrap().value).collect();
    assert_eq!(got, names);
    let panicked = std::panic::catch_unwind(|| {
        walk_tar(&tar, &|m| {
            if m.name == "lib/l07.so" {
                panic!("visit of {}", m.name);
            }
        })
    })
    .expect_err("the visit's panic reaches the caller");
    let message = panicked
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert_eq!(message, "visit of lib/l07.so");
}

/// Walks run on every thread of rayon's pool at once, each visiting members with parallel
/// work of its own (as `gfxkit check` of several `.deb`s reads each member's entries in
/// parallel): every walk ends. A thread of the pool waiting for its walk's visiting thread
/// does the pool's work meanwhile; blocked, it left that thread's parallel work with no
/// thread to run it, and two packages on two cores hung for good.
#[test]
fn walks_on_every_thread_of_the_pool_with_parallel_visits_end() {
    use rayon::prelude::*;
    let elf = ELF.to_vec();
    let tar = tar_of(&[("lib/a.so", &elf)]);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Every visit waits for the others before its parallel work, so that every thread
        // of the pool is walking (then waiting for its visiting thread) when that work starts.
        let n = rayon::current_num_threads();
        let all = std::sync::Barrier::new(n);
        let sums: Vec<usize> = (0..n)
            .into_par_iter()
            .map(|_| {
                let walked = walk_tar(&tar, &|m| {
                    all.wait();
                    let work: usize = (0..1000usize).into_par_iter().map(|i| i % 7).sum();
                    work + m.bytes.len()
                })
                .unwrap();
                walked.into_iter().map(|v| v.unwrap().value).sum()
            })
            .collect();
        tx.send(sums).unwrap();
    });
    // A hang fails the test instead of stopping the run (minutes to spare on a loaded machine).
    let sums = rx
        .recv_timeout(std::time::Duration::from_secs(300))
        .expect("the walks did not end");
    assert_eq!(sums.len(), rayon::current_num_threads());
}

/// Walked on a rayon pool of one thread (a census given one core), a stream takes no second
/// thread: its xz data is decoded by the single-threaded decoder and every member is visited
/// on the walking thread itself, in order, with the values of a walk on every core.
#[test]
fn a_walk_on_a_pool_of_one_thread_visits_in_place() {
    use std::io::Write;
    let names: Vec<String> = (0..12).map(|i| format!("lib/l{i:02}.so")).collect();
    let bodies: Vec<Vec<u8>> = (0..12u8)
        .map(|i| [ELF, &vec![i; 300_000]].concat())
        .collect();
    let members: Vec<(&str, &[u8])> = names
        .iter()
        .zip(&bodies)
        .map(|(n, b)| (n.as_str(), &b[..]))
        .collect();
    let tar = tar_of(&members);
    // Several xz blocks (the multithreaded encoder's), as distributions' packages have.
    let stream = liblzma::stream::MtStreamBuilder::new()
        .threads(2)
        .block_size(1 << 20)
        .preset(1)
        .encoder()
        .unwrap();
    let mut xz = liblzma::write::XzEncoder::new_stream(Vec::new(), stream);
    xz.write_all(&tar).unwrap();
    let xz = xz.finish().unwrap();
    let walk = |threads: &Mutex<Vec<std::thread::ThreadId>>| {
        walk_watched(
            "p.tar.xz",
            &xz,
            &Options::default(),
            &MemorySpill,
            &|m| {
                threads.lock().unwrap().push(std::thread::current().id());
                (m.name.to_owned(), m.bytes.len())
            },
            &|_| {},
        )
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap().value)
        .collect::<Vec<_>>()
    };
    let everywhere = walk(&Mutex::new(Vec::new()));
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let visitors = Mutex::new(Vec::new());
    let (walker, alone) = one.install(|| (std::thread::current().id(), walk(&visitors)));
    assert_eq!(alone, everywhere);
    assert_eq!(alone.len(), 12);
    let visitors = visitors.into_inner().unwrap();
    assert_eq!(visitors.len(), 12);
    assert!(visitors.iter().all(|t| *t == walker), "{visitors:?}");
}
