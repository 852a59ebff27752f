//! The single-thread optimization constraints (AMDGPUUsage "Memory Model", table "AMDHSA
//! Memory Model Single Thread Optimization Constraints"): whether a later instruction may be
//! moved before an earlier one as far as the memory model is concerned. Aliasing and data
//! dependences, which also forbid moves, are outside this table.

use crate::case::{Case, Kind, Ordering};

/// Why a move is forbidden: the constraint of the table that applies.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Constraint(pub &'static str);

fn is_memory(c: &Case) -> bool {
    // Every kind is a memory instruction for these rules (fences included).
    let _ = c;
    true
}

/// The ordering that decides the constraints: for `cmpxchg`, the stronger of the success and
/// failure orderings (a failure ordering of acquire or seq_cst adds acquire semantics).
fn effective(c: &Case) -> Option<Ordering> {
    let o = c.ordering?;
    match (c.kind, c.failure) {
        (Kind::Cmpxchg, Some(Ordering::SeqCst)) => Some(Ordering::SeqCst),
        (Kind::Cmpxchg, Some(Ordering::Acquire)) => Some(match o {
            Ordering::Release => Ordering::AcqRel,
            Ordering::Monotonic => Ordering::Acquire,
            o => o,
        }),
        _ => Some(o),
    }
}

fn is_rmw(c: &Case) -> bool {
    matches!(c.kind, Kind::AtomicRmw | Kind::Cmpxchg)
}

/// Whether `later` (after `earlier` in program order, same thread) may be moved before
/// `earlier`. `Err` names the constraint that forbids it.
pub fn may_move_before(earlier: &Case, later: &Case) -> Result<(), Constraint> {
    let a = effective(earlier);
    let b = effective(later);
    // Acquire: no following memory instruction can be moved before a load atomic, atomicrmw,
    // cmpxchg or fence with acquire semantics.
    if let Some(o) = a {
        if o.acquires()
            && matches!(
                earlier.kind,
                Kind::LoadAtomic | Kind::AtomicRmw | Kind::Cmpxchg | Kind::Fence
            )
            && is_memory(later)
        {
            return Err(Constraint(
                "acquire: no following load, store, atomic or fence can be moved before the acquire",
            ));
        }
    }
    // Release: no preceding memory instruction can be moved after a store atomic, atomicrmw,
    // cmpxchg or fence with release semantics.
    if let Some(o) = b {
        if o.releases()
            && matches!(
                later.kind,
                Kind::StoreAtomic | Kind::AtomicRmw | Kind::Cmpxchg | Kind::Fence
            )
            && is_memory(earlier)
        {
            return Err(Constraint(
                "release: no preceding load, store, atomic or fence can be moved after the release",
            ));
        }
    }
    // A release fence: no following fence-paired atomic can be moved before it.
    if earlier.kind == Kind::Fence
        && a.is_some_and(Ordering::releases)
        && later.kind.is_atomic()
        && later.kind != Kind::Fence
    {
        return Err(Constraint(
            "release fence: no following fence-paired atomic can be moved before the fence",
        ));
    }
    // An acquire fence: no preceding fence-paired atomic can be moved after it.
    if later.kind == Kind::Fence
        && b.is_some_and(Ordering::acquires)
        && earlier.kind.is_atomic()
        && earlier.kind != Kind::Fence
    {
        return Err(Constraint(
            "acquire fence: no preceding fence-paired atomic can be moved after the fence",
        ));
    }
    // seq_cst: sequentially consistent atomics and fences keep their order.
    if a == Some(Ordering::SeqCst)
        && b == Some(Ordering::SeqCst)
        && (earlier.kind == Kind::StoreAtomic
            || later.kind == Kind::LoadAtomic
            || is_rmw(earlier)
            || is_rmw(later)
            || earlier.kind == Kind::Fence
            || later.kind == Kind::Fence)
    {
        return Err(Constraint(
            "seq_cst: sequentially consistent atomics and fences cannot be reordered with each other",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(t: &str) -> Case {
        t.parse().unwrap()
    }

    #[test]
    fn acquire_blocks_following_accesses() {
        let acq = c("load_atomic;as=global;ord=acquire;scope=agent");
        let plain = c("load;as=global;flags=plain");
        assert!(may_move_before(&acq, &plain).is_err());
        // The other way round is allowed: an earlier plain load may sink below an acquire... but
        // here the question is whether the acquire may move above the plain load: it may.
        assert!(may_move_before(&plain, &acq).is_ok());
    }

    #[test]
    fn release_blocks_preceding_accesses() {
        let rel = c("store_atomic;as=global;ord=release;scope=agent");
        let plain = c("store;as=global;flags=plain");
        assert!(may_move_before(&plain, &rel).is_err());
        assert!(may_move_before(&rel, &plain).is_ok());
    }

    #[test]
    fn monotonic_and_unordered_have_no_constraints() {
        let m = c("atomicrmw;as=global;ord=monotonic;scope=agent;ret=ret;op=add");
        let u = c("load_atomic;as=global;ord=unordered;scope=agent");
        let p = c("store;as=local;flags=plain");
        for (x, y) in [(&m, &u), (&u, &m), (&m, &p), (&p, &m), (&u, &p)] {
            assert!(may_move_before(x, y).is_ok(), "{x} / {y}");
        }
    }

    #[test]
    fn seq_cst_store_then_load_keep_order() {
        let s = c("store_atomic;as=global;ord=seq_cst;scope=system");
        let l = c("load_atomic;as=global;ord=seq_cst;scope=system");
        assert!(may_move_before(&s, &l).is_err());
        // An acquire-only load after a seq_cst store is not pinned by the seq_cst rule, but the
        // store's release does not stop later instructions either.
        let la = c("load_atomic;as=global;ord=acquire;scope=system");
        assert!(may_move_before(&s, &la).is_ok());
    }

    #[test]
    fn fences_pin_their_paired_atomics() {
        let rel = c("fence;ord=release;scope=agent;mmra=none");
        let st = c("store_atomic;as=global;ord=monotonic;scope=agent");
        assert!(may_move_before(&rel, &st).is_err());
        let acq = c("fence;ord=acquire;scope=agent;mmra=none");
        let ld = c("load_atomic;as=global;ord=monotonic;scope=agent");
        assert!(may_move_before(&ld, &acq).is_err());
        let plain = c("load;as=global;flags=plain");
        assert!(may_move_before(&plain, &acq).is_ok());
    }

    #[test]
    fn cmpxchg_failure_acquire_counts_as_acquire() {
        let x = c("cmpxchg;as=global;ord=monotonic;ford=acquire;scope=agent;ret=ret");
        let p = c("load;as=global;flags=plain");
        assert!(may_move_before(&x, &p).is_err());
    }
}
