"""Bring-up for the afford stack: the spine runner, the ``afford`` CLI, graph description."""
