//! Numbers as people read them in gfxkit's reports: byte counts in binary units, thousands
//! separators, shares in percent. The CLI's text, the HTML page and the Python package's
//! messages all write numbers through these.

/// A byte count for people: `512 B`, `1.5 MiB` (binary units, one decimal).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `part` as a share of `whole` with one decimal (`12.5%`), or `-` when `whole` is 0.
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(1536 << 10), "1.5 MiB");
        assert_eq!(human_bytes(u64::MAX), "16777216.0 TiB");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_310_496_488), "1,310,496,488");
        assert_eq!(percent(1, 8), "12.5%");
        assert_eq!(percent(1, 0), "-");
    }
}
