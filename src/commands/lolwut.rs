//! LOLWUT: Redis 8.0's computer art (lolwut.c and its per-version pieces).
//!
//! ```text
//! LOLWUT [VERSION version] [argument ...]
//! ```
//!
//! The version (given, or the Redis version zwindow answers as) picks the
//! piece as Redis's dispatch does, from the first characters of
//! `"<version>.0.0"`: 5 (and 4.9) draws Georg Nees's *Schotter* in braille
//! characters, 6 (and 5.9) a skyline in terminal grays, 8 (and 7.9)
//! recombines verses as Nanni Balestrini's TAPE MARK I; any other prints
//! only the version. The pieces keep Redis's arithmetic (the same `float`
//! and `double` steps, the same bounds), so what is not random is the same
//! to the pixel; the random choices, Redis's `rand()`, come from a
//! generator seeded afresh for each call.

use rand::{Rng, SeedableRng, rngs::StdRng};

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Handler, Keys, int_arg};
use crate::util::eq_ic;

pub(crate) static COMMANDS: &[Command] = &[Command::new(
    "lolwut",
    -1,
    READONLY | FAST,
    Keys::None,
    &(lolwut as Handler),
)
.doc(
    "server",
    "5.0.0",
    "",
    "Displays computer art and the Redis version",
)
.syntax("[VERSION version]")];

/// The pieces, as Redis's `lolwutCommand` picks them.
#[derive(Debug, PartialEq, Eq)]
enum Piece {
    Schotter,
    Skyline,
    Poem,
    VersionOnly,
}

/// Redis's test on the version string's first three characters.
fn piece(v: &[u8]) -> Piece {
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    let (a, dot, b) = (at(0), at(1) == b'.', at(2));
    match (a, dot, b) {
        (b'5', true, b) if b != b'9' => Piece::Schotter,
        (b'4', true, b'9') => Piece::Schotter,
        (b'6', true, b) if b != b'9' => Piece::Skyline,
        (b'5', true, b'9') => Piece::Skyline,
        (b'8', true, b) if b != b'9' => Piece::Poem,
        (b'7', true, b'9') => Piece::Poem,
        _ => Piece::VersionOnly,
    }
}

/// LOLWUT [VERSION version] [argument ...].
fn lolwut(ctx: &mut Ctx) -> CmdResult {
    let mut first = 1;
    let version = if ctx.args.len() >= 3 && eq_ic(&ctx.args[1], "VERSION") {
        // Redis prints the number as `%u` of an unsigned int.
        let n = int_arg(&ctx.args[2])? as u32;
        first = 3;
        format!("{n}.0.0")
    } else {
        crate::version::REDIS_VERSION.to_string()
    };
    let args: Vec<&[u8]> = (first..ctx.args.len()).map(|i| &ctx.args[i]).collect();
    let mut rng = CRand::new();
    let text = match piece(version.as_bytes()) {
        Piece::Schotter => {
            let [cols, per_row, per_col] = longs(&args, [66, 8, 12])?;
            let mut text = schotter(
                &mut rng,
                cols.clamp(1, 1000),
                per_row.clamp(1, 200),
                per_col.clamp(1, 200),
            );
            text.extend_from_slice(b"\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. ");
            text.extend_from_slice(crate::version::REDIS_VERSION.as_bytes());
            text.push(b'\n');
            text
        }
        Piece::Skyline => {
            let [cols, rows] = longs(&args, [80, 20])?;
            let mut text = skyline(&mut rng, cols.clamp(1, 1000), rows.clamp(1, 1000));
            text.extend_from_slice(
                b"\nDedicated to the 8 bit game developers of past and present.\n\
                  Original 8 bit image from Plaguemon by hikikomori. Redis ver. ",
            );
            text.extend_from_slice(crate::version::REDIS_VERSION.as_bytes());
            text.push(b'\n');
            text
        }
        Piece::Poem => {
            let italian = args.first().is_some_and(|a| eq_ic(a, "IT"));
            poem(&mut rng, italian)
        }
        Piece::VersionOnly => {
            format!("Redis ver. {}\n", crate::version::REDIS_VERSION).into_bytes()
        }
    };
    ctx.out.verbatim(&text);
    Ok(Done)
}

/// The piece's optional integer arguments, in order, over their defaults
/// (Redis's `getLongFromObjectOrReply` on each given one; extra ones are
/// ignored).
fn longs<const N: usize>(args: &[&[u8]], defaults: [i64; N]) -> Result<[i64; N], super::Error> {
    let mut out = defaults;
    for (slot, arg) in out.iter_mut().zip(args) {
        *slot = int_arg(arg)?;
    }
    Ok(out)
}

/// Redis's `rand()`: 0 to `RAND_MAX` (2³¹ − 1), here from a generator
/// seeded for this call.
struct CRand(StdRng);

const RAND_MAX: i32 = i32::MAX;

impl CRand {
    fn new() -> CRand {
        CRand(StdRng::seed_from_u64(rand::random()))
    }

    #[cfg(test)]
    fn seeded(seed: u64) -> CRand {
        CRand(StdRng::seed_from_u64(seed))
    }

    fn next(&mut self) -> i32 {
        self.0.random_range(0..=RAND_MAX)
    }
}

/// A canvas of small colors (Redis's `lwCanvas`), pixels outside it
/// ignored when drawn and 0 when read.
struct Canvas {
    width: i32,
    height: i32,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: i32, height: i32, color: u8) -> Canvas {
        Canvas {
            width,
            height,
            pixels: vec![color; (width.max(0) as usize) * (height.max(0) as usize)],
        }
    }

    fn index(&self, x: i32, y: i32) -> Option<usize> {
        (x >= 0 && x < self.width && y >= 0 && y < self.height)
            .then(|| x as usize + y as usize * self.width as usize)
    }

    fn draw(&mut self, x: i32, y: i32, color: u8) {
        if let Some(i) = self.index(x, y) {
            self.pixels[i] = color;
        }
    }

    fn get(&self, x: i32, y: i32) -> u8 {
        self.index(x, y).map_or(0, |i| self.pixels[i])
    }
}

/// Bresenham's line from (x1, y1) to (x2, y2), each pixel handed to `plot`
/// (Redis's `lwDrawLine`).
fn line(mut x1: i32, mut y1: i32, x2: i32, y2: i32, plot: &mut impl FnMut(i32, i32)) {
    let dx = (x2 - x1).abs();
    let dy = (y2 - y1).abs();
    let sx = if x1 < x2 { 1 } else { -1 };
    let sy = if y1 < y2 { 1 } else { -1 };
    let mut err = dx - dy;
    loop {
        plot(x1, y1);
        if x1 == x2 && y1 == y2 {
            break;
        }
        let e2 = err * 2;
        if e2 > -dy {
            err -= dy;
            x1 += sx;
        }
        if e2 < dx {
            err += dx;
            y1 += sy;
        }
    }
}

/// A square of side `size` centred on (x, y), turned by `angle` (Redis's
/// `lwDrawSquare`, its `float` and `double` steps kept).
fn square(x: i32, y: i32, size: f32, angle: f32, plot: &mut impl FnMut(i32, i32)) {
    // The side of a square inscribed in a circle of radius 1 is √2, as
    // Redis writes it (not `SQRT_2`: the same digits, the same roundings).
    #[allow(clippy::approx_constant)]
    let size = (f64::from(size) / 1.4142135623) as f32;
    let size = f64::from(size).round() as f32;
    let mut k = (std::f64::consts::FRAC_PI_4 + f64::from(angle)) as f32;
    let mut px = [0i32; 4];
    let mut py = [0i32; 4];
    for j in 0..4 {
        px[j] = (f64::from(k).sin() * f64::from(size) + f64::from(x)).round() as i32;
        py[j] = (f64::from(k).cos() * f64::from(size) + f64::from(y)).round() as i32;
        k = (f64::from(k) + std::f64::consts::FRAC_PI_2) as f32;
    }
    for j in 0..4 {
        line(px[j], py[j], px[(j + 1) % 4], py[(j + 1) % 4], plot);
    }
}

/// Schotter (Redis's `lwDrawSchotter` and its braille rendering): squares
/// in rows, turned and moved more at random row after row. The canvas is
/// kept as its set pixels (a few per square side), not as a bitmap, which
/// at the largest arguments would take hundreds of megabytes.
fn schotter(rng: &mut CRand, cols: i64, per_row: i64, per_col: i64) -> Vec<u8> {
    let width = (cols * 2) as i32;
    let padding = if width > 4 { 2 } else { 0 };
    let side = (width - padding * 2) as f32 / per_row as f32;
    let height = (side * per_col as f32 + (padding * 2) as f32) as i32;
    let mut pixels: Vec<(i32, i32)> = Vec::new();
    let mut plot = |x: i32, y: i32| {
        if x >= 0 && x < width && y >= 0 && y < height {
            pixels.push((y, x));
        }
    };
    for y in 0..per_col as i32 {
        for x in 0..per_row as i32 {
            let mut sx = (x as f32 * side + side / 2.0 + padding as f32) as i32;
            let mut sy = (y as f32 * side + side / 2.0 + padding as f32) as i32;
            let mut angle = 0.0f32;
            if y > 1 {
                let mut r = [0f32; 3];
                for v in r.iter_mut() {
                    *v = rng.next() as f32 / RAND_MAX as f32 / per_col as f32 * y as f32;
                }
                for v in r.iter_mut() {
                    if rng.next() % 2 != 0 {
                        *v = -*v;
                    }
                }
                angle = r[0];
                sx = (sx as f32 + r[1] * side / 3.0) as i32;
                sy = (sy as f32 + r[2] * side / 3.0) as i32;
            }
            square(sx, sy, side, angle, &mut plot);
        }
    }
    pixels.sort_unstable();
    pixels.dedup();
    braille(&pixels, width, height)
}

/// Renders set pixels (sorted by row, then column) as braille characters,
/// each 2 pixels wide and 4 tall, a line per 4 rows (Redis's
/// `renderCanvas` of lolwut5.c, its line breaks included).
fn braille(pixels: &[(i32, i32)], width: i32, height: i32) -> Vec<u8> {
    let cells = ((width + 1) / 2) as usize;
    let mut text = Vec::new();
    let mut row = vec![0u8; cells];
    let mut next = 0;
    let mut y = 0;
    while y < height {
        row.iter_mut().for_each(|c| *c = 0);
        while let Some(&(py, px)) = pixels.get(next) {
            if py >= y + 4 {
                break;
            }
            next += 1;
            let bit = match (py - y, px % 2) {
                (0, 0) => 0,
                (1, 0) => 1,
                (2, 0) => 2,
                (0, _) => 3,
                (1, _) => 4,
                (2, _) => 5,
                (3, 0) => 6,
                _ => 7,
            };
            row[(px / 2) as usize] |= 1 << bit;
        }
        for &byte in &row {
            let code = 0x2800 + u32::from(byte);
            text.extend_from_slice(&[
                0xE0 | (code >> 12) as u8,
                0x80 | ((code >> 6) & 0x3F) as u8,
                0x80 | (code & 0x3F) as u8,
            ]);
        }
        if y != height - 1 {
            text.push(b'\n');
        }
        y += 4;
    }
    text
}

/// One building of the skyline (Redis's `struct skyscraper`).
struct Skyscraper {
    xoff: i32,
    width: i32,
    height: i32,
    windows: bool,
    color: u8,
}

/// Redis's `generateSkyscraper`: a building on the canvas's bottom, its
/// roof narrower, windows two pixels wide in one of the grays.
fn skyscraper(rng: &mut CRand, canvas: &mut Canvas, si: &Skyscraper) {
    let starty = canvas.height - 1;
    let endy = starty - si.height + 1;
    let mut y = starty;
    while y >= endy {
        for x in si.xoff..si.xoff + si.width {
            if y == endy && (x <= si.xoff + 1 || x >= si.xoff + si.width - 2) {
                continue;
            }
            let mut color = si.color;
            if si.windows
                && x > si.xoff + 1
                && x < si.xoff + si.width - 2
                && y > endy + 1
                && y < starty - 1
            {
                let relx = x - (si.xoff + 1);
                let rely = y - (endy + 1);
                if (relx / 2) % 2 != 0 && rely % 2 != 0 {
                    loop {
                        color = 1 + (rng.next() % 2) as u8;
                        if color != si.color {
                            break;
                        }
                    }
                    if relx % 2 != 0 {
                        color = canvas.get(x - 1, y);
                    }
                }
            }
            canvas.draw(x, y, color);
        }
        y -= 1;
    }
}

/// Redis's `generateSkyline` on a `cols` × `rows` canvas, rendered in the
/// four terminal grays (lolwut6.c's `renderCanvas`).
fn skyline(rng: &mut CRand, cols: i64, rows: i64) -> Vec<u8> {
    let mut canvas = Canvas::new(cols as i32, rows as i32, 3);
    let (w, h) = (canvas.width, canvas.height);
    // The background, lighter buildings behind, without windows.
    for color in [2u8, 1] {
        let mut offset = -10;
        while offset < w {
            offset += rng.next() % 8;
            let width = 10 + rng.next() % 9;
            let height = if color == 2 {
                h / 2 + (rng.next() % h) / 2
            } else {
                h / 2 + (rng.next() % h) / 3
            };
            let si = Skyscraper {
                xoff: offset,
                width,
                height,
                windows: false,
                color,
            };
            skyscraper(rng, &mut canvas, &si);
            offset += if color == 2 { width / 2 } else { width + 1 };
        }
    }
    // The foreground, black with windows.
    let mut offset = -10;
    while offset < w {
        offset += rng.next() % 8;
        let mut width = 5 + rng.next() % 14;
        if width % 4 != 0 {
            width += width % 3;
        }
        let height = h / 3 + (rng.next() % h) / 2;
        let si = Skyscraper {
            xoff: offset,
            width,
            height,
            windows: true,
            color: 0,
        };
        skyscraper(rng, &mut canvas, &si);
        offset += width + 5;
    }
    let mut text = Vec::with_capacity((w * h * 14) as usize);
    for y in 0..h {
        for x in 0..w {
            let escape: &[u8] = match canvas.get(x, y) {
                1 => b"0;90;100m",
                2 => b"0;37;47m",
                3 => b"0;97;107m",
                _ => b"0;30;40m",
            };
            text.extend_from_slice(b"\x1b[");
            text.extend_from_slice(escape);
            text.extend_from_slice(b" \x1b[0m");
        }
        if y != h - 1 {
            text.push(b'\n');
        }
    }
    text
}

/// A verse of TAPE MARK I: English and Italian texts, the metrical
/// fractions that chain verses, and its source (1 to 3).
struct Verse {
    en: &'static str,
    it: &'static str,
    fraction1: &'static [u8; 3],
    fraction2: &'static [u8; 3],
    group: u8,
}

const fn verse(
    en: &'static str,
    it: &'static str,
    fraction1: &'static [u8; 3],
    fraction2: &'static [u8; 3],
    group: u8,
) -> Verse {
    Verse {
        en,
        it,
        fraction1,
        fraction2,
        group,
    }
}

/// lolwut8.c's verses: Michihito Hachiya's Diary of Hiroshima, Paul
/// Goldwin's The Mystery of the Elevator, Lao Tse's Tao Te Ching.
static VERSES: [Verse; 15] = [
    verse(
        " The blinding / globe / of fire ",
        " l accecante   /  globo  /  di fuoco  ",
        b"1/4",
        b"2/3",
        1,
    ),
    verse(
        " It expands / rapidly ",
        " si espande   /  rapidamente  ",
        b"1/2",
        b"3/4",
        1,
    ),
    verse(
        " Thirty times / brighter / than the sun ",
        " trenta volte  / piu luminoso  / del sole ",
        b"2/3",
        b"2/4",
        1,
    ),
    verse(
        " When it reaches / the stratosphere ",
        " quando  raggiunge / la stratosfera  ",
        b"3/4",
        b"1/2",
        1,
    ),
    verse(
        " The summit / of the cloud ",
        " la  sommita  /  della nuvola ",
        b"1/3",
        b"2/3",
        1,
    ),
    verse(
        " Assumes / the well-known shape / of a mushroom ",
        " assume   / la ben nota forma  / di fungo ",
        b"2/4",
        b"3/4",
        1,
    ),
    verse(
        " The head / pressed / upon the shoulder ",
        " la testa / premuta  / sulla spalla  ",
        b"1/4",
        b"2/4",
        2,
    ),
    verse(
        " The hair / between the lips ",
        " i  capelli   /  tra le labbra ",
        b"1/4",
        b"2/4",
        2,
    ),
    verse(
        " They lay / motionless / without speaking ",
        " giacquero  /   immobili / senza parlare ",
        b"2/3",
        b"2/3",
        2,
    ),
    verse(
        " Till he moved / his fingers / slowly ",
        " finche non mosse  /  le dita  / lentamente    ",
        b"3/4",
        b"1/3",
        2,
    ),
    verse(
        " Trying / to grasp ",
        " cercando / di afferrare  ",
        b"3/4",
        b"1/2",
        2,
    ),
    verse(
        " While the multitude / of things / comes into being ",
        " mentre la moltitudine  /  delle cose  /   accade   ",
        b"1/2",
        b"1/2",
        3,
    ),
    verse(
        " I envisage / their return ",
        " io contemplo  /  il loro ritorno    ",
        b"2/3",
        b"3/4",
        3,
    ),
    verse(
        " Although / things / flourish ",
        " malgrado / che le cose  /  fioriscano    ",
        b"1/2",
        b"2/3",
        3,
    ),
    verse(
        " They all return / to / their roots ",
        " esse tornano  / tutte    / alla loro radice   ",
        b"2/3",
        b"1/4",
        3,
    ),
];

const POEM_NOTE: &str = "\nIn 1961, Nanni Balestrini created one of the first computer-generated poems, TAPE MARK I, using an IBM 7090 mainframe. Each execution combined verses from three literary sources following algorithmic rules based on metrical compatibility and group constraints. This LOLWUT command reproduces Balestrini's original algorithm, generating new stanzas through the same computational poetry process described in Almanacco Letterario Bompiani, 1962.\n\n\
https://en.wikipedia.org/wiki/Digital_poetry\n\
https://www.youtube.com/watch?v=8i7uFCK7G0o (English subs)\n\n\
Use: LOLWUT IT for the original Italian output.\n\n";

/// Redis's `lolwut8Command`: the verses shuffled (Fisher–Yates), then up
/// to ten chained, each of another source than the one before and with a
/// fraction matching its second one; in capitals, the slashes blanked.
fn poem(rng: &mut CRand, italian: bool) -> Vec<u8> {
    let mut pool: Vec<&Verse> = VERSES.iter().collect();
    for i in (1..pool.len()).rev() {
        let j = (rng.next() as usize) % (i + 1);
        pool.swap(i, j);
    }
    let mut stanza: Vec<&Verse> = Vec::with_capacity(10);
    while stanza.len() < 10 {
        let fits = |v: &Verse| match stanza.last() {
            None => true,
            Some(prev) => {
                (v.fraction1[0] == prev.fraction2[0]
                    || v.fraction1[2] == prev.fraction2[0]
                    || v.fraction1[2] == prev.fraction2[2])
                    && v.group != prev.group
            }
        };
        let Some(i) = pool.iter().position(|v| fits(v)) else {
            break;
        };
        stanza.push(pool.remove(i));
    }
    let mut text = Vec::new();
    for v in stanza {
        text.extend_from_slice(if italian { v.it } else { v.en }.as_bytes());
        text.push(b'\n');
    }
    for b in text.iter_mut() {
        *b = if *b == b'/' {
            b' '
        } else {
            b.to_ascii_uppercase()
        };
    }
    text.extend_from_slice(POEM_NOTE.as_bytes());
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_pick_pieces_as_redis() {
        for (v, p) in [
            ("5.0.0", Piece::Schotter),
            ("4.9.0", Piece::Schotter),
            ("5.9.0", Piece::Skyline),
            ("6.2.1", Piece::Skyline),
            ("7.9.0", Piece::Poem),
            ("8.0.2", Piece::Poem),
            ("8.9.0", Piece::VersionOnly),
            ("7.0.15", Piece::VersionOnly),
            ("4.0.0", Piece::VersionOnly),
            ("59.0.0", Piece::VersionOnly),
            ("4294967295.0.0", Piece::VersionOnly),
            ("", Piece::VersionOnly),
        ] {
            assert_eq!(piece(v.as_bytes()), p, "{v}");
        }
    }

    #[test]
    fn schotter_has_the_canvas_shape() {
        // 66 columns: a 132 × 196 canvas, 49 lines of 66 characters.
        let text = schotter(&mut CRand::seeded(1), 66, 8, 12);
        let text = String::from_utf8(text).unwrap();
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(lines.len(), 50);
        assert_eq!(lines[49], "");
        assert!(lines[..49].iter().all(|l| l.chars().count() == 66));
        // The first rows are not random: the same for every seed.
        let again = schotter(&mut CRand::seeded(2), 66, 8, 12);
        let again = String::from_utf8(again).unwrap();
        assert_eq!(
            text.split('\n').take(8).collect::<Vec<_>>(),
            again.split('\n').take(8).collect::<Vec<_>>()
        );
    }

    #[test]
    fn largest_schotter_is_bounded() {
        // About a 2000 × 2000 canvas: about 500 lines of 1000 characters.
        let text = schotter(&mut CRand::seeded(3), 1000, 200, 200);
        let lines = text.iter().filter(|&&b| b == b'\n').count();
        assert!((499..=501).contains(&lines), "{lines}");
        // Tall: 1 square a row, 200 a column, each 196 pixels (at 1000
        // columns, 1996: a 300 MB reply, as Redis's).
        let text = schotter(&mut CRand::seeded(3), 100, 1, 200);
        let lines = text.iter().filter(|&&b| b == b'\n').count();
        assert_eq!(lines, (196 * 200 + 4) / 4);
    }

    #[test]
    fn skyline_fills_the_canvas() {
        let text = skyline(&mut CRand::seeded(4), 80, 20);
        let text = String::from_utf8(text).unwrap();
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(lines.len(), 20);
        for l in lines {
            assert_eq!(l.matches("\x1b[0m").count(), 80);
        }
    }

    #[test]
    fn poems_chain_verses() {
        for seed in 0..200 {
            let text = poem(&mut CRand::seeded(seed), false);
            let text = String::from_utf8(text).unwrap();
            let body = text.strip_suffix(POEM_NOTE).unwrap();
            let lines: Vec<&str> = body.lines().collect();
            assert!(!lines.is_empty() && lines.len() <= 10);
            let mut prev: Option<&Verse> = None;
            for l in lines {
                let v = VERSES
                    .iter()
                    .find(|v| v.en.to_uppercase().replace('/', " ") == l)
                    .unwrap_or_else(|| panic!("{l:?}"));
                if let Some(p) = prev {
                    assert_ne!(p.group, v.group);
                }
                prev = Some(v);
            }
        }
    }
}
