//! Wheel `RECORD` files: one CSV row per member, `path,sha256=<urlsafe base64, no padding>,size`
//! (PEP 376 / PEP 427). Rows of rewritten members are replaced; every other row is kept byte
//! for byte. And conda's lists of paths with their hashes: a package's `info/paths.json` and
//! an installed package's record in `conda-meta/`.

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
    hex::encode(Sha256::digest(data))
}

/// Applies `changes` to a conda `paths` list (`info/paths.json`'s `paths`, an installed
/// record's `paths_data.paths`: objects with `_path`, `sha256`, `size_in_bytes`): a path with
/// a new hex SHA-256 and size gets them, a path with none is taken out. The error names a
/// changed path the list does not hold.
pub fn update_conda_paths(
    items: &mut Vec<serde_json::Value>,
    changes: &[(String, Option<(String, u64)>)],
) -> Result<(), String> {
    let path_of =
        |it: &serde_json::Value| it.get("_path").and_then(|v| v.as_str()).map(str::to_owned);
    for (p, now) in changes {
        let Some((hex, size)) = now else {
            items.retain(|it| path_of(it).as_deref() != Some(p.as_str()));
            continue;
        };
        let item = items
            .iter_mut()
            .find(|it| path_of(it).as_deref() == Some(p.as_str()))
            .ok_or_else(|| format!("no entry for {p}"))?;
        item["sha256"] = serde_json::Value::String(hex.clone());
        item["size_in_bytes"] = serde_json::Value::from(*size);
    }
    Ok(())
}

/// The paths an installed conda package's record (`conda-meta/<name>-<version>-<build>.json`)
/// lists with their hashes (`paths_data.paths[]._path`), relative to the environment's root;
/// `None` for text that is not such a record.
pub fn conda_meta_paths(text: &[u8]) -> Option<Vec<String>> {
    let json: serde_json::Value = serde_json::from_slice(text).ok()?;
    let items = json.get("paths_data")?.get("paths")?.as_array()?;
    Some(
        items
            .iter()
            .filter_map(|it| it.get("_path")?.as_str().map(str::to_owned))
            .collect(),
    )
}

/// An installed conda package's record with `changes` applied to `paths_data.paths`
/// ([`update_conda_paths`]) and the paths taken out of it taken out of `files` too, written
/// as JSON with two-space indents (the keys in order), ending as the text did.
pub fn update_conda_meta(
    text: &[u8],
    changes: &[(String, Option<(String, u64)>)],
) -> Result<Vec<u8>, String> {
    let mut json: serde_json::Value =
        serde_json::from_slice(text).map_err(|e| format!("JSON: {e}"))?;
    let items = json
        .get_mut("paths_data")
        .and_then(|p| p.get_mut("paths"))
        .and_then(|p| p.as_array_mut())
        .ok_or("no \"paths_data\": {\"paths\"} array")?;
    update_conda_paths(items, changes)?;
    if let Some(files) = json.get_mut("files").and_then(|f| f.as_array_mut()) {
        files.retain(|f| {
            !changes
                .iter()
                .any(|(p, now)| now.is_none() && f.as_str() == Some(p.as_str()))
        });
    }
    let mut out = serde_json::to_vec_pretty(&json).map_err(|e| e.to_string())?;
    if text.ends_with(b"\n") {
        out.push(b'\n');
    }
    Ok(out)
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
