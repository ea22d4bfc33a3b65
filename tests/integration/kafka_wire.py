"""A few Kafka requests built byte by byte, for feeding the broker input no client would send."""

import socket
import struct

_CRC32C_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC32C_TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC32C_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def varint(n):
    n = (n << 1) ^ (n >> 63)  # zigzag
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def record_batch(values, timestamp=1_700_000_000_000, producer=(-1, -1, -1)):
    """An uncompressed v2 batch with one record per value; `producer` is (id, epoch, base
    sequence) for an idempotent one."""
    records = b""
    for i, value in enumerate(values):
        body = b"\x00" + varint(0) + varint(i) + varint(-1) + varint(len(value)) + value + varint(0)
        records += varint(len(body)) + body
    after_crc = struct.pack(
        ">hiqqqhii", 0, len(values) - 1, timestamp, timestamp, *producer, len(values)
    ) + records
    crc = crc32c(after_crc)
    after_length = struct.pack(">ibI", -1, 2, crc) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length


def string(s):
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def request(api_key, version, correlation_id, body, client_id="wire-test"):
    header = struct.pack(">hhi", api_key, version, correlation_id) + string(client_id)
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def produce_v3(topic, partition, records, acks=-1):
    body = string(None) + struct.pack(">hi", acks, 30_000)
    body += struct.pack(">i", 1) + string(topic)
    body += struct.pack(">i", 1) + struct.pack(">i", partition)
    body += struct.pack(">i", len(records)) + records
    return body


def parse_produce_v3_error(response_body):
    """(partition, error code, base offset) of a one-topic, one-partition Produce v3 answer."""
    pos = 4  # topic count
    (name_len,) = struct.unpack_from(">h", response_body, pos)
    pos += 2 + name_len + 4
    partition, error, base_offset = struct.unpack_from(">ihq", response_body, pos)
    return partition, error, base_offset


class Connection:
    def __init__(self, bootstrap, timeout=10):
        host, port = bootstrap.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)

    def send(self, data):
        self.sock.sendall(data)

    def recv_response(self):
        """(correlation id, body) or None if the broker closed the connection."""
        size = self._recv_exact(4)
        if size is None:
            return None
        (n,) = struct.unpack(">i", size)
        payload = self._recv_exact(n)
        if payload is None:
            return None
        return struct.unpack(">i", payload[:4])[0], payload[4:]

    def is_closed_by_peer(self):
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True

    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def close(self):
        self.sock.close()


# Flexible (compact) encoding, for the Diskless* APIs (KIP-1164), which are flexible from v0.

def uvarint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def compact_string(s):
    if s is None:
        return uvarint(0)
    b = s.encode()
    return uvarint(len(b) + 1) + b


def compact_array(items):
    return uvarint(len(items) + 1) + b"".join(items)


TAGS = b"\x00"


def flexible_request(api_key, correlation_id, body, client_id="wire-test"):
    """Request header v2: key, version 0, correlation id, client id, no tagged fields."""
    header = struct.pack(">hhi", api_key, 0, correlation_id) + string(client_id) + TAGS
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        chunk = self.data[self.pos:self.pos + n]
        assert len(chunk) == n, "response ends early"
        self.pos += n
        return chunk

    def int(self, fmt):
        size = struct.calcsize(fmt)
        return struct.unpack(">" + fmt, self.take(size))[0]

    def uvarint(self):
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def string(self):
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode()

    def array(self, element):
        return [element(self) for _ in range(self.uvarint() - 1)]

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def flexible_response(conn):
    """(correlation id, Reader at the body) of a response with header v1."""
    correlation_id, body = conn.recv_response()
    reader = Reader(body)
    reader.tags()
    return correlation_id, reader


# Client quotas (KIP-546), version 0: no client library here has an API for them.

def _quota_entity(entity):
    """[(entity type, name or None for the default)]"""
    return struct.pack(">i", len(entity)) + b"".join(string(t) + string(n) for t, n in entity)


def alter_client_quotas_v0(entries, validate_only=False):
    """entries: [(entity, [(key, value or None to remove)])]"""
    body = struct.pack(">i", len(entries))
    for entity, ops in entries:
        body += _quota_entity(entity) + struct.pack(">i", len(ops))
        for key, value in ops:
            body += string(key) + struct.pack(">d?", value or 0.0, value is None)
    return body + struct.pack(">?", validate_only)


def describe_client_quotas_v0(components, strict=False):
    """components: [(entity type, match type, match or None)]"""
    body = struct.pack(">i", len(components))
    for entity_type, match_type, match in components:
        body += string(entity_type) + struct.pack(">b", match_type) + string(match)
    return body + struct.pack(">?", strict)


class ClassicReader(Reader):
    """Non-flexible encoding: int16-sized strings, int32-counted arrays."""

    def string(self):
        n = self.int("h")
        return None if n < 0 else self.take(n).decode()

    def array(self, element):
        n = self.int("i")
        return None if n < 0 else [element(self) for _ in range(n)]


def _read_entity(r):
    return [(r.string(), r.string()) for _ in range(r.int("i"))]


def parse_alter_client_quotas_v0(body):
    """[(error code, message, entity)]"""
    r = ClassicReader(body)
    r.int("i")  # throttle time
    return r.array(lambda r: (r.int("h"), r.string(), _read_entity(r)))


def parse_describe_client_quotas_v0(body):
    """(error code, message, {tuple(entity): {key: value}} or None)"""
    r = ClassicReader(body)
    r.int("i")
    error, message = r.int("h"), r.string()
    entries = r.array(lambda r: (tuple(_read_entity(r)),
                                 dict(r.array(lambda r: (r.string(), r.int("d"))))))
    return error, message, None if entries is None else dict(entries)


# Broker configs for the cluster default (resource name ""), which librdkafka will not send.

def incremental_alter_configs_v0(resources, validate_only=False):
    """resources: [(resource type, name, [(config, operation, value or None)])]"""
    body = struct.pack(">i", len(resources))
    for resource_type, name, configs in resources:
        body += struct.pack(">b", resource_type) + string(name) + struct.pack(">i", len(configs))
        for config, operation, value in configs:
            body += string(config) + struct.pack(">b", operation) + string(value)
    return body + struct.pack(">?", validate_only)


def parse_incremental_alter_configs_v0(body):
    """[(error code, message, resource type, name)]"""
    r = ClassicReader(body)
    r.int("i")
    return r.array(lambda r: (r.int("h"), r.string(), r.int("b"), r.string()))


def describe_configs_v1(resources, synonyms=True):
    """resources: [(resource type, name, [config names] or None for all)]"""
    body = struct.pack(">i", len(resources))
    for resource_type, name, keys in resources:
        body += struct.pack(">b", resource_type) + string(name)
        if keys is None:
            body += struct.pack(">i", -1)
        else:
            body += struct.pack(">i", len(keys)) + b"".join(string(k) for k in keys)
    return body + struct.pack(">?", synonyms)


def parse_describe_configs_v1(body):
    """[(error code, message, {config: (value, read only, source, [(source, value)])})]"""
    r = ClassicReader(body)
    r.int("i")

    def config(r):
        name, value, read_only, source = r.string(), r.string(), r.int("?"), r.int("b")
        r.int("?")  # sensitive
        synonyms = r.array(lambda r: (r.string(), r.string(), r.int("b")))
        return name, (value, read_only, source, [(s, v) for _, v, s in synonyms])

    def result(r):
        error, message = r.int("h"), r.string()
        r.int("b")
        r.string()
        return error, message, dict(r.array(config))

    return r.array(result)


# SASL by hand: SaslHandshake v1, then SaslAuthenticate v1 with the given bytes.

def sasl_login(conn, mechanism, auth_bytes, correlation_id=1):
    """(SaslHandshake's error, SaslAuthenticate's error, its auth bytes, the session lifetime
    in ms) on `conn`; SaslAuthenticate's are None when the handshake was refused."""
    conn.send(request(17, 1, correlation_id, string(mechanism)))
    _, body = conn.recv_response()
    handshake_error = struct.unpack(">h", body[:2])[0]
    if handshake_error:
        return handshake_error, None, b"", 0
    conn.send(request(36, 1, correlation_id + 1, struct.pack(">i", len(auth_bytes)) + auth_bytes))
    answer = conn.recv_response()
    if answer is None:
        return handshake_error, None, b"", 0
    reader = Reader(answer[1])
    error = reader.int("h")
    message_length = reader.int("h")
    if message_length > 0:
        reader.take(message_length)
    returned = reader.take(reader.int("i"))
    lifetime = reader.int("q")
    return handshake_error, error, returned, lifetime


def sasl_authenticate_raw(bootstrap, mechanism, auth_bytes):
    """(SaslAuthenticate's error code, its auth bytes) for `auth_bytes` sent with `mechanism`
    on a new connection."""
    conn = Connection(bootstrap)
    try:
        handshake_error, error, returned, _ = sasl_login(conn, mechanism, auth_bytes)
        assert handshake_error == 0, "the mechanism is enabled"
        return error, returned
    finally:
        conn.close()



def metadata_v0(conn, correlation_id):
    """Sends Metadata v0 for no topic (a request that needs a live session); True when it was
    answered, None when the broker closed the connection."""
    conn.send(request(3, 0, correlation_id, struct.pack(">i", 0)))
    return None if conn.recv_response() is None else True
