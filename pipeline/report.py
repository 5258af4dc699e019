"""report.html and its PNG plots, drawn on the driver from small aggregates.

The page is self-contained (inline CSS, no scripts, no network) and references its plots as files beside
it, so the whole `<out>` directory can be copied, attached or served as is.
"""

from __future__ import annotations

import html
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display on servers; must precede pyplot
import matplotlib.dates as mdates
import matplotlib.pyplot as plt

CAUSE_TEXT = {
    "new_member": "a member joined (new consumer, restart of a dynamic member, scale-out)",
    "leave": "a member sent LeaveGroup (clean shutdown of a dynamic member)",
    "session_timeout": "a member stopped heartbeating (crash, GC pause, network) and expired",
    "sync_timeout": "a member did not send SyncGroup in time",
    "leader_rejoin": "the leader rejoined (e.g. it noticed a metadata change and forced a rebalance)",
    "metadata_change": "a member rejoined with different protocols/subscription",
    "static_replacement": "a static member came back with a new id while the group was rebalancing",
    "persist_failure": "the coordinator failed to persist the group state",
}
PLOTS = ("timeline.png", "durations.png", "causes.png", "partitions_moved.png", "lag.png")


def _colors(causes: list[str]) -> dict[str, Any]:
    cmap = plt.get_cmap("tab10")
    return {c: cmap(i % 10) for i, c in enumerate(sorted(causes, key=str))}


def _dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def _empty(ax: Any, text: str = "no rebalances in the selected range") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#666")
    ax.set_xticks([])
    ax.set_yticks([])


def plot_timeline(path: Path, data: dict[str, Any], colors: dict[str, Any]) -> None:
    """Top: rebalances per time bucket by cause (all groups). Bottom: each rebalance of the busiest groups."""
    fig, (ax1, ax2) = plt.subplots(
        2, 1, figsize=(11, 3 + 0.28 * max(len(data["top"]), 4)), height_ratios=[1, 1.6], sharex=True
    )
    if data["over_time"]:
        by_cause: dict[str, dict[int, int]] = defaultdict(dict)
        ts = sorted({t for t, _, _ in data["over_time"]})
        for t, c, n in data["over_time"]:
            by_cause[str(c)][t] = n
        bottom = [0] * len(ts)
        width = data["bucket_ms"] / 86_400_000 * 0.9  # matplotlib date units are days
        for c in sorted(by_cause):
            vals = [by_cause[c].get(t, 0) for t in ts]
            ax1.bar(
                [_dt(t) for t in ts],
                vals,
                width=width,
                bottom=bottom,
                color=colors.get(c),
                label=c,
                align="edge",
            )
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        ax1.set_ylabel(f"rebalances per {_human_ms(data['bucket_ms'])}")
        ax1.legend(fontsize=7, ncols=4, loc="upper left")
        ax1.set_title("Rebalances over time (all groups)")
    else:
        _empty(ax1)
    if data["timeline"]:
        rows = {g: i for i, g in enumerate(reversed(data["top"]))}
        for c in sorted({str(r[3]) for r in data["timeline"]}):
            pts = [r for r in data["timeline"] if str(r[3]) == c]
            ax2.scatter(
                [_dt(r[1]) for r in pts],
                [rows[r[0]] for r in pts],
                s=[8 + min((r[2] or 0) / 200, 120) for r in pts],
                color=colors.get(c),
                alpha=0.7,
                label=c,
                linewidths=0,
            )
        ax2.set_yticks(range(len(rows)), list(rows))
        ax2.tick_params(axis="y", labelsize=7)
        ax2.set_title(f"Each rebalance of the {len(rows)} busiest groups (marker size ~ duration)")
        ax2.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax2.xaxis.get_major_locator()))
    else:
        _empty(ax2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_durations(path: Path, data: dict[str, Any], p50: Any, p99: Any) -> None:
    fig, ax = plt.subplots(figsize=(8, 4))
    if data["durations"]:
        pts = sorted(data["durations"])
        lefts = [10 ** (b / 10) for b, _ in pts]
        widths = [10 ** ((b + 1) / 10) - 10 ** (b / 10) for b, _ in pts]
        ax.bar(lefts, [n for _, n in pts], width=widths, align="edge", color="#4c72b0", edgecolor="white")
        ax.set_xscale("log")
        for v, name in ((p50, "p50"), (p99, "p99")):
            if v:
                ax.axvline(max(v, 1), color="#c44e52", ls="--", lw=1)
                ax.text(
                    max(v, 1), ax.get_ylim()[1] * 0.95, f" {name} {_human_ms(v)}", color="#c44e52", fontsize=8
                )
        ax.set_xlabel("rebalance duration (ms, log scale): consumers of the group stop for about this long")
        ax.set_ylabel("rebalances")
    else:
        _empty(ax)
    ax.set_title("Rebalance duration distribution")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_causes(path: Path, data: dict[str, Any], colors: dict[str, Any]) -> None:
    fig, ax = plt.subplots(figsize=(8, 0.6 + 0.45 * max(len(data["causes"]), 2)))
    if data["causes"]:
        pts = sorted(data["causes"], key=lambda r: r[1])
        ax.barh([str(c) for c, _ in pts], [n for _, n in pts], color=[colors.get(str(c)) for c, _ in pts])
        for i, (_, n) in enumerate(pts):
            ax.text(n, i, f" {n:,}", va="center", fontsize=8)
        ax.set_xlabel("rebalances")
    else:
        _empty(ax)
    ax.set_title("Rebalance causes")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_moved(path: Path, data: dict[str, Any]) -> None:
    fig, ax = plt.subplots(figsize=(8, 4))
    if data["moved"]:
        pts = sorted(data["moved"])
        ax.bar([m for m, _ in pts], [n for _, n in pts], width=0.8, color="#55a868")
        ax.set_xlabel("partitions whose owner changed in the rebalance (first assignments excluded)")
        ax.set_ylabel("rebalances")
    else:
        _empty(ax, "no rebalance with a decoded assignment")
    ax.set_title("Partitions moved per rebalance")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_lag(path: Path, data: dict[str, Any]) -> None:
    """Total lag over time of the groups with the highest peaks; a dashed line where a rebalance that caused
    a lag spike started (same colour as its group)."""
    fig, ax = plt.subplots(figsize=(10, 4.5))
    series = data.get("lag_series") or {}
    if series:
        cmap = plt.get_cmap("tab10")
        color = {g: cmap(i % 10) for i, g in enumerate(series)}
        for g, pts in series.items():
            ax.plot([_dt(t) for t, _ in pts], [v for _, v in pts], label=g, color=color[g], lw=1.4)
        for g, t in data.get("lag_spikes", []):
            ax.axvline(_dt(t), color=color.get(g, "#999"), ls="--", lw=0.9, alpha=0.8)
        ax.set_ylabel("lag (messages, all partitions)")
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
        ax.legend(fontsize=8, loc="upper right")
    else:
        _empty(ax, "no lag snapshots in the journal (--journal-lag-snapshot-interval-ms)")
    ax.set_title("Consumer lag over time (dashed: rebalances that caused a lag spike)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _human_ms(ms: float | int | None) -> str:
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    if ms < 3_600_000:
        return f"{ms / 60_000:.1f} min"
    if ms < 86_400_000:
        return f"{ms / 3_600_000:.1f} h"
    return f"{ms / 86_400_000:.1f} d"


CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{margin-bottom:.2em} .sub{color:#666;margin-top:0}
.cards{display:flex;flex-wrap:wrap;gap:.8em;margin:1.2em 0}
.card{border:1px solid #ddd;border-radius:6px;padding:.6em .9em;min-width:9em}
.card b{display:block;font-size:1.5em} .card span{color:#666;font-size:.85em}
table{border-collapse:collapse;margin:.6em 0 1.4em} td,th{border-bottom:1px solid #eee;padding:.25em .7em;text-align:right}
th{background:#f6f6f6} td:first-child,th:first-child{text-align:left}
img{max-width:100%;border:1px solid #eee;margin:.4em 0 1.4em} code{background:#f3f3f3;padding:0 .25em}
.note{color:#555;font-size:.92em}
"""


def render_html(summary: dict[str, Any]) -> str:
    e = html.escape
    t = summary["totals"]
    rng = f"{summary['since'] or 'start of journal'} → {summary['until'] or 'end of journal'}"
    cards = [
        (f"{summary['total_events']:,}", "journal events"),
        (f"{summary['groups']:,}", "groups"),
        (f"{t['rebalances']:,}", "rebalances"),
        (_human_ms(t["rebalance_p50_ms"]), "p50 rebalance (consumers stopped)"),
        (_human_ms(t["rebalance_p99_ms"]), "p99 rebalance"),
        (f"{t['members_expired']:,}", "members expired"),
        (f"{t['members_left']:,}", "members left"),
        (f"{t['members_fenced']:,}", "members fenced"),
        (f"{t['static_rejoins_without_rebalance']:,}", "static rejoins without rebalance"),
        (f"{t['skip_assignments']:,}", "SkipAssignment rejoins"),
        (f"{t['partitions_moved']:,}", "partitions moved"),
    ]
    card_html = "".join(f"<div class=card><b>{e(v)}</b><span>{e(k)}</span></div>" for v, k in cards)
    total_reb = max(t["rebalances"], 1)
    cause_rows = "".join(
        f"<tr><td><code>{e(str(c))}</code></td><td>{n:,}</td><td>{100 * n / total_reb:.1f}%</td>"
        f"<td style='text-align:left'>{e(CAUSE_TEXT.get(str(c), ''))}</td></tr>"
        for c, n in t["causes"].items()
    )
    top_rows = "".join(
        f"<tr><td>{e(g['group'])}</td><td>{g['rebalances']:,}</td><td>{e(_human_ms(g['rebalance_p50_ms']))}</td>"
        f"<td>{e(_human_ms(g['rebalance_p99_ms']))}</td><td>{g['members_expired']:,}</td><td>{g['members_left']:,}</td>"
        f"<td>{g['members_fenced']:,}</td><td>{g['static_rejoins_without_rebalance']:,}</td>"
        f"<td>{g['skip_assignments']:,}</td><td>{g['partitions_moved']:,}</td>"
        f"<td style='text-align:left'>{e(_top_cause(g['causes']))}</td></tr>"
        for g in summary["top_groups"]
    )
    saved = t["static_rejoins_without_rebalance"]
    saved_text = (
        f"Static membership kept <b>{saved:,}</b> member restarts from rebalancing the group (a dynamic "
        f"member's restart costs a leave and a join rebalance, so up to {2 * saved:,} rebalances were avoided; "
        f"{t['skip_assignments']:,} of the rejoins were the leader, told to skip assignment)."
        if saved
        else "No static rejoins in this range (no consumer used <code>group.instance.id</code>, or none restarted)."
    )
    return f"""<!doctype html>
<html lang=en><head><meta charset=utf-8><title>groupcoord rebalance report</title>
<meta name=viewport content="width=device-width,initial-scale=1"><style>{CSS}</style></head><body>
<h1>Consumer-group rebalance report</h1>
<p class=sub>{e(summary["data_dir"])} · {e(rng)} · generated {e(summary["generated_at"] or "")}
 · Spark {e(summary["spark_version"])}</p>
<div class=cards>{card_html}</div>
<p>{saved_text}</p>
<h2>Why groups rebalance</h2>
<table><tr><th>cause</th><th>rebalances</th><th>share</th><th style='text-align:left'>meaning</th></tr>{cause_rows}</table>
<img src="causes.png" alt="rebalance causes">
<h2>Busiest groups</h2>
<table><tr><th>group</th><th>rebalances</th><th>p50</th><th>p99</th><th>expired</th><th>left</th><th>fenced</th>
<th>static rejoins</th><th>skip assign.</th><th>partitions moved</th><th style='text-align:left'>top cause</th></tr>
{top_rows}</table>
<h2>When</h2>
<img src="timeline.png" alt="rebalance timeline">
<h2>How long consumers stop</h2>
<p class=note>A rebalance's duration runs from the state change to PreparingRebalance to the group's next
Stable (or Empty) state: the members of the group do not consume in between.</p>
<img src="durations.png" alt="duration distribution">
<h2>How much moves</h2>
<p class=note>Partitions moved: partitions whose owner (the static instance id, else the member id) differs from
the previous assignment. The first assignment of a group in the range is left out of this plot and of the totals
(<code>partitions_moved_incl_first</code> in summary.json includes it).</p>
<img src="partitions_moved.png" alt="partitions moved per rebalance">
<h2>Lag</h2>
<p class=note>From the coordinator's periodic <code>lag_snapshot</code> journal events: log end offset minus
committed offset, summed over a group's partitions. A rebalance caused a lag spike when the peak lag after it
started was at least twice the lag before it and at least 100 messages more (table <code>rebalance_lag</code>,
with the time each rebalance took to catch up).</p>
<img src="lag.png" alt="lag over time">
<h2>Data</h2>
<p class=note>Every number here comes from <code>summary.json</code> and the Parquet tables in <code>tables/</code>
(<code>rebalances</code>, <code>member_sessions</code>, <code>group_summary</code>, <code>lag</code>,
<code>rebalance_lag</code>); their columns are described in
<code>docs/report.md</code>.</p>
</body></html>
"""


def _top_cause(causes: dict[str, int]) -> str:
    if not causes:
        return ""
    c, n = max(causes.items(), key=lambda kv: kv[1])
    return f"{c} ({n:,})"


def write_report(out: Path, summary: dict[str, Any], data: dict[str, Any]) -> Path:
    """Draw the four plots and report.html into `out`; returns the page's path."""
    colors = _colors([str(c) for c, _ in data["causes"]])
    plot_timeline(out / "timeline.png", data, colors)
    plot_durations(
        out / "durations.png",
        data,
        summary["totals"]["rebalance_p50_ms"],
        summary["totals"]["rebalance_p99_ms"],
    )
    plot_causes(out / "causes.png", data, colors)
    plot_moved(out / "partitions_moved.png", data)
    plot_lag(out / "lag.png", data)
    page = out / "report.html"
    page.write_text(render_html(summary), encoding="utf-8")
    return page
