//! hyper's I/O traits over a glommio TCP stream (or TLS over one), so hyper's HTTP/1.1
//! client runs on the shard's own io_uring reactor.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_lite::{AsyncRead, AsyncWrite};

/// Reads go through a scratch buffer so no uninitialised memory is ever handed out.
const SCRATCH_BYTES: usize = 64 << 10;

pub struct GlommioIo<S> {
    stream: S,
    scratch: Box<[u8]>,
}

impl<S> GlommioIo<S> {
    pub fn new(stream: S) -> GlommioIo<S> {
        GlommioIo {
            stream,
            scratch: vec![0; SCRATCH_BYTES].into_boxed_slice(),
        }
    }
}

impl<S: AsyncRead + Unpin> hyper::rt::Read for GlommioIo<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let want = buf.remaining().min(this.scratch.len());
        match Pin::new(&mut this.stream).poll_read(cx, &mut this.scratch[..want]) {
            Poll::Ready(Ok(n)) => {
                buf.put_slice(&this.scratch[..n]);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncWrite + Unpin> hyper::rt::Write for GlommioIo<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_close(cx)
    }
}
