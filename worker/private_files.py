"""Files only their owner may read, written atomically: memory notes and archive copies.

A private temporary file beside the target (hidden, created exclusively, never through a
link), fsync, rename over the target, fsync of the folder: a crash leaves the old file or
the new one, never half of one.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def private_folder(folder: Path) -> None:
    """Create `folder` (its parent exists) for its owner only, whatever the umask."""
    try:
        folder.mkdir(mode=FOLDER_MODE)
    except FileExistsError:
        return
    folder.chmod(FOLDER_MODE)


def write_atomically(target: Path, data: bytes) -> None:
    temporary = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"  # hidden: never indexed
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_folder(target.parent)


def fsync_folder(folder: Path) -> None:
    """Make a rename or an unlink in `folder` durable."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
