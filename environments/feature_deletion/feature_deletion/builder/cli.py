"""`fd-build @ configs/feature_deletion/build.toml [--seed N] [--output PATH]`."""

from __future__ import annotations

import argparse
import logging
import sys
import tomllib
from pathlib import Path

from pydantic import ValidationError

from feature_deletion.builder.core import BuildConfig, Builder


def parse(argv: list[str]) -> tuple[BuildConfig, Path]:
    parser = argparse.ArgumentParser(prog="fd-build", description="Build Feature Deletion tasks.")
    parser.add_argument("at", nargs="?", help="@ (then the config file)")
    parser.add_argument("config", nargs="?", help="TOML build config")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--output")
    parser.add_argument("--max-tasks-per-package", type=int)
    args = parser.parse_args(argv)
    path = args.config if args.at == "@" else args.at
    if not path:
        parser.error("give a config: fd-build @ configs/feature_deletion/build.toml")
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        parser.error(f"{path}: {exc}")
    for key in ("seed", "output", "max_tasks_per_package"):
        if getattr(args, key) is not None:
            data[key] = getattr(args, key)
    try:
        config = BuildConfig.model_validate(data)
    except ValidationError as exc:
        parser.error(f"{path}: " + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))
    return config, Path.cwd()


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s fd-build %(message)s", stream=sys.stderr)
    config, base = parse(sys.argv[1:] if argv is None else argv)
    builder = Builder(config, base)
    rows, stats = builder.build()
    out, stats_path = builder.write(rows, stats)
    for p in stats["packages"]:
        line = f"{p['spec']}: {p['status']}, kept {p['kept']} of {p['tried']} tried"
        if p["rejected"]:
            line += " (rejected: " + ", ".join(f"{k} {v}" for k, v in p["rejected"].items()) + ")"
        if p["message"]:
            line += f" - {p['message']}"
        print(line)
    print(f"{len(rows)} tasks from {stats['packages_used']} packages -> {out} (stats: {stats_path}); "
          f"{stats['packages_skipped']} packages skipped")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
