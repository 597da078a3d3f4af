//! GEO arithmetic as Redis 7.0 does it (`geohash.c`, `geohash_helper.c`
//! and the helpers of `geo.c`): 52-bit interleaved geohashes, the 9-box
//! search areas of radius and box queries, haversine distances, Redis's
//! fixed-point distance text, and its partial quicksort.
//!
//! A GEO set is a sorted set whose scores are these geohashes, so clients
//! see the numbers themselves (ZSCORE, WITHHASH) and every coordinate,
//! distance and search result derives from them: the floating-point
//! operations here follow Redis's in the same order (and use the same libm
//! functions), so results agree bit for bit. Where Redis relies on C
//! conversions (a score cast to `uint64_t`, a double cast to `uint32_t`),
//! the x86-64 behaviour is reproduced explicitly.

use std::cmp::Ordering;

pub(crate) const LAT_MIN: f64 = -85.05112878;
pub(crate) const LAT_MAX: f64 = 85.05112878;
pub(crate) const LONG_MIN: f64 = -180.0;
pub(crate) const LONG_MAX: f64 = 180.0;
/// 26 steps of 2 bits: the 52-bit scores.
const STEP_MAX: u8 = 26;

const D_R: f64 = std::f64::consts::PI / 180.0;
const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;

/// A geohash of `step` bits per coordinate; `step == 0 && bits == 0` is
/// Redis's "zero" hash (an excluded neighbour).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct HashBits {
    bits: u64,
    step: u8,
}

impl HashBits {
    fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Range {
    pub(crate) min: f64,
    pub(crate) max: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Area {
    longitude: Range,
    latitude: Range,
}

const WGS84_LONG: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
const WGS84_LAT: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// Bits of `x` to the even positions, bits of `y` to the odd ones.
fn interleave64(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let (mut x, mut y) = (xlo as u64, ylo as u64);
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

/// The inverse: even bits to the low 32, odd bits to the high 32.
fn deinterleave64(interleaved: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
        0x00000000FFFFFFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let (mut x, mut y) = (interleaved, interleaved >> 1);
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// C's `(uint32_t)` of a double on x86-64 (the value goes through a
/// 64-bit signed conversion, then is truncated).
fn c_u32(x: f64) -> u32 {
    c_u64(x) as u32
}

/// C's `(uint64_t)` of a double as GCC compiles it on x86-64: below 2^63 a
/// signed conversion (negative values wrap, out-of-range gives
/// 0x8000000000000000), above it the shifted conversion with the top bit
/// flipped.
fn c_u64(x: f64) -> u64 {
    const TWO63: f64 = 9223372036854775808.0;
    let cvtt = |v: f64| -> u64 {
        if v.is_nan() || !(-TWO63..TWO63).contains(&v) {
            0x8000_0000_0000_0000
        } else {
            v as i64 as u64
        }
    };
    if x < TWO63 {
        cvtt(x)
    } else {
        cvtt(x - TWO63) ^ 0x8000_0000_0000_0000
    }
}

/// `geohashEncode`: None outside the WGS84 limits or the given ranges.
fn encode(
    long_range: Range,
    lat_range: Range,
    longitude: f64,
    latitude: f64,
    step: u8,
) -> Option<HashBits> {
    if step > 32 || step == 0 {
        return None;
    }
    // C comparisons, which a NaN passes (the caller never has one).
    #[allow(clippy::manual_range_contains)]
    if longitude > LONG_MAX || longitude < LONG_MIN || latitude > LAT_MAX || latitude < LAT_MIN {
        return None;
    }
    if latitude < lat_range.min
        || latitude > lat_range.max
        || longitude < long_range.min
        || longitude > long_range.max
    {
        return None;
    }
    let mut lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min);
    let mut long_offset = (longitude - long_range.min) / (long_range.max - long_range.min);
    let scale = (1u64 << step) as f64;
    lat_offset *= scale;
    long_offset *= scale;
    Some(HashBits {
        bits: interleave64(c_u32(lat_offset), c_u32(long_offset)),
        step,
    })
}

fn encode_wgs84(longitude: f64, latitude: f64, step: u8) -> Option<HashBits> {
    encode(WGS84_LONG, WGS84_LAT, longitude, latitude, step)
}

/// `geohashDecode`: the cell a hash names.
fn decode(long_range: Range, lat_range: Range, hash: HashBits) -> Option<Area> {
    if hash.is_zero() {
        return None;
    }
    let step = hash.step as u32;
    let sep = deinterleave64(hash.bits);
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    let ilato = sep as u32;
    let ilono = (sep >> 32) as u32;
    let div = (1u64 << step) as f64;
    // `ilato + 1` is unsigned int arithmetic in C: it wraps.
    Some(Area {
        latitude: Range {
            min: lat_range.min + (ilato as f64 * 1.0 / div) * lat_scale,
            max: lat_range.min + (ilato.wrapping_add(1) as f64 * 1.0 / div) * lat_scale,
        },
        longitude: Range {
            min: long_range.min + (ilono as f64 * 1.0 / div) * long_scale,
            max: long_range.min + (ilono.wrapping_add(1) as f64 * 1.0 / div) * long_scale,
        },
    })
}

/// The centre of a cell, clamped to the WGS84 limits.
fn area_center(area: &Area) -> [f64; 2] {
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    [lon, lat]
}

/// `decodeGeohash`: a sorted-set score (any double) to (longitude,
/// latitude). Always succeeds, as in Redis: a score that is no geohash
/// decodes to some clamped point.
pub(crate) fn score_to_lonlat(score: f64) -> [f64; 2] {
    let hash = HashBits {
        bits: c_u64(score),
        step: STEP_MAX,
    };
    match decode(WGS84_LONG, WGS84_LAT, hash) {
        Some(area) => area_center(&area),
        None => [0.0, 0.0],
    }
}

/// The 52-bit score of a hash (`geohashAlign52Bits`).
fn align52(hash: HashBits) -> u64 {
    hash.bits << (52 - hash.step as u32 * 2)
}

/// GEOADD's score for a validated coordinate pair.
pub(crate) fn score_of(longitude: f64, latitude: f64) -> u64 {
    encode_wgs84(longitude, latitude, STEP_MAX).map_or(0, align52)
}

/// GEOHASH's 11-character standard geohash of a score.
pub(crate) fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let [lon, lat] = score_to_lonlat(score);
    let bits = encode(
        Range {
            min: -180.0,
            max: 180.0,
        },
        Range {
            min: -90.0,
            max: 90.0,
        },
        lon,
        lat,
        26,
    )
    .map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let idx = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    out
}

fn move_x(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let mut x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let y = hash.bits & 0x5555555555555555;
    let zz = 0x5555555555555555u64 >> (64 - hash.step as u32 * 2);
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= 0xaaaaaaaaaaaaaaaa >> (64 - hash.step as u32 * 2);
    hash.bits = x | y;
}

fn move_y(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let mut y = hash.bits & 0x5555555555555555;
    let zz = 0xaaaaaaaaaaaaaaaau64 >> (64 - hash.step as u32 * 2);
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= 0x5555555555555555 >> (64 - hash.step as u32 * 2);
    hash.bits = x | y;
}

/// The eight neighbours of a cell, in Redis's search order:
/// north, south, east, west, north-east, north-west, south-east, south-west.
fn neighbors(hash: HashBits) -> [HashBits; 8] {
    let moved = |dx: i8, dy: i8| {
        let mut h = hash;
        move_x(&mut h, dx);
        move_y(&mut h, dy);
        h
    };
    [
        moved(0, 1),
        moved(0, -1),
        moved(1, 0),
        moved(-1, 0),
        moved(1, 1),
        moved(-1, 1),
        moved(1, -1),
        moved(-1, -1),
    ]
}

/// `geohashEstimateStepsByRadius`.
fn estimate_steps_by_radius(mut range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    // Bounded: a positive double doubles past MERCATOR_MAX in < 1100 steps.
    while range_meters < MERCATOR_MAX {
        range_meters *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// A search area: a circle or an axis-aligned box around `xy`, its sizes in
/// the query's unit, `conversion` meters per unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shape {
    pub(crate) xy: [f64; 2],
    pub(crate) conversion: f64,
    pub(crate) kind: ShapeKind,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ShapeKind {
    Radius(f64),
    Box { width: f64, height: f64 },
}

fn deg_rad(ang: f64) -> f64 {
    ang * D_R
}

fn rad_deg(ang: f64) -> f64 {
    ang / D_R
}

impl Shape {
    /// `geohashBoundingBox`: [min lon, min lat, max lon, max lat].
    fn bounding_box(&self) -> [f64; 4] {
        let [longitude, latitude] = self.xy;
        let (h, w) = match self.kind {
            ShapeKind::Radius(r) => (r, r),
            ShapeKind::Box { width, height } => (height / 2.0, width / 2.0),
        };
        let height = self.conversion * h;
        let width = self.conversion * w;
        let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
        let long_delta_top =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude - lat_delta).cos());
        let southern = latitude < 0.0;
        let delta = if southern {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            longitude - delta,
            latitude - lat_delta,
            longitude + delta,
            latitude + lat_delta,
        ]
    }

    /// Whether a point is inside, and its distance from the centre in
    /// meters (`geoWithinShape` after the decoding).
    pub(crate) fn contains(&self, xy: [f64; 2]) -> Option<f64> {
        match self.kind {
            ShapeKind::Radius(r) => {
                let d = distance(self.xy[0], self.xy[1], xy[0], xy[1]);
                (d <= r * self.conversion).then_some(d)
            }
            ShapeKind::Box { width, height } => {
                let (width_m, height_m) = (width * self.conversion, height * self.conversion);
                if lat_distance(xy[1], self.xy[1]) > height_m / 2.0 {
                    return None;
                }
                if distance(xy[0], xy[1], self.xy[0], xy[1]) > width_m / 2.0 {
                    return None;
                }
                Some(distance(self.xy[0], self.xy[1], xy[0], xy[1]))
            }
        }
    }

    /// The score ranges to scan, in Redis's order (`geohashCalculateAreas
    /// ByShapeWGS84` then `membersOfAllNeighbors`): the centre cell and its
    /// useful neighbours, each `[min, max)`, skipping a neighbour equal to
    /// the one scanned just before it.
    pub(crate) fn search_ranges(&self) -> Vec<(u64, u64)> {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounding_box();
        let [longitude, latitude] = self.xy;
        let radius_meters = match self.kind {
            ShapeKind::Radius(r) => r,
            ShapeKind::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.conversion;
        let mut steps = estimate_steps_by_radius(radius_meters, latitude);
        let cell = |steps| {
            let hash = encode_wgs84(longitude, latitude, steps).unwrap_or_default();
            let hash = HashBits {
                bits: hash.bits,
                step: steps,
            };
            (hash, neighbors(hash), decode(WGS84_LONG, WGS84_LAT, hash))
        };
        let (mut hash, mut nb, mut area) = cell(steps);
        let decoded = |h: HashBits| decode(WGS84_LONG, WGS84_LAT, h);
        let north = decoded(nb[0]);
        let south = decoded(nb[1]);
        let east = decoded(nb[2]);
        let west = decoded(nb[3]);
        let decrease = north.is_some_and(|a| a.latitude.max < max_lat)
            || south.is_some_and(|a| a.latitude.min > min_lat)
            || east.is_some_and(|a| a.longitude.max < max_lon)
            || west.is_some_and(|a| a.longitude.min > min_lon);
        if steps > 1 && decrease {
            steps -= 1;
            (hash, nb, area) = cell(steps);
        }
        if steps >= 2
            && let Some(area) = area
        {
            const N: usize = 0;
            const S: usize = 1;
            const E: usize = 2;
            const W: usize = 3;
            const NE: usize = 4;
            const NW: usize = 5;
            const SE: usize = 6;
            const SW: usize = 7;
            let mut zero = |idx: &[usize]| {
                for &i in idx {
                    nb[i] = HashBits::default();
                }
            };
            if area.latitude.min < min_lat {
                zero(&[S, SW, SE]);
            }
            if area.latitude.max > max_lat {
                zero(&[N, NE, NW]);
            }
            if area.longitude.min < min_lon {
                zero(&[W, SW, NW]);
            }
            if area.longitude.max > max_lon {
                zero(&[E, SE, NE]);
            }
        }
        let all: [HashBits; 9] = [hash, nb[0], nb[1], nb[2], nb[3], nb[4], nb[5], nb[6], nb[7]];
        let mut out = Vec::with_capacity(9);
        // Redis skips a box equal to the last one scanned, where "last" is
        // an index and 0 (the centre) doubles as "none yet".
        let mut last_processed = 0usize;
        for (i, &h) in all.iter().enumerate() {
            if h.is_zero() {
                continue;
            }
            if last_processed != 0 && h == all[last_processed] {
                continue;
            }
            let min = align52(h);
            let max = align52(HashBits {
                bits: h.bits + 1,
                step: h.step,
            });
            out.push((min, max));
            last_processed = i;
        }
        out
    }
}

/// Distance along a meridian (`geohashGetLatDistance`).
fn lat_distance(lat1d: f64, lat2d: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2d) - deg_rad(lat1d)).abs()
}

/// Haversine distance in meters (`geohashGetDistance`).
pub(crate) fn distance(lon1d: f64, lat1d: f64, lon2d: f64, lat2d: f64) -> f64 {
    let lon1r = deg_rad(lon1d);
    let lon2r = deg_rad(lon2d);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1d, lat2d);
    }
    let lat1r = deg_rad(lat1d);
    let lat2r = deg_rad(lat2d);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// Redis's `fixedpoint_d2string(…, 4)`: a distance with exactly four
/// decimals, rounded half to even (`llrint`).
pub(crate) fn format_distance(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".into();
    }
    let scaled = d * 10000.0;
    // llrint of an out-of-range value is LLONG_MIN on x86-64.
    let sv = if scaled.is_nan() || !(-9.223372036854776e18..9.223372036854776e18).contains(&scaled)
    {
        i64::MIN
    } else {
        scaled.round_ties_even() as i64
    };
    let value = sv.unsigned_abs();
    let sign = if sv < 0 { "-" } else { "" };
    format!("{sign}{}.{:04}", value / 10000, value % 10000)
}

/// Redis's `pqsort`: a Bentley-McIlroy quicksort that only bothers to sort
/// the part of `a` overlapping positions `lrange..=rrange`. Redis uses it
/// when COUNT trims the result; elements at equal distance end up in the
/// order this particular algorithm leaves them, so it is reproduced as is.
pub(crate) fn pqsort<T>(
    a: &mut [T],
    cmp: &impl Fn(&T, &T) -> Ordering,
    lrange: usize,
    rrange: usize,
) {
    pqsort_at(a, 0, a.len(), cmp, lrange, rrange);
}

fn med3<T>(a: &[T], i: usize, j: usize, k: usize, cmp: &impl Fn(&T, &T) -> Ordering) -> usize {
    let lt = |x: usize, y: usize| cmp(&a[x], &a[y]) == Ordering::Less;
    let gt = |x: usize, y: usize| cmp(&a[x], &a[y]) == Ordering::Greater;
    if lt(i, j) {
        if lt(j, k) {
            j
        } else if lt(i, k) {
            k
        } else {
            i
        }
    } else if gt(j, k) {
        j
    } else if lt(i, k) {
        i
    } else {
        k
    }
}

fn vecswap<T>(a: &mut [T], i: usize, j: usize, n: usize) {
    for x in 0..n {
        a.swap(i + x, j + x);
    }
}

fn pqsort_at<T>(
    a: &mut [T],
    mut base: usize,
    mut n: usize,
    cmp: &impl Fn(&T, &T) -> Ordering,
    lrange: usize,
    rrange: usize,
) {
    let c = |a: &[T], x: usize, y: usize| cmp(&a[x], &a[y]);
    loop {
        if n < 7 {
            for pm in base + 1..base + n {
                let mut pl = pm;
                while pl > base && c(a, pl - 1, pl) == Ordering::Greater {
                    a.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = base + n / 2;
        if n > 7 {
            let mut pl = base;
            let mut pn = base + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(a, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(a, pm - d, pm, pm + d, cmp);
                pn = med3(a, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(a, pl, pm, pn, cmp);
        }
        a.swap(base, pm);
        let (mut pa, mut pb) = (base + 1, base + 1);
        // pc/pd may step below base + 1 by one: kept as signed.
        let (mut pc, mut pd) = ((base + n - 1) as isize, (base + n - 1) as isize);
        loop {
            while pb as isize <= pc {
                let r = c(a, pb, base);
                if r == Ordering::Greater {
                    break;
                }
                if r == Ordering::Equal {
                    a.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb as isize <= pc {
                let r = c(a, pc as usize, base);
                if r == Ordering::Less {
                    break;
                }
                if r == Ordering::Equal {
                    a.swap(pc as usize, pd as usize);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb as isize > pc {
                break;
            }
            a.swap(pb, pc as usize);
            pb += 1;
            pc -= 1;
        }
        let pn = base + n;
        let r = (pa - base).min(pb - pa);
        vecswap(a, base, pb - r, r);
        let r = ((pd - pc) as usize).min(pn - pd as usize - 1);
        vecswap(a, pb, pn - r, r);
        let r = pb - pa;
        if r > 1 && overlaps(base, r, lrange, rrange) {
            pqsort_at(a, base, r, cmp, lrange, rrange);
        }
        let r = (pd - pc) as usize;
        if r > 1 {
            base = pn - r;
            n = r;
            if overlaps(base, n, lrange, rrange) {
                continue;
            }
        }
        return;
    }
}

/// Whether elements `start..start + len` meet `lrange..=rrange` (Redis
/// compares byte pointers; this is the same test on indices).
fn overlaps(start: usize, len: usize, lrange: usize, rrange: usize) -> bool {
    !((lrange < start && rrange < start) || (lrange >= start + len && rrange >= start + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_roundtrip() {
        for (x, y) in [
            (0u32, 0u32),
            (1, 2),
            (0xffff_ffff, 0),
            (0x1234_5678, 0x9abc_def0),
        ] {
            let i = interleave64(x, y);
            let d = deinterleave64(i);
            assert_eq!((d as u32, (d >> 32) as u32), (x, y));
        }
    }

    #[test]
    fn scores_match_redis() {
        // GEOADD Sicily 13.361389 38.115556 "Palermo" → ZSCORE 3479099956230698.
        assert_eq!(score_of(13.361389, 38.115556), 3479099956230698);
        assert_eq!(score_of(15.087269, 37.502669), 3479447370796909);
        let [lon, lat] = score_to_lonlat(3479099956230698.0);
        assert!((lon - 13.361389).abs() < 1e-5 && (lat - 38.115556).abs() < 1e-5);
    }

    #[test]
    fn geohash_strings() {
        assert_eq!(&geohash_string(3479099956230698.0), b"sqc8b49rny0");
        assert_eq!(&geohash_string(3479447370796909.0), b"sqdtr74hyu0");
    }

    #[test]
    fn distance_text() {
        let p = score_to_lonlat(3479099956230698.0);
        let c = score_to_lonlat(3479447370796909.0);
        assert_eq!(
            format_distance(distance(p[0], p[1], c[0], c[1])),
            "166274.1516"
        );
        assert_eq!(format_distance(0.0), "0.0000");
        assert_eq!(format_distance(0.00001), "0.0000");
        assert_eq!(format_distance(0.00009), "0.0001");
        assert_eq!(format_distance(1234567.89), "1234567.8900");
        assert_eq!(format_distance(12.5), "12.5000");
    }

    #[test]
    fn radius_search_ranges_cover_the_centre() {
        let shape = Shape {
            xy: [15.0, 37.0],
            conversion: 1000.0,
            kind: ShapeKind::Radius(200.0),
        };
        let ranges = shape.search_ranges();
        assert!(!ranges.is_empty() && ranges.len() <= 9);
        let s = score_of(13.361389, 38.115556);
        assert!(ranges.iter().any(|&(lo, hi)| lo <= s && s < hi));
        assert!(shape.contains(score_to_lonlat(s as f64)).is_some());
    }

    #[test]
    fn huge_and_tiny_radii_terminate() {
        for r in [0.0, 5e-324, 1e-300, 1.0, 1e7, 1e300, f64::INFINITY] {
            for lat in [0.0, 70.0, -85.0, 85.05112878] {
                let shape = Shape {
                    xy: [179.9, lat],
                    conversion: 1.0,
                    kind: ShapeKind::Radius(r),
                };
                let _ = shape.search_ranges();
                let bx = Shape {
                    kind: ShapeKind::Box {
                        width: r,
                        height: r,
                    },
                    ..shape
                };
                let _ = bx.search_ranges();
            }
        }
    }

    #[test]
    fn c_casts() {
        assert_eq!(c_u64(-1.0), u64::MAX);
        assert_eq!(c_u64(1.9), 1);
        assert_eq!(c_u64(f64::INFINITY), 0);
        assert_eq!(c_u64(f64::NEG_INFINITY), 0x8000_0000_0000_0000);
        assert_eq!(c_u64(1e19), 10_000_000_000_000_000_000);
    }

    #[test]
    fn pqsort_sorts_the_requested_part() {
        let mut seed = 7u64;
        for n in [0usize, 1, 5, 7, 8, 40, 41, 100, 500] {
            let mut v: Vec<u32> = (0..n)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (seed >> 40) as u32 % 50
                })
                .collect();
            let mut sorted = v.clone();
            sorted.sort();
            let k = n / 3;
            if n > 0 {
                pqsort(&mut v, &|a: &u32, b: &u32| a.cmp(b), 0, k);
                assert_eq!(v[..=k], sorted[..=k], "n={n}");
            }
        }
    }
}
