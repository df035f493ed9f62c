"""`python3 -m flymc_zygote [--preload MOD[,MOD...]] -- SCRIPT [ARG...]`: see the package's
docstring. Standard library only, and few modules of it: this process is started for every node.
"""

from __future__ import annotations

import sys

from . import _core


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["--serve"]:
        # The zygote, started by a launcher; this returns in each child it forks.
        return _core.run(_core.serve(args[1:]))
    try:
        preload, argv = _core.parse(args)
    except _core.Usage as e:
        sys.stderr.write(f"flymc_zygote: {e}\n")
        return 2
    return _core.run(_core.launch(preload, argv))


if __name__ == "__main__":
    # A normal exit: the interpreter joins threads, runs `atexit` and flushes, as after a
    # fresh `python3 SCRIPT`.
    sys.exit(main())
