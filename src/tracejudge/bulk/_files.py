"""The input files of a bulk run, through pyarrow's filesystems.

An input is a local path, a directory (every file under it, hidden files and `_`-prefixed
ones left out), a glob, or a URI of a filesystem pyarrow knows (`file://`, `s3://`,
`gs://`, `hdfs://`); any other `scheme://` goes through fsspec when it is installed. Each
input is named by a URI that every worker of the cluster opens the same way.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Sequence
from typing import IO, Any

__all__ = ["filesystem", "list_files", "listed", "open_file", "read_text", "write_text"]


def filesystem(uri: str) -> tuple[Any, str]:
    """(pyarrow filesystem, path in it) of a URI or a local path."""
    from pyarrow import fs

    if "://" not in uri:
        return fs.LocalFileSystem(), os.path.abspath(uri)
    try:
        return fs.FileSystem.from_uri(uri)  # type: ignore[no-any-return]
    except (ValueError, TypeError, OSError) as pyarrow_error:
        try:
            import fsspec
        except ImportError:
            raise ValueError(f"{uri}: {pyarrow_error}") from None
        filesystem, path = fsspec.core.url_to_fs(uri)
        return fs.PyFileSystem(fs.FSSpecHandler(filesystem)), path


def _uri(uri: str, path: str) -> str:
    """The URI of `path`, a file found under the input `uri`."""
    if "://" not in uri:
        return path
    scheme = uri.split("://", 1)[0]
    return f"{scheme}://{path.lstrip('/')}" if scheme != "file" else f"file://{path}"


def _visible(path: str) -> bool:
    return not any(part.startswith((".", "_")) for part in path.split("/") if part)


def list_files(inputs: Sequence[str]) -> list[str]:
    """The files of `inputs`, in input order (sorted under each directory or glob).
    Raises `ValueError` naming the input that matches no file."""
    from pyarrow import fs

    found: list[str] = []
    for given in inputs:
        if "://" not in given and glob.has_magic(given):
            matches = sorted(p for p in glob.glob(given, recursive=True) if os.path.isfile(p))
            if not matches:
                raise ValueError(f"{given}: no file matches")
            found.extend(os.path.abspath(p) for p in matches)
            continue
        store, path = filesystem(given)
        pattern = None
        if glob.has_magic(path):  # a glob in an object store: list its directory
            path, pattern = path.rsplit("/", 1)
        info = store.get_file_info(path)
        if info.type == fs.FileType.NotFound:
            raise ValueError(f"{given}: no such file or directory")
        if info.type == fs.FileType.File:
            found.append(_uri(given, path))
            continue
        listing = store.get_file_info(fs.FileSelector(path, recursive=pattern is None))
        files = sorted(
            entry.path
            for entry in listing
            if entry.type == fs.FileType.File
            and _visible(entry.path[len(path) :])
            and (pattern is None or fnmatch.fnmatch(entry.base_name, pattern))
        )
        if not files:
            raise ValueError(f"{given}: no file in it")
        found.extend(_uri(given, p) for p in files)
    return found


def open_file(uri: str) -> IO[bytes]:
    """A binary stream of the file `uri` (as `list_files` named it)."""
    store, path = filesystem(uri)
    return store.open_input_stream(path, compression=None)  # type: ignore[no-any-return]


def write_text(root: str, relative: str, text: str) -> None:
    """Write `text` to `relative` under the directory `root` (a path or URI)."""
    fs, base = filesystem(root)
    path = f"{base.rstrip('/')}/{relative}"
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(path, compression=None) as stream:
        stream.write(text.encode("utf-8"))


def read_text(root: str, relative: str) -> str | None:
    """The text of `relative` under `root`, or None when there is no such file."""
    from pyarrow import fs as pafs

    fs, base = filesystem(root)
    path = f"{base.rstrip('/')}/{relative}"
    if fs.get_file_info(path).type != pafs.FileType.File:
        return None
    with fs.open_input_stream(path, compression=None) as stream:
        return bytes(stream.read()).decode("utf-8")


def listed(root: str, relative: str) -> list[str]:
    """The names of the files in the directory `relative` under `root` (none: [])."""
    from pyarrow import fs as pafs

    fs, base = filesystem(root)
    path = f"{base.rstrip('/')}/{relative}"
    if fs.get_file_info(path).type != pafs.FileType.Directory:
        return []
    return sorted(
        e.base_name
        for e in fs.get_file_info(pafs.FileSelector(path))
        if e.type == pafs.FileType.File
    )
