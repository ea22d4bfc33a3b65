//! A Kafka connection's byte stream, either way round (a client of ours, or a mirror's
//! source we are the client of): the TCP socket itself, or TLS over it.

pub use shoal_net::TcpOrTls as KafkaStream;
