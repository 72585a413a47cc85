"""Files written whole or not at all.

Every run directory of the stack (evaluation runs, Table 1 runs, staged demonstrations) is
written so that a killed process leaves complete files or none: the bytes go to a temporary
file beside the target, are flushed to disk, and the temporary file is renamed over the target
(atomic on POSIX). Leftover temporaries carry :data:`TMP_MARK` in their name, so a resumed run
can find and delete them.
"""

from __future__ import annotations

import os
from pathlib import Path

TMP_MARK = ".tmp-"
"""Part of every temporary file's name (``.<name>.tmp-<pid>``)."""


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file, fsync and rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def remove_temporaries(folder: Path) -> list[Path]:
    """Delete the temporaries a killed writer left anywhere under ``folder``; returns them."""
    found = sorted(folder.rglob(f".*{TMP_MARK}*"))
    for tmp in found:
        tmp.unlink()
    return found
