"""The operator's token: only the operator's tool answers a trial waiting for approval.

At start the task server writes a fresh random token to a file only its own account can read
(mode 0600, in a folder of mode 0700). ``afford trial approve|abort`` reads that file and sends
the token with its request; the task server refuses any ``/task_server/approve`` call whose
token is not the one it wrote. So a node that merely discovers the graph (another program on
the network, another account on the robot PC, a stray script) cannot move the real arm by
approving a trial: it would have to read a file of the operator's account.

The file is ``$ROS_HOME/afford/operator_token.<ROS_DOMAIN_ID>`` (``ROS_HOME`` defaults to
``~/.ros``): one per domain, so two graphs on one machine do not overwrite each other's, and
``AFFORD_OPERATOR_TOKEN_FILE`` names another file for both sides.

What it does not do: the token crosses DDS in the clear, so a host that can capture the graph's
traffic could read it in transit (discovery is limited to this machine by default; for a graph
reachable from a network, SROS2's authenticated and encrypted DDS is the tool). Any process of
the operator's own account can read the file, as it can run ``afford trial`` itself.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from pathlib import Path

ENV_FILE = "AFFORD_OPERATOR_TOKEN_FILE"


class OperatorTokenError(RuntimeError):
    """The token file cannot be written or read as it must be; the text says why."""


def token_path() -> Path:
    """Where the task server of this environment's ROS domain keeps its token."""
    explicit = os.environ.get(ENV_FILE, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    home = Path(os.environ.get("ROS_HOME", "").strip() or Path.home() / ".ros").expanduser()
    domain = os.environ.get("ROS_DOMAIN_ID", "").strip() or "0"
    return home / "afford" / f"operator_token.{domain}"


def write_token(path: Path | None = None) -> tuple[str, Path]:
    """Write a fresh token, readable by this account only; returns (token, path).

    The file is written next to its final name and moved into place, so a reader never sees
    half a token.

    Raises:
        OperatorTokenError: the folder or the file cannot be made private to this account.
    """
    path = path or token_path()
    token = secrets.token_hex(16)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)  # an older file of that name keeps its mode through O_CREAT
            os.write(fd, token.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as err:
        raise OperatorTokenError(f"cannot write the operator token {path}: {err}") from err
    return token, path


def read_token(path: Path | None = None) -> str:
    """The token the task server wrote.

    Raises:
        OperatorTokenError: no such file (no task server on this domain, or another account
            runs it), it cannot be read, or others may read it (then it proves nothing).
    """
    path = path or token_path()
    try:
        st = path.stat()
        if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise OperatorTokenError(
                f"the operator token {path} may be read by other accounts "
                f"(mode {stat.filemode(st.st_mode)}); restart the task server to write a private one"
            )
        return path.read_text().strip()
    except FileNotFoundError:
        raise OperatorTokenError(
            f"no operator token at {path}: run `afford trial` as the account that runs the task "
            f"server, with the same ROS_DOMAIN_ID and ROS_HOME (or set {ENV_FILE})"
        ) from None
    except OSError as err:
        raise OperatorTokenError(f"cannot read the operator token {path}: {err}") from err


def matches(given: str, token: str) -> bool:
    """Whether ``given`` is ``token`` (compared in constant time; an empty token never matches)."""
    return bool(token) and hmac.compare_digest(given.encode(), token.encode())


def remove_token(path: Path, token: str) -> None:
    """Delete the file if it still holds ``token`` (a newer task server's file is left alone)."""
    try:
        if path.read_text().strip() == token:
            path.unlink()
    except OSError:
        pass
