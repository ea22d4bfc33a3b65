//! What a produced payload must be before it is buffered, checked as Kafka's log validator
//! does: whole v2 batches with valid CRCs, a codec Kafka defines (zstd only from Produce v7),
//! records that parse and agree with their header (count, offset deltas), no negative
//! timestamps but "none", on a CreateTime topic timestamps within the topic's bounds of the
//! broker's clock (`message.timestamp.before.max.ms`, `after.max.ms`; INVALID_TIMESTAMP naming
//! the record), compressed payloads inflating to at most a bound, and on a compacted topic a
//! key on every record (Kafka's INVALID_RECORD, naming the record). Then the header's max
//! timestamp is made what the records say (old clients write -1 there, and retention and
//! ListOffsets go by it), or the broker's clock for LogAppendTime topics. A topic whose
//! `compression.type` names a codec gets batches compressed otherwise recompressed.

use bytes::{Bytes, BytesMut};
use shoal_coordinator::ErrorKind;
use shoal_wal::batch::{set_max_timestamps, stamp_log_append_time, validate_batches};
use shoal_wal::decompress::Codec;
use shoal_wal::recompress::recompress_batch;
use shoal_wal::records::{
    check_and_inflate_records, check_records, check_records_noting_heads, keyless_records,
    FieldHeads, RecordsSummary,
};
use shoal_wal::{BatchHeader, WalError};

use crate::ProduceRules;

/// A payload ready for the buffer.
pub struct ValidPayload {
    pub records: Bytes,
    pub headers: Vec<BatchHeader>,
    /// The LogAppendTime the batches were stamped with.
    pub stamped_at: Option<i64>,
    /// For a topic that validates schemas, every data record's key and value heads, read in
    /// the same pass as the checks; None when not read (a recompressed batch: the schema
    /// check reads them itself).
    pub heads: Option<Vec<FieldHeads>>,
}

/// Why a payload was refused, and which records of its batch were at fault when any were
/// (Kafka's KIP-467 `record_errors`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub error: ErrorKind,
    pub records: Vec<i32>,
}

impl From<ErrorKind> for Refusal {
    fn from(error: ErrorKind) -> Self {
        Refusal {
            error,
            records: Vec::new(),
        }
    }
}

pub fn validate_payload(
    records: Bytes,
    rules: &ProduceRules,
    inflated_batch_bytes_max: usize,
    now_ms: impl Fn() -> i64,
) -> Result<ValidPayload, Refusal> {
    let headers = validate_batches(&records).map_err(|e| rejected(&e))?;
    // Transaction markers are written by the broker itself, never taken from clients.
    if !rules.markers && headers.iter().any(|h| h.is_control()) {
        return Err(ErrorKind::InvalidRequest.into());
    }
    if headers.iter().any(|h| h.size_bytes > rules.max_batch_bytes) {
        return Err(ErrorKind::MessageTooLarge.into());
    }
    if rules.recompress_to == Some(Codec::Zstd) && !rules.zstd_allowed {
        return Err(ErrorKind::UnsupportedCompressionType.into());
    }
    let mut maxes = Vec::with_capacity(headers.len());
    let mut heads = rules.schemas.is_some().then(Vec::new);
    let mut at = 0;
    // Set once a batch is recompressed: the payload from there on, and every batch's header.
    let mut recompressed: Option<(BytesMut, Vec<BatchHeader>)> = None;
    for (index, header) in headers.iter().enumerate() {
        let codec = Codec::from_id(header.compression_codec()).map_err(|e| rejected(&e))?;
        if codec == Codec::Zstd && !rules.zstd_allowed {
            return Err(ErrorKind::UnsupportedCompressionType.into());
        }
        let batch = &records[at..at + header.size_bytes];
        at += header.size_bytes;
        let target = rules
            .recompress_to
            .filter(|target| *target != codec && !header.is_control());
        let Some(target) = target else {
            let summary = match heads.as_mut().filter(|_| !header.is_control()) {
                Some(heads) => {
                    check_records_noting_heads(batch, header, inflated_batch_bytes_max, heads)
                }
                None => check_records(batch, header, inflated_batch_bytes_max),
            }
            .map_err(|e| rejected(&e))?;
            if rules.keys_required && summary.first_keyless.is_some() {
                return Err(keyless(batch, header, inflated_batch_bytes_max));
            }
            check_timestamp_bounds(&summary, header, rules, &now_ms)?;
            maxes.push(summary.max_timestamp);
            if let Some((out, out_headers)) = recompressed.as_mut() {
                out.extend_from_slice(batch);
                out_headers.push(*header);
            }
            continue;
        };
        // One inflation serves both the record checks and the new codec; the schema check
        // reads the heads itself.
        heads = None;
        let (summary, inflated) =
            check_and_inflate_records(batch, header, inflated_batch_bytes_max)
                .map_err(|e| rejected(&e))?;
        if rules.keys_required && summary.first_keyless.is_some() {
            return Err(keyless(batch, header, inflated_batch_bytes_max));
        }
        check_timestamp_bounds(&summary, header, rules, &now_ms)?;
        maxes.push(summary.max_timestamp);
        let (converted, converted_header) =
            recompress_batch(batch, header, &inflated, target).map_err(|e| rejected(&e))?;
        if converted_header.size_bytes > rules.max_batch_bytes {
            return Err(ErrorKind::MessageTooLarge.into());
        }
        let (out, out_headers) = recompressed.get_or_insert_with(|| {
            let before = at - header.size_bytes;
            (
                BytesMut::from(&records[..before]),
                headers[..index].to_vec(),
            )
        });
        out.extend_from_slice(&converted);
        out_headers.push(converted_header);
    }
    let (records, mut headers) = match recompressed {
        Some((out, headers)) => (out.freeze(), headers),
        None => (records, headers),
    };
    if rules.log_append_time {
        let now = now_ms();
        let mut stamped = BytesMut::from(&records[..]);
        stamp_log_append_time(&mut stamped, &mut headers, now);
        return Ok(ValidPayload {
            records: stamped.freeze(),
            headers,
            stamped_at: Some(now),
            heads,
        });
    }
    let records = if headers
        .iter()
        .zip(&maxes)
        .any(|(h, m)| h.max_timestamp != *m)
    {
        let mut fixed = BytesMut::from(&records[..]);
        set_max_timestamps(&mut fixed, &mut headers, &maxes);
        fixed.freeze()
    } else {
        records
    };
    Ok(ValidPayload {
        records,
        headers,
        stamped_at: None,
        heads,
    })
}

/// A CreateTime batch's records must lie within the topic's bounds of the broker's clock, as
/// Kafka's log validator checks them (records without a timestamp, control batches and
/// LogAppendTime topics are not checked); the refusal names the earliest and the latest
/// record when they are out of bounds.
fn check_timestamp_bounds(
    summary: &RecordsSummary,
    header: &BatchHeader,
    rules: &ProduceRules,
    now_ms: &impl Fn() -> i64,
) -> Result<(), Refusal> {
    if rules.log_append_time || header.is_control() {
        return Ok(());
    }
    let now = now_ms();
    let too_old = summary
        .earliest
        .filter(|(_, t)| now.saturating_sub(*t) > rules.timestamp_before_max_ms);
    let too_new = summary
        .latest
        .filter(|(_, t)| t.saturating_sub(now) > rules.timestamp_after_max_ms);
    let records: Vec<i32> = too_old.into_iter().chain(too_new).map(|(i, _)| i).collect();
    match records.is_empty() {
        true => Ok(()),
        false => Err(Refusal {
            error: ErrorKind::InvalidTimestamp,
            records,
        }),
    }
}

/// The refusal of a batch with keyless records for a compacted topic, naming every one as
/// Kafka does; only a refused batch is read this second time.
fn keyless(batch: &[u8], header: &BatchHeader, inflated_max: usize) -> Refusal {
    match keyless_records(batch, header, inflated_max) {
        Ok(records) => Refusal {
            error: ErrorKind::KeylessRecord,
            records,
        },
        Err(e) => rejected(&e),
    }
}

/// The Kafka error a refused payload gets, with the record at fault, logged without the
/// payload.
fn rejected(e: &WalError) -> Refusal {
    tracing::debug!(error = %e, "rejected a produced batch");
    let (error, records) = match e {
        WalError::InvalidRecords(_) | WalError::InvalidRecordCount(_) => {
            (ErrorKind::InvalidRecord, vec![])
        }
        WalError::InvalidRecord { index, .. } => (ErrorKind::InvalidRecord, vec![*index]),
        WalError::InvalidTimestamp { index, .. } => (ErrorKind::InvalidTimestamp, vec![*index]),
        _ => (ErrorKind::CorruptMessage, vec![]),
    };
    Refusal { error, records }
}

#[cfg(test)]
mod tests {
    use shoal_coordinator::TopicConfig;
    use shoal_wal::batch::BatchBuilder;

    use super::*;

    const NOW: i64 = 1_800_000_000_000;

    /// One uncompressed batch, a record at each of `timestamps`.
    fn batch(timestamps: &[i64]) -> Bytes {
        let base = timestamps.iter().copied().min().unwrap_or(NOW);
        let builder = timestamps.iter().fold(BatchBuilder::new(base), |b, t| {
            b.record(*t, None, Some(b"v"), &[])
        });
        Bytes::from(builder.build(Codec::None).unwrap())
    }

    fn rules(config: TopicConfig) -> ProduceRules {
        ProduceRules::new(&config, 9)
    }

    fn refusal(records: Bytes, rules: &ProduceRules) -> Option<Refusal> {
        validate_payload(records, rules, 1 << 20, || NOW).err()
    }

    #[test]
    fn records_past_the_topics_timestamp_bounds_are_refused_naming_them() {
        let hour = 3_600_000;
        let kafka = rules(TopicConfig::default());
        // Kafka's defaults: any past, at most an hour ahead.
        assert_eq!(
            refusal(batch(&[0, NOW - 100 * hour, NOW + hour]), &kafka),
            None
        );
        let ahead = refusal(batch(&[NOW, NOW + hour + 1]), &kafka).unwrap();
        assert_eq!(ahead.error, ErrorKind::InvalidTimestamp);
        assert_eq!(ahead.records, vec![1]);
        let bounded = rules(TopicConfig {
            timestamp_before_max_ms: hour,
            timestamp_after_max_ms: 0,
            ..TopicConfig::default()
        });
        let both = refusal(batch(&[NOW - 2 * hour, NOW, NOW + 1]), &bounded).unwrap();
        assert_eq!(both.records, vec![0, 2]);
        assert_eq!(refusal(batch(&[NOW - hour, NOW]), &bounded), None);
        // LogAppendTime topics stamp the broker's time instead.
        let stamped = rules(TopicConfig {
            log_append_time: true,
            ..TopicConfig::default()
        });
        assert_eq!(refusal(batch(&[NOW + 10 * hour]), &stamped), None);
    }
}
