//! The consumer protocol embedded in classic groups (protocol type "consumer"): a member's
//! subscription (its JoinGroup metadata) and its assignment (its SyncGroup bytes), versions
//! 0–3, none flexible. The broker reads them to carry a classic group's members into a
//! consumer-protocol group, and writes assignments for classic members it assigns itself.
//! Every count is checked against the bytes left before anything is allocated.

/// The newest version of either structure this reader knows; a newer one is read as this
/// one (its additions come after these fields), as Kafka's readers do.
const NEWEST_VERSION: i16 = 3;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subscription {
    pub version: i16,
    pub topics: Vec<String>,
    /// v1+: what the member owns as it rejoins (cooperative members; eager ones own nothing).
    pub owned: Vec<(String, Vec<i32>)>,
    /// v3+.
    pub rack_id: Option<String>,
}

/// The topic list alone (the cheap read: OffsetDelete asks which topics a group consumes).
pub fn subscribed_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let mut reader = Reader(metadata);
    reader.i16()?;
    reader.strings()
}

pub fn read_subscription(metadata: &[u8]) -> Option<Subscription> {
    let mut reader = Reader(metadata);
    let version = reader.i16()?;
    if version < 0 {
        return None;
    }
    let topics = reader.strings()?;
    reader.nullable_bytes()?; // user data
    let owned = match version >= 1 {
        true => reader.topic_partitions()?,
        false => Vec::new(),
    };
    if version >= 2 {
        reader.i32()?; // generation
    }
    let rack_id = match version >= 3 {
        true => reader.nullable_string()?,
        false => None,
    };
    Some(Subscription {
        version,
        topics,
        owned,
        rack_id,
    })
}

/// The partitions of an assignment; empty bytes (a member never synced) assign nothing.
pub fn read_assignment(bytes: &[u8]) -> Option<Vec<(String, Vec<i32>)>> {
    if bytes.is_empty() {
        return Some(Vec::new());
    }
    let mut reader = Reader(bytes);
    if reader.i16()? < 0 {
        return None;
    }
    reader.topic_partitions()
}

/// An assignment in the version of the member's subscription (capped at the newest known),
/// without user data.
pub fn write_assignment(version: i16, partitions: &[(String, Vec<i32>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&version.clamp(0, NEWEST_VERSION).to_be_bytes());
    out.extend_from_slice(&(partitions.len() as i32).to_be_bytes());
    for (topic, indexes) in partitions {
        out.extend_from_slice(&(topic.len() as i16).to_be_bytes());
        out.extend_from_slice(topic.as_bytes());
        out.extend_from_slice(&(indexes.len() as i32).to_be_bytes());
        for index in indexes {
            out.extend_from_slice(&index.to_be_bytes());
        }
    }
    out.extend_from_slice(&(-1i32).to_be_bytes()); // user data: null
    out
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }

    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    /// An array's length, refused when its elements (each at least `min_bytes`) could not
    /// fit in what is left.
    fn count(&mut self, min_bytes: usize) -> Option<usize> {
        let count = usize::try_from(self.i32()?).ok()?;
        (count <= self.0.len() / min_bytes).then_some(count)
    }

    fn string(&mut self) -> Option<String> {
        let len = usize::try_from(self.i16()?).ok()?;
        Some(std::str::from_utf8(self.take(len)?).ok()?.to_string())
    }

    fn nullable_string(&mut self) -> Option<Option<String>> {
        let len = self.i16()?;
        if len < 0 {
            return Some(None);
        }
        let bytes = self.take(len as usize)?;
        Some(Some(std::str::from_utf8(bytes).ok()?.to_string()))
    }

    fn nullable_bytes(&mut self) -> Option<()> {
        let len = self.i32()?;
        if len >= 0 {
            self.take(len as usize)?;
        }
        Some(())
    }

    fn strings(&mut self) -> Option<Vec<String>> {
        let count = self.count(2)?;
        (0..count).map(|_| self.string()).collect()
    }

    fn topic_partitions(&mut self) -> Option<Vec<(String, Vec<i32>)>> {
        let count = self.count(6)?;
        (0..count)
            .map(|_| {
                let topic = self.string()?;
                let partitions = self.count(4)?;
                let partitions = (0..partitions).map(|_| self.i32()).collect::<Option<_>>()?;
                Some((topic, partitions))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_topics_and_refuses_garbage() {
        let mut m = vec![
            0, 1, 0, 0, 0, 2, 0, 1, b'a', 0, 2, b'b', b'c', 0xff, 0xff, 0xff, 0xff,
        ];
        assert_eq!(
            subscribed_topics(&m),
            Some(vec!["a".to_string(), "bc".to_string()])
        );
        m.truncate(9);
        assert_eq!(subscribed_topics(&m), None);
        assert_eq!(subscribed_topics(&[0, 0, 0x7f, 0, 0, 0]), None);
        assert_eq!(subscribed_topics(&[]), None);
    }

    #[test]
    fn reads_a_v3_subscription_with_owned_partitions_and_rack() {
        let mut m = vec![0, 3, 0, 0, 0, 1, 0, 1, b't'];
        m.extend_from_slice(&[0, 0, 0, 2, 9, 9]); // user data
        m.extend_from_slice(&[0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3]);
        m.extend_from_slice(&[0, 0, 0, 7]); // generation
        m.extend_from_slice(&[0, 2, b'r', b'1']);
        let s = read_subscription(&m).unwrap();
        assert_eq!(s.version, 3);
        assert_eq!(s.topics, vec!["t"]);
        assert_eq!(s.owned, vec![("t".to_string(), vec![0, 3])]);
        assert_eq!(s.rack_id.as_deref(), Some("r1"));
        for cut in 0..m.len() - 1 {
            assert_eq!(read_subscription(&m[..cut]), None, "cut at {cut}");
        }
        // A v0 subscription owns nothing.
        let v0 = [0, 0, 0, 0, 0, 1, 0, 1, b't', 0xff, 0xff, 0xff, 0xff];
        assert_eq!(read_subscription(&v0).unwrap().owned, vec![]);
    }

    #[test]
    fn assignments_round_trip_and_refuse_lying_counts() {
        let partitions = vec![("a".to_string(), vec![0, 2]), ("b".to_string(), vec![])];
        let bytes = write_assignment(1, &partitions);
        assert_eq!(read_assignment(&bytes), Some(partitions));
        assert_eq!(read_assignment(&[]), Some(vec![]));
        // 2^31-1 topics in 10 bytes.
        assert_eq!(
            read_assignment(&[0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]),
            None
        );
    }
}
