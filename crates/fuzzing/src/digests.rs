//! What the census reads of every file: its listing and its code objects' digests, both from
//! one inventory of the file.

use gfxkit_bundle::limits::Limits;
use gfxkit_inventory::digest::{file_digests, inventory_digests, Digesting};
use gfxkit_inventory::Inventory;

/// Takes the inventory of the input once and reads from it the listing and the digests (with
/// kernels counted, compressed bundles decoded with and without their hash checked, under a
/// 64 MiB bound on what a bundle may declare): the digests equal, error for error, those of the
/// input's own reading of its units, which `gfxkit diff` and `size --duplicates` take.
pub fn run(data: &[u8]) {
    let limits = Limits {
        max_uncompressed: 64 << 20,
    };
    let inv = Inventory::of_with(data, &limits);
    let _ = gfxkit_inventory::list::list("input", &inv, false);
    for check in [false, true] {
        let how = Digesting {
            kernels: true,
            check,
        };
        assert_eq!(
            inventory_digests("input", &inv, how),
            file_digests("input", data, how, &limits),
            "check {check}"
        );
    }
}
