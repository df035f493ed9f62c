"""`python3 -m flymc_zygote`: the launcher (see the package's docstring), or with `--serve` the
zygote a launcher started."""

from __future__ import annotations

import sys

if sys.argv[1:2] == ["--serve"]:
    from . import _launch, _zygote

    # Returns in each child the zygote forks, which then runs its script.
    sys.exit(_launch.run(_zygote.serve(sys.argv[2:])))

from . import main

main()
