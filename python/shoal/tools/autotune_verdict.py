"""What `shoal autotune` reports: the ties within the noise of the best, the simplest of them
recommended, the warnings of a machine too busy for a verdict, and the [vec] lines (written into the
config file in place with --write)."""

from __future__ import annotations

from . import benchmark
from .autotune_candidates import Candidate, simplicity


def ties(candidates: list[Candidate]) -> list[Candidate]:
    """The best median's candidate and every one whose samples reach its lowest sample (the noise)."""
    best = max(candidates, key=lambda c: c.median)
    return [c for c in candidates if c.high >= best.low]


def recommend(candidates: list[Candidate], configured_envs: int) -> Candidate:
    return min(ties(candidates), key=lambda c: simplicity(c.vec, configured_envs))


def ini_lines(vec: dict) -> str:
    return "[vec]\n" + "".join(f"{k} = {_ini(v)}\n" for k, v in vec.items())


def _ini(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


#: the fastest configuration's samples spreading more than this share of its median (lowest to
#: highest) say the timings moved more than the ranking can tell apart
SPREAD_SHARE = 0.25


def load_warnings(before, after, candidates: list[Candidate]) -> list[str]:
    """Why this machine was too busy for a verdict: others' CPU use or steal over the measurement
    (benchmark.busy_reasons), and the spread of the fastest configuration's repeated samples."""
    reasons = benchmark.busy_reasons(before, after)
    best = max(candidates, key=lambda c: c.median)
    if len(best.samples) > 1 and (best.high - best.low) / best.median > SPREAD_SHARE:
        reasons.append(
            f"the fastest configuration's {len(best.samples)} samples spread "
            f"{100 * (best.high - best.low) / best.median:.0f} % (lowest to highest)"
        )
    return reasons


def verdict_warnings(reasons: list[str], tied: list[Candidate]) -> list[str]:
    """The warning lines printed with the recommendation: the load's reasons, and ties on a busy machine."""
    if not reasons:
        return []
    lines = [
        "warning: the machine was too busy for a reliable verdict: "
        + "; ".join(reasons)
        + ". Rerun on a quiet machine, or with a larger --budget."
    ]
    if len(tied) > 1:
        lines.append(
            f"warning: {len(tied)} configurations tie on a busy machine: the load may have evened them out, "
            "so the simplest of them, recommended below, may not be the fastest on a quiet one."
        )
    return lines


def update_config_text(text: str, section: str, values: dict, drop=frozenset()) -> str:
    """Sets ``key = value`` lines of one section in place, keeping comments, order and other sections;
    lines of the keys in ``drop`` are commented out."""
    import re

    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.strip() == f"[{section}]"), None)
    if start is None:
        return text.rstrip("\n") + f"\n\n[{section}]\n" + "".join(f"{k} = {v}\n" for k, v in values.items())
    end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    pending = dict(values)
    for i in range(start + 1, end):
        match = re.match(r"^(\s*)([A-Za-z_][\w.]*)(\s*=\s*)([^;#\n]*?)(\s*[;#].*)?(\n?)$", lines[i])
        if match and match.group(2) in drop and match.group(2) not in pending:
            lines[i] = "; " + lines[i]
        elif match and match.group(2) in pending:
            value = pending.pop(match.group(2))
            comment = match.group(5) or ""
            lines[i] = f"{match.group(1)}{match.group(2)}{match.group(3)}{value}{comment}{match.group(6)}"
    insert_at = end
    while insert_at > start + 1 and not lines[insert_at - 1].strip():
        insert_at -= 1
    lines[insert_at:insert_at] = [f"{k} = {v}\n" for k, v in pending.items()]
    return "".join(lines)
