//! Reads the topic list out of a consumer-protocol subscription (the member metadata of
//! protocol type "consumer"): `version: i16, topics: [string]`, then fields we do not need.
//! Every version so far starts this way and none is flexible.

pub fn subscribed_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let mut at = 2usize; // version
    let count = i32::from_be_bytes(metadata.get(at..at + 4)?.try_into().ok()?);
    at += 4;
    let count = usize::try_from(count).ok()?;
    // Each topic takes at least its 2-byte length: a larger count is malformed.
    if count > metadata.len() / 2 {
        return None;
    }
    let mut topics = Vec::with_capacity(count);
    for _ in 0..count {
        let len = i16::from_be_bytes(metadata.get(at..at + 2)?.try_into().ok()?);
        at += 2;
        let len = usize::try_from(len).ok()?;
        let name = std::str::from_utf8(metadata.get(at..at + len)?).ok()?;
        at += len;
        topics.push(name.to_string());
    }
    Some(topics)
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
}
