#!/usr/bin/env python3
"""Turns one matrix run (perf-results/<date>-*.json) into the table in perf-results/HISTORY.md
and two SVG plots: latency percentiles against load, and throughput against the baselines."""

import json
import pathlib
import sys

OUT = pathlib.Path(__file__).resolve().parents[1] / "perf-results"
START, END = "<!-- matrix:start -->", "<!-- matrix:end -->"


def load(date, scenario):
    path = OUT / f"{date}-{scenario}.json"
    return json.loads(path.read_text()) if path.exists() else None


def svg_lines(title, x_labels, series, y_label, path):
    """A small line chart: series is {name: [y per x]}."""
    w, h, left, bottom, top, right = 640, 360, 60, 40, 40, 150
    ymax = max(max(v for v in ys if v is not None) for ys in series.values()) * 1.1 or 1
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]
    px = lambda i: left + i * (w - left - right) / max(len(x_labels) - 1, 1)
    py = lambda v: h - bottom - v / ymax * (h - bottom - top)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
             f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
             f'<text x="15" y="{h / 2}" transform="rotate(-90 15 {h / 2})" text-anchor="middle">{y_label}</text>']
    for i, label in enumerate(x_labels):
        parts.append(f'<text x="{px(i)}" y="{h - bottom + 18}" text-anchor="middle">{label}</text>')
    for k in range(5):
        v = ymax * k / 4
        parts.append(f'<text x="{left - 6}" y="{py(v) + 4}" text-anchor="end">{v:.0f}</text>')
        parts.append(f'<line x1="{left}" y1="{py(v)}" x2="{w - right}" y2="{py(v)}" stroke="#eee"/>')
    for n, (name, ys) in enumerate(series.items()):
        colour = colours[n % len(colours)]
        points = " ".join(f"{px(i)},{py(v)}" for i, v in enumerate(ys) if v is not None)
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>')
        for i, v in enumerate(ys):
            if v is not None:
                parts.append(f'<circle cx="{px(i)}" cy="{py(v)}" r="3" fill="{colour}"/>')
        parts.append(f'<text x="{w - right + 10}" y="{top + 16 * n + 10}" fill="{colour}">{name}</text>')
    parts.append("</svg>")
    path.write_text("\n".join(parts))


def svg_bars(title, bars, y_label, path):
    w, h, left, bottom, top = 640, 360, 60, 60, 40
    ymax = max(v for _, v in bars) * 1.15 or 1
    bw = (w - left - 20) / len(bars)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
             f'<text x="15" y="{h / 2}" transform="rotate(-90 15 {h / 2})" text-anchor="middle">{y_label}</text>']
    for i, (label, v) in enumerate(bars):
        x = left + i * bw + bw * 0.15
        bh = v / ymax * (h - bottom - top)
        parts.append(f'<rect x="{x}" y="{h - bottom - bh}" width="{bw * 0.7}" height="{bh}" fill="#1f77b4"/>')
        parts.append(f'<text x="{x + bw * 0.35}" y="{h - bottom - bh - 4}" text-anchor="middle">{v:.0f}</text>')
        parts.append(f'<text x="{x + bw * 0.35}" y="{h - bottom + 16}" text-anchor="middle">{label}</text>')
    parts.append(f'<line x1="{left}" y1="{h - bottom}" x2="{w - 10}" y2="{h - bottom}" stroke="black"/>')
    parts.append("</svg>")
    path.write_text("\n".join(parts))


def main(date):
    tcp = load(date, "baseline-tcp")["results"]["tcp_loopback"]["mb_per_s"]
    disk = load(date, "baseline-disk")["results"]["disk_sequential_write"]["mb_per_s"]
    peak = load(date, "produce-max")["results"]
    peak_mb = peak["produce"]["mb_per_s"]
    rows = [("max (closed loop)", peak, None)]
    for pct in (25, 50, 75):
        r = load(date, f"e2e-{pct}pct")
        if r:
            rows.append((f"{pct} % of max", r["results"], pct))
    catchup = load(date, "consume-catchup")
    scaling = sorted((int(p.stem.split("scaling-")[1].split("shards")[0]), json.loads(p.read_text()))
                     for p in OUT.glob(f"{date}-scaling-*shards.json"))
    lines = [START, f"#### Matrix run {date}", "",
             "`scripts/bench-matrix.sh`: shoal-bench, 1 KiB records, 100 per batch, 8 partitions, "
             "4 connections × 8 in flight, acks=all, default commit interval (5 ms), local store. "
             "Broker: 1 shard on CPU 0 (coordinator on CPU 0); generator pinned to CPU 1; "
             "scaling runs give the broker every CPU.", "",
             "| baseline | MB/s |", "|---|---|",
             f"| loopback TCP (4 connections) | {tcp} |",
             f"| sequential O_DIRECT write of the data directory's disk | {disk} |", "",
             f"Max produce throughput: **{peak_mb} MB/s** = "
             f"**{peak_mb / min(tcp, disk):.2f} × min(TCP, disk)** (target ≥ 0.80).", "",
             "| load | produce MB/s | produce p50 / p99 / p99.9 (ms) | end-to-end p50 / p99 (ms) |",
             "|---|---|---|---|"]
    for label, r, _ in rows:
        p = r["produce_latency_ms"]
        e = r.get("end_to_end_latency_ms")
        e2e = f"{e['p50']} / {e['p99']}" if e else "—"
        lines.append(f"| {label} | {r['produce']['mb_per_s']} | {p['p50']} / {p['p99']} / {p['p999']} | {e2e} |")
    if catchup:
        c = catchup["results"]["consume"]
        lines += ["", f"Catch-up read of the {c['records']:,}-record backlog from storage: "
                      f"**{c['mb_per_s']} MB/s**."]
    if scaling:
        lines += ["", "| shards | produce MB/s | ratio to 1 shard |", "|---|---|---|"]
        base = scaling[0][1]["results"]["produce"]["mb_per_s"]
        for shards, r in scaling:
            mb = r["results"]["produce"]["mb_per_s"]
            lines.append(f"| {shards} | {mb} | {mb / base:.2f} |")
    tansu_max = load(date, "peer-tansu-max")
    tansu_e2e = load(date, "peer-tansu-e2e-50pct")
    shoal_e2e = load(date, "e2e-50pct")
    if tansu_max and tansu_e2e and shoal_e2e:
        t, te, se = tansu_max["results"], tansu_e2e["results"], shoal_e2e["results"]
        lines += ["", "Peer broker, same load and CPU: Tansu 0.6.0 with its memory storage engine "
                      "(nothing written to disk: a favourable setting for Tansu; Shoal fsyncs every "
                      "object and commit).", "",
                  "| | Shoal | Tansu | Shoal / Tansu |", "|---|---|---|---|"]
        sm, tm = peak_mb, t["produce"]["mb_per_s"]
        lines.append(f"| max produce MB/s | {sm} | {tm} | {sm / tm:.2f} |" if tm else
                     f"| max produce MB/s | {sm} | {tm} | — |")
        for key, name in (("produce_latency_ms", "produce"), ("end_to_end_latency_ms", "end-to-end")):
            a, b = se[key]["p99"], te.get(key, {}).get("p99")
            lines.append(f"| {name} p99 at the same rate (ms) | {a} | {b} | "
                         f"{a / b:.2f} |" if b else f"| {name} p99 at the same rate (ms) | {a} | — | — |")
        read, written = te["consume"]["records"], te["produce"]["records"]
        if read < written:
            lines.append(f"\nIn Tansu's end-to-end run its consumer read only {read:,} of the "
                         f"{written:,} records within the window ({te['consume']['mb_per_s']} MB/s), "
                         "so its end-to-end latency is dominated by that backlog.")
        errors = t.get("produce_errors", 0) + te.get("produce_errors", 0)
        if errors:
            lines.append(f"\nTansu answered {errors} produce requests with errors.")
    lines += ["", f"![latency against load]({date}-latency.svg)",
              f"![throughput]({date}-throughput.svg)", END]
    latency_rows = [r for r in rows if r[2] is not None] + [rows[0]]
    labels = [f"{p}%" for _, _, p in latency_rows[:-1]] + ["max"]
    series = {
        "produce p50": [r["produce_latency_ms"]["p50"] for _, r, _ in latency_rows],
        "produce p99": [r["produce_latency_ms"]["p99"] for _, r, _ in latency_rows],
        "e2e p50": [r.get("end_to_end_latency_ms", {}).get("p50") for _, r, _ in latency_rows],
        "e2e p99": [r.get("end_to_end_latency_ms", {}).get("p99") for _, r, _ in latency_rows],
    }
    svg_lines("Latency against load (1 KiB, acks=all)", labels, series, "ms",
              OUT / f"{date}-latency.svg")
    bars = [("TCP", tcp), ("disk", disk), ("Shoal max", peak_mb)]
    bars += [(f"{s} shard{'s' if s > 1 else ''}", r["results"]["produce"]["mb_per_s"]) for s, r in scaling]
    svg_bars("Produce throughput and baselines", bars, "MB/s", OUT / f"{date}-throughput.svg")
    readme = OUT / "README.md"
    text = readme.read_text()
    block = "\n".join(lines)
    if START in text:
        text = text[:text.index(START)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip() + "\n\n## shoal-bench matrix\n\n" + block + "\n"
    readme.write_text(text)
    print(block)


if __name__ == "__main__":
    main(sys.argv[1])
