//! One record of a topic as one row of its table.

use bytes::Bytes;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub partition: i32,
    pub offset: i64,
    /// The record's timestamp, milliseconds since the epoch.
    pub timestamp_ms: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    /// Header keys and values, in the record's order.
    pub headers: Vec<(String, Option<Bytes>)>,
}
