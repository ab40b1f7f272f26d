"""``python -m pi_notebook.kernel install | uninstall``: the kernelspec from the command line.

Errors are one line on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import sys

from .spec import DISPLAY_NAME, KERNEL_NAME, Location, SpecError, install, uninstall


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m pi_notebook.kernel",
        description="Install or remove the Pi kernelspec (a Jupyter kernel where a cell is a prompt).",
    )
    commands = top.add_subparsers(dest="command", required=True)
    for command, what in (("install", "write"), ("uninstall", "remove")):
        sub = commands.add_parser(command, help=f"{what} the kernelspec")
        where = sub.add_mutually_exclusive_group()
        where.add_argument("--user", action="store_true", help="the user's Jupyter data dir")
        where.add_argument("--sys-prefix", action="store_true", help=f"this environment ({sys.prefix})")
        where.add_argument("--prefix", metavar="PATH", help="PATH/share/jupyter/kernels")
        sub.add_argument("--name", default=KERNEL_NAME, help=f"kernelspec name (default {KERNEL_NAME})")
        if command == "install":
            sub.add_argument(
                "--display-name", default=DISPLAY_NAME, help=f"launcher name (default {DISPLAY_NAME!r})"
            )
    return top


def location(args: argparse.Namespace) -> Location | None:
    if args.user:
        return Location(user=True)
    if args.sys_prefix:
        return Location(prefix=sys.prefix)
    if args.prefix:
        return Location(prefix=args.prefix)
    return None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    where = location(args)
    try:
        if args.command == "install":
            path = install(where or Location(), args.name, args.display_name)
            print(f"Installed kernelspec {args.name} ({args.display_name}) in {path}")
        else:
            path = uninstall(where, args.name)
            print(f"Removed kernelspec {args.name} from {path}")
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
