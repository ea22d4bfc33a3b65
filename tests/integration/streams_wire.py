"""StreamsGroupHeartbeat v0 (KIP-1071) on the wire, for tests that drive a streams group's
member by hand: no Python client speaks the streams protocol (Kafka Streams is Java)."""
import struct

from kafka_wire import (TAGS, Connection, compact_array, compact_string, flexible_request,
                        flexible_response)

STREAMS_GROUP_HEARTBEAT = 88
NULL_STRUCT = struct.pack(">b", -1)
PRESENT_STRUCT = struct.pack(">b", 1)
NULL_ARRAY = b"\x00"


def _task_ids(tasks):
    """{subtopology id: [partitions]} as a TaskIds array (None: null, unchanged)."""
    if tasks is None:
        return NULL_ARRAY
    return compact_array([
        compact_string(subtopology)
        + compact_array([struct.pack(">i", p) for p in partitions]) + TAGS
        for subtopology, partitions in sorted(tasks.items())])


def _topology(sources):
    """One subtopology ("0") reading `sources`, with no state and no repartitioning."""
    subtopology = (compact_string("0")
                   + compact_array([compact_string(t) for t in sources])
                   + compact_array([]) + compact_array([]) + compact_array([])
                   + compact_array([]) + compact_array([]) + TAGS)
    return PRESENT_STRUCT + struct.pack(">i", 0) + compact_array([subtopology]) + TAGS


def streams_heartbeat(bootstrap, group, member, epoch, active=None, sources=None,
                      process="process-1"):
    """(error code, member epoch, active tasks or None) of one heartbeat. A join (epoch 0)
    sends the topology reading `sources` and owns nothing; later ones report `active`."""
    joining = epoch == 0
    body = compact_string(group) + compact_string(member) + struct.pack(">ii", epoch, 0)
    body += compact_string(None) + compact_string(None)  # instance id, rack id
    body += struct.pack(">i", 30_000 if joining else -1)
    body += _topology(sources) if joining else NULL_STRUCT
    owned = {} if joining else active
    empty = None if owned is None else {}
    body += _task_ids(owned) + _task_ids(empty) + _task_ids(empty)
    body += compact_string(process if joining else None)
    body += NULL_STRUCT + NULL_ARRAY + NULL_ARRAY + NULL_ARRAY  # endpoint, tags, offsets
    body += b"\x00" + TAGS  # shutdown_application
    connection = Connection(bootstrap)
    try:
        connection.send(flexible_request(STREAMS_GROUP_HEARTBEAT, 1, body))
        _, r = flexible_response(connection)
    finally:
        connection.close()
    r.int("i")  # throttle
    error = r.int("h")
    r.string()  # error message
    r.string()  # member id
    member_epoch = r.int("i")
    r.int("i")  # heartbeat interval
    r.int("i")  # acceptable recovery lag (v0)
    r.int("i")  # task offset interval
    statuses = r.uvarint() - 1
    for _ in range(max(statuses, 0)):
        r.int("b")
        r.string()
        r.tags()

    def tasks(reader):
        count = reader.uvarint() - 1
        if count < 0:
            return None
        found = {}
        for _ in range(count):
            subtopology = reader.string()
            found[subtopology] = sorted(reader.array(lambda x: x.int("i")))
            reader.tags()
        return found
    return error, member_epoch, tasks(r)
