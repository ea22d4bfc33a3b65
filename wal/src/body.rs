//! An object's bytes as the pieces they arrived in. A produced object is the record batches of
//! many requests, each still in the buffer its request was read into: kept as those pieces,
//! the bytes are copied once on their way to disk (into the aligned buffer a direct write
//! reads) instead of first being gathered into one buffer, and served to tailing readers from
//! the pieces themselves.

use std::borrow::Cow;

use bytes::{Bytes, BytesMut};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectBody {
    pieces: Vec<Bytes>,
    /// Where each piece starts in the body, so a range is found by binary search.
    starts: Vec<usize>,
    len: usize,
}

impl ObjectBody {
    /// Appends `piece` after the bytes already here (an empty one is skipped).
    pub fn push(&mut self, piece: Bytes) {
        if piece.is_empty() {
            return;
        }
        self.starts.push(self.len);
        self.len += piece.len();
        self.pieces.push(piece);
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes `start..start + len`, sharing these pieces; None past the end.
    pub fn range(&self, start: usize, len: usize) -> Option<ObjectBody> {
        let end = start.checked_add(len).filter(|&end| end <= self.len)?;
        let mut range = ObjectBody::default();
        if len == 0 {
            return Some(range);
        }
        for index in self.piece_at(start)..self.pieces.len() {
            let piece_start = self.starts[index];
            if piece_start >= end {
                break;
            }
            let piece = &self.pieces[index];
            let from = start.saturating_sub(piece_start);
            let to = (end - piece_start).min(piece.len());
            range.push(piece.slice(from..to));
        }
        Some(range)
    }

    /// The bytes `start..start + len`: borrowed when they lie in one piece (a batch always
    /// does in a produced object), else gathered; None past the end.
    pub fn get(&self, start: usize, len: usize) -> Option<Cow<'_, [u8]>> {
        start.checked_add(len).filter(|&end| end <= self.len)?;
        if len == 0 {
            return Some(Cow::Borrowed(&[]));
        }
        let index = self.piece_at(start);
        let from = start - self.starts[index];
        let piece = &self.pieces[index];
        if from + len <= piece.len() {
            return Some(Cow::Borrowed(&piece[from..from + len]));
        }
        let mut gathered = vec![0; len];
        self.copy_to(start, &mut gathered);
        Some(Cow::Owned(gathered))
    }

    /// Fills `out` with the bytes from `start`; they must all be here.
    pub fn copy_to(&self, start: usize, out: &mut [u8]) {
        assert!(
            start + out.len() <= self.len,
            "copy past the end of the body"
        );
        if out.is_empty() {
            return;
        }
        let mut filled = 0;
        let mut index = self.piece_at(start);
        while filled < out.len() {
            let piece = &self.pieces[index];
            let from = (start + filled) - self.starts[index];
            let n = (piece.len() - from).min(out.len() - filled);
            out[filled..filled + n].copy_from_slice(&piece[from..from + n]);
            filled += n;
            index += 1;
        }
    }

    /// One buffer: shared when the body is one piece, else gathered (a copy).
    pub fn to_contiguous(&self) -> Bytes {
        match self.pieces.as_slice() {
            [] => Bytes::new(),
            [one] => one.clone(),
            pieces => {
                let mut gathered = BytesMut::with_capacity(self.len);
                for piece in pieces {
                    gathered.extend_from_slice(piece);
                }
                gathered.freeze()
            }
        }
    }

    /// The piece holding byte `at` (< len).
    fn piece_at(&self, at: usize) -> usize {
        self.starts.partition_point(|&start| start <= at) - 1
    }
}

impl From<Bytes> for ObjectBody {
    fn from(bytes: Bytes) -> ObjectBody {
        let mut body = ObjectBody::default();
        body.push(bytes);
        body
    }
}

impl From<&Bytes> for ObjectBody {
    fn from(bytes: &Bytes) -> ObjectBody {
        ObjectBody::from(bytes.clone())
    }
}

impl From<Vec<u8>> for ObjectBody {
    fn from(bytes: Vec<u8>) -> ObjectBody {
        ObjectBody::from(Bytes::from(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_of(pieces: &[&'static [u8]]) -> ObjectBody {
        let mut body = ObjectBody::default();
        for piece in pieces {
            body.push(Bytes::from_static(piece));
        }
        body
    }

    #[test]
    fn every_range_reads_what_the_gathered_bytes_hold() {
        let body = body_of(&[b"abc", b"", b"d", b"efgh"]);
        let whole = b"abcdefgh";
        assert_eq!(&body.to_contiguous()[..], whole);
        for start in 0..=whole.len() {
            for len in 0..=whole.len() - start {
                let want = &whole[start..start + len];
                assert_eq!(&body.range(start, len).unwrap().to_contiguous()[..], want);
                assert_eq!(&body.get(start, len).unwrap()[..], want);
                let mut out = vec![0; len];
                body.copy_to(start, &mut out);
                assert_eq!(out, want);
            }
            assert!(body.range(start, whole.len() - start + 1).is_none());
            assert!(body.get(start, whole.len() - start + 1).is_none());
        }
        assert!(body.range(usize::MAX, 2).is_none(), "no overflow");
    }

    #[test]
    fn a_range_within_one_piece_is_borrowed_and_shares_it() {
        let body = body_of(&[b"abc", b"defg"]);
        assert!(matches!(body.get(3, 4), Some(Cow::Borrowed(b"defg"))));
        assert!(matches!(body.get(2, 2), Some(Cow::Owned(_))));
        let range = body.range(4, 2).unwrap();
        assert_eq!(range.pieces.len(), 1);
        assert_eq!(range.to_contiguous().as_ptr(), body.pieces[1][1..].as_ptr());
    }
}
