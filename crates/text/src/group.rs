//! Text that groups what reads alike: units of a file past [`GROUP_ABOVE`] on one line,
//! indices as ranges, a few names then "and N more".

pub use gfxkit_inventory::list::shortened;

/// `message` about the file `path`, naming it once: as it is when it already names the file
/// (errors of reading a file, or a `package!member`, do), else `PATH: message`.
pub fn naming(path: &str, message: &str) -> String {
    if message.contains(path) {
        message.to_owned()
    } else {
        format!("{path}: {message}")
    }
}

/// Text output lists the units of a file (bundles, wrappers) one per line up to this many;
/// beyond, units that read alike are grouped into one line (`--json` keeps every one).
pub const GROUP_ABOVE: usize = 8;

/// `items` (index, text) grouped by text: each distinct text once, in the order it first
/// appears, with the indices that carry it.
pub fn group_by_text<T: PartialEq>(
    items: impl IntoIterator<Item = (usize, T)>,
) -> Vec<(Vec<usize>, T)> {
    let mut groups: Vec<(Vec<usize>, T)> = Vec::new();
    for (i, t) in items {
        match groups.iter_mut().find(|(_, g)| *g == t) {
            Some((v, _)) => v.push(i),
            None => groups.push((vec![i], t)),
        }
    }
    groups
}

/// Ascending indices written as ranges: `0-3, 5, 7-110`.
pub fn ranges(indices: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut k = 0;
    while k < indices.len() {
        let start = indices[k];
        let mut end = start;
        while k + 1 < indices.len() && indices[k + 1] == end + 1 {
            k += 1;
            end = indices[k];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        k += 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_ranges() {
        let g = group_by_text([(0, "a"), (1, "a"), (2, "b"), (3, "a"), (5, "a")]);
        assert_eq!(g, [(vec![0, 1, 3, 5], "a"), (vec![2], "b")]);
        assert_eq!(ranges(&g[0].0), "0-1, 3, 5");
        assert_eq!(ranges(&[7]), "7");
        assert_eq!(ranges(&[]), "");
        assert_eq!(shortened(&["a", "b", "c", "d"], 2), "a, b and 2 more");
    }
}
