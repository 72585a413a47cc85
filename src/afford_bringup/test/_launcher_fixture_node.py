"""A stand-in node for the launcher tests: a process that, like the sim world, has a helper.

It reads ``--ros-args`` the way the launcher writes them (``-r __node:=NAME``, ``-p k:=v``),
starts a helper process, writes ``<pid_dir>/<name>.pids`` ("node_pid helper_pid") and
then behaves as ``behaviour`` says:

* ``run``: wait; exit 0 on SIGINT *without* stopping its helper (a node that crashes or
  forgets its helper, which is what the launcher must still clean up);
* ``die``: exit with code 3 after 0.5 s, leaving its helper behind.

``helper`` says where the helper lives: ``group`` (the node's process group; it ignores
SIGINT, as a render loop that masks signals would) or ``session`` (it calls setsid and
escapes the node's group and session altogether).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HELPER = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: time.sleep(1)\n"


def _ros_args(argv: list[str]) -> tuple[str, dict[str, object]]:
    name, params = "node", {}
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == "-r" and value.startswith("__node:="):
            name = value.split(":=", 1)[1]
        elif flag == "-p":
            key, _, text = value.partition(":=")
            params[key] = json.loads(text)
    return name, params


def main() -> int:
    name, params = _ros_args(sys.argv[1:])
    helper = subprocess.Popen(
        [sys.executable, "-c", HELPER], start_new_session=params.get("helper") == "session"
    )
    pid_file = Path(str(params["pid_dir"])) / f"{name}.pids"
    tmp = pid_file.with_suffix(".tmp")
    tmp.write_text(f"{os.getpid()} {helper.pid}\n")
    tmp.rename(pid_file)  # atomic: the test never reads half a file
    print(f"ready as {name}", flush=True)
    if params.get("behaviour") == "die":
        time.sleep(0.5)
        print("failing on purpose", flush=True)
        return 3
    try:
        signal.pause()
    except KeyboardInterrupt:
        # Ctrl-C reaches a node twice (the terminal's group signal, then the launcher's): like a
        # real node, finish shutting down after the first.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("interrupted, exiting", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
