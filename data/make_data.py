"""Regenerate memorylab's bundled data, or check that the committed files are up to date.

    python data/make_data.py           # rewrite transcripts/, workspace/, reference_workspace/
    python data/make_data.py --check   # exit 1 and list the differences if not up to date

Everything is deterministic: seeded ``random.Random`` streams and fixed base timestamps, no
clock and no network (the workspace's agents use a scripted model and the offline
``memorylab/extractive`` summarizer). See data/README.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the _gen_* helpers sit next to this script
    sys.path.insert(0, str(HERE))

import _gen_agent_bughunter  # noqa: E402
import _gen_agent_dataengineer  # noqa: E402
import _gen_agent_researcher  # noqa: E402
import _gen_domain_pipeline  # noqa: E402
import _gen_domain_research  # noqa: E402
import _gen_domain_webapp  # noqa: E402
from _gen_reference import build_reference  # noqa: E402
from _gen_transcripts import build_transcript  # noqa: E402
from _gen_workspace import build_workspace  # noqa: E402

from memorylab.transcripts import load_transcript, save_transcript  # noqa: E402

GENERATED = ("transcripts", "workspace", "reference_workspace")
"""The folders of data/ this script writes (everything else in data/ is written by hand)."""

DOMAINS = (_gen_domain_pipeline.DOMAIN, _gen_domain_webapp.DOMAIN, _gen_domain_research.DOMAIN)
AGENTS = (_gen_agent_dataengineer, _gen_agent_bughunter, _gen_agent_researcher)
WORKSPACE_SEED = 20260420
WORKSPACE_START = datetime(2026, 4, 20, 9, 0, tzinfo=UTC)
REFERENCE_SEED = 20260309


def generate(out: Path) -> dict[str, object]:
    """Write every generated folder into ``out``; returns statistics for the report."""
    stats: dict[str, object] = {}
    folder = out / "transcripts"
    folder.mkdir(parents=True, exist_ok=True)
    facts: dict[str, dict[str, int]] = {}
    for domain in DOMAINS:
        transcript = build_transcript(domain)
        path = save_transcript(transcript, folder / f"{domain.name}.jsonl")
        assert load_transcript(path) == transcript, f"{path} does not read back the same"
        counts: dict[str, int] = {}
        for fact in transcript.facts:
            counts[fact.category] = counts.get(fact.category, 0) + 1
        facts[domain.name] = {
            "messages": len(transcript.messages),
            "sessions": transcript.sessions,
            **counts,
        }
    stats["transcripts"] = facts
    stats["compactions"] = build_workspace(
        [a.plan(WORKSPACE_SEED) for a in AGENTS], out / "workspace", WORKSPACE_START, WORKSPACE_SEED
    )
    stats["reference archives (kept, lost)"] = build_reference(
        out / "reference_workspace", REFERENCE_SEED
    )
    return stats


def _files(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def differences(expected: Path, actual: Path) -> list[str]:
    """How the generated folders in ``actual`` differ from those in ``expected``."""
    out: list[str] = []
    for name in GENERATED:
        want, have = _files(expected / name), _files(actual / name)
        for path in sorted(want.keys() | have.keys()):
            label = f"{name}/{path}"
            if path not in have:
                out.append(f"missing: {label}")
            elif path not in want:
                out.append(f"not generated any more: {label}")
            elif want[path] != have[path]:
                out.append(f"differs: {label}")
    return out


def check(data_dir: Path = HERE) -> list[str]:
    """Regenerate into a temporary folder and compare with ``data_dir``: [] when up to date."""
    with tempfile.TemporaryDirectory(prefix="memorylab-data-") as tmp:
        generate(Path(tmp))
        return differences(Path(tmp), data_dir)


def write(data_dir: Path = HERE) -> dict[str, object]:
    """Regenerate the generated folders of ``data_dir`` (old files in them are removed)."""
    with tempfile.TemporaryDirectory(prefix="memorylab-data-") as tmp:
        fresh = Path(tmp)
        stats = generate(fresh)
        for name in GENERATED:
            target = data_dir / name
            for old in sorted(target.rglob("*"), reverse=True) if target.exists() else []:
                if old.is_dir():
                    old.rmdir()
                else:
                    old.unlink()
            for relative, data in _files(fresh / name).items():
                path = target / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--data-dir", type=Path, default=HERE, help="default: this folder")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.check:
        problems = check(args.data_dir)
        for line in problems:
            print(line)
        if problems:
            print(
                f"{len(problems)} generated file(s) are not up to date: run "
                "`python data/make_data.py` and commit the result",
                file=sys.stderr,
            )
            return 1
        print(f"data is up to date ({time.perf_counter() - started:.1f} s)")
        return 0
    stats = write(args.data_dir)
    for key, value in stats.items():
        print(f"{key}: {value}")
    print(f"generated in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
