"""A TCP proxy in front of the S3 server that can be told to answer HTTP 500 or to stall,
or to fault only its next connections (reset, or answer 503 SlowDown), to test how the broker
survives a misbehaving object store."""

import socket
import struct
import threading


class FaultProxy:
    PASS, ERROR_500, STALL = "pass", "500", "stall"
    # Faults of single connections, for fail_next.
    RESET, SLOW_DOWN_503 = "reset", "503"

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.mode = self.PASS
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.closed = False
        self.held = []
        self.next_faults = []
        self.faulted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def fail_next(self, *faults):
        """The next connections, one fault each (RESET or SLOW_DOWN_503), in order."""
        self.next_faults.extend(faults)

    def _serve(self, client):
        mode = self.mode
        if self.next_faults:
            self.faulted += 1
            mode = self.next_faults.pop(0)
        if mode == self.RESET:
            client.recv(65536)
            # SO_LINGER of 0: close sends a reset, as a failing load balancer's does.
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()
            return
        if mode == self.SLOW_DOWN_503:
            self._answer(client, b"503 Slow Down", b"<Error><Code>SlowDown</Code></Error>")
            return
        if mode == self.STALL:
            self.held.append(client)  # never answered, never closed until the proxy is
            return
        if mode == self.ERROR_500:
            self._answer(client, b"500 Internal Server Error",
                         b"<Error><Code>InternalError</Code></Error>")
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        except OSError:
            client.close()
            return
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _answer(client, status, body):
        try:
            client.recv(65536)
            client.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Length: " + str(len(body)).encode()
                           + b"\r\nConnection: close\r\n\r\n" + body)
        finally:
            client.close()

    def _pipe(self, source, sink):
        try:
            while True:
                data = source.recv(65536)
                # A fault switched on mid-connection cuts it, so the next request meets it.
                if not data or self.mode != self.PASS:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.closed = True
        self.listener.close()
        for c in self.held:
            c.close()
