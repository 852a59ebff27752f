//! Throughput of the bundle library on a bundle of about 60 MB built from real clang-19 code
//! objects: header parse (listing), entry extraction, writing, CCOB compression (single thread
//! as clang, and with zstd workers) and decompression. A benchmark, not a test:
//! `cargo bench -p gfxkit-bundle --bench throughput`.

use gfxkit_bundle::{ccob, read, write_bundle, AnyBundle, Bundle, Method};
use gfxkit_testkit::{hip_kernels, HipBuild};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn time<T>(label: &str, bytes: usize, runs: u32, mut f: impl FnMut() -> T) {
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let t = Instant::now();
        black_box(f());
        best = best.min(t.elapsed());
    }
    let mbs = bytes as f64 / 1e6 / best.as_secs_f64();
    println!(
        "{label:<44} {:>10.3} ms  {mbs:>10.1} MB/s",
        best.as_secs_f64() * 1e3
    );
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let archs = [
        "gfx906",
        "gfx908",
        "gfx90a:xnack+",
        "gfx90a:xnack-",
        "gfx942",
        "gfx1030",
        "gfx1100",
        "gfx1101",
        "gfx1200",
        "gfx1201",
    ];
    let src = hip_kernels(50);
    let path = HipBuild::new(&src, &archs).build(dir.path(), "bench");
    let small = std::fs::read(path).expect("bundle");
    let b = Bundle::parse(&small).expect("clang bundle");
    // Each device payload: every code object, twelve times, each copy XORed with its own byte so
    // that copies do not match each other (each compresses like a real code object would).
    let all: Vec<u8> = b
        .entries()
        .iter()
        .flat_map(|e| e.payload.iter().copied())
        .collect();
    let ids: Vec<String> = b.entries().iter().map(|e| e.id.to_owned()).collect();
    let payloads: Vec<Vec<u8>> = (0..ids.len())
        .map(|i| {
            if ids[i].starts_with("host") {
                return Vec::new();
            }
            (0..12u8)
                .flat_map(|k| {
                    let key = (i as u8).wrapping_mul(12).wrapping_add(k).wrapping_mul(37) | 1;
                    all.iter().map(move |b| b ^ key)
                })
                .collect()
        })
        .collect();
    let blob = &payloads[1];
    let entries: Vec<(&str, &[u8])> = ids
        .iter()
        .map(String::as_str)
        .zip(payloads.iter().map(Vec::as_slice))
        .collect();
    let big = write_bundle(&entries, 4096).expect("write");
    println!("bundle: {} entries, {} bytes", entries.len(), big.len());
    let n = big.len();
    time("parse (list entries)", n, 20, || {
        Bundle::parse(&big).unwrap().len()
    });
    time("header only (parse_header)", n, 20, || {
        read::parse_header(&big).unwrap().0.len()
    });
    time("extract one entry (copy out)", blob.len(), 10, || {
        let v = Bundle::parse(&big).unwrap().entries()[3].payload.to_vec();
        v.iter().step_by(4096).map(|&b| b as u64).sum::<u64>()
    });
    time("write_bundle (align 4096)", n, 5, || {
        write_bundle(&entries, 4096).unwrap()
    });
    let z = ccob::compress(&big, &Default::default()).unwrap();
    println!(
        "ccob v2 zstd-3: {} -> {} bytes (ratio {:.2})",
        n,
        z.len(),
        n as f64 / z.len() as f64
    );
    time("compress zstd-3 + LDM, 1 thread (clang)", n, 2, || {
        ccob::compress(&big, &Default::default()).unwrap()
    });
    let threads = std::thread::available_parallelism().map_or(2, |p| p.get() as u32);
    time(
        &format!("compress zstd-3 + LDM, {threads} workers"),
        n,
        2,
        || {
            ccob::compress(
                &big,
                &ccob::CompressOptions {
                    threads,
                    ..Default::default()
                },
            )
            .unwrap()
        },
    );
    time("compress zlib-6", n, 1, || {
        ccob::compress(
            &big,
            &ccob::CompressOptions {
                method: Method::Zlib,
                ..Default::default()
            },
        )
        .unwrap()
    });
    time("decompress + MD5 check", n, 3, || {
        ccob::decompress_ccob(&z, &Default::default()).unwrap()
    });
    time("list compressed (header prefix only)", n, 20, || {
        let (_, p) = ccob::decompress_prefix(&z, 4096, &Default::default()).unwrap();
        read::parse_header(&p).unwrap().0.len()
    });
    time("AnyBundle::parse (compressed)", n, 3, || {
        AnyBundle::parse(&z, &Default::default()).unwrap().extent
    });
}
