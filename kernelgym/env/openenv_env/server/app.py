"""KernelGym's OpenEnv server where OpenEnv looks for it (`openenv.yaml`: `app: server.app:app`).

`app` is what uvicorn serves when OpenEnv's tooling starts the environment (UVProvider, Docker):
`create_server_app` with its defaults on the tasks of `$KERNELGYM_TASKS` (default `builtin`), the
token of `$KERNELGYM_TOKEN` if set. OpenEnv's UVProvider binds every interface (`--host 0.0.0.0`)
unless told otherwise, so without a token `/ws`, the route that runs submitted code, takes
connections from this host only. `main()` (the `server` script) is `kernelgym env serve` with
every one of its options (it listens on 127.0.0.1 unless given `--host`).
"""

from __future__ import annotations

import os
import sys

from kernelgym.env.server import create_server_app

app = create_server_app(tasks=os.environ.get("KERNELGYM_TASKS", "builtin"), local_only=True)


def main() -> int:
    """`server [--port N --tasks SPEC ...]`: `kernelgym env serve` with the same arguments."""
    from kernelgym.cli import main as kernelgym_main

    return kernelgym_main(["env", "serve", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
