//! Wheel `RECORD` files: one CSV row per member, `path,sha256=<urlsafe base64, no padding>,size`
//! (PEP 376 / PEP 427). Rows of rewritten members are replaced; every other row is kept byte
//! for byte.

use base64::Engine;
use sha2::{Digest, Sha256};

/// The `sha256=...` field for `data`.
pub fn hash_field(data: &[u8]) -> String {
    let digest = Sha256::digest(data);
    format!(
        "sha256={}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    )
}

/// The lowercase hex SHA-256 of `data` (as conda's `paths.json` stores it).
pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Splits one CSV row into fields (`"` quoting with `""` escapes, as Python's `csv` writes).
pub fn split_row(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (false, '"') if cur.is_empty() => quoted = true,
            (false, ',') => fields.push(std::mem::take(&mut cur)),
            (_, c) => cur.push(c),
        }
    }
    fields.push(cur);
    fields
}

/// One CSV field, quoted when it needs to be.
pub fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

/// `RECORD` with the rows of `changed` members (path, new bytes' hash field, new size)
/// replaced and those of `removed` members left out. Returns the new text and the changed
/// paths that had no row.
pub fn update(
    record: &str,
    changed: &[(String, String, u64)],
    removed: &std::collections::HashSet<String>,
) -> (String, Vec<String>) {
    let mut out = String::with_capacity(record.len());
    let mut seen = vec![false; changed.len()];
    for line in record.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let ending = &line[body.len()..];
        let fields = split_row(body);
        if fields.first().is_some_and(|p| removed.contains(p)) {
            continue;
        }
        let hit = changed
            .iter()
            .position(|(p, _, _)| fields.first().map(String::as_str) == Some(p.as_str()));
        match hit {
            Some(i) if !body.is_empty() => {
                seen[i] = true;
                let (p, h, n) = &changed[i];
                out.push_str(&format!("{},{h},{n}{ending}", quote(p)));
            }
            _ => out.push_str(line),
        }
    }
    let missing = changed
        .iter()
        .zip(seen)
        .filter(|(_, s)| !s)
        .map(|((p, _, _), _)| p.clone())
        .collect();
    (out, missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_matches_python_hashlib() {
        // python3 -c "import hashlib,base64;print(base64.urlsafe_b64encode(hashlib.sha256(b'abc').digest()).rstrip(b'='))"
        assert_eq!(
            hash_field(b"abc"),
            "sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"
        );
    }

    #[test]
    fn rows_replaced_others_kept() {
        let rec = "a/x.so,sha256=old,3\r\n\"we,ird.py\",sha256=k,1\r\npkg-1.dist-info/RECORD,,\r\n";
        let (new, missing) = update(
            rec,
            &[
                ("a/x.so".into(), "sha256=new".into(), 9),
                ("gone".into(), "sha256=z".into(), 1),
            ],
            &Default::default(),
        );
        assert_eq!(
            new,
            "a/x.so,sha256=new,9\r\n\"we,ird.py\",sha256=k,1\r\npkg-1.dist-info/RECORD,,\r\n"
        );
        assert_eq!(missing, ["gone"]);
        let removed = ["we,ird.py".to_owned(), "never.so".to_owned()].into();
        let (new, missing) = update(rec, &[], &removed);
        assert_eq!(new, "a/x.so,sha256=old,3\r\npkg-1.dist-info/RECORD,,\r\n");
        assert!(missing.is_empty());
        assert_eq!(split_row("\"we,ird.py\",h,1"), ["we,ird.py", "h", "1"]);
    }
}
