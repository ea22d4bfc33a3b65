#!/usr/bin/env python3
"""Writes protocol/src/messages/: the codecs of every Kafka API a broker listener serves, read
off Apache Kafka's own message specifications (common/message/*.json in kafka-clients.jar).

One file per message, each a struct per (nested) type with public fields, `with_*` setters,
`Default` from the specs' defaults, and kafka-protocol's `Encodable`/`Decodable`/`Message`/
`HeaderVersion`/`Request` traits, written in the primitives of protocol/src/message_codec.rs.
`mod.rs` adds `ApiKey` and the entity newtypes (TopicName, GroupId, ...). The output is
committed and marked @generated; regenerating for a new Kafka is this command after bumping
KAFKA_VERSION (the jar comes from the local Maven repository, where the Java tests fetch it).

It also writes protocol/tests/data/kafka-samples.bin: Kafka's own encodings of every request
and response of those APIs at every version (scripts/KafkaMessageSamples.java, run on the same
jar), which protocol/tests/kafka_samples.rs decodes and encodes back byte for byte.

Usage: scripts/gen_kafka_messages.py [--jar PATH] [--check]
  --check  exit 1 if the committed files differ from what the specs generate"""

import argparse
import io
import json
import os
import re
import sys
import zipfile

KAFKA_VERSION = "4.4.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "protocol", "src", "messages")
SAMPLES = os.path.join(ROOT, "protocol", "tests", "data", "kafka-samples.bin")
SHAPES = os.path.join(ROOT, "protocol", "src", "shapes", "requests.rs")
MAX_VERSION = 0x7FFF

ENTITY_TYPES = {
    # entityType -> (Rust newtype, the spec type it wraps, the Rust type it wraps)
    "topicName": ("TopicName", "string", "StrBytes"),
    "groupId": ("GroupId", "string", "StrBytes"),
    "transactionalId": ("TransactionalId", "string", "StrBytes"),
    "brokerId": ("BrokerId", "int32", "i32"),
    "producerId": ("ProducerId", "int64", "i64"),
}
ENTITY_DOCS = {
    "TopicName": "A topic's name.",
    "GroupId": "A group's id.",
    "TransactionalId": "A transactional producer's id.",
    "BrokerId": "A broker's node id.",
    "ProducerId": "A producer's id.",
}
INT_TYPES = {"int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64"}
RUST_KEYWORDS = {"type", "match", "async", "await", "move", "ref", "self", "static", "where"}


def default_jar():
    home = os.path.expanduser("~/.m2/repository")
    return f"{home}/org/apache/kafka/kafka-clients/{KAFKA_VERSION}/kafka-clients-{KAFKA_VERSION}.jar"


def read_specs(jar):
    specs = {}
    with zipfile.ZipFile(jar) as z:
        for name in z.namelist():
            if name.startswith("common/message/") and name.endswith(".json"):
                text = z.read(name).decode()
                text = "\n".join(l for l in text.splitlines() if not l.strip().startswith("//"))
                spec = json.loads(text)
                specs[spec["name"]] = spec
    return specs


def snake(name):
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def field_ident(name):
    s = snake(name)
    return "_" + s if s in RUST_KEYWORDS else s


def versions(text, top=MAX_VERSION):
    """A spec version range: (lo, hi) or None for "none"."""
    if text is None or text == "none":
        return None
    if text.endswith("+"):
        return (int(text[:-1]), top)
    if "-" in text:
        lo, hi = text.split("-")
        return (int(lo), int(hi))
    return (int(text), int(text))


class Field:
    def __init__(self, spec, message):
        self.name = spec["name"]
        self.ident = field_ident(self.name)
        self.about = spec.get("about", "")
        self.type = spec["type"]
        self.is_array = self.type.startswith("[]")
        self.base = self.type[2:] if self.is_array else self.type
        self.versions = versions(spec["versions"])
        self.nullable = versions(spec.get("nullableVersions"))
        self.tagged = versions(spec.get("taggedVersions"))
        self.tag = spec.get("tag")
        self.ignorable = spec.get("ignorable", False)
        self.default = spec.get("default")
        self.flexible = versions(spec["flexibleVersions"]) if "flexibleVersions" in spec else "inherit"
        entity = ENTITY_TYPES.get(spec.get("entityType"))
        self.entity = entity[0] if entity and entity[1] == self.base else None
        self.struct = None
        if self.base[0].isupper():
            self.struct = self.base
            if "fields" in spec:
                message.add_struct(self.base, spec["fields"], spec.get("versions"))
        elif self.base not in ("bool", "int8", "int16", "uint16", "int32", "int64", "float64",
                               "string", "bytes", "records", "uuid"):
            raise SystemExit(f"{message.name}.{self.name}: unknown type {self.type}")

    # --- Rust types --------------------------------------------------------------------------
    def element_type(self):
        if self.struct:
            return self.struct
        if self.entity:
            return f"super::{self.entity}"
        return {"bool": "bool", "int8": "i8", "int16": "i16", "uint16": "u16", "int32": "i32",
                "int64": "i64", "float64": "f64", "string": "StrBytes", "bytes": "Bytes",
                "records": "Bytes", "uuid": "Uuid"}[self.base]

    def rust_type(self):
        t = self.element_type()
        if self.is_array:
            t = f"Vec<{t}>"
        return f"Option<{t}>" if self.nullable else t

    def default_expr(self):
        d = self.default
        if self.nullable and d == "null":
            return "None"
        if self.is_array:
            inner = "Vec::new()"
        elif self.struct:
            inner = "Default::default()"
        elif self.base in INT_TYPES or self.base == "uint16":
            value = 0 if d in (None, "") else int(str(d), 0)
            inner = str(value)
            if value < 0:
                inner = f"({value})" if self.entity else str(value)
            if self.entity:
                inner = f"super::{self.entity}({value})"
        elif self.base == "float64":
            inner = f"{float(d or 0)!r}_f64"
        elif self.base == "bool":
            inner = "true" if str(d).lower() == "true" else "false"
        elif self.base == "uuid":
            inner = "Uuid::nil()"
        elif self.base == "string":
            inner = "StrBytes::default()" if not d else f"StrBytes::from_static_str({json.dumps(d)})"
            if self.entity:
                inner = f"super::{self.entity}({inner})"
        elif self.base in ("bytes", "records"):
            inner = "Bytes::new()"
        else:
            raise SystemExit(f"{self.name}: no default for {self.type}")
        return f"Some({inner})" if self.nullable else inner


class Message:
    def __init__(self, spec):
        self.spec = spec
        self.name = spec["name"]
        self.kind = spec["type"]
        self.valid = versions(spec["validVersions"])
        self.flexible = versions(spec.get("flexibleVersions", "none"))
        self.api_key = spec.get("apiKey")
        self.common = {c["name"]: c for c in spec.get("commonStructs", [])}
        self.structs = []  # (name, [Field]) in definition order, the message itself first
        self.seen = set()
        self.structs.append((self.name, [Field(f, self) for f in spec.get("fields", [])]))
        for name, common in self.common.items():
            if name not in self.seen:
                self.add_struct(name, common["fields"], common.get("versions"))

    def add_struct(self, name, fields, _versions):
        if name in self.seen:
            return
        self.seen.add(name)
        slot = len(self.structs)
        self.structs.append(None)
        self.structs[slot] = (name, [Field(f, self) for f in fields])

    def struct_fields(self, name):
        for n, fields in self.structs:
            if n == name:
                return fields
        if name in self.common:
            self.add_struct(name, self.common[name]["fields"], None)
            return self.struct_fields(name)
        raise SystemExit(f"{self.name}: unknown struct {name}")

    # --- version conditions, simplified against the message's valid versions -----------------
    def cond(self, rng, var="version"):
        if rng is None:
            return "false"
        lo, hi = rng
        vlo, vhi = self.valid
        parts = []
        if lo > vlo:
            parts.append(f"{var} >= {lo}")
        if hi < vhi:
            parts.append(f"{var} <= {hi}")
        if lo > vhi or hi < vlo:
            return "false"
        return " && ".join(parts) if parts else "true"

    def flex_expr(self, field=None):
        rng = self.flexible
        if field is not None and field.flexible != "inherit":
            rng = field.flexible
        return self.cond(rng)


# ----------------------------------------------------------------------------------------------
# Code for one value: encode / size / decode expressions for an element of a field.

def elem_put(f, expr, flex):
    """Statements writing one non-null element `expr` (a reference)."""
    b = f.base
    if f.struct:
        return f"({expr}).encode(buf, version)?;"
    if b == "bool":
        return f"put_bool(buf, *{expr});"
    if b in INT_TYPES:
        v = f"({expr}).0" if f.entity else f"*{expr}"
        return f"put_int::<{INT_TYPES[b]}, _>(buf, {v});"
    if b == "uint16":
        return f"put_u16(buf, *{expr});"
    if b == "float64":
        return f"put_f64(buf, *{expr});"
    if b == "uuid":
        return f"put_uuid(buf, {expr});"
    if b == "string":
        v = f"&({expr}).0" if f.entity else expr
        return f"put_str(buf, Some({v}), {flex})?;"
    if b in ("bytes", "records"):
        return f"put_bytes(buf, Some({expr}), {flex})?;"
    raise SystemExit(b)


def elem_size(f, expr, flex):
    b = f.base
    if f.struct:
        return f"({expr}).compute_size(version)?"
    if b in ("bool", "int8"):
        return "1"
    if b in ("int16", "uint16"):
        return "2"
    if b == "int32":
        return "4"
    if b in ("int64", "float64"):
        return "8"
    if b == "uuid":
        return "16"
    if b == "string":
        v = f"&({expr}).0" if f.entity else expr
        return f"str_size(Some({v}), {flex})"
    if b in ("bytes", "records"):
        return f"bytes_size(Some({expr}), {flex})"
    raise SystemExit(b)


def elem_get(f, flex, nullable_here):
    """An expression decoding one element; for strings and bytes, `Option` when nullable_here."""
    b = f.base
    if f.struct:
        return f"{f.struct}::decode(buf, version)?"
    if b == "bool":
        return "get_bool(buf)?"
    if b in INT_TYPES:
        v = f"get_int::<{INT_TYPES[b]}, _>(buf)?"
        return f"super::{f.entity}({v})" if f.entity else v
    if b == "uint16":
        return "get_u16(buf)?"
    if b == "float64":
        return "get_f64(buf)?"
    if b == "uuid":
        return "get_uuid(buf)?"
    if b in ("string", "bytes", "records"):
        raw = f"get_str(buf, {flex})?" if b == "string" else f"get_bytes(buf, {flex})?"
        wrap = (lambda e: f"{e}.map(super::{f.entity})") if f.entity else (lambda e: e)
        if nullable_here is True:
            return wrap(raw)
        if nullable_here is False:
            v = f'present({raw}, "{f.name}")?'
            return f"super::{f.entity}({v})" if f.entity else v
        return None
    raise SystemExit(b)


def differs(f):
    """An expression: whether the field holds something other than its default."""
    d = f.default_expr()
    if d == "None":
        return f"self.{f.ident}.is_some()"
    if d == "Vec::new()":
        return f"!self.{f.ident}.is_empty()"
    return f"self.{f.ident} != {d}"


def null_check(m, f):
    """A statement refusing null where this version cannot carry it."""
    cond = m.cond(f.nullable)
    if cond == "true":
        return ""
    return f'if !({cond}) {{ anyhow::bail!("non-nullable field {f.name} is null"); }}'


def field_put(m, f, expr, flex):
    """Statements writing field value `expr` (a place, not a reference) at `version`."""
    if f.is_array:
        inner = elem_put(f, "x", flex)
        body = f"for x in v {{ {inner} }}"
        if f.nullable:
            return (f"match &{expr} {{ None => {{ {null_check(m, f)} put_array_len(buf, None, {flex})?; }} "
                    f"Some(v) => {{ put_array_len(buf, Some(v.len()), {flex})?; {body} }} }}")
        return f"{{ let v = &{expr}; put_array_len(buf, Some(v.len()), {flex})?; {body} }}"
    if f.nullable:
        if f.struct:
            some = f"{{ put_int::<i8, _>(buf, 1); {elem_put(f, 'v', flex)} }}"
            none = "put_int::<i8, _>(buf, -1);"
        elif f.base == "string":
            v = "Some(&v.0)" if f.entity else "Some(v)"
            some = f"put_str(buf, {v}, {flex})?;"
            none = f"put_str(buf, None, {flex})?;"
        else:
            some = f"put_bytes(buf, Some(v), {flex})?;"
            none = f"put_bytes(buf, None, {flex})?;"
        return (f"match &{expr} {{ None => {{ {null_check(m, f)} {none} }} "
                f"Some(v) => {{ {some} }} }}")
    return elem_put(f, f"&{expr}", flex)


def field_size(m, f, expr, flex):
    """An expression for the encoded size of field value `expr`."""
    if f.is_array:
        inner = elem_size(f, "x", flex)
        if inner.isdigit():
            items = f"v.len() * {inner}"
        else:
            items = f"{{ let mut n = 0usize; for x in v {{ n += {inner}; }} n }}"
        if f.nullable:
            return f"match &{expr} {{ None => array_len_size(None, {flex}), Some(v) => array_len_size(Some(v.len()), {flex}) + {items} }}"
        return f"{{ let v = &{expr}; array_len_size(Some(v.len()), {flex}) + {items} }}"
    if f.nullable:
        if f.struct:
            return f"match &{expr} {{ None => 1, Some(v) => 1 + v.compute_size(version)? }}"
        if f.base == "string":
            v = "Some(&v.0)" if f.entity else "Some(v)"
            return f"match &{expr} {{ None => str_size(None, {flex}), Some(v) => str_size({v}, {flex}) }}"
        return f"bytes_size({expr}.as_ref(), {flex})"
    return elem_size(f, f"&{expr}", flex)


def field_get(m, f, flex):
    """An expression decoding the field at `version` (known to be present)."""
    if f.is_array:
        inner = elem_get(f, flex, False)
        vec = (f"{{ let mut v = Vec::with_capacity(n); for _ in 0..n {{ v.push({inner}); }} v }}")
        if f.nullable:
            return (f"match get_array_len(buf, {flex})? {{ None if {m.cond(f.nullable)} => None, "
                    f"None => anyhow::bail!(\"non-nullable field {f.name} was serialized as null\"), Some(n) => Some({vec}) }}")
        return (f"match get_array_len(buf, {flex})? {{ None => anyhow::bail!(\"non-nullable field {f.name} was serialized as null\"), "
                f"Some(n) => {vec} }}")
    if f.nullable:
        if f.struct:
            return f"if get_int::<i8, _>(buf)? < 0 {{ None }} else {{ Some({f.struct}::decode(buf, version)?) }}"
        raw = elem_get(f, flex, True)
        if m.cond(f.nullable) == "true":
            return raw
        return (f"{{ let v = {raw}; if v.is_none() && !({m.cond(f.nullable)}) {{ anyhow::bail!(\"non-nullable field {f.name} was serialized as null\"); }} v }}")
    return elem_get(f, flex, False)


# ----------------------------------------------------------------------------------------------

def doc(text, indent=""):
    lines = [l.rstrip() for l in text.replace("\r", "").split("\n")] or [""]
    return "".join(f"{indent}/// {l}".rstrip() + "\n" for l in lines)


def version_text(rng):
    if rng is None:
        return "none"
    lo, hi = rng
    if hi >= MAX_VERSION:
        return f"{lo}+"
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def gen_struct(m, name, fields, out, top):
    vlo, vhi = m.valid
    tagged = sorted((f for f in fields if f.tagged), key=lambda f: f.tag)
    regular = [f for f in fields if not f.tagged]
    has_tags = m.flexible is not None
    about = m.spec.get("about") if top else None
    out.append(doc(f"{name}, versions {vlo}-{vhi}." + (f" {about}" if about else "")))
    out.append("#[non_exhaustive]\n#[derive(Debug, Clone, PartialEq)]\n")
    out.append(f"pub struct {name} {{\n")
    for f in fields:
        out.append(doc(f"{f.about}\n\nVersions: {version_text(f.versions)}" +
                       (f", tagged (tag {f.tag})" if f.tagged else ""), "    "))
        out.append(f"    pub {f.ident}: {f.rust_type()},\n")
    out.append("    /// Tagged fields this version does not know, kept to be written back.\n")
    out.append("    pub unknown_tagged_fields: UnknownTags,\n}\n\n")

    # setters
    out.append(f"impl {name} {{\n")
    for f in fields:
        out.append(f"    /// Sets `{f.ident}`.\n    pub fn with_{f.ident.lstrip('_')}(mut self, value: {f.rust_type()}) -> Self {{\n"
                   f"        self.{f.ident} = value;\n        self\n    }}\n")
    out.append("    /// Sets the unknown tagged fields.\n"
               "    pub fn with_unknown_tagged_fields(mut self, value: UnknownTags) -> Self {\n"
               "        self.unknown_tagged_fields = value;\n        self\n    }\n}\n\n")

    # Encodable
    enc, size = [], []
    for f in regular:
        flex = m.flex_expr(f)
        present = m.cond(f.versions)
        put = field_put(m, f, f"self.{f.ident}", "flex" if flex == m.flex_expr() else f"({flex})")
        sz = field_size(m, f, f"self.{f.ident}", "flex" if flex == m.flex_expr() else f"({flex})")
        if present == "true":
            enc.append(f"        {put}\n")
            size.append(f"        total += {sz};\n")
            continue
        missing = ("" if f.ignorable else
                   f" else if {differs(f)} {{ return Err(unsupported_field(\"{f.name}\", version)); }}")
        enc.append(f"        if {present} {{ {put} }}{missing}\n")
        size.append(f"        if {present} {{ total += {sz}; }}{missing}\n")
    for f in tagged:
        present = m.cond(f.tagged)
        put = field_put(m, f, f"self.{f.ident}", "true")
        sz = field_size(m, f, f"self.{f.ident}", "true")
        is_set = differs(f)
        missing = ("" if f.ignorable else
                   f" else if {is_set} {{ return Err(unsupported_field(\"{f.name}\", version)); }}")
        if present == "false":
            if not f.ignorable:
                enc.append(f"        if {is_set} {{ return Err(unsupported_field(\"{f.name}\", version)); }}\n")
            continue
        cond = f"(flex && {present})" if present != "true" else "flex"
        enc.insert(0, f"        let {f.ident}_set = {cond} && {is_set};\n")
        size.insert(0, f"        let {f.ident}_set = {cond} && {is_set};\n")
        if missing:
            enc.append(f"        if !({cond}) && {is_set} {{ return Err(unsupported_field(\"{f.name}\", version)); }}\n")
    if has_tags:
        count = " + ".join([f"{f.ident}_set as usize" for f in tagged if m.cond(f.tagged) != "false"] +
                           ["self.unknown_tagged_fields.len()"])
        tag_enc = [f"        if flex {{\n            put_uvarint(buf, ({count}) as u32);\n"
                   "            let mut unknown = self.unknown_tagged_fields.iter().peekable();\n"]
        tag_size = [f"        if flex {{\n            total += uvarint_size(({count}) as u32) + unknown_tags_size(&self.unknown_tagged_fields);\n"]
        for f in tagged:
            if m.cond(f.tagged) == "false":
                continue
            sz = field_size(m, f, f"self.{f.ident}", "true")
            tag_enc.append(f"            if {f.ident}_set {{\n"
                           f"                put_unknown_tags(buf, &mut unknown, Some({f.tag}))?;\n"
                           f"                put_uvarint(buf, {f.tag});\n"
                           f"                put_uvarint(buf, ({sz}) as u32);\n"
                           f"                {field_put(m, f, f'self.{f.ident}', 'true')}\n            }}\n")
            tag_size.append(f"            if {f.ident}_set {{ total += tagged_size({f.tag}, {sz}); }}\n")
        tag_enc.append("            put_unknown_tags(buf, &mut unknown, None)?;\n        }\n")
        tag_size.append("        }\n")
        enc += tag_enc
        size += tag_size
    flex_line = f"        let flex = {m.flex_expr()};\n"
    out.append(f"impl Encodable for {name} {{\n"
               f"    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {{\n"
               f"        check_version(\"{name}\", version, {vlo}, {vhi})?;\n" + flex_line +
               "".join(enc) + "        Ok(())\n    }\n\n"
               f"    fn compute_size(&self, version: i16) -> Result<usize> {{\n" + flex_line +
               "        let mut total = 0usize;\n" + "".join(size) + "        Ok(total)\n    }\n}\n\n")

    # Decodable
    dec = [f"        check_version(\"{name}\", version, {vlo}, {vhi})?;\n", flex_line]
    for f in regular:
        flex = m.flex_expr(f)
        flexv = "flex" if flex == m.flex_expr() else f"({flex})"
        present = m.cond(f.versions)
        get = field_get(m, f, flexv)
        if present == "true":
            dec.append(f"        let f_{f.ident} = {get};\n")
        else:
            dec.append(f"        let f_{f.ident} = if {present} {{ {get} }} else {{ {f.default_expr()} }};\n")
    for f in tagged:
        dec.append(f"        let mut f_{f.ident} = {f.default_expr()};\n")
    dec.append("        let mut unknown_tagged_fields = UnknownTags::new();\n")
    if has_tags:
        arms = []
        for f in tagged:
            present = m.cond(f.tagged)
            if present == "false":
                continue
            guard = "" if present == "true" else f" if {present}"
            arms.append(f"                    {f.tag}{guard} => {{ let buf = &mut body; f_{f.ident} = {field_get(m, f, 'true')}; tagged_done(tag, buf)?; }}\n")
        dec.append("        if flex {\n            for _ in 0..get_uvarint(buf)? {\n"
                   "                let (tag, mut body) = get_tagged(buf)?;\n")
        if arms:
            dec.append("                match tag {\n" + "".join(arms) +
                       "                    _ => { unknown_tagged_fields.insert(tag as i32, body); }\n"
                       "                }\n")
        else:
            dec.append("                let _ = &mut body;\n                unknown_tagged_fields.insert(tag as i32, body);\n")
        dec.append("            }\n        }\n")
    dec.append("        Ok(Self {\n" + "".join(f"            {f.ident}: f_{f.ident},\n" for f in fields) +
               "            unknown_tagged_fields,\n        })\n")
    out.append(f"impl Decodable for {name} {{\n"
               f"    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {{\n" + "".join(dec) +
               "    }\n}\n\n")

    out.append(f"impl Default for {name} {{\n    fn default() -> Self {{\n        Self {{\n" +
               "".join(f"            {f.ident}: {f.default_expr()},\n" for f in fields) +
               "            unknown_tagged_fields: UnknownTags::new(),\n        }\n    }\n}\n\n")
    out.append(f"impl Message for {name} {{\n"
               f"    const VERSIONS: VersionRange = VersionRange {{ min: {vlo}, max: {vhi} }};\n"
               "    const DEPRECATED_VERSIONS: Option<VersionRange> = None;\n}\n\n")


def header_version_expr(m):
    if m.kind == "request":
        return f"if {m.flex_expr()} {{ 2 }} else {{ 1 }}"
    if m.name == "ApiVersionsResponse":
        return "0"  # a client reads it before it knows which versions the broker speaks
    return f"if {m.flex_expr()} {{ 1 }} else {{ 0 }}"


def gen_message(m, source):
    out = [f"// @generated by scripts/gen_kafka_messages.py from Apache Kafka {KAFKA_VERSION}'s\n"
           f"// common/message/{m.name}.json ({source}). Do not edit.\n\n"
           "use super::prelude::*;\n\n"]
    for name, fields in m.structs:
        gen_struct(m, name, fields, out, name == m.name)
    if m.kind in ("request", "response"):
        out.append(f"impl HeaderVersion for {m.name} {{\n    fn header_version(version: i16) -> i16 {{\n"
                   f"        {header_version_expr(m)}\n    }}\n}}\n")
    if m.kind == "request":
        response = m.name[: -len("Request")] + "Response"
        out.append(f"\nimpl Request for {m.name} {{\n    const KEY: i16 = {m.api_key};\n"
                   f"    type Response = super::{response};\n}}\n")
    return "".join(out)


def gen_mod(messages, apis):
    out = [f"// @generated by scripts/gen_kafka_messages.py from Apache Kafka {KAFKA_VERSION}'s\n"
           "// common/message/*.json. Do not edit.\n\n"
           f"//! Kafka {KAFKA_VERSION}'s messages: every API a broker listener serves, the headers and the\n"
           "//! embedded data types, generated from Kafka's own specifications.\n\n"
           "#![allow(clippy::all, non_snake_case, unused_imports, unused_variables, unused_mut, unused_parens)]\n\n"
           "mod prelude {\n"
           "    pub use anyhow::Result;\n"
           "    pub use bytes::Bytes;\n"
           "    pub use kafka_protocol::protocol::buf::{ByteBuf, ByteBufMut};\n"
           "    pub use kafka_protocol::protocol::{\n"
           "        Decodable, Encodable, HeaderVersion, Message, Request, StrBytes, VersionRange,\n"
           "    };\n"
           "    pub use uuid::Uuid;\n\n"
           "    pub use crate::message_codec::*;\n}\n\n"
           "use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Message, StrBytes, VersionRange};\n\n"]
    for m in messages:
        mod = snake(m.name)
        out.append(f"pub mod {mod};\npub use {mod}::{m.name};\n")
    out.append("\n/// The APIs a Kafka broker listener serves, by key.\n"
               "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]\n#[repr(i16)]\npub enum ApiKey {\n")
    for key, name, _ in apis:
        out.append(f"    /// {name}Request\n    {name} = {key},\n")
    out.append("}\n\nimpl ApiKey {\n"
               "    /// Every key, in key order.\n"
               "    pub const ALL: &'static [ApiKey] = &[\n" +
               "".join(f"        ApiKey::{name},\n" for _, name, _ in apis) + "    ];\n\n"
               "    /// The request header version a request of this version is sent with.\n"
               "    pub fn request_header_version(&self, version: i16) -> i16 {\n        match self {\n" +
               "".join(f"            ApiKey::{name} => {name}Request::header_version(version),\n" for _, name, _ in apis) +
               "        }\n    }\n\n"
               "    /// The response header version an answer of this version is sent with.\n"
               "    pub fn response_header_version(&self, version: i16) -> i16 {\n        match self {\n" +
               "".join(f"            ApiKey::{name} => {name}Response::header_version(version),\n" for _, name, _ in apis) +
               "        }\n    }\n\n"
               "    /// The versions Kafka defines for this API.\n"
               "    pub fn valid_versions(&self) -> VersionRange {\n        match self {\n" +
               "".join(f"            ApiKey::{name} => {name}Request::VERSIONS,\n" for _, name, _ in apis) +
               "        }\n    }\n\n"
               "    /// The versions a Kafka broker serves by default: its newest is left out where Kafka\n"
               "    /// marks it unstable (served only with `unstable.api.versions.enable`).\n"
               "    pub fn stable_versions(&self) -> VersionRange {\n        match self {\n" +
               "".join(f"            ApiKey::{name} => VersionRange {{ min: {versions(spec['validVersions'])[0]}, max: {versions(spec['validVersions'])[1] - (1 if spec.get('latestVersionUnstable') else 0)} }},\n" for _, name, spec in apis) +
               "        }\n    }\n\n"
               "    /// Every key, in key order.\n"
               "    pub fn iter() -> impl Iterator<Item = ApiKey> {\n        Self::ALL.iter().copied()\n    }\n}\n\n"
               "impl TryFrom<i16> for ApiKey {\n    type Error = ();\n\n"
               "    fn try_from(v: i16) -> std::result::Result<Self, ()> {\n        match v {\n" +
               "".join(f"            {key} => Ok(ApiKey::{name}),\n" for key, name, _ in apis) +
               "            _ => Err(()),\n        }\n    }\n}\n\n"
               "/// Decodes `body` as the request (or the response) of `key` at `version`, refuses bytes\n"
               "/// left over, and encodes the message again at the same version: the round trip the\n"
               "/// tests check against Kafka's own encoder.\n"
               "pub fn reencode(key: ApiKey, response: bool, version: i16, body: &mut bytes::Bytes) -> anyhow::Result<bytes::BytesMut> {\n"
               "    fn again<M: Decodable + Encodable>(body: &mut bytes::Bytes, version: i16) -> anyhow::Result<bytes::BytesMut> {\n"
               "        let message = M::decode(body, version)?;\n"
               "        anyhow::ensure!(body.is_empty(), \"{} bytes after the message\", body.len());\n"
               "        let size = message.compute_size(version)?;\n"
               "        let mut out = bytes::BytesMut::with_capacity(size);\n"
               "        message.encode(&mut out, version)?;\n"
               "        anyhow::ensure!(out.len() == size, \"computed {size} bytes, wrote {}\", out.len());\n"
               "        Ok(out)\n    }\n"
               "    match (key, response) {\n" +
               "".join(f"        (ApiKey::{name}, false) => again::<{name}Request>(body, version),\n"
                       f"        (ApiKey::{name}, true) => again::<{name}Response>(body, version),\n" for _, name, _ in apis) +
               "    }\n}\n")
    for (name, inner_spec, inner, copy) in [
        ("BrokerId", "int32", "i32", True), ("GroupId", "string", "StrBytes", False),
        ("ProducerId", "int64", "i64", True), ("TopicName", "string", "StrBytes", False),
        ("TransactionalId", "string", "StrBytes", False),
    ]:
        derive = "Clone, Eq, PartialEq, Ord, PartialOrd, Hash, Default" + (", Copy" if copy else "")
        out.append(f"\n/// {ENTITY_DOCS[name]}\n#[derive({derive})]\npub struct {name}(pub {inner});\n\n"
                   f"impl From<{inner}> for {name} {{\n    fn from(other: {inner}) -> Self {{\n        Self(other)\n    }}\n}}\n"
                   f"impl From<{name}> for {inner} {{\n    fn from(other: {name}) -> Self {{\n        other.0\n    }}\n}}\n"
                   f"impl std::borrow::Borrow<{inner}> for {name} {{\n    fn borrow(&self) -> &{inner} {{\n        &self.0\n    }}\n}}\n"
                   f"impl std::ops::Deref for {name} {{\n    type Target = {inner};\n    fn deref(&self) -> &{inner} {{\n        &self.0\n    }}\n}}\n"
                   f"impl std::cmp::PartialEq<{inner}> for {name} {{\n    fn eq(&self, other: &{inner}) -> bool {{\n        &self.0 == other\n    }}\n}}\n"
                   f"impl std::cmp::PartialEq<{name}> for {inner} {{\n    fn eq(&self, other: &{name}) -> bool {{\n        self == &other.0\n    }}\n}}\n"
                   f"impl std::fmt::Debug for {name} {{\n    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {{\n        std::fmt::Debug::fmt(&self.0, f)\n    }}\n}}\n")
    return "".join(out)


# ----------------------------------------------------------------------------------------------
# protocol/src/shapes/requests.rs: each request's wire layout, walked before decoding to count
# what the decoded request will occupy (shapes/mod.rs).

def shape_const(name):
    return snake(name).upper()


def shape_ty(m, f, compact, element=False):
    """The `Ty` of field `f` (of one element of it, when `element`) in compact or classic form."""
    module = snake(m.name)
    if f.is_array and not element:
        inner = shape_ty(m, f, compact, element=True)
        if f.struct:
            size = f"size_of::<crate::messages::{module}::{f.struct}>()"
        elif f.entity:
            size = f"size_of::<crate::messages::{f.entity}>()"
        else:
            size = f"size_of::<{ {'StrBytes': 'kafka_protocol::protocol::StrBytes', 'Bytes': 'bytes::Bytes', 'Uuid': 'uuid::Uuid'}.get(f.element_type(), f.element_type()) }>()"
        return f"Ty::Array {{ compact: {str(compact).lower()}, element: &{inner}, element_bytes: {size} }}"
    if f.struct:
        if f.nullable and not f.is_array:
            return f"Ty::OptionStruct(&{shape_const(f.struct)})"
        return f"Ty::Struct(&{shape_const(f.struct)})"
    b = f.base
    fixed = {"int8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8, "float64": 8, "uuid": 16}
    if b in fixed:
        return f"Ty::Fixed({fixed[b]})"
    if b == "bool":
        return "Ty::Bool"
    if b == "string":
        return "Ty::CompactString" if compact else "Ty::String"
    return "Ty::CompactBytes" if compact else "Ty::Bytes"


def clip(rng, lo, hi):
    if rng is None:
        return None
    a, b = max(rng[0], lo), min(rng[1], hi)
    return (a, b) if a <= b else None


def gen_shapes(messages):
    out = [f"// @generated by scripts/gen_kafka_messages.py from Apache Kafka {KAFKA_VERSION}'s\n"
           "// common/message/*Request.json: the wire layout of every Kafka request. Do not edit.\n\n"
           "use std::mem::size_of;\n\n#[allow(unused_imports)]\nuse super::{Field, Shape, Tag, Ty};\n\n"]
    roots = []
    for m in messages:
        if m.kind != "request":
            continue
        vlo, vhi = m.valid
        flex_from = m.flexible[0] if m.flexible else MAX_VERSION
        module = snake(m.name)
        roots.append((m.api_key, f"self::{module}::{shape_const(m.name)}"))
        out.append(f"pub mod {module} {{\n    use super::*;\n\n")
        # Nested structs first, so each shape refers to ones defined above it (order is free in
        # Rust statics, but it reads top-down).
        for name, fields in reversed(m.structs):
            entries, tags = [], []
            for f in fields:
                if f.tagged:
                    rng = clip(f.tagged, vlo, vhi)
                    if rng:
                        tags.append(f"        Tag {{ tag: {f.tag}, versions: ({rng[0]}, {rng[1]}), ty: {shape_ty(m, f, True)} }},\n")
                    continue
                rng = clip(f.versions, vlo, vhi)
                if not rng:
                    continue
                for compact, part in ((True, clip(rng, flex_from, vhi)), (False, clip(rng, vlo, flex_from - 1))):
                    if part:
                        entries.append(f"        Field {{ name: \"{f.ident}\", versions: ({part[0]}, {part[1]}), ty: {shape_ty(m, f, compact)} }},\n")
            out.append(f"pub static {shape_const(name)}: Shape = Shape {{\n    name: \"{name}\",\n"
                       f"    versions: ({vlo}, {vhi}),\n    flexible_from: {flex_from},\n"
                       "    fields: &[\n" + "".join(entries) + "    ],\n    tags: &[\n" + "".join(tags) + "    ],\n};\n\n")
        out.append("}\n\n")
    out.append("/// The shape of each request by API key.\npub fn request_shape(api_key: i16) -> Option<&'static Shape> {\n"
               "    match api_key {\n" + "".join(f"        {key} => Some(&{const}),\n" for key, const in sorted(roots)) +
               "        _ => None,\n    }\n}\n")
    return "".join(out)


def generate(jar):
    specs = read_specs(jar)
    source = os.path.basename(jar)
    wanted = []
    apis = []
    for name, spec in sorted(specs.items()):
        if spec["type"] == "request" and "broker" in spec.get("listeners", []):
            response = name[: -len("Request")] + "Response"
            wanted += [name, response]
            apis.append((spec["apiKey"], name[: -len("Request")], spec))
        elif spec["type"] in ("header", "data"):
            wanted.append(name)
    apis.sort()
    messages = [Message(specs[n]) for n in sorted(wanted)]
    files = {"mod.rs": gen_mod(messages, apis)}
    for m in messages:
        files[snake(m.name) + ".rs"] = gen_message(m, source)
    requests = [m for m in messages if m.kind == "request"]
    return files, gen_shapes(requests)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jar", default=default_jar())
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if not os.path.exists(args.jar):
        sys.exit(f"{args.jar} not found: fetch kafka-clients {KAFKA_VERSION} with Maven first "
                 "(scripts/java_tests.sh does)")
    files, shapes = generate(args.jar)
    import subprocess

    def rustfmt(name, text):
        r = subprocess.run(["rustfmt", "--edition", "2021", "--emit", "stdout"], input=text,
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"rustfmt failed on {name}:\n{r.stderr[:4000]}")
        return r.stdout

    formatted = {name: rustfmt(name, text) for name, text in files.items()}
    shapes = rustfmt("shapes/requests.rs", shapes)
    import tempfile
    with tempfile.TemporaryDirectory() as scratch:
        samples_path = os.path.join(scratch, "samples.bin")
        r = subprocess.run(["java", "-cp", args.jar, os.path.join(ROOT, "scripts", "KafkaMessageSamples.java"),
                            samples_path], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"KafkaMessageSamples failed:\n{r.stdout}{r.stderr[-4000:]}")
        samples = open(samples_path, "rb").read()
    if args.check:
        if not os.path.exists(SAMPLES) or open(SAMPLES, "rb").read() != samples:
            sys.exit("protocol/tests/data/kafka-samples.bin is stale")
        if open(SHAPES).read() != shapes:
            sys.exit("protocol/src/shapes/requests.rs is stale")
        stale = [n for n, t in formatted.items()
                 if not os.path.exists(os.path.join(OUT_DIR, n)) or open(os.path.join(OUT_DIR, n)).read() != t]
        extra = [n for n in os.listdir(OUT_DIR) if n not in formatted] if os.path.isdir(OUT_DIR) else []
        if stale or extra:
            sys.exit(f"protocol/src/messages is stale: {', '.join((stale + extra)[:10])}")
        return
    os.makedirs(OUT_DIR, exist_ok=True)
    for n in os.listdir(OUT_DIR):
        if n not in formatted:
            os.remove(os.path.join(OUT_DIR, n))
    for name, text in formatted.items():
        with open(os.path.join(OUT_DIR, name), "w") as fh:
            fh.write(text)
    with open(SAMPLES, "wb") as fh:
        fh.write(samples)
    with open(SHAPES, "w") as fh:
        fh.write(shapes)
    print(f"wrote {len(formatted)} files to {os.path.relpath(OUT_DIR, ROOT)}")


if __name__ == "__main__":
    main()
