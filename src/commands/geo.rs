//! GEO commands: GEOADD, GEODIST, GEOHASH, GEOPOS and the searches
//! (GEOSEARCH, GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and their _RO
//! forms), as `geo.c`.
//!
//! A GEO set is a sorted set whose scores are 52-bit geohashes
//! ([`crate::types::geo`]); GEOADD is ZADD with computed scores (Redis
//! rewrites it into a ZADD call, so its reply, errors and `zadd` event are
//! ZADD's), and every search is one parser, [`search`], like Redis's
//! `georadiusGeneric`: the same option grammar, the same checks in the same
//! order, the same 9-box scan of the set's score ranges, and the same sorts
//! (a stable sort for whole results as glibc's qsort, Redis's `pqsort` when
//! COUNT trims them), so even members at equal distances come out in
//! Redis's order.

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, OwnedArgs, int_arg};
use crate::keyspace::{Entry, HashedKey, Keyspace, Value, notify};
use crate::types::geo::{self, Shape, ShapeKind};
use crate::types::zset::{AddFlags, Limits, NotNan, ScoreBound, ScoreRange, ZSet, parse_score};
use crate::util::eq_ic;

const G: &str = "geo";
const RADIUS_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.";
const SEARCH_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape";

pub(crate) static COMMANDS: &[Command] = &[
    Command::new("geoadd", -5, WRITE | DENYOOM, Keys::ONE, &(geoadd as Handler))
        .doc(G, "3.2.0", "O(log(N)) for each item added, where N is the number of elements in the sorted set.", "Adds one or more members to a geospatial index. The key is created if it doesn't exist.")
        .syntax("key [NX | XX] [CH] longitude latitude member [longitude latitude member ...]"),
    Command::new("geodist", -4, READONLY, Keys::ONE, &(geodist as Handler))
        .doc(G, "3.2.0", "O(log(N))", "Returns the distance between two members of a geospatial index.")
        .syntax("key member1 member2 [M | KM | FT | MI]"),
    Command::new("geohash", -2, READONLY, Keys::ONE, &(geohash as Handler))
        .doc(G, "3.2.0", "O(log(N)) for each member requested, where N is the number of elements in the sorted set.", "Returns members from a geospatial index as geohash strings.")
        .syntax("key [member [member ...]]"),
    Command::new("geopos", -2, READONLY, Keys::ONE, &(geopos as Handler))
        .doc(G, "3.2.0", "O(N) where N is the number of members requested.", "Returns the longitude and latitude of members from a geospatial index.")
        .syntax("key [member [member ...]]"),
    Command::new("georadius", -6, WRITE | DENYOOM, Keys::WithStore, &(georadius as Handler))
        .doc(G, "3.2.0", RADIUS_COMPLEXITY, "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.")
        .syntax("key longitude latitude radius M | KM | FT | MI [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]"),
    Command::new("georadius_ro", -6, READONLY, Keys::ONE, &(georadius_ro as Handler))
        .doc(G, "3.2.10", RADIUS_COMPLEXITY, "Returns members from a geospatial index that are within a distance from a coordinate.")
        .syntax("key longitude latitude radius M | KM | FT | MI [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]"),
    Command::new("georadiusbymember", -5, WRITE | DENYOOM, Keys::WithStore, &(georadiusbymember as Handler))
        .doc(G, "3.2.0", RADIUS_COMPLEXITY, "Queries a geospatial index for members within a distance from a member, optionally stores the result.")
        .syntax("key member radius M | KM | FT | MI [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]"),
    Command::new("georadiusbymember_ro", -5, READONLY, Keys::ONE, &(georadiusbymember_ro as Handler))
        .doc(G, "3.2.10", RADIUS_COMPLEXITY, "Returns members from a geospatial index that are within a distance from a member.")
        .syntax("key member radius M | KM | FT | MI [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]"),
    Command::new("geosearch", -7, READONLY, Keys::ONE, &(geosearch as Handler))
        .doc(G, "6.2.0", SEARCH_COMPLEXITY, "Queries a geospatial index for members inside an area of a box or a circle.")
        .syntax("key FROMMEMBER member | FROMLONLAT longitude latitude BYRADIUS radius M | KM | FT | MI | BYBOX width height M | KM | FT | MI [ASC | DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]"),
    Command::new("geosearchstore", -8, WRITE | DENYOOM, Keys::TWO, &(geosearchstore as Handler))
        .doc(G, "6.2.0", SEARCH_COMPLEXITY, "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.")
        .syntax("destination source FROMMEMBER member | FROMLONLAT longitude latitude BYRADIUS radius M | KM | FT | MI | BYBOX width height M | KM | FT | MI [ASC | DESC] [COUNT count [ANY]] [STOREDIST]"),
];

// ---------------------------------------------------------------------------
// Argument helpers (geo.c's extract*OrReply)
// ---------------------------------------------------------------------------

/// `getDoubleFromObjectOrReply` with its optional custom message.
fn double_arg(arg: &[u8], msg: Option<&'static str>) -> Result<f64, Error> {
    parse_score(arg).ok_or(match msg {
        Some(m) => Error::Static(m),
        None => Error::NotFloat,
    })
}

/// `extractLongLatOrReply`: both numbers, then the WGS84 limits.
fn lonlat_args(lon: &[u8], lat: &[u8]) -> Result<[f64; 2], Error> {
    let xy = [double_arg(lon, None)?, double_arg(lat, None)?];
    if xy[0] < geo::LONG_MIN
        || xy[0] > geo::LONG_MAX
        || xy[1] < geo::LAT_MIN
        || xy[1] > geo::LAT_MAX
    {
        return Err(Error::Owned(format!(
            "ERR invalid longitude,latitude pair {:.6},{:.6}",
            xy[0], xy[1]
        )));
    }
    Ok(xy)
}

/// `extractUnitOrReply`: meters per unit.
fn unit_arg(arg: &[u8]) -> Result<f64, Error> {
    if eq_ic(arg, "m") {
        Ok(1.0)
    } else if eq_ic(arg, "km") {
        Ok(1000.0)
    } else if eq_ic(arg, "ft") {
        Ok(0.3048)
    } else if eq_ic(arg, "mi") {
        Ok(1609.34)
    } else {
        Err(Error::Static(
            "ERR unsupported unit provided. please use M, KM, FT, MI",
        ))
    }
}

/// `extractDistanceOrReply`: (radius, meters per unit).
fn distance_args(radius: &[u8], unit: &[u8]) -> Result<(f64, f64), Error> {
    let r = double_arg(radius, Some("ERR need numeric radius"))?;
    if r < 0.0 {
        return Err(Error::Static("ERR radius cannot be negative"));
    }
    Ok((r, unit_arg(unit)?))
}

/// `extractBoxOrReply`: (width, height, meters per unit).
fn box_args(width: &[u8], height: &[u8], unit: &[u8]) -> Result<(f64, f64, f64), Error> {
    let w = double_arg(width, Some("ERR need numeric width"))?;
    let h = double_arg(height, Some("ERR need numeric height"))?;
    if h < 0.0 || w < 0.0 {
        return Err(Error::Static("ERR height or width cannot be negative"));
    }
    Ok((w, h, unit_arg(unit)?))
}

/// The sorted set at `key` for a read; WRONGTYPE for another type.
fn zset_read<'k, 'n>(
    ks: &'k mut Keyspace<'_>,
    key: impl Into<HashedKey<'n>>,
) -> Result<Option<&'k mut ZSet>, Error> {
    match ks.get_read(key) {
        None => Ok(None),
        Some(Entry {
            value: Value::ZSet(z),
            ..
        }) => Ok(Some(z)),
        Some(_) => Err(Error::WrongType),
    }
}

/// The set at `key` once its type was checked (no second hit/miss count).
fn zset_peek<'k>(ks: &'k mut Keyspace<'_>, key: &[u8]) -> Option<&'k mut ZSet> {
    match ks.peek(key) {
        Some(Entry {
            value: Value::ZSet(z),
            ..
        }) => Some(z),
        _ => None,
    }
}

/// A coordinate as Redis 7.2+ replies it (`addReplyDouble`: the shortest
/// text that reads back the same; 7.0 printed `%.17Lf`).
fn reply_coord(out: &mut crate::protocol::Reply, x: f64) {
    out.double(x);
}

// ---------------------------------------------------------------------------
// GEOADD, GEODIST, GEOHASH, GEOPOS
// ---------------------------------------------------------------------------

fn geoadd(ctx: &mut Ctx) -> CmdResult {
    let argc = ctx.argc();
    let (mut xx, mut nx) = (false, false);
    let mut longidx = 2;
    while longidx < argc {
        let opt = ctx.args.get(longidx);
        if eq_ic(opt, "nx") {
            nx = true;
        } else if eq_ic(opt, "xx") {
            xx = true;
        } else if !eq_ic(opt, "ch") {
            break;
        }
        longidx += 1;
    }
    if !(argc - longidx).is_multiple_of(3) || (xx && nx) {
        return Err(Error::Syntax);
    }
    // Redis rewrites the command into ZADD key [options] score member …
    // and runs ZADD: its reply, its errors and its `zadd` event.
    let mut scores = Vec::with_capacity((argc - longidx) / 3);
    for i in (longidx..argc).step_by(3) {
        let [lon, lat] = lonlat_args(ctx.args.get(i), ctx.args.get(i + 1))?;
        scores.push(
            itoa::Buffer::new()
                .format(geo::score_of(lon, lat))
                .to_owned(),
        );
    }
    let mut parts: Vec<&[u8]> = vec![b"zadd"];
    parts.extend((1..longidx).map(|i| ctx.args.get(i)));
    for (n, i) in (longidx..argc).step_by(3).enumerate() {
        parts.push(scores[n].as_bytes());
        parts.push(ctx.args.get(i + 2));
    }
    let owned = OwnedArgs::from_slices(&parts);
    let mut zctx = Ctx {
        shared: ctx.shared,
        client: &mut *ctx.client,
        out: &mut *ctx.out,
        args: owned.args(),
        ks: &mut *ctx.ks,
        cmd: ctx.cmd,
        redacted: 0,
        script_error: None,
        first_key: None,
        dispatch: ctx.dispatch,
    };
    super::zsets::zadd_generic(&mut zctx, false)
}

fn geodist(ctx: &mut Ctx) -> CmdResult {
    let mut to_meter = 1.0;
    if ctx.argc() == 5 {
        to_meter = unit_arg(ctx.args.get(4))?;
    } else if ctx.argc() > 5 {
        return Err(Error::Syntax);
    }
    let key = ctx.key(1);
    let Some(z) = zset_read(ctx.ks, key)? else {
        ctx.out.null();
        return Ok(Done);
    };
    match (z.score(ctx.args.get(2)), z.score(ctx.args.get(3))) {
        (Some(s1), Some(s2)) => {
            let [lon1, lat1] = geo::score_to_lonlat(s1);
            let [lon2, lat2] = geo::score_to_lonlat(s2);
            let d = geo::distance(lon1, lat1, lon2, lat2) / to_meter;
            ctx.out.bulk(geo::format_distance(d).as_bytes());
        }
        _ => ctx.out.null(),
    }
    Ok(Done)
}

fn geohash(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.key(1);
    let z = zset_read(ctx.ks, key)?;
    ctx.out.array(ctx.args.len() - 2);
    for m in ctx.args.iter().skip(2) {
        match z.as_ref().and_then(|z| z.score(m)) {
            Some(s) => ctx.out.bulk(&geo::geohash_string(s)),
            None => ctx.out.null(),
        }
    }
    Ok(Done)
}

fn geopos(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.key(1);
    let z = zset_read(ctx.ks, key)?;
    ctx.out.array(ctx.args.len() - 2);
    for m in ctx.args.iter().skip(2) {
        match z.as_ref().and_then(|z| z.score(m)) {
            Some(s) => {
                let [lon, lat] = geo::score_to_lonlat(s);
                ctx.out.array(2);
                reply_coord(ctx.out, lon);
                reply_coord(ctx.out, lat);
            }
            None => ctx.out.null_array(),
        }
    }
    Ok(Done)
}

// ---------------------------------------------------------------------------
// The searches (georadiusGeneric)
// ---------------------------------------------------------------------------

/// Which search command runs: where its arguments start and what it allows.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// GEORADIUS[_RO]: key longitude latitude radius unit.
    Coords { nostore: bool },
    /// GEORADIUSBYMEMBER[_RO]: key member radius unit.
    Member { nostore: bool },
    /// GEOSEARCH (`store` false) and GEOSEARCHSTORE.
    Search { store: bool },
}

#[derive(Clone, Copy, PartialEq)]
enum Sort {
    None,
    Asc,
    Desc,
}

fn georadius(ctx: &mut Ctx) -> CmdResult {
    search(ctx, 1, Kind::Coords { nostore: false })
}

fn georadius_ro(ctx: &mut Ctx) -> CmdResult {
    search(ctx, 1, Kind::Coords { nostore: true })
}

fn georadiusbymember(ctx: &mut Ctx) -> CmdResult {
    search(ctx, 1, Kind::Member { nostore: false })
}

fn georadiusbymember_ro(ctx: &mut Ctx) -> CmdResult {
    search(ctx, 1, Kind::Member { nostore: true })
}

fn geosearch(ctx: &mut Ctx) -> CmdResult {
    search(ctx, 1, Kind::Search { store: false })
}

fn geosearchstore(ctx: &mut Ctx) -> CmdResult {
    search(ctx, 2, Kind::Search { store: true })
}

/// A member found inside the search area.
struct Point {
    member: Vec<u8>,
    score: f64,
    xy: [f64; 2],
    /// From the centre, in meters until the reply converts it.
    dist: f64,
}

/// The position of `member` in the set at `key` (`longLatFromMember`).
fn member_xy(ks: &mut Keyspace<'_>, key: &[u8], member: &[u8]) -> Result<[f64; 2], Error> {
    zset_peek(ks, key)
        .and_then(|z| z.score(member))
        .map(geo::score_to_lonlat)
        .ok_or(Error::Static("ERR could not decode requested zset member"))
}

/// The search parameters before the shape is complete.
struct Parsed<'a> {
    store_key: Option<&'a [u8]>,
    store_dist: bool,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    sort: Sort,
    any: bool,
    count: i64,
}

/// Redis's `georadiusGeneric`, check for check.
fn search(ctx: &mut Ctx, src_idx: usize, kind: Kind) -> CmdResult {
    let args = ctx.args;
    let src = args.get(src_idx);
    let exists = zset_read(ctx.ks, src)?.is_some();
    let argc = args.len();
    let mut xy = [0.0f64; 2];
    let mut conversion = 0.0;
    let mut shape_kind = ShapeKind::Radius(0.0);
    let mut store_key = None;
    let base_args = match kind {
        Kind::Coords { .. } => {
            xy = lonlat_args(args.get(2), args.get(3))?;
            let (r, c) = distance_args(args.get(4), args.get(5))?;
            (shape_kind, conversion) = (ShapeKind::Radius(r), c);
            6
        }
        // No source: parse on, so the reply fits the STORE option.
        Kind::Member { .. } if !exists => 5,
        Kind::Member { .. } => {
            xy = member_xy(ctx.ks, src, args.get(2))?;
            let (r, c) = distance_args(args.get(3), args.get(4))?;
            (shape_kind, conversion) = (ShapeKind::Radius(r), c);
            5
        }
        Kind::Search { store: false } => 2,
        Kind::Search { store: true } => {
            store_key = Some(args.get(1));
            3
        }
    };
    let nostore = matches!(
        kind,
        Kind::Coords { nostore: true } | Kind::Member { nostore: true }
    );
    let is_search = matches!(kind, Kind::Search { .. });
    let is_searchstore = kind == Kind::Search { store: true };
    let mut p = Parsed {
        store_key,
        store_dist: false,
        withdist: false,
        withhash: false,
        withcoord: false,
        sort: Sort::None,
        any: false,
        count: 0,
    };
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let remaining = argc.saturating_sub(base_args);
    let mut i = 0;
    while i < remaining {
        let at = base_args + i;
        let arg = args.get(at);
        if eq_ic(arg, "withdist") {
            p.withdist = true;
        } else if eq_ic(arg, "withhash") {
            p.withhash = true;
        } else if eq_ic(arg, "withcoord") {
            p.withcoord = true;
        } else if eq_ic(arg, "any") {
            p.any = true;
        } else if eq_ic(arg, "asc") {
            p.sort = Sort::Asc;
        } else if eq_ic(arg, "desc") {
            p.sort = Sort::Desc;
        } else if eq_ic(arg, "count") && i + 1 < remaining {
            p.count = int_arg(args.get(at + 1))?;
            if p.count <= 0 {
                return Err(Error::Static("ERR COUNT must be > 0"));
            }
            i += 1;
        } else if (eq_ic(arg, "store") || eq_ic(arg, "storedist"))
            && i + 1 < remaining
            && !nostore
            && !is_search
        {
            p.store_key = Some(args.get(at + 1));
            p.store_dist = eq_ic(arg, "storedist");
            i += 1;
        } else if eq_ic(arg, "storedist") && is_searchstore {
            p.store_dist = true;
        } else if eq_ic(arg, "frommember") && i + 1 < remaining && is_search && !fromloc {
            if exists {
                xy = member_xy(ctx.ks, src, args.get(at + 1))?;
            }
            frommember = true;
            i += 1;
        } else if eq_ic(arg, "fromlonlat") && i + 2 < remaining && is_search && !frommember {
            xy = lonlat_args(args.get(at + 1), args.get(at + 2))?;
            fromloc = true;
            i += 2;
        } else if eq_ic(arg, "byradius") && i + 2 < remaining && is_search && !bybox {
            let (r, c) = distance_args(args.get(at + 1), args.get(at + 2))?;
            (shape_kind, conversion) = (ShapeKind::Radius(r), c);
            byradius = true;
            i += 2;
        } else if eq_ic(arg, "bybox") && i + 3 < remaining && is_search && !byradius {
            let (w, h, c) = box_args(args.get(at + 1), args.get(at + 2), args.get(at + 3))?;
            (shape_kind, conversion) = (
                ShapeKind::Box {
                    width: w,
                    height: h,
                },
                c,
            );
            bybox = true;
            i += 3;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    if p.store_key.is_some() && (p.withdist || p.withhash || p.withcoord) {
        return Err(Error::Owned(format!(
            "ERR {} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            if is_searchstore {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            }
        )));
    }
    // Redis names the command as the client spelled it (a C string).
    let typed = || {
        let name = args.get(0);
        String::from_utf8_lossy(name.split(|&b| b == 0).next().unwrap_or_default()).into_owned()
    };
    if is_search && !(frommember || fromloc) {
        return Err(Error::Owned(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}",
            typed()
        )));
    }
    if is_search && !(byradius || bybox) {
        return Err(Error::Owned(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {}",
            typed()
        )));
    }
    if p.any && p.count == 0 {
        return Err(Error::Static(
            "ERR the ANY argument requires COUNT argument",
        ));
    }
    if !exists {
        match p.store_key {
            Some(dst) => {
                if ctx.ks.remove(dst).is_some() {
                    ctx.ks.signal(dst, notify::GENERIC, "del");
                }
                ctx.out.int(0);
            }
            None => ctx.out.array(0),
        }
        return Ok(Done);
    }
    // COUNT keeps the nearest: it implies ASC unless ANY.
    if p.count != 0 && p.sort == Sort::None && !p.any {
        p.sort = Sort::Asc;
    }
    let shape = Shape {
        xy,
        conversion,
        kind: shape_kind,
    };
    let limit = if p.any { p.count as usize } else { 0 };
    let mut points = collect(ctx.ks, src, &shape, limit);
    reply_points(ctx, &p, &shape, &mut points, is_search);
    Ok(Done)
}

/// `membersOfAllNeighbors`: the members inside the shape, box by box, in
/// score order within each box; with `limit` (ANY), stops once it has that
/// many.
fn collect(ks: &mut Keyspace<'_>, src: &[u8], shape: &Shape, limit: usize) -> Vec<Point> {
    let mut points = Vec::new();
    let Some(z) = zset_peek(ks, src) else {
        return points;
    };
    let full = |points: &Vec<Point>| limit != 0 && points.len() >= limit;
    for (min, max) in shape.search_ranges() {
        if full(&points) {
            break;
        }
        let range = ScoreRange {
            min: ScoreBound::Inclusive(min as f64),
            max: ScoreBound::Exclusive(max as f64),
        };
        for (member, score) in z.range_by_score(&range, false, 0, None) {
            let xy = geo::score_to_lonlat(score);
            if let Some(dist) = shape.contains(xy) {
                points.push(Point {
                    member: member.to_vec(),
                    score,
                    xy,
                    dist,
                });
            }
            if full(&points) {
                break;
            }
        }
    }
    points
}

fn reply_points(ctx: &mut Ctx, p: &Parsed, shape: &Shape, points: &mut [Point], is_search: bool) {
    if points.is_empty() && p.store_key.is_none() {
        ctx.out.array(0);
        return;
    }
    let len = points.len();
    let returned = if p.count == 0 || (len as i64) < p.count {
        len
    } else {
        p.count as usize
    };
    let asc = |a: &Point, b: &Point| {
        if a.dist > b.dist {
            std::cmp::Ordering::Greater
        } else if a.dist == b.dist {
            std::cmp::Ordering::Equal
        } else {
            std::cmp::Ordering::Less
        }
    };
    match p.sort {
        Sort::None => {}
        // glibc's qsort is a (stable) merge sort; Redis sorts the whole
        // result with it, and only the kept part with pqsort.
        Sort::Asc if returned == len => points.sort_by(asc),
        Sort::Desc if returned == len => points.sort_by(|a, b| asc(a, b).reverse()),
        Sort::Asc => geo::pqsort(points, &asc, 0, returned - 1),
        Sort::Desc => geo::pqsort(
            points,
            &|a: &Point, b: &Point| asc(a, b).reverse(),
            0,
            returned - 1,
        ),
    }
    let Some(dst) = p.store_key else {
        let options = p.withdist as usize + p.withcoord as usize + p.withhash as usize;
        ctx.out.array(returned);
        for pt in &points[..returned] {
            let dist = pt.dist / shape.conversion;
            if options > 0 {
                ctx.out.array(options + 1);
            }
            ctx.out.bulk(&pt.member);
            if p.withdist {
                ctx.out.bulk(geo::format_distance(dist).as_bytes());
            }
            if p.withhash {
                ctx.out.int(pt.score as i64);
            }
            if p.withcoord {
                ctx.out.array(2);
                reply_coord(ctx.out, pt.xy[0]);
                reply_coord(ctx.out, pt.xy[1]);
            }
        }
        return;
    };
    if returned > 0 {
        let limits = Limits {
            max_entries: ctx.shared.config.zset_max_listpack_entries(),
            max_value: ctx.shared.config.zset_max_listpack_value(),
        };
        let kept = &points[..returned];
        let maxlen = kept.iter().map(|pt| pt.member.len()).max().unwrap_or(0);
        let mut z = ZSet::with_capacity_hint(returned, maxlen, limits);
        for pt in kept {
            let score = if p.store_dist {
                pt.dist / shape.conversion
            } else {
                pt.score
            };
            let _ = z.add(
                &pt.member,
                NotNan::new(score).unwrap_or_default(),
                AddFlags::default(),
                limits,
            );
        }
        ctx.ks.set(dst, Value::ZSet(z));
        let event = if is_search {
            "geosearchstore"
        } else {
            "georadiusstore"
        };
        // One change per member stored.
        ctx.ks.signal_by(dst, notify::ZSET, event, returned as u64);
        ctx.ks.signal_ready(dst);
    } else if ctx.ks.remove(dst).is_some() {
        ctx.ks.signal(dst, notify::GENERIC, "del");
    }
    ctx.out.int(returned as i64);
}
