//! Bytes from PostgreSQL: message framing under the size limit, data rows and the typed
//! reads of their columns, error responses, and the SCRAM exchange's server messages.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256};
use postgres_protocol::message::backend::Message;
use shoal_pg::wire::{server_error, take_message, Row};

fuzz_target!(|data: &[u8]| {
    let mut buffer = BytesMut::from(data);
    while let Ok(Some(message)) = take_message(&mut buffer, 1 << 20) {
        match message {
            Message::DataRow(body) => {
                if let Ok(row) = Row::from_body(&body) {
                    for column in 0..=row.len() {
                        let _ = row.i64(column);
                        let _ = row.text(column);
                    }
                }
            }
            Message::ErrorResponse(body) => {
                let _ = server_error(&body).to_string();
            }
            Message::CommandComplete(body) => {
                let _ = body.tag();
            }
            _ => {}
        }
    }
    let (first, last) = data.split_at(data.len() / 2);
    let mut scram = ScramSha256::new(b"secret", ChannelBinding::unsupported());
    if scram.update(first).is_ok() {
        let _ = scram.finish(last);
    }
});
