//! Single-stream MD5 throughput of each candidate on one buffer (the size of rocSPARSE's largest
//! decompressed bundle by default): the CCOB hash is one MD5 stream over a whole bundle, so a
//! stream's speed is what bounds `decompress`. Each candidate runs ROUNDS times, alternating with
//! the others, and the median and spread are printed. Every digest is checked against `md-5`'s.

use std::time::Instant;

type Candidate = (&'static str, fn(&[u8]) -> [u8; 16]);

fn rustcrypto(b: &[u8]) -> [u8; 16] {
    use md5_rustcrypto::Digest as _;
    md5_rustcrypto::Md5::digest(b).into()
}

/// md-5's x86-64 assembly compression function (the crate behind its `asm` feature), with the
/// message padding MD5 defines around it.
fn rustcrypto_asm(b: &[u8]) -> [u8; 16] {
    let mut state = [0x6745_2301u32, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    let (blocks, rest) = b.as_chunks::<64>();
    md5_asm::compress(&mut state, blocks);
    let mut tail = rest.to_vec();
    tail.push(0x80);
    while tail.len() % 64 != 56 {
        tail.push(0);
    }
    tail.extend_from_slice(&((b.len() as u64) * 8).to_le_bytes());
    md5_asm::compress(&mut state, tail.as_chunks::<64>().0);
    let mut out = [0u8; 16];
    for (o, s) in out.chunks_exact_mut(4).zip(state) {
        o.copy_from_slice(&s.to_le_bytes());
    }
    out
}

fn md5_crate(b: &[u8]) -> [u8; 16] {
    md5::compute(b).0
}

fn openssl(b: &[u8]) -> [u8; 16] {
    let d = openssl::hash::hash(openssl::hash::MessageDigest::md5(), b).expect("OpenSSL MD5");
    let mut out = [0u8; 16];
    out.copy_from_slice(&d);
    out
}

fn gfxkit(b: &[u8]) -> [u8; 16] {
    let mut m = gfxkit_bundle::hash::Md5::new();
    m.update(b);
    m.finalize()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let size: usize = args
        .next()
        .map_or(93_000_000, |s| s.parse().expect("size in bytes"));
    let rounds: usize = args.next().map_or(7, |s| s.parse().expect("rounds"));
    // Bytes from a fixed xorshift sequence (MD5's speed does not depend on them).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let data: Vec<u8> = (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let candidates: [Candidate; 5] = [
        ("md-5 0.10 (RustCrypto, Rust)", rustcrypto),
        ("md5-asm 0.5 (md-5's asm feature)", rustcrypto_asm),
        ("md5 0.7", md5_crate),
        ("openssl 0.10 (system OpenSSL 3)", openssl),
        ("gfxkit_bundle::hash::Md5", gfxkit),
    ];
    let want = rustcrypto(&data);
    let mut times = vec![Vec::new(); candidates.len()];
    for _ in 0..rounds {
        for (i, (name, f)) in candidates.iter().enumerate() {
            let t = Instant::now();
            let d = f(&data);
            times[i].push(t.elapsed().as_secs_f64());
            assert_eq!(d, want, "{name} disagrees with md-5");
        }
    }
    println!(
        "MD5 of {size} bytes, {rounds} alternating rounds: median (min-max), MB/s at the median"
    );
    for ((name, _), t) in candidates.iter().zip(&mut times) {
        t.sort_by(f64::total_cmp);
        let med = t[t.len() / 2];
        println!(
            "{name:<36} {:7.1} ms ({:.1}-{:.1})  {:7.0} MB/s",
            med * 1e3,
            t[0] * 1e3,
            t[t.len() - 1] * 1e3,
            size as f64 / 1e6 / med
        );
    }
}
