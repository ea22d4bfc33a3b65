#!/usr/bin/env python3
"""Writes protocol/src/shapes/requests.rs: the wire layout of every Kafka request Shoal decodes,
read off the message definitions of the pinned kafka-protocol crate (which Kafka's JSON schemas
generate). Shoal checks a request against its shape (every count against the bytes left) before
kafka-protocol decodes it, because kafka-protocol reserves memory for whatever count a client
claims. Rerun after upgrading kafka-protocol; protocol's tests check the shapes against it.

Usage: scripts/gen_request_shapes.py [path to kafka-protocol's src/messages]"""

import glob
import os
import re
import sys

# The Kafka requests the registry serves (engine/src/handlers/registry.rs).
SERVED = [
    "produce", "fetch", "list_offsets", "metadata", "api_versions", "create_topics",
    "delete_topics", "delete_records", "init_producer_id", "create_partitions",
    "describe_cluster", "find_coordinator", "offset_for_leader_epoch", "describe_producers",
    "describe_configs", "alter_configs", "incremental_alter_configs", "join_group",
    "sync_group", "heartbeat", "leave_group", "consumer_group_heartbeat", "consumer_group_describe", "offset_commit", "offset_fetch", "list_groups",
    "describe_groups", "delete_groups", "offset_delete", "sasl_handshake", "sasl_authenticate",
    "describe_user_scram_credentials", "alter_user_scram_credentials", "describe_acls",
    "create_acls", "delete_acls", "add_partitions_to_txn", "add_offsets_to_txn", "end_txn",
    "txn_offset_commit", "describe_transactions", "list_transactions",
    "describe_client_quotas", "alter_client_quotas", "share_group_heartbeat",
    "share_group_describe", "share_fetch", "share_acknowledge", "describe_share_group_offsets",
    "alter_share_group_offsets", "delete_share_group_offsets",
]
MAX_VERSION = 32767


def find_messages_dir():
    if len(sys.argv) > 1:
        return sys.argv[1]
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    found = sorted(glob.glob(f"{home}/registry/src/*/kafka-protocol-0.18.*/src/messages"))
    if not found:
        sys.exit("kafka-protocol 0.18 sources not found; run cargo fetch first")
    return found[-1]


def block(text, start):
    """The text between the brace at or after `start` and its match."""
    i = text.index("{", start)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j], j + 1
    raise ValueError("unbalanced")


def struct_fields(text, name):
    m = re.search(r"pub struct %s \{" % name, text)
    body, _ = block(text, m.start())
    return dict(re.findall(r"pub (\w+): ([^,\n]+),", body))


def split_if(expr):
    """`if COND { A } else { B }` -> (COND, A, B), or None."""
    expr = expr.strip()
    m = re.match(r"if (.+?) \{", expr, re.S)
    if not m:
        return None
    a, end = block(expr, m.start())
    rest = expr[end:].strip()
    assert rest.startswith("else"), expr
    b, _ = block(rest, 0)
    return m.group(1).strip(), a.strip(), b.strip()


def condition_range(cond):
    lo, hi = 0, MAX_VERSION
    for part in cond.split("&&"):
        m = re.match(r"\s*version (>=|<=|==|>|<) (\d+)\s*$", part)
        assert m, cond
        op, n = m.group(1), int(m.group(2))
        if op == ">=":
            lo = max(lo, n)
        elif op == ">":
            lo = max(lo, n + 1)
        elif op == "<=":
            hi = min(hi, n)
        elif op == "<":
            hi = min(hi, n - 1)
        else:
            lo, hi = max(lo, n), min(hi, n)
    return lo, hi


def leaves(expr, lo, hi):
    """[(lo, hi, decoder text or None)] for the versions lo..=hi."""
    split = split_if(expr)
    if split:
        cond, a, b = split
        clo, chi = condition_range(cond)
        out = []
        if max(lo, clo) <= min(hi, chi):
            out += leaves(a, max(lo, clo), min(hi, chi))
        # The else branch: the rest of lo..=hi (conditions here are one-sided or a point).
        if clo > lo:
            out += leaves(b, lo, min(hi, clo - 1))
        if chi < hi:
            out += leaves(b, max(lo, chi + 1), hi)
        return out
    m = re.match(r"(types::.+)\.decode\(buf\)\?$", expr.strip())
    return [(lo, hi, m.group(1) if m else None)]


def element_type(rust_type):
    m = re.search(r"Vec<(?:super::)?(\w+)>", rust_type)
    return m.group(1) if m else None


def kind(decoder, rust_type, module):
    """A Rust expression of the shape's `Ty` for one decoder."""
    if decoder.startswith("types::CompactArray(") or decoder.startswith("types::Array("):
        compact = decoder.startswith("types::Compact")
        inner = decoder[decoder.index("(") + 1:-1]
        elem = element_type(rust_type)
        if inner.startswith("types::Struct"):
            elem_ty = f"Ty::Struct(&{shape_const(elem)})"
            size = f"size_of::<kafka_protocol::messages::{module}::{elem}>()"
        else:
            elem_ty = scalar(inner)
            if elem == "StrBytes":
                size = "size_of::<kafka_protocol::protocol::StrBytes>()"
            elif elem and elem[0].isupper():
                size = f"size_of::<kafka_protocol::messages::{elem}>()"
            else:
                size = f"size_of::<{elem}>()"
        return f"Ty::Array {{ compact: {str(compact).lower()}, element: &{elem_ty}, element_bytes: {size} }}"
    if decoder.startswith("types::Struct"):
        name = re.search(r"(\w+)$", rust_type.strip()).group(1)
        return f"Ty::Struct(&{shape_const(name)})"
    return scalar(decoder)


def scalar(decoder):
    table = {
        "types::Int8": "Ty::Fixed(1)", "types::Int16": "Ty::Fixed(2)", "types::UInt16": "Ty::Fixed(2)",
        "types::Int32": "Ty::Fixed(4)", "types::UInt32": "Ty::Fixed(4)", "types::Int64": "Ty::Fixed(8)",
        "types::Float64": "Ty::Fixed(8)", "types::Boolean": "Ty::Bool", "types::Uuid": "Ty::Fixed(16)",
        "types::String": "Ty::String", "types::CompactString": "Ty::CompactString",
        "types::Bytes": "Ty::Bytes", "types::CompactBytes": "Ty::CompactBytes",
    }
    return table[decoder]


def shape_const(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def parse_struct(text, name, module, shapes, order):
    if name in shapes:
        return
    m = re.search(r"impl Decodable for %s \{" % name, text)
    body, _ = block(text, m.start())
    vm = re.search(r"if version < (\d+) \|\| version > (\d+)", body)
    if vm:
        lo, hi = int(vm.group(1)), int(vm.group(2))
    else:
        only = re.search(r"if version != (\d+)", body)
        lo = hi = int(only.group(1))
    types_by_field = struct_fields(text, name)
    fields = []
    for fm in re.finditer(r"\n        let (\w+) = ", body):
        field = fm.group(1)
        if field not in types_by_field:
            continue  # the tagged-field loop's own variables
        expr_start = fm.end()
        # The expression ends at the `;` that closes this statement at depth 0.
        depth, j = 0, expr_start
        while True:
            c = body[j]
            if c in "({[":
                depth += 1
            elif c in ")}]":
                depth -= 1
            elif c == ";" and depth == 0:
                break
            j += 1
        for flo, fhi, decoder in leaves(body[expr_start:j], lo, hi):
            if decoder is None:
                continue
            rust_type = types_by_field[field]
            fields.append((field, flo, fhi, kind(decoder, rust_type, module)))
            for nested in re.findall(r"Vec<(\w+)>", rust_type) + (
                    [rust_type.strip()] if decoder.startswith("types::Struct") else []):
                if re.search(r"pub struct %s \{" % nested, text):
                    parse_struct(text, nested, module, shapes, order)
    flexible = re.search(r"if version >= (\d+) \{\s*let num_tagged_fields", body)
    if flexible:
        flexible_from = int(flexible.group(1))
    elif "let num_tagged_fields" in body:
        flexible_from = 0  # flexible in every version
    else:
        flexible_from = MAX_VERSION
    tags = []
    tm = re.search(r"match tag \{", body)
    if tm:
        arms, _ = block(body, tm.start())
        for am in re.finditer(r"(\d+) => \{", arms):
            arm, _ = block(arms, am.start())
            split = split_if(arm)
            if split and "bail!" in split[2]:
                tlo, thi = condition_range(split[0])
                arm = split[1]
            else:
                tlo, thi = lo, hi
            dm = re.search(r"= (types::.+)\.decode\(buf\)\?;", arm)
            field = re.search(r"(\w+) = types::", arm).group(1)
            rust_type = types_by_field[field]
            tags.append((int(am.group(1)), tlo, thi, kind(dm.group(1), rust_type, module)))
            if dm.group(1).startswith("types::Struct"):
                nested = re.search(r"(\w+)$", rust_type.strip()).group(1)
                parse_struct(text, nested, module, shapes, order)
    shapes[name] = (lo, hi, flexible_from, fields, tags)
    order.append(name)


def main():
    messages = find_messages_dir()
    out = [
        "// @generated by scripts/gen_request_shapes.py from kafka-protocol 0.18's message",
        "// definitions: the wire layout of every Kafka request Shoal decodes. Do not edit.",
        "",
        "use std::mem::size_of;",
        "",
        "#[allow(unused_imports)]",
        "use super::{Field, Shape, Tag, Ty};",
        "",
    ]
    roots = []
    for api in SERVED:
        module = f"{api}_request"
        text = open(f"{messages}/{module}.rs").read()
        root = "".join(p.capitalize() for p in api.split("_")) + "Request"
        shapes, order = {}, []
        parse_struct(text, root, module, shapes, order)
        roots.append((root, f"self::{module}::{shape_const(root)}"))
        out.append(f"pub mod {module} {{")
        out.append("    use super::*;")
        out.append("")
        for name in order:
            lo, hi, flexible_from, fields, tags = shapes[name]
            out.append(f"pub static {shape_const(name)}: Shape = Shape {{")
            out.append(f'    name: "{name}",')
            out.append(f"    versions: ({lo}, {hi}),")
            out.append(f"    flexible_from: {flexible_from},")
            out.append("    fields: &[")
            for field, flo, fhi, ty in fields:
                out.append(f'        Field {{ name: "{field}", versions: ({flo}, {fhi}), ty: {ty} }},')
            out.append("    ],")
            out.append("    tags: &[")
            for tag, tlo, thi, ty in tags:
                out.append(f"        Tag {{ tag: {tag}, versions: ({tlo}, {thi}), ty: {ty} }},")
            out.append("    ],")
            out.append("};")
            out.append("")
        out.append("}")
        out.append("")
    out.append("/// The shape of each request by API key.")
    out.append("pub fn request_shape(api_key: i16) -> Option<&'static Shape> {")
    out.append("    use kafka_protocol::messages::*;")
    out.append("    use kafka_protocol::protocol::Request;")
    out.append("    match api_key {")
    for root, const in roots:
        out.append(f"        k if k == {root}::KEY => Some(&{const}),")
    out.append("        _ => None,")
    out.append("    }")
    out.append("}")
    target = os.path.join(os.path.dirname(__file__), "..", "protocol", "src", "shapes", "requests.rs")
    with open(target, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {os.path.normpath(target)}")


if __name__ == "__main__":
    main()
