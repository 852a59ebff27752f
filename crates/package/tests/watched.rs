//! `walk_watched` tells the path of each member as its reading starts, nested ones and
//! skipped ones too, before the member is visited.

use gfxkit_package::{walk_watched, MemorySpill, Options};
use std::sync::Mutex;

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
    let elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0\x3e\0rest".to_vec();
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
    assert_eq!(
        events.into_inner().unwrap(),
        [
            "read p.tar!doc/readme.txt",
            "read p.tar!inner.tar",
            "read p.tar!inner.tar!lib/a.so",
            "visit p.tar!inner.tar!lib/a.so",
            "read p.tar!lib/b.so",
            "visit p.tar!lib/b.so",
        ]
    );
}
