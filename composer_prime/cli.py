"""Entry-point glue: parse a typed config with prime-pydantic-config, run, report errors in one line.

Every console script (`rl`, `trainer`, `orchestrator`, `inference`, `sft`, `eval`, ...) is
`run_cli(ConfigClass, main)`. prime-pydantic-config gives `@ file.toml` layering,
`--a.b value` overrides and did-you-mean on unknown keys; its boxed multi-line report is
condensed here into a single `error: ...` line so that supervisors and logs see one line.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from typing import TypeVar

from pydantic import ValidationError
from pydantic_config import ConfigFileError
from pydantic_config import cli as parse_cli

from composer_prime.errors import UserError

T = TypeVar("T")

_BOX_CHARS = re.compile(r"[╭╮╰╯│─]+")


def _one_line(text: str) -> str:
    lines = [_BOX_CHARS.sub(" ", line).strip() for line in text.splitlines()]
    return " ".join(line for line in lines if line)


def parse_config(config_cls: type[T], args: list[str] | None = None) -> T:
    """Parse `args` (default: sys.argv[1:]) into `config_cls`; raise UserError in one line."""
    args = sys.argv[1:] if args is None else args
    if any(a in ("-h", "--help") for a in args):
        return parse_cli(config_cls, args=args, plain=True)
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            return parse_cli(config_cls, args=args, plain=True)
    except SystemExit as exit_:
        message = _one_line(err.getvalue() + out.getvalue()) or f"invalid arguments (exit {exit_.code})"
        raise UserError(f"config: {message}") from None
    except ConfigFileError as exc:
        raise UserError(f"config: {_one_line(exc.message)}") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise UserError(f"config: {problems}") from None


def run_cli(config_cls: type[T], main: Callable[[T], object], args: list[str] | None = None) -> None:
    """Parse the config and call `main(config)`; UserError becomes `error: ...` and exit 2."""
    try:
        config = parse_config(config_cls, args)
        main(config)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
