//! Reading the metadata log's frames back, telling a torn tail from damage. A crash can only
//! tear the frames written last, so damage that valid frames follow is a flipped bit or a
//! lost block, and a frame whose checksum holds but that does not decode was written by a
//! newer Shoal: neither may be cut away as if it were a torn tail.

use crate::entry::Entry;

/// Frame on disk: `[entry length u32][CRC-32C of the entry u32][entry]`, big-endian; the
/// entry is one change's generated metadata records (`entry`).
pub const FRAME_HEADER_BYTES: usize = 8;
/// No entry comes near this; a larger length can only be a torn or corrupt frame.
pub const FRAME_PAYLOAD_MAX_BYTES: usize = 256 << 20;

/// Appends `entry` as one frame.
pub fn encode_frame(entry: &Entry, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER_BYTES]);
    entry.encode(out);
    frame_at(out, start);
}

/// Fills in the header of the frame whose entry follows `start`.
pub fn frame_at(out: &mut [u8], start: usize) {
    let entry = &out[start + FRAME_HEADER_BYTES..];
    let len = entry.len() as u32;
    let crc = crc32c::crc32c(entry);
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_be_bytes());
}

/// The frames of one log file: the entries before the first bad frame and what was there.
#[derive(Debug, Default)]
pub struct FrameScan {
    pub entries: Vec<Entry>,
    /// Bytes of whole, valid frames from the start.
    pub valid_bytes: usize,
    pub damage: Option<FrameDamage>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameDamage {
    /// Where the first bad frame begins.
    pub offset: usize,
    pub kind: DamageKind,
    /// Where the next whole frame after the damage begins, if any.
    pub next_valid_frame: Option<usize>,
    /// Whole frames from `next_valid_frame` on, up to the end or the next damage: what
    /// cutting the file at `offset` would lose besides the bad frame.
    pub valid_frames_after: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DamageKind {
    /// The file ends inside the frame's header or payload.
    Truncated,
    /// The length field is zero or larger than any record.
    BadLength(u32),
    BadChecksum,
    /// The checksum holds but the payload is no record this build knows.
    Undecodable(String),
}

impl FrameDamage {
    /// Only a frame that nothing valid follows, and whose checksum failed, can be the torn
    /// end of an interrupted append.
    pub fn is_torn_tail(&self) -> bool {
        self.next_valid_frame.is_none() && !matches!(self.kind, DamageKind::Undecodable(_))
    }
}

impl std::fmt::Display for DamageKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DamageKind::Truncated => write!(f, "the file ends inside the frame"),
            DamageKind::BadLength(len) => write!(f, "impossible frame length {len}"),
            DamageKind::BadChecksum => write!(f, "checksum mismatch"),
            DamageKind::Undecodable(why) => write!(
                f,
                "checksum holds but the record does not decode ({why}); was it written by a \
                 newer Shoal?"
            ),
        }
    }
}

/// Decodes frames from the start of `buf` up to the first bad one, and looks past it for
/// valid frames.
pub fn scan_frames(buf: &[u8]) -> FrameScan {
    let mut scan = FrameScan::default();
    let mut pos = 0;
    while pos < buf.len() {
        match read_frame(buf, pos) {
            Ok((entry, next)) => {
                scan.entries.push(entry);
                pos = next;
            }
            Err(kind) => {
                let next_valid_frame = find_next_frame(buf, pos + 1);
                let valid_frames_after = next_valid_frame.map_or(0, |at| count_frames(buf, at));
                scan.damage = Some(FrameDamage {
                    offset: pos,
                    kind,
                    next_valid_frame,
                    valid_frames_after,
                });
                break;
            }
        }
    }
    scan.valid_bytes = pos;
    scan
}

/// The entry of the frame at `pos` and where the next frame begins.
fn read_frame(buf: &[u8], pos: usize) -> Result<(Entry, usize), DamageKind> {
    let (bytes, next) = read_entry(buf, pos)?;
    let entry = Entry::decode(bytes).map_err(DamageKind::Undecodable)?;
    Ok((entry, next))
}

/// The checked entry of the frame at `pos` and where the next frame begins.
pub fn read_entry(buf: &[u8], pos: usize) -> Result<(&[u8], usize), DamageKind> {
    let rest = &buf[pos..];
    if rest.len() < FRAME_HEADER_BYTES {
        return Err(DamageKind::Truncated);
    }
    let len = u32::from_be_bytes(rest[..4].try_into().expect("4 bytes"));
    let crc = u32::from_be_bytes(rest[4..8].try_into().expect("4 bytes"));
    if len == 0 || len as usize > FRAME_PAYLOAD_MAX_BYTES {
        return Err(DamageKind::BadLength(len));
    }
    let Some(payload) = rest[FRAME_HEADER_BYTES..].get(..len as usize) else {
        return Err(DamageKind::Truncated);
    };
    if crc32c::crc32c(payload) != crc {
        return Err(DamageKind::BadChecksum);
    }
    Ok((payload, pos + FRAME_HEADER_BYTES + len as usize))
}

/// The first offset at or after `from` where a whole, valid frame begins. Damage can hide
/// where frames start, so every offset is tried; a candidate must fit the buffer, carry a
/// matching checksum and decode, so chance matches in old bytes do not count.
fn find_next_frame(buf: &[u8], from: usize) -> Option<usize> {
    (from..buf.len().saturating_sub(FRAME_HEADER_BYTES)).find(|&at| read_frame(buf, at).is_ok())
}

fn count_frames(buf: &[u8], mut pos: usize) -> usize {
    let mut count = 0;
    while let Ok((_, next)) = read_frame(buf, pos) {
        count += 1;
        pos = next;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::tests::samples;

    fn framed(entries: &[Entry]) -> Vec<u8> {
        let mut buf = Vec::new();
        for e in entries {
            encode_frame(e, &mut buf);
        }
        buf
    }

    #[test]
    fn frames_round_trip() {
        let buf = framed(&samples());
        let scan = scan_frames(&buf);
        assert_eq!(scan.entries, samples());
        assert_eq!(scan.valid_bytes, buf.len());
        assert_eq!(scan.damage, None);
    }

    #[test]
    fn a_cut_anywhere_in_the_last_frame_is_a_torn_tail() {
        let all = samples();
        let buf = framed(&all);
        let whole_but_last = framed(&all[..all.len() - 1]).len();
        for cut in whole_but_last + 1..buf.len() {
            let scan = scan_frames(&buf[..cut]);
            assert_eq!(scan.entries.len(), all.len() - 1, "cut at {cut}");
            assert_eq!(scan.valid_bytes, whole_but_last);
            let damage = scan.damage.expect("damage reported");
            assert!(damage.is_torn_tail(), "cut at {cut}: {damage:?}");
        }
    }

    #[test]
    fn zeros_after_the_last_frame_are_a_torn_tail() {
        let mut buf = framed(&samples());
        let end = buf.len();
        buf.resize(end + 4096, 0);
        let damage = scan_frames(&buf).damage.unwrap();
        assert_eq!(damage.offset, end);
        assert!(damage.is_torn_tail());
    }

    #[test]
    fn a_flipped_bit_anywhere_before_the_last_frame_is_damage_not_a_tail() {
        let all = samples();
        let buf = framed(&all);
        let whole_but_last = framed(&all[..all.len() - 1]).len();
        for at in 0..whole_but_last {
            let mut damaged = buf.clone();
            damaged[at] ^= 0x10;
            let scan = scan_frames(&damaged);
            let damage = scan.damage.expect("damage found");
            assert!(!damage.is_torn_tail(), "bit flip at {at}: {damage:?}");
            assert!(damage.valid_frames_after >= 1);
        }
    }

    #[test]
    fn a_valid_frame_that_does_not_decode_is_never_a_torn_tail() {
        let mut buf = framed(&samples());
        // An entry with a record type this build does not know.
        let payload = [0, 0, 0, 0, 0, 0, 0, 0, 0x7E, 0x01, 0, 0, 0, 0, 0, 0];
        buf.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        buf.extend_from_slice(&crc32c::crc32c(&payload).to_be_bytes());
        buf.extend_from_slice(&payload);
        let damage = scan_frames(&buf).damage.unwrap();
        assert!(matches!(damage.kind, DamageKind::Undecodable(_)));
        assert!(!damage.is_torn_tail());
    }
}
