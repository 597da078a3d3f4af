//! Model-based and edge-case tests for [`ZSet`].
//!
//! The model is a plain `Vec` kept sorted by (score, member) with the same
//! ZADD rules written the obvious way; every query is compared against it
//! after every step, and `check_invariants` validates spans, ordering, node
//! shape and index/list agreement. Limits and node capacity are tiny so that
//! compact<->skiplist conversion and node split/merge happen constantly.

use super::skiplist::DEFAULT_NODE_CAP;
use super::*;
use proptest::prelude::*;
use rand::SeedableRng;

#[derive(Clone, Debug, Default)]
struct Model {
    v: Vec<(Vec<u8>, f64)>,
    compact: bool,
}

fn key_lt(a: &(Vec<u8>, f64), b: &(Vec<u8>, f64)) -> std::cmp::Ordering {
    a.1.partial_cmp(&b.1)
        .unwrap_or(std::cmp::Ordering::Equal)
        .then_with(|| a.0.cmp(&b.0))
}

impl Model {
    fn new() -> Self {
        Model {
            v: Vec::new(),
            compact: true,
        }
    }
    fn pos(&self, m: &[u8]) -> Option<usize> {
        self.v.iter().position(|(x, _)| x == m)
    }
    fn score(&self, m: &[u8]) -> Option<f64> {
        self.pos(m).map(|i| self.v[i].1)
    }
    fn put(&mut self, m: &[u8], s: f64) {
        if let Some(i) = self.pos(m) {
            self.v.remove(i);
        }
        self.v.push((m.to_vec(), s));
        self.v.sort_by(key_lt);
    }
    fn add(
        &mut self,
        m: &[u8],
        score: f64,
        f: AddFlags,
        l: Limits,
    ) -> Result<AddOutcome, NanError> {
        match self.score(m) {
            Some(cur) => {
                if f.nx {
                    return Ok(AddOutcome::NotPerformed);
                }
                let new = if f.incr { score + cur } else { score };
                if new.is_nan() {
                    return Err(NanError);
                }
                if (f.lt && new >= cur) || (f.gt && new <= cur) {
                    return Ok(AddOutcome::NotPerformed);
                }
                if new == cur {
                    return Ok(AddOutcome::Unchanged { score: cur });
                }
                self.put(m, new);
                Ok(AddOutcome::Updated {
                    old: cur,
                    score: new,
                })
            }
            None => {
                if f.xx {
                    return Ok(AddOutcome::NotPerformed);
                }
                if self.compact && (self.v.len() + 1 > l.max_entries || m.len() > l.max_value) {
                    self.compact = false;
                }
                self.put(m, score);
                Ok(AddOutcome::Added { score })
            }
        }
    }
    fn score_span(&self, r: &ScoreRange) -> (usize, usize) {
        let lo = self.v.iter().filter(|e| r.below_min(e.1)).count();
        let hi = self.v.iter().filter(|e| r.not_above_max(e.1)).count();
        (lo, hi.max(lo))
    }
    fn lex_span(&self, r: &LexRange) -> (usize, usize) {
        let lo = self
            .v
            .iter()
            .filter(|e| r.below_min(e.0[..].into()))
            .count();
        let hi = self
            .v
            .iter()
            .filter(|e| r.not_above_max(e.0[..].into()))
            .count();
        (lo, hi.max(lo))
    }
    fn window(
        &self,
        lo: usize,
        hi: usize,
        rev: bool,
        off: usize,
        lim: Option<usize>,
    ) -> Vec<(Vec<u8>, f64)> {
        let mut v: Vec<_> = self.v[lo..hi].to_vec();
        if rev {
            v.reverse();
        }
        v.into_iter()
            .skip(off)
            .take(lim.unwrap_or(usize::MAX))
            .collect()
    }
}

fn members() -> Vec<Vec<u8>> {
    (0..24)
        .map(|i| {
            if i < 20 {
                format!("m{i:02}").into_bytes()
            } else {
                format!("long-member-{i}-xxxxxxxxxxxxxxxxxxxxxxxx").into_bytes()
            }
        })
        .collect()
}

#[derive(Clone, Debug)]
enum Op {
    Add { m: usize, s: f64, f: AddFlags },
    Remove { m: usize },
    RemScore(ScoreRange),
    RemRank { start: usize, end: usize },
    RemLex(LexRange),
    Pop { max: bool, count: usize },
    ToCompact,
}

fn score_strat() -> impl Strategy<Value = f64> {
    prop_oneof![
        (0i32..12).prop_map(f64::from),
        Just(f64::NEG_INFINITY),
        Just(f64::INFINITY),
        Just(-2.5),
        Just(1.5),
        Just(1e17),
        // Integers far apart (node score offsets overflow u32) and below 0.
        Just(5e9),
        Just(-3.0),
    ]
}

fn bound_strat() -> impl Strategy<Value = ScoreBound> {
    (score_strat(), any::<bool>()).prop_map(|(v, ex)| {
        if ex {
            ScoreBound::Exclusive(v)
        } else {
            ScoreBound::Inclusive(v)
        }
    })
}

fn range_strat() -> impl Strategy<Value = ScoreRange> {
    (bound_strat(), bound_strat()).prop_map(|(min, max)| ScoreRange { min, max })
}

fn lex_bound_strat() -> impl Strategy<Value = LexBound> {
    prop_oneof![
        Just(LexBound::NegInf),
        Just(LexBound::PosInf),
        (0usize..24).prop_map(|i| LexBound::Inclusive(members()[i].clone())),
        (0usize..24).prop_map(|i| LexBound::Exclusive(members()[i].clone())),
        Just(LexBound::Inclusive(b"m1".to_vec())),
        Just(LexBound::Exclusive(Vec::new())),
    ]
}

fn lex_range_strat() -> impl Strategy<Value = LexRange> {
    (lex_bound_strat(), lex_bound_strat()).prop_map(|(min, max)| LexRange { min, max })
}

fn flags_strat() -> impl Strategy<Value = AddFlags> {
    (0u8..32).prop_map(|b| AddFlags {
        nx: b & 1 != 0 && b & 2 == 0,
        xx: b & 2 != 0,
        gt: b & 4 != 0,
        lt: b & 8 != 0 && b & 4 == 0,
        incr: b & 16 != 0,
    })
}

fn op_strat() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0usize..24, score_strat(), flags_strat()).prop_map(|(m, s, f)| Op::Add { m, s, f }),
        3 => (0usize..24).prop_map(|m| Op::Remove { m }),
        1 => range_strat().prop_map(Op::RemScore),
        1 => (0usize..26, 0usize..26).prop_map(|(start, end)| Op::RemRank { start, end }),
        1 => lex_range_strat().prop_map(Op::RemLex),
        1 => (any::<bool>(), 0usize..5).prop_map(|(max, count)| Op::Pop { max, count }),
        1 => Just(Op::ToCompact),
    ]
}

#[derive(Clone, Debug)]
struct Queries {
    scores: Vec<(ScoreRange, usize, Option<usize>)>,
    lex: Vec<(LexRange, usize, Option<usize>)>,
    ranks: Vec<(usize, usize)>,
}

fn queries_strat() -> impl Strategy<Value = Queries> {
    (
        prop::collection::vec((range_strat(), 0usize..4, prop::option::of(0usize..5)), 4),
        prop::collection::vec(
            (lex_range_strat(), 0usize..4, prop::option::of(0usize..5)),
            3,
        ),
        prop::collection::vec((0usize..26, 0usize..26), 3),
    )
        .prop_map(|(mut scores, lex, mut ranks)| {
            scores.push((ScoreRange::all(), 0, None));
            ranks.push((0, usize::MAX));
            Queries { scores, lex, ranks }
        })
}

fn owned<'a>(it: impl Iterator<Item = (Member<'a>, f64)>) -> Vec<(Vec<u8>, f64)> {
    it.map(|(m, s)| (m.to_vec(), s)).collect()
}

/// A range's elements both ways a reply may take them, which must agree:
/// one by one, and through [`RangeIter::each`].
fn owned_range(it: RangeIter<'_>) -> Result<Vec<(Vec<u8>, f64)>, TestCaseError> {
    let mut walked = Vec::new();
    it.clone().each(|m, s| walked.push((m.to_vec(), s)));
    let stepped = owned(it);
    prop_assert_eq!(&walked, &stepped);
    Ok(stepped)
}

fn check(z: &ZSet, model: &Model, q: &Queries, lex_mode: bool) -> Result<(), TestCaseError> {
    if let Err(e) = z.check_invariants() {
        return Err(TestCaseError::fail(e));
    }
    prop_assert_eq!(z.len(), model.v.len());
    prop_assert_eq!(z.is_empty(), model.v.is_empty());
    prop_assert_eq!(
        z.encoding_name(),
        if model.compact {
            "listpack"
        } else {
            "skiplist"
        }
    );
    prop_assert_eq!(owned(z.iter()), model.v.clone());
    prop_assert_eq!(z.min_score(), model.v.first().map(|e| e.1));
    let n = model.v.len();
    for m in members() {
        prop_assert_eq!(z.score(&m), model.score(&m));
        let want = model.pos(&m).map(|i| (i, model.v[i].1));
        prop_assert_eq!(z.rank(&m, false), want);
        prop_assert_eq!(z.rank(&m, true), want.map(|(i, s)| (n - 1 - i, s)));
    }
    for i in 0..=n {
        prop_assert_eq!(
            z.get_by_rank(i).map(|(m, s)| (m.to_vec(), s)),
            model.v.get(i).cloned()
        );
    }
    for (r, off, lim) in &q.scores {
        let (lo, hi) = model.score_span(r);
        prop_assert_eq!(z.count_in_range(r), hi - lo);
        for rev in [false, true] {
            prop_assert_eq!(
                owned_range(z.range_by_score(r, rev, *off, *lim))?,
                model.window(lo, hi, rev, *off, *lim)
            );
        }
    }
    if lex_mode {
        for (r, off, lim) in &q.lex {
            let (lo, hi) = model.lex_span(r);
            prop_assert_eq!(z.lex_count(r), hi - lo);
            for rev in [false, true] {
                prop_assert_eq!(
                    owned_range(z.range_by_lex(r, rev, *off, *lim))?,
                    model.window(lo, hi, rev, *off, *lim)
                );
            }
        }
    }
    for &(a, b) in &q.ranks {
        let fwd: Vec<_> = if a < n && a <= b {
            model.v[a..=b.min(n - 1)].to_vec()
        } else {
            Vec::new()
        };
        prop_assert_eq!(owned_range(z.range_by_rank(a, b, false))?, fwd);
        let mut rv = model.v.clone();
        rv.reverse();
        let rev: Vec<_> = if a < n && a <= b {
            rv[a..=b.min(n - 1)].to_vec()
        } else {
            Vec::new()
        };
        prop_assert_eq!(owned_range(z.range_by_rank(a, b, true))?, rev);
    }
    // A scan in small steps must cover everything.
    let mut seen = Vec::new();
    let mut cursor = 0;
    for _ in 0..1000 {
        cursor = z.scan(cursor, 2, |m, s| seen.push((m.to_vec(), s)));
        if cursor == 0 {
            break;
        }
    }
    prop_assert_eq!(cursor, 0);
    seen.sort_by(key_lt);
    seen.dedup();
    prop_assert_eq!(seen, model.v.clone());
    Ok(())
}

fn run_ops(
    ops: Vec<Op>,
    q: Queries,
    limits: Limits,
    node_cap: usize,
    lex_mode: bool,
    frag_mask: u32,
) -> Result<(), TestCaseError> {
    let ms = members();
    let mut z = ZSet::with_node_capacity(node_cap).with_frag_mask(frag_mask);
    let mut model = Model::new();
    for op in ops {
        match op {
            Op::Add { m, s, f } => {
                let s = if lex_mode { 0.0 } else { s };
                let got = z.add(&ms[m], nn(s), f, limits);
                let want = model.add(&ms[m], s, f, limits);
                prop_assert_eq!(got, want, "add {:?}", (m, s, f));
            }
            Op::Remove { m } => {
                let want = model.score(&ms[m]);
                if let Some(i) = model.pos(&ms[m]) {
                    model.v.remove(i);
                }
                prop_assert_eq!(z.remove(&ms[m]), want);
            }
            Op::RemScore(r) => {
                let (lo, hi) = model.score_span(&r);
                let want: Vec<_> = model.v.drain(lo..hi).collect();
                let mut got = Vec::new();
                let n = z.remove_range_by_score(&r, |m, s| got.push((m.to_vec(), s)));
                prop_assert_eq!(n, want.len());
                prop_assert_eq!(got, want);
            }
            Op::RemRank { start, end } => {
                let len = model.v.len();
                let want: Vec<_> = if start < len && start <= end {
                    model.v.drain(start..=end.min(len - 1)).collect()
                } else {
                    Vec::new()
                };
                let mut got = Vec::new();
                let n = z.remove_range_by_rank(start, end, |m, s| got.push((m.to_vec(), s)));
                prop_assert_eq!(n, want.len());
                prop_assert_eq!(got, want);
            }
            Op::RemLex(r) => {
                if lex_mode {
                    let (lo, hi) = model.lex_span(&r);
                    let want: Vec<_> = model.v.drain(lo..hi).collect();
                    let mut got = Vec::new();
                    let n = z.remove_range_by_lex(&r, |m, s| got.push((m.to_vec(), s)));
                    prop_assert_eq!(n, want.len());
                    prop_assert_eq!(got, want);
                }
            }
            Op::Pop { max, count } => {
                let k = count.min(model.v.len());
                let mut want: Vec<_> = if max {
                    let l = model.v.len();
                    model.v.drain(l - k..).collect()
                } else {
                    model.v.drain(..k).collect()
                };
                if max {
                    want.reverse();
                }
                prop_assert_eq!(z.pop(max, count), want);
            }
            Op::ToCompact => {
                z.maybe_convert_to_compact(limits);
                if !model.compact
                    && model.v.len() <= limits.max_entries
                    && model.v.iter().all(|(m, _)| m.len() <= limits.max_value)
                {
                    model.compact = true;
                }
            }
        }
        check(&z, &model, &q, lex_mode)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn model_based(
        ops in prop::collection::vec(op_strat(), 1..120),
        q in queries_strat(),
        max_entries in 0usize..14,
        max_value in 3usize..30,
        node_cap in 2usize..7,
        lex_mode in prop::bool::weighted(0.25),
        frag_mask in prop_oneof![Just(u32::MAX), Just(3u32), Just(0u32)],
    ) {
        run_ops(ops, q, Limits { max_entries, max_value }, node_cap, lex_mode, frag_mask)?;
    }
}

fn lim() -> Limits {
    Limits::default()
}

/// A test score; tests never build NaN.
fn nn(s: f64) -> NotNan<f64> {
    NotNan::new(s).expect("test scores are not NaN")
}

fn add(z: &mut ZSet, m: &str, s: f64) {
    z.add(m.as_bytes(), nn(s), AddFlags::default(), lim())
        .unwrap();
}

fn names<'a>(it: impl Iterator<Item = (Member<'a>, f64)>) -> Vec<String> {
    it.map(|(m, _)| String::from_utf8_lossy(&m.to_cow()).into_owned())
        .collect()
}

/// Same checks on both encodings.
fn both(build: impl Fn(&mut ZSet)) -> Vec<ZSet> {
    let mut a = ZSet::new();
    build(&mut a);
    let mut b = ZSet::with_capacity_hint(1000, 0, lim());
    build(&mut b);
    assert_eq!(a.encoding_name(), "listpack");
    assert_eq!(b.encoding_name(), "skiplist");
    vec![a, b]
}

#[test]
fn equal_scores_order_by_member() {
    for z in both(|z| {
        for m in ["d", "b", "a", "c"] {
            add(z, m, 1.0);
        }
        add(z, "z", 0.5);
    }) {
        assert_eq!(names(z.iter()), ["z", "a", "b", "c", "d"]);
        assert_eq!(z.rank(b"c", false), Some((3, 1.0)));
        assert_eq!(z.rank(b"c", true), Some((1, 1.0)));
    }
}

#[test]
fn infinities_and_exclusive_bounds() {
    for z in both(|z| {
        add(z, "lo", f64::NEG_INFINITY);
        add(z, "one", 1.0);
        add(z, "two", 2.0);
        add(z, "hi", f64::INFINITY);
    }) {
        let r = |min, max| ScoreRange { min, max };
        use ScoreBound::*;
        assert_eq!(z.count_in_range(&ScoreRange::all()), 4);
        assert_eq!(
            z.count_in_range(&r(Exclusive(f64::NEG_INFINITY), Exclusive(f64::INFINITY))),
            2
        );
        // A window's reads and trim: one end open.
        let (ninf, inf) = (f64::NEG_INFINITY, f64::INFINITY);
        assert_eq!(z.count_in_range(&r(Inclusive(2.0), Inclusive(inf))), 2);
        assert_eq!(z.count_in_range(&r(Inclusive(ninf), Exclusive(2.0))), 2);
        assert_eq!(z.count_in_range(&r(Inclusive(inf), Inclusive(inf))), 1);
        assert_eq!(z.count_in_range(&r(Inclusive(ninf), Inclusive(ninf))), 1);
        assert_eq!(
            names(z.range_by_score(&r(Exclusive(1.0), Inclusive(inf)), false, 0, Some(1))),
            ["two"]
        );
        assert_eq!(
            names(z.range_by_score(&r(Inclusive(ninf), Exclusive(2.0)), true, 0, None)),
            ["one", "lo"]
        );
        let mut trimmed = z.clone();
        assert_eq!(
            trimmed.remove_range_by_score(&r(Inclusive(ninf), Exclusive(2.0)), |_, _| {}),
            2
        );
        assert_eq!(names(trimmed.range_by_rank(0, 10, false)), ["two", "hi"]);
        assert_eq!(z.count_in_range(&r(Exclusive(1.0), Inclusive(2.0))), 1);
        assert_eq!(z.count_in_range(&r(Exclusive(1.0), Exclusive(2.0))), 0);
        assert_eq!(z.count_in_range(&r(Inclusive(2.0), Inclusive(1.0))), 0);
        assert_eq!(
            names(z.range_by_score(&r(Inclusive(1.0), Inclusive(f64::INFINITY)), true, 0, None)),
            ["hi", "two", "one"]
        );
        assert_eq!(
            names(z.range_by_score(&ScoreRange::all(), false, 10, None)),
            Vec::<String>::new()
        );
        assert_eq!(
            names(z.range_by_score(&ScoreRange::all(), true, 1, Some(2))),
            ["two", "one"]
        );
        assert_eq!(names(z.range_by_rank(2, 100, false)), ["two", "hi"]);
        assert_eq!(names(z.range_by_rank(0, 0, true)), ["hi"]);
        assert_eq!(names(z.range_by_rank(4, 10, false)), Vec::<String>::new());
        assert_eq!(names(z.range_by_rank(3, 1, false)), Vec::<String>::new());
        assert_eq!(z.min_score(), Some(f64::NEG_INFINITY));
    }
}

#[test]
fn lex_ranges() {
    for z in both(|z| {
        for m in ["a", "b", "c", "d", "e"] {
            add(z, m, 0.0);
        }
    }) {
        let r = |min, max| LexRange { min, max };
        use LexBound::*;
        assert_eq!(z.lex_count(&r(NegInf, PosInf)), 5);
        assert_eq!(
            z.lex_count(&r(Inclusive(b"b".to_vec()), Exclusive(b"d".to_vec()))),
            2
        );
        assert_eq!(z.lex_count(&r(PosInf, NegInf)), 0);
        assert_eq!(
            names(z.range_by_lex(&r(Exclusive(b"a".to_vec()), PosInf), true, 1, Some(2))),
            ["d", "c"]
        );
        let mut z = z;
        let mut gone = Vec::new();
        let n = z.remove_range_by_lex(&r(NegInf, Inclusive(b"b".to_vec())), |m, _| {
            gone.push(m.to_vec())
        });
        assert_eq!((n, gone), (2, vec![b"a".to_vec(), b"b".to_vec()]));
    }
}

#[test]
fn add_flags_and_nan() {
    let mut z = ZSet::new();
    let f = |nx, xx, gt, lt, incr| AddFlags {
        nx,
        xx,
        gt,
        lt,
        incr,
    };
    assert_eq!(
        z.add(b"a", nn(1.0), f(false, true, false, false, false), lim()),
        Ok(AddOutcome::NotPerformed)
    );
    assert_eq!(
        z.add(b"a", nn(1.0), f(true, false, false, false, false), lim()),
        Ok(AddOutcome::Added { score: 1.0 })
    );
    assert_eq!(
        z.add(b"a", nn(5.0), f(true, false, false, false, false), lim()),
        Ok(AddOutcome::NotPerformed)
    );
    assert_eq!(
        z.add(b"a", nn(0.5), f(false, false, true, false, false), lim()),
        Ok(AddOutcome::NotPerformed)
    );
    assert_eq!(
        z.add(b"a", nn(2.0), f(false, false, true, false, true), lim()),
        Ok(AddOutcome::Updated {
            old: 1.0,
            score: 3.0
        })
    );
    assert_eq!(
        z.add(b"a", nn(3.0), AddFlags::default(), lim()),
        Ok(AddOutcome::Unchanged { score: 3.0 })
    );
    add(&mut z, "i", f64::INFINITY);
    assert_eq!(
        z.add(
            b"i",
            nn(f64::NEG_INFINITY),
            f(false, false, false, false, true),
            lim()
        ),
        Err(NanError)
    );
    assert_eq!(z.score(b"i"), Some(f64::INFINITY));
}

#[test]
fn negative_zero_like_redis() {
    // Listpack normalises -0 to 0; the skiplist keeps the sign.
    let [a, b]: [ZSet; 2] = both(|z| add(z, "a", -0.0)).try_into().ok().unwrap();
    assert!(a.score(b"a").unwrap().is_sign_positive());
    assert!(b.score(b"a").unwrap().is_sign_negative());
    let mut b = b;
    assert_eq!(
        b.add(b"a", nn(0.0), AddFlags::default(), lim()),
        Ok(AddOutcome::Unchanged { score: -0.0 })
    );
    assert_eq!(
        b.count_in_range(&ScoreRange {
            min: ScoreBound::Inclusive(0.0),
            max: ScoreBound::Inclusive(0.0)
        }),
        1
    );
}

#[test]
fn conversion_thresholds() {
    let l = Limits {
        max_entries: 3,
        max_value: 4,
    };
    let mut z = ZSet::new();
    for m in ["a", "b", "c"] {
        z.add(m.as_bytes(), nn(1.0), AddFlags::default(), l)
            .unwrap();
    }
    assert_eq!(z.encoding_name(), "listpack");
    z.add(b"d", nn(1.0), AddFlags::default(), l).unwrap();
    assert_eq!(z.encoding_name(), "skiplist");
    z.remove(b"d");
    assert_eq!(z.encoding_name(), "skiplist");
    z.maybe_convert_to_compact(l);
    assert_eq!(z.encoding_name(), "listpack");
    z.add(b"toolong", nn(1.0), AddFlags::default(), l).unwrap();
    assert_eq!(z.encoding_name(), "skiplist");
    assert_eq!(
        ZSet::with_capacity_hint(3, 4, l).encoding_name(),
        "listpack"
    );
    assert_eq!(
        ZSet::with_capacity_hint(4, 4, l).encoding_name(),
        "skiplist"
    );
    assert_eq!(
        ZSet::with_capacity_hint(1, 5, l).encoding_name(),
        "skiplist"
    );
    let mut z = ZSet::new();
    z.add(
        b"a",
        nn(1.0),
        AddFlags::default(),
        Limits {
            max_entries: 0,
            max_value: 64,
        },
    )
    .unwrap();
    assert_eq!(z.encoding_name(), "skiplist");
}

#[test]
fn random_members_semantics() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for z in both(|z| {
        for i in 0..50 {
            add(z, &format!("m{i}"), f64::from(i));
        }
    }) {
        let mut got = Vec::new();
        z.random_members(&mut rng, 10, |m, _| got.push(m.to_vec()));
        let mut d = got.clone();
        d.sort();
        d.dedup();
        assert_eq!((got.len(), d.len()), (10, 10));
        let mut all = 0;
        z.random_members(&mut rng, 100, |_, _| all += 1);
        assert_eq!(all, 50);
        let mut rep = 0;
        z.random_members(&mut rng, -200, |m, s| {
            assert_eq!(z.score(&m.to_cow()), Some(s));
            rep += 1
        });
        assert_eq!(rep, 200);
    }
}

#[test]
fn large_random_against_model() {
    // Default node capacity at a size where the skiplist has many levels.
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    use rand::Rng;
    // A 12-bit fragment space gives the index ~2 members per fragment.
    let mut z = ZSet::new().with_frag_mask(0xfff);
    let mut model: std::collections::BTreeMap<Vec<u8>, f64> = Default::default();
    for step in 0..60_000u32 {
        let m = format!("member:{}", rng.random_range(0..8000)).into_bytes();
        match rng.random_range(0..10) {
            0..=5 => {
                let s = f64::from(rng.random_range(0..3000));
                z.add(&m, nn(s), AddFlags::default(), lim()).unwrap();
                model.insert(m, s);
            }
            6 | 7 => assert_eq!(z.remove(&m), model.remove(&m)),
            8 => {
                let a = f64::from(rng.random_range(0..3000));
                let r = ScoreRange {
                    min: ScoreBound::Inclusive(a),
                    max: ScoreBound::Exclusive(a + 3.0),
                };
                let n = z.remove_range_by_score(&r, |m, s| {
                    assert_eq!(model.remove(&*m.to_cow()), Some(s))
                });
                assert!(n < 100);
            }
            _ => {
                if let Some(s) = model.get(&m) {
                    let rank = model.values().filter(|&&v| v < *s).count();
                    let (r, got) = z.rank(&m, false).unwrap();
                    assert_eq!(got, *s);
                    assert!(r >= rank);
                }
            }
        }
        if step % 5000 == 0 {
            z.check_invariants().unwrap();
        }
    }
    z.check_invariants().unwrap();
    let mut want: Vec<_> = model.into_iter().collect();
    want.sort_by(key_lt);
    assert_eq!(owned(z.iter()), want);
}

#[test]
fn windowed_steady_state() {
    let mut z = ZSet::new();
    let w = 10_000.0;
    let mut expired = 0usize;
    for i in 0..100_000u64 {
        let now = 1.7e12 + i as f64;
        let m = format!("m:{:010}", i % 30_000);
        z.add(m.as_bytes(), nn(now), AddFlags::default(), lim())
            .unwrap();
        let r = ScoreRange {
            min: ScoreBound::Inclusive(f64::NEG_INFINITY),
            max: ScoreBound::Exclusive(now - w),
        };
        expired += z.remove_range_by_score(&r, |_, s| assert!(s < now - w));
        if i % 20_000 == 0 {
            z.check_invariants().unwrap();
        }
    }
    // The window keeps scores in [now - w, now].
    assert_eq!(z.len(), 10_001);
    assert_eq!(z.min_score(), Some(1.7e12 + 89_999.0));
    assert!(expired > 0);
    z.check_invariants().unwrap();
}

#[test]
fn scan_survives_concurrent_changes() {
    let mut z = ZSet::new();
    for i in 0..1000 {
        add(&mut z, &format!("k{i}"), f64::from(i % 97));
    }
    let mut seen = std::collections::HashSet::new();
    let mut cursor = 0;
    let mut i = 0;
    loop {
        cursor = z.scan(cursor, 10, |m, _| {
            seen.insert(m.to_vec());
        });
        // Churn: add and remove other elements between calls.
        add(&mut z, &format!("new{i}"), f64::from(i % 97));
        z.remove(format!("new{}", i / 2).as_bytes());
        i += 1;
        if cursor == 0 {
            break;
        }
    }
    for i in 0..1000 {
        assert!(seen.contains(format!("k{i}").as_bytes()));
    }
    assert_eq!(z.scan(u64::MAX, 10, |_, _| {}), 0);
}

#[test]
fn huge_members_get_their_own_nodes() {
    // Members around and far beyond the node byte budget (and u16 offsets)
    // mixed with small ones, in both node capacities.
    use rand::Rng;
    for cap in [4, DEFAULT_NODE_CAP] {
        let mut rng = rand::rngs::StdRng::seed_from_u64(cap as u64);
        let mut z = ZSet::with_node_capacity(cap);
        let mut model = Model::new();
        for step in 0..3000 {
            let id = rng.random_range(0..200u32);
            let len = match id % 5 {
                0 => 70_000 + id as usize,
                1 => 5_000,
                2 => 3_000,
                _ => 10,
            };
            let mut m = format!("{id:04}").into_bytes();
            m.resize(len, b'x');
            if rng.random_range(0..4) == 0 {
                assert_eq!(z.remove(&m), model.score(&m));
                if let Some(i) = model.pos(&m) {
                    model.v.remove(i);
                }
            } else {
                let s = f64::from(rng.random_range(0..50));
                let f = AddFlags::default();
                assert_eq!(z.add(&m, nn(s), f, lim()), model.add(&m, s, f, lim()));
            }
            if step % 100 == 0 {
                z.check_invariants().unwrap();
                assert_eq!(owned(z.iter()), model.v);
            }
        }
        z.check_invariants().unwrap();
        assert_eq!(owned(z.iter()), model.v);
    }
}

/// Member TTL operations mixed with every way of moving or removing
/// members, against a map member -> (score, deadline).
#[derive(Clone, Debug)]
enum TtlOp {
    Add {
        m: usize,
        s: f64,
        f: AddFlags,
    },
    Remove {
        m: usize,
    },
    RemScore(ScoreRange),
    RemRank {
        start: usize,
        end: usize,
    },
    RemLex(LexRange),
    Pop {
        max: bool,
        count: usize,
    },
    ToCompact,
    /// `at == 0` clears (ZPERSIST).
    SetExpire {
        m: usize,
        at: u64,
    },
    Expire {
        now: u64,
        max: usize,
    },
}

fn ttl_op_strat() -> impl Strategy<Value = TtlOp> {
    prop_oneof![
        8 => (0usize..24, score_strat(), flags_strat()).prop_map(|(m, s, f)| TtlOp::Add { m, s, f }),
        2 => (0usize..24).prop_map(|m| TtlOp::Remove { m }),
        1 => range_strat().prop_map(TtlOp::RemScore),
        1 => (0usize..26, 0usize..26).prop_map(|(start, end)| TtlOp::RemRank { start, end }),
        1 => lex_range_strat().prop_map(TtlOp::RemLex),
        1 => (any::<bool>(), 0usize..5).prop_map(|(max, count)| TtlOp::Pop { max, count }),
        1 => Just(TtlOp::ToCompact),
        8 => (0usize..24, prop_oneof![1 => Just(0u64), 6 => 1u64..60]).prop_map(|(m, at)| TtlOp::SetExpire { m, at }),
        2 => (0u64..60, prop_oneof![Just(1usize), Just(3), Just(usize::MAX)])
            .prop_map(|(now, max)| TtlOp::Expire { now, max }),
    ]
}

type TtlModel = std::collections::BTreeMap<Vec<u8>, (f64, u64)>;

fn ttl_sorted(model: &TtlModel) -> Vec<(Vec<u8>, f64)> {
    let mut v: Vec<_> = model.iter().map(|(m, &(s, _))| (m.clone(), s)).collect();
    v.sort_by(key_lt);
    v
}

fn check_ttls(z: &ZSet, model: &TtlModel) -> Result<(), TestCaseError> {
    if let Err(e) = z.check_invariants() {
        return Err(TestCaseError::fail(e));
    }
    prop_assert_eq!(owned(z.iter()), ttl_sorted(model));
    for m in members() {
        prop_assert_eq!(z.score(&m), model.get(&m).map(|e| e.0));
        prop_assert_eq!(z.expire_at(&m), model.get(&m).map(|e| e.1));
    }
    let live: Vec<u64> = model
        .values()
        .map(|e| e.1)
        .filter(|&at| at != ttl::NO_TTL)
        .collect();
    // A removed member leaves no deadline behind.
    prop_assert_eq!(z.ttl_count(), live.len());
    match live.iter().min() {
        None => prop_assert_eq!(z.min_deadline(), None),
        Some(&first) => prop_assert!(
            z.min_deadline().is_some_and(|b| b <= first),
            "bound {:?} after the earliest deadline {}",
            z.min_deadline(),
            first
        ),
    }
    Ok(())
}

fn run_ttl_ops(
    ops: Vec<TtlOp>,
    limits: Limits,
    node_cap: usize,
    lex_mode: bool,
) -> Result<(), TestCaseError> {
    let ms = members();
    let mut z = ZSet::with_node_capacity(node_cap);
    let mut model = TtlModel::new();
    // Removes the reported members from the model, checking each.
    fn take(model: &mut TtlModel, got: &[(Vec<u8>, f64)]) -> Result<(), TestCaseError> {
        for (m, s) in got {
            prop_assert_eq!(model.remove(m).map(|e| e.0), Some(*s));
        }
        Ok(())
    }
    for op in ops {
        let mut got: Vec<(Vec<u8>, f64)> = Vec::new();
        match op {
            TtlOp::Add { m, s, f } => {
                let s = if lex_mode { 0.0 } else { s };
                let r = z.add(&ms[m], nn(s), f, limits);
                match (model.get(&ms[m]).copied(), r) {
                    (None, Ok(AddOutcome::Added { score })) => {
                        model.insert(ms[m].clone(), (score, ttl::NO_TTL));
                    }
                    (Some((_, at)), Ok(AddOutcome::Updated { score, .. })) => {
                        let at = if f.incr { at } else { ttl::NO_TTL };
                        model.insert(ms[m].clone(), (score, at));
                    }
                    (Some((cur, at)), Ok(AddOutcome::Unchanged { .. })) => {
                        let at = if f.incr { at } else { ttl::NO_TTL };
                        model.insert(ms[m].clone(), (cur, at));
                    }
                    (_, Ok(AddOutcome::NotPerformed) | Err(_)) => {}
                    (had, r) => {
                        prop_assert!(false, "add {:?} on {:?} gave {:?}", (m, s, f), had, r)
                    }
                }
            }
            TtlOp::Remove { m } => {
                prop_assert_eq!(z.remove(&ms[m]), model.remove(&ms[m]).map(|e| e.0));
            }
            TtlOp::RemScore(r) => {
                z.remove_range_by_score(&r, |m, s| got.push((m.to_vec(), s)));
                take(&mut model, &got)?;
            }
            TtlOp::RemRank { start, end } => {
                z.remove_range_by_rank(start, end, |m, s| got.push((m.to_vec(), s)));
                take(&mut model, &got)?;
            }
            TtlOp::RemLex(r) => {
                if lex_mode {
                    z.remove_range_by_lex(&r, |m, s| got.push((m.to_vec(), s)));
                    take(&mut model, &got)?;
                }
            }
            TtlOp::Pop { max, count } => {
                let got = z.pop(max, count);
                take(&mut model, &got)?;
            }
            TtlOp::ToCompact => z.maybe_convert_to_compact(limits),
            TtlOp::SetExpire { m, at } => {
                let present = model.get_mut(&ms[m]);
                prop_assert_eq!(z.set_expire(&ms[m], at), present.is_some());
                if let Some(e) = present {
                    e.1 = at;
                }
            }
            TtlOp::Expire { now, max } => {
                let n = z.expire_members(now, max, |m, s| got.push((m.to_vec(), s)));
                prop_assert_eq!(n, got.len());
                prop_assert!(n <= max);
                for (m, _) in &got {
                    let at = model.get(m).map_or(ttl::NO_TTL, |e| e.1);
                    prop_assert!(at != ttl::NO_TTL && at <= now, "{:?} not due", m);
                }
                take(&mut model, &got)?;
                if max == usize::MAX {
                    prop_assert!(
                        model.values().all(|e| e.1 == ttl::NO_TTL || e.1 > now),
                        "a due member survived a full expiry"
                    );
                    // The bound is exact again once nothing more is due.
                    let first = model.values().map(|e| e.1).filter(|&a| a != 0).min();
                    prop_assert!(z.min_deadline().is_none_or(|b| b > now || Some(b) == first));
                }
            }
        }
        check_ttls(&z, &model)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn member_ttls_model_based(
        ops in prop::collection::vec(ttl_op_strat(), 1..150),
        max_entries in 0usize..14,
        max_value in 3usize..30,
        node_cap in 2usize..7,
        lex_mode in prop::bool::weighted(0.25),
    ) {
        run_ttl_ops(ops, Limits { max_entries, max_value }, node_cap, lex_mode)?;
    }
}

#[test]
fn member_ttls_survive_node_churn() {
    // Many members, small nodes: splits, merges, score moves and range
    // removals all carry or drop deadlines, checked against a map.
    use rand::Rng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(15);
    let mut z = ZSet::with_node_capacity(8);
    let mut model = TtlModel::new();
    let mut now = 0;
    for step in 0..40_000u32 {
        let m = format!("m:{}", rng.random_range(0..3000)).into_bytes();
        match rng.random_range(0..12) {
            0..=3 => {
                let s = f64::from(rng.random_range(0..2000));
                let incr = rng.random_bool(0.3);
                let f = AddFlags {
                    incr,
                    ..Default::default()
                };
                if let Ok(r) = z.add(&m, nn(s), f, lim()) {
                    let at = model.get(&m).map_or(0, |e| e.1);
                    let at = if incr { at } else { 0 };
                    model.insert(m, (r.score().unwrap_or(s), at));
                }
            }
            4..=6 => {
                let at = now + rng.random_range(1..500);
                assert_eq!(z.set_expire(&m, at), model.contains_key(&m));
                if let Some(e) = model.get_mut(&m) {
                    e.1 = at;
                }
            }
            7 => assert_eq!(z.remove(&m), model.remove(&m).map(|e| e.0)),
            8 => {
                let a = f64::from(rng.random_range(0..2000));
                let r = ScoreRange {
                    min: ScoreBound::Inclusive(a),
                    max: ScoreBound::Exclusive(a + 20.0),
                };
                z.remove_range_by_score(&r, |m, s| {
                    assert_eq!(model.remove(&*m.to_cow()).map(|e| e.0), Some(s))
                });
            }
            9 => {
                now += rng.random_range(0..20);
                z.expire_members(now, 16, |m, s| {
                    let (ms, at) = model.remove(m).unwrap();
                    assert!(ms == s && at != 0 && at <= now);
                });
            }
            _ => {
                if let Some(&(s, at)) = model.get(&m) {
                    assert_eq!(z.score(&m), Some(s));
                    assert_eq!(z.expire_at(&m), Some(at));
                }
            }
        }
        if step % 2000 == 0 {
            z.check_invariants().unwrap();
            assert_eq!(z.ttl_count(), model.values().filter(|e| e.1 != 0).count());
        }
    }
    z.expire_members(now, usize::MAX, |m, _| {
        model.remove(m).unwrap();
    });
    assert!(model.values().all(|e| e.1 == 0 || e.1 > now));
    z.check_invariants().unwrap();
    assert_eq!(z.ttl_count(), model.values().filter(|e| e.1 != 0).count());
    for (m, &(s, at)) in &model {
        assert_eq!(z.score(m), Some(s));
        assert_eq!(z.expire_at(m), Some(at));
    }
}
