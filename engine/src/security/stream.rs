//! A Kafka connection's byte stream, either way round (a client of ours, or a mirror's
//! source we are the client of): the TCP socket itself, or TLS over it.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_lite::{AsyncRead, AsyncWrite};
use futures_rustls::TlsStream;
use glommio::net::TcpStream;

pub enum KafkaStream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for KafkaStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            KafkaStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            KafkaStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for KafkaStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            KafkaStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            KafkaStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            KafkaStream::Plain(s) => Pin::new(s).poll_flush(cx),
            KafkaStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            KafkaStream::Plain(s) => Pin::new(s).poll_close(cx),
            KafkaStream::Tls(s) => Pin::new(s.as_mut()).poll_close(cx),
        }
    }
}
