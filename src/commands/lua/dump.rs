//! FUNCTION DUMP / RESTORE payloads, in Redis 7.0's own format (which 7.4
//! and 8.0 keep, saying RDB version 12), so a dump
//! taken from redis-server restores into zwindow and the other way round.
//!
//! A payload is a sequence of libraries, each `0xF5` (RDB_OPCODE_FUNCTION2)
//! followed by the library's code as an RDB string, then a 2-byte RDB
//! version (little-endian) and the CRC-64 (Jones, as Redis's `crc64`) of
//! everything before it. We write strings uncompressed (always valid RDB);
//! we read LZF-compressed ones too, since Redis compresses long libraries.
//! Every length in a payload is untrusted: nothing is allocated beyond what
//! the payload itself can hold.

#[cfg(test)]
use crate::rdb::RDB_VERSION;
use crate::rdb::RDB_VERSION_MAX_READ;
use crate::rdb::codec::{CRC64, put_len};

/// The opcode of a function library in a payload.
const OPCODE_FUNCTION2: u8 = 0xF5;
/// LZF expands at most ~100× (a 3-byte back-reference yields 264 bytes).
const LZF_MAX_RATIO: usize = 100;

const BAD_PAYLOAD: &str = "ERR DUMP payload version or checksum are wrong";
const NOT_A_FUNCTION: &str = "ERR given type is not a function";

/// Serializes library codes, saying RDB `version` (`rdb-version`'s).
pub(crate) fn encode<'a>(codes: impl Iterator<Item = &'a [u8]>, version: u16) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(OPCODE_FUNCTION2);
        put_len(&mut out, code.len() as u64);
        out.extend_from_slice(code);
    }
    out.extend_from_slice(&version.to_le_bytes());
    let crc = CRC64.checksum(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Parses a payload into library codes, checking version and checksum.
pub(crate) fn decode(payload: &[u8]) -> Result<Vec<Vec<u8>>, &'static str> {
    if payload.len() < 10 {
        return Err(BAD_PAYLOAD);
    }
    let (body, footer) = payload.split_at(payload.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    // Redis 7.4 and 8.0 say 12: the library opcode is the same.
    if version > RDB_VERSION_MAX_READ
        || CRC64.checksum(&payload[..payload.len() - 8]) != u64::from_le_bytes(crc)
    {
        return Err(BAD_PAYLOAD);
    }
    let mut r = Reader { data: body, pos: 0 };
    let mut codes = Vec::new();
    while r.pos < body.len() {
        if r.byte()? != OPCODE_FUNCTION2 {
            return Err(NOT_A_FUNCTION);
        }
        codes.push(r.string()?);
    }
    Ok(codes)
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

/// What an RDB length field announces.
enum Len {
    Plain(u64),
    /// A special encoding (`11xxxxxx`): integers or LZF.
    Encoded(u8),
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, &'static str> {
        let b = *self.data.get(self.pos).ok_or(BAD_PAYLOAD)?;
        self.pos += 1;
        Ok(b)
    }

    fn take(&mut self, n: u64) -> Result<&[u8], &'static str> {
        let n = usize::try_from(n).map_err(|_| BAD_PAYLOAD)?;
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or(BAD_PAYLOAD)?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn len(&mut self) -> Result<Len, &'static str> {
        let first = self.byte()?;
        Ok(match first >> 6 {
            0 => Len::Plain((first & 0x3f) as u64),
            1 => Len::Plain((((first & 0x3f) as u64) << 8) | self.byte()? as u64),
            2 if first == 0x80 => {
                let b = self.take(4)?;
                Len::Plain(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as u64)
            }
            2 if first == 0x81 => {
                let b = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Len::Plain(u64::from_be_bytes(a))
            }
            2 => return Err(BAD_PAYLOAD),
            _ => Len::Encoded(first & 0x3f),
        })
    }

    fn plain_len(&mut self) -> Result<u64, &'static str> {
        match self.len()? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(_) => Err(BAD_PAYLOAD),
        }
    }

    fn string(&mut self) -> Result<Vec<u8>, &'static str> {
        match self.len()? {
            Len::Plain(n) => Ok(self.take(n)?.to_vec()),
            // RDB_ENC_INT8/16/32: the string is a decimal integer.
            Len::Encoded(enc @ 0..=2) => {
                let bytes = self.take(1 << enc)?;
                let n = match bytes.len() {
                    1 => bytes[0] as i8 as i64,
                    2 => i16::from_le_bytes([bytes[0], bytes[1]]) as i64,
                    _ => i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as i64,
                };
                Ok(n.to_string().into_bytes())
            }
            // RDB_ENC_LZF.
            Len::Encoded(3) => {
                let clen = self.plain_len()?;
                let len = self.plain_len()?;
                let compressed = self.take(clen)?;
                let len = usize::try_from(len).map_err(|_| BAD_PAYLOAD)?;
                if len > compressed.len().saturating_mul(LZF_MAX_RATIO) {
                    return Err(BAD_PAYLOAD);
                }
                lzf::decompress(compressed, len).map_err(|_| BAD_PAYLOAD)
            }
            Len::Encoded(_) => Err(BAD_PAYLOAD),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_dump_matches_redis() {
        // `FUNCTION DUMP` of redis-server 7.0.15 with no libraries.
        assert_eq!(
            encode(std::iter::empty(), RDB_VERSION),
            b"\n\x00]\x9b\\@\x0f\x7f\xa2\xda"
        );
    }

    #[test]
    fn library_dump_matches_redis() {
        // `FUNCTION DUMP` of redis-server 7.0.15 holding this one library.
        let code = b"#!lua name=mylib\nredis.register_function('f1', function() return 1 end)";
        let mut want = vec![0xF5, 0x40, 0x47];
        want.extend_from_slice(code);
        want.extend_from_slice(b"\n\x00\x07P\x04\x04\xcd\x92\xd1\xb3");
        assert_eq!(encode(std::iter::once(&code[..]), RDB_VERSION), want);
        assert_eq!(decode(&want).unwrap(), vec![code.to_vec()]);
    }

    #[test]
    fn round_trips_long_libraries_and_rejects_damage() {
        let long = vec![b'x'; 20_000];
        let libs = [&b"short"[..], &long[..]];
        let dumped = encode(libs.iter().copied(), 12);
        assert_eq!(
            decode(&dumped).unwrap(),
            vec![b"short".to_vec(), long.clone()]
        );
        let mut bad = dumped.clone();
        bad[5] ^= 1;
        assert_eq!(decode(&bad), Err(BAD_PAYLOAD));
        assert_eq!(decode(b"garbage"), Err(BAD_PAYLOAD));
        // A valid checksum over a body whose lengths lie.
        let mut lie = vec![OPCODE_FUNCTION2, 0x80, 0xff, 0xff, 0xff, 0xff];
        lie.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = CRC64.checksum(&lie);
        lie.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(decode(&lie), Err(BAD_PAYLOAD));
    }

    #[test]
    fn reads_lzf_compressed_strings() {
        let code = b"#!lua name=z\n".repeat(50);
        let compressed = lzf::compress(&code).unwrap();
        let mut body = vec![OPCODE_FUNCTION2, 0xC3];
        put_len(&mut body, compressed.len() as u64);
        put_len(&mut body, code.len() as u64);
        body.extend_from_slice(&compressed);
        body.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = CRC64.checksum(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(decode(&body).unwrap(), vec![code]);
    }
}
