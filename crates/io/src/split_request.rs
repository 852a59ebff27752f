//! `kpack split` as asked ([`SplitRequest`]): a whole tree ([`crate::split_tree`]), one
//! binary to an output file, or several into an output directory ([`crate::split`]).

use crate::split::{
    kernel_name_for, single_job, split_with, Job, SplitOptions, SplitReport, TreeLayout,
};
use crate::{Error, ErrorKind};
use gfxkit_kpack::write::Compression;
use std::path::{Path, PathBuf};

/// One `kpack split` as asked: the inputs, where they go, and how.
#[derive(Debug, Clone)]
pub struct SplitRequest<'a> {
    /// Fat binaries; with [`SplitRequest::tree`], exactly one directory.
    pub inputs: &'a [PathBuf],
    /// The output binary (one input), directory (several) or tree.
    pub output: &'a Path,
    /// Archive group name (`<group>_<arch>.kpack`).
    pub group: &'a str,
    /// Where the archives go; by default `.kpack` beside the output's directory (one input),
    /// beside the output directory (several), or at the output tree's root.
    pub kpack_dir: Option<&'a Path>,
    /// The TOC name of the one binary split (several inputs take theirs from their paths).
    pub kernel_name: Option<&'a str>,
    /// How kernels are stored.
    pub compression: Compression,
    /// Signed Windows images and the like.
    pub options: SplitOptions,
    /// Split a whole tree in this layout ([`crate::split_tree::split_tree`]).
    pub tree: Option<TreeLayout>,
    /// How a tree's files other than fat binaries are read (which go whole to an overlay).
    pub formats: &'a crate::format::Formats,
}

/// Splits what `r` asks for: a tree, one binary to the output file, or several binaries into
/// the output directory (each named as its input), all archives in one kpack directory.
/// A kernel name with several inputs or a tree, or a tree of more than one directory, is an
/// [`ErrorKind::Request`] error.
pub fn split_request(r: &SplitRequest<'_>) -> Result<SplitReport, Error> {
    let refuse = |why: &str| Err(Error::new(r.output, ErrorKind::Request(why.into())));
    if r.kernel_name.is_some() && (r.tree.is_some() || r.inputs.len() != 1) {
        return refuse("a kernel name is given to one binary split alone");
    }
    if let Some(layout) = r.tree {
        let [root] = r.inputs else {
            return refuse("a tree split takes one directory");
        };
        let split = crate::split_tree::TreeSplit {
            group: r.group,
            kpack_dir: r.kpack_dir,
            compression: r.compression,
            options: r.options,
            layout,
            formats: r.formats,
        };
        return crate::split_tree::split_tree(root, r.output, &split);
    }
    let (jobs, kpack_dir) = match r.inputs {
        [] => return refuse("no binary to split"),
        [one] => {
            let (job, dir) = single_job(one, r.output, r.kpack_dir, r.kernel_name)?;
            (vec![job], dir)
        }
        several => {
            let out = crate::split::absolute(r.output)?;
            let kpack_dir = match r.kpack_dir {
                Some(d) => crate::split::absolute(d)?,
                None => out.join("../.kpack"),
            };
            let mut jobs = Vec::with_capacity(several.len());
            for input in several {
                let Some(name) = input.file_name() else {
                    return Err(Error::new(input, ErrorKind::Request("no file name".into())));
                };
                let output = out.join(name);
                jobs.push(Job {
                    input: input.clone(),
                    kernel_name: kernel_name_for(&output, &kpack_dir),
                    output,
                });
            }
            (jobs, kpack_dir)
        }
    };
    split_with(&jobs, r.group, &kpack_dir, r.compression, r.options)
}

#[cfg(test)]
mod tests {
    use super::*;

    static STANDARD: std::sync::LazyLock<crate::format::Formats> =
        std::sync::LazyLock::new(crate::format::Formats::standard);

    fn request<'a>(inputs: &'a [PathBuf], output: &'a Path) -> SplitRequest<'a> {
        SplitRequest {
            inputs,
            output,
            group: "g",
            kpack_dir: None,
            kernel_name: None,
            compression: Compression::None,
            options: SplitOptions::default(),
            tree: None,
            formats: &STANDARD,
        }
    }

    #[test]
    fn requests_whose_parts_do_not_fit_are_refused_before_any_file_is_read() {
        let two = [
            PathBuf::from("/no/such/a.so"),
            PathBuf::from("/no/such/b.so"),
        ];
        let out = Path::new("/no/such/out");
        let refused = |r: SplitRequest<'_>| match split_request(&r) {
            Err(e) => match e.kind() {
                ErrorKind::Request(why) => why.clone(),
                other => panic!("{other:?}"),
            },
            Ok(r) => panic!("{r:?}"),
        };
        let named = SplitRequest {
            kernel_name: Some("lib/a.so"),
            ..request(&two, out)
        };
        assert!(refused(named).contains("one binary"));
        let tree = SplitRequest {
            tree: Some(TreeLayout::Single),
            ..request(&two, out)
        };
        assert!(refused(tree).contains("one directory"));
        assert!(refused(request(&[], out)).contains("no binary"));
        // One input goes on to be read: the error names it.
        let one = [PathBuf::from("/no/such/a.so")];
        let err = split_request(&request(&one, out)).unwrap_err();
        assert_eq!(err.path(), Path::new("/no/such/a.so"), "{err}");
    }
}
