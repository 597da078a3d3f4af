use super::*;
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};

type D<V> = Dict<Box<[u8]>, V>;

fn bk(b: &[u8]) -> Box<[u8]> {
    b.into()
}

/// Structural invariants every public operation must preserve (for dicts
/// not built with `with_capacity`, which may legitimately start sparse).
fn check_invariants<V>(d: &D<V>) {
    let n = d.buckets.len();
    if n == 0 {
        assert!(d.entries.is_empty());
        return;
    }
    assert!(n.is_power_of_two() && n >= MIN_BUCKETS);
    assert!(
        d.entries.len() <= n,
        "over-full: {} in {n}",
        d.entries.len()
    );
    assert!(n == MIN_BUCKETS || d.entries.len() * 8 >= n, "not shrunk");
    let mut seen = vec![false; d.entries.len()];
    for (b, &head) in d.buckets.iter().enumerate() {
        let mut i = head;
        while i != NIL {
            let e = &d.entries[i as usize];
            assert!(!seen[i as usize], "entry linked twice");
            seen[i as usize] = true;
            assert_eq!(e.hash as usize & (n - 1), b);
            assert_eq!(e.hash, d.hash(&e.key));
            i = e.next;
        }
    }
    assert!(seen.iter().all(|&s| s), "entry not linked");
}

fn check_model(d: &D<u32>, model: &HashMap<Vec<u8>, u32>) {
    check_invariants(d);
    assert_eq!(d.len(), model.len());
    assert_eq!(d.is_empty(), model.is_empty());
    for (k, v) in model {
        assert_eq!(d.get(k), Some(v));
    }
    let got: HashMap<Vec<u8>, u32> = d.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
    assert_eq!(&got, model);
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Vec<u8>, u32),
    Remove(Vec<u8>),
    Get(Vec<u8>),
    GetMut(Vec<u8>, u32),
    GetOrInsert(Vec<u8>, u32),
    /// Keep entries whose value is not a multiple of the divisor, bumping
    /// the survivors so `retain`'s `&mut V` is exercised too.
    Retain(u32),
    Clear,
    /// Bulk ops over `r{i}` keys, to force several grows and shrinks.
    InsertRange(u16, u16),
    RemoveRange(u16, u16),
}

fn small_key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(0u8..3, 0..4)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (small_key(), any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
        3 => small_key().prop_map(Op::Remove),
        2 => small_key().prop_map(Op::Get),
        1 => (small_key(), any::<u32>()).prop_map(|(k, v)| Op::GetMut(k, v)),
        2 => (small_key(), any::<u32>()).prop_map(|(k, v)| Op::GetOrInsert(k, v)),
        1 => (1u32..5).prop_map(Op::Retain),
        1 => Just(Op::Clear),
        1 => (0u16..300, 0u16..300).prop_map(|(a, n)| Op::InsertRange(a, n)),
        1 => (0u16..300, 0u16..300).prop_map(|(a, n)| Op::RemoveRange(a, n)),
    ]
}

fn range_key(i: u16) -> Vec<u8> {
    format!("r{i}").into_bytes()
}

proptest! {
    #[test]
    fn model_matches_hashmap(ops in prop::collection::vec(op(), 0..150)) {
        let mut d: D<u32> = Dict::new();
        let mut model: HashMap<Vec<u8>, u32> = HashMap::new();
        for op in ops {
            match op {
                Op::Insert(k, v) => {
                    prop_assert_eq!(d.insert(bk(&k), v), model.insert(k, v));
                }
                Op::Remove(k) => {
                    let got = d.remove(&k).map(|(k, v)| (k.to_vec(), v));
                    prop_assert_eq!(got, model.remove_entry(&k));
                }
                Op::Get(k) => {
                    prop_assert_eq!(d.get(&k), model.get(&k));
                    prop_assert_eq!(d.contains_key(&k), model.contains_key(&k));
                    let kv = d.get_key_value(&k).map(|(k, v)| (k.to_vec(), *v));
                    prop_assert_eq!(kv, model.get_key_value(&k).map(|(k, v)| (k.clone(), *v)));
                }
                Op::GetMut(k, v) => {
                    let (a, b) = (d.get_mut(&k), model.get_mut(&k));
                    prop_assert_eq!(a.is_some(), b.is_some());
                    if let (Some(a), Some(b)) = (a, b) {
                        *a = v;
                        *b = v;
                    }
                }
                Op::GetOrInsert(k, v) => {
                    let expect_insert = !model.contains_key(&k);
                    let (slot, inserted) = d.get_or_insert_with(&k, || bk(&k), || v);
                    prop_assert_eq!(inserted, expect_insert);
                    let m = model.entry(k).or_insert(v);
                    prop_assert_eq!(*slot, *m);
                    *slot = slot.wrapping_add(1);
                    *m = m.wrapping_add(1);
                }
                Op::Retain(div) => {
                    let keep = |v: &mut u32| {
                        if v.is_multiple_of(div) {
                            false
                        } else {
                            *v = v.wrapping_add(1);
                            true
                        }
                    };
                    d.retain(|_, v| keep(v));
                    model.retain(|_, v| keep(v));
                }
                Op::Clear => {
                    d.clear();
                    model.clear();
                }
                Op::InsertRange(a, n) => {
                    for i in a..a.saturating_add(n) {
                        d.insert(bk(&range_key(i)), u32::from(i));
                        model.insert(range_key(i), u32::from(i));
                    }
                }
                Op::RemoveRange(a, n) => {
                    for i in a..a.saturating_add(n) {
                        d.remove(&range_key(i));
                        model.remove(&range_key(i));
                    }
                }
            }
            check_model(&d, &model);
        }
        let from_iter: HashMap<Vec<u8>, u32> =
            d.clone().into_iter().map(|(k, v)| (k.to_vec(), v)).collect();
        prop_assert_eq!(&from_iter, &model);
        for (_, v) in d.iter_mut() {
            *v = v.wrapping_add(1);
        }
        let drained: HashMap<Vec<u8>, u32> = d.drain().map(|(k, v)| (k.to_vec(), v)).collect();
        let bumped: HashMap<Vec<u8>, u32> =
            model.iter().map(|(k, v)| (k.clone(), v.wrapping_add(1))).collect();
        prop_assert_eq!(drained, bumped);
        check_model(&d, &HashMap::new());
        d.insert(bk(b"after-drain"), 1);
        check_invariants(&d);
    }
}

/// Mutation applied between two SCAN calls.
#[derive(Debug, Clone)]
enum Churn {
    Insert(usize),
    /// Delete this many per-mille of the deletable keys (big values make the
    /// table shrink).
    Delete(u16),
    None,
}

fn churn() -> impl Strategy<Value = Churn> {
    prop_oneof![
        3 => (1usize..800).prop_map(Churn::Insert),
        3 => (0u16..=1000).prop_map(Churn::Delete),
        1 => Just(Churn::None),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    /// SCAN's contract: every key present from the first call to the last is
    /// returned at least once, however the table grows or shrinks between
    /// calls, and the scan ends after a bounded number of calls.
    #[test]
    fn scan_returns_every_key_present_throughout(
        initial in 0usize..1500,
        stable_every in 1usize..40,
        counts in prop::collection::vec(0usize..25, 1..8),
        churns in prop::collection::vec(churn(), 0..60),
        seed in any::<u64>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut d: D<()> = Dict::new();
        let mut stable = Vec::new();
        let mut deletable = Vec::new();
        for i in 0..initial {
            let k = format!("i{i}").into_bytes();
            d.insert(bk(&k), ());
            if i % stable_every == 0 { stable.push(k) } else { deletable.push(k) }
        }
        let mut fresh = 0usize;
        let mut returned: HashSet<Vec<u8>> = HashSet::new();
        let mut max_buckets = d.buckets.len();
        let mut cursor = 0u64;
        let mut calls = 0usize;
        loop {
            let count = counts[calls % counts.len()];
            cursor = d.scan(cursor, count, |k, _| { returned.insert(k.to_vec()); });
            calls += 1;
            if cursor == 0 {
                break;
            }
            // Progress argument: each call advances the reversed cursor by at
            // least one bucket of the largest table seen, and churn stops
            // after `churns.len()` calls.
            prop_assert!(calls <= churns.len() + max_buckets + 1, "scan does not terminate");
            match churns.get(calls - 1).cloned().unwrap_or(Churn::None) {
                Churn::Insert(n) => {
                    for _ in 0..n {
                        let k = format!("n{fresh}").into_bytes();
                        fresh += 1;
                        d.insert(bk(&k), ());
                        deletable.push(k);
                    }
                }
                Churn::Delete(permille) => {
                    let n = deletable.len() * usize::from(permille) / 1000;
                    for _ in 0..n {
                        let k = deletable.swap_remove(rng.random_range(0..deletable.len()));
                        prop_assert!(d.remove(&k).is_some());
                    }
                }
                Churn::None => {}
            }
            max_buckets = max_buckets.max(d.buckets.len());
        }
        for k in &stable {
            prop_assert!(returned.contains(k), "stable key {:?} missed", String::from_utf8_lossy(k));
        }
        check_invariants(&d);
    }
}

#[test]
fn scan_of_unchanged_dict_returns_each_key_once() {
    for n in [0usize, 1, 3, 4, 5, 100, 1000] {
        let mut d: D<usize> = Dict::new();
        for i in 0..n {
            d.insert(bk(&i.to_le_bytes()), i);
        }
        let mut seen = vec![0u32; n];
        let mut cursor = 0;
        let mut calls = 0;
        loop {
            cursor = d.scan(cursor, 7, |_, &v| seen[v] += 1);
            calls += 1;
            if cursor == 0 {
                break;
            }
            assert!(calls <= d.buckets.len());
        }
        assert!(seen.iter().all(|&c| c == 1), "n={n}");
    }
}

#[test]
fn scan_accepts_any_cursor() {
    let mut d: D<()> = Dict::new();
    for i in 0..100u32 {
        d.insert(bk(&i.to_le_bytes()), ());
    }
    for start in [u64::MAX, 1 << 63, 0xdead_beef_dead_beef, 12345, 1] {
        let mut cursor = start;
        for _ in 0..=d.buckets.len() {
            cursor = d.scan(cursor, 0, |_, _| {});
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(cursor, 0, "start {start:#x}");
    }
    assert_eq!(D::<()>::new().scan(42, 10, |_, _| panic!()), 0);
}

#[test]
fn random_and_sample_return_present_elements_and_cover_all() {
    let mut rng = StdRng::seed_from_u64(7);
    let mut d: D<u32> = Dict::new();
    assert!(d.random(&mut rng).is_none());
    d.sample(&mut rng, 5, |_, _| panic!("empty dict sampled"));
    for i in 0..20u32 {
        d.insert(bk(&i.to_le_bytes()), i);
    }
    // Removing leaves holes in the chains and moves entries around.
    for i in (0..20u32).step_by(2) {
        d.remove(&i.to_le_bytes());
    }
    let present: HashSet<u32> = d.iter().map(|(_, &v)| v).collect();
    assert_eq!(present.len(), 10);

    let mut hits = HashSet::new();
    for _ in 0..2000 {
        let (k, v) = d.random(&mut rng).unwrap();
        assert_eq!(k.as_ref(), v.to_le_bytes());
        assert!(present.contains(v));
        hits.insert(*v);
    }
    assert_eq!(hits, present);

    let mut hits = HashSet::new();
    for _ in 0..500 {
        let mut got = Vec::new();
        d.sample(&mut rng, 3, |_, &v| got.push(v));
        assert_eq!(got.len(), 3);
        let distinct: HashSet<u32> = got.iter().copied().collect();
        assert_eq!(distinct.len(), 3, "sample repeated an element");
        assert!(distinct.is_subset(&present));
        hits.extend(distinct);
    }
    assert_eq!(hits, present);

    let mut all = Vec::new();
    d.sample(&mut rng, 100, |_, &v| all.push(v));
    all.sort_unstable();
    let mut expect: Vec<u32> = present.into_iter().collect();
    expect.sort_unstable();
    assert_eq!(all, expect);
}

#[test]
fn insert_keeps_existing_key_and_get_or_insert_builds_key_only_on_miss() {
    let mut d: D<u32> = Dict::new();
    let first = bk(b"k");
    let first_ptr = first.as_ptr();
    assert_eq!(d.insert(first, 1), None);
    assert_eq!(d.insert(bk(b"k"), 2), Some(1));
    let (k, v) = d.get_key_value(b"k").unwrap();
    assert_eq!((k.as_ptr(), *v), (first_ptr, 2));

    let mut built = 0;
    let (v, inserted) = d.get_or_insert_with(
        b"k",
        || {
            built += 1;
            bk(b"k")
        },
        || 9,
    );
    assert_eq!((*v, inserted), (2, false));
    let (v, inserted) = d.get_or_insert_with(
        b"x",
        || {
            built += 1;
            bk(b"x")
        },
        || 9,
    );
    assert_eq!((*v, inserted), (9, true));
    assert_eq!(built, 1);
}

#[test]
fn panicking_retain_leaves_a_consistent_dict() {
    let mut d: D<u32> = Dict::new();
    for i in 0..200u32 {
        d.insert(bk(&i.to_le_bytes()), i);
    }
    let mut calls = 0;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        d.retain(|_, v| {
            calls += 1;
            assert!(calls < 150, "boom");
            !v.is_multiple_of(3)
        });
    }));
    assert!(result.is_err());
    check_invariants(&d);
    for (k, v) in d.iter() {
        assert_eq!(d.get(k), Some(v));
    }
}

#[test]
fn shrinks_and_releases_memory_after_mass_delete() {
    let mut d: D<()> = Dict::new();
    for i in 0..10_000u32 {
        d.insert(bk(&i.to_le_bytes()), ());
    }
    let big = d.mem_usage();
    for i in 10..10_000u32 {
        d.remove(&i.to_le_bytes());
    }
    check_invariants(&d);
    assert_eq!(d.len(), 10);
    // Hysteresis: shrunk as far as the 1/8 fill rule asks, no further.
    assert!(d.buckets.len() <= 64);
    assert!(d.mem_usage() * 100 < big, "{} vs {big}", d.mem_usage());
    d.clear();
    assert_eq!(d.mem_usage(), 0);
}

#[test]
fn with_capacity_does_not_resize_until_full() {
    let mut d: D<()> = Dict::with_capacity(100);
    let (buckets, mem) = (d.buckets.len(), d.mem_usage());
    for i in 0..100u32 {
        d.insert(bk(&i.to_le_bytes()), ());
    }
    assert_eq!((d.buckets.len(), d.mem_usage()), (buckets, mem));
    assert_eq!(D::<()>::with_capacity(0).mem_usage(), 0);
}

#[cfg(target_pointer_width = "64")]
#[test]
fn entry_is_24_bytes_for_boxed_key_and_unit_value() {
    // The stored hash must ride in the padding next to `next`; if this grows,
    // every small-set member pays for it.
    assert_eq!(std::mem::size_of::<Entry<Box<[u8]>, ()>>(), 24);
    assert_eq!(std::mem::size_of::<D<()>>(), 48);
}

/// A hasher whose tables are held at their size while `HELD` says so
/// (as the keyspace's are under `DEBUG DICT-RESIZING 0`).
#[derive(Default)]
struct Holdable;

static HELD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl std::hash::BuildHasher for Holdable {
    type Hasher = std::collections::hash_map::DefaultHasher;
    fn build_hasher(&self) -> Self::Hasher {
        std::collections::hash_map::DefaultHasher::new()
    }
}

impl Resizing for Holdable {
    fn resize_allowed(&self) -> bool {
        !HELD.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[test]
fn a_held_table_keeps_its_size_until_let_go() {
    use std::sync::atomic::Ordering::Relaxed;
    let mut d: Dict<Vec<u8>, u32, Holdable> = Dict::default();
    for i in 0..128u32 {
        d.insert(i.to_string().into_bytes(), i);
    }
    assert_eq!(d.stats(false).size, 128);
    HELD.store(true, Relaxed);
    for i in 0..123u32 {
        d.remove(i.to_string().as_bytes());
    }
    assert_eq!(d.stats(false).size, 128, "held: no shrink");
    for i in 1000..1300u32 {
        d.insert(i.to_string().into_bytes(), i);
    }
    assert_eq!(d.stats(false).size, 128, "held: no growth, chains grow");
    for i in 1000..1300u32 {
        assert_eq!(d.get(i.to_string().as_bytes()), Some(&i));
    }
    d.resize_if_needed();
    assert_eq!(d.stats(false).size, 128, "still held");
    HELD.store(false, Relaxed);
    d.resize_if_needed();
    assert_eq!(d.stats(false).size, 512);
    for i in 1000..1300u32 {
        d.remove(i.to_string().as_bytes());
    }
    d.resize_if_needed();
    assert_eq!(d.stats(false).size, 8);
    for i in 123..128u32 {
        assert_eq!(d.get(i.to_string().as_bytes()), Some(&i));
    }
}
