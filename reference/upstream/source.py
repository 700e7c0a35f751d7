"""Where upstream sglang's disaggregation files come from: a wheel, a tree, an install.

`--sglang PATH` accepts an sglang wheel file (`sglang-0.5.18-...whl`, read in place
with `zipfile`, never installed), an sglang source checkout (the repository root, which
holds `python/sglang/`), or an installed sglang (its `site-packages` directory or the
`sglang` package directory itself). Only the text of a few files is read; nothing is
imported from PATH by Python's import system and nothing is copied into this repo.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from reference.upstream.errors import UpstreamError

DISAGG = "sglang/srt/disaggregation"
# Layouts under PATH that hold the `sglang` package: PATH itself is the parent of
# `sglang/` (site-packages), a source checkout (`python/sglang`), or the package.
_PARENTS = (".", "python")
# `__version__ = version = '0.5.18'` (setuptools-scm / vcs-versioning `_version.py`)
_VERSION = re.compile(r"""^(?:__version__|version)\b[^\n'"]*=\s*['"]([^'"]+)['"]""", re.M)


@dataclass
class UpstreamSource:
    """Read-only access to `sglang/...` files of one upstream version."""

    label: str  # e.g. "sglang-0.5.18" for the CLI table
    version: str | None  # "0.5.18"; None when PATH does not say (a source checkout)
    origin: str  # the PATH as given, for messages
    _files: dict[str, str] = field(default_factory=dict, repr=False)

    def read(self, relpath: str) -> str | None:
        """The text of `sglang/<relpath>`, or None if this version lacks it."""
        return self._files.get(relpath)

    def has(self, relpath: str) -> bool:
        return relpath in self._files

    def files(self) -> list[str]:
        """Every `sglang/...` file read (the disaggregation package and `_version.py`)."""
        return list(self._files)


def open_source(path: str) -> UpstreamSource:
    """Resolve PATH to an `UpstreamSource`, or raise `UpstreamError` (one line)."""
    where = Path(path).expanduser()
    if not where.exists():
        raise UpstreamError(f"--sglang {path}: no such file or directory")
    if where.is_file():
        if where.suffix != ".whl":
            raise UpstreamError(f"--sglang {path}: a file must be an sglang wheel (.whl)")
        return _from_wheel(where, path)
    return _from_tree(where, path)


def _from_wheel(wheel: Path, origin: str) -> UpstreamSource:
    try:
        with zipfile.ZipFile(wheel) as archive:
            files = {
                name[len("sglang/") :]: archive.read(name).decode("utf-8")
                for name in archive.namelist()
                if _wanted(name)
            }
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as exc:
        raise UpstreamError(f"--sglang {origin}: cannot read wheel: {exc}") from None
    if f"{DISAGG[len('sglang/') :]}/common/conn.py" not in files:
        raise UpstreamError(f"--sglang {origin}: wheel has no {DISAGG}/common/conn.py")
    version = _wheel_version(wheel.name) or _version_of(files.get("_version.py"))
    return UpstreamSource(_label(version), version, origin, files)


def _from_tree(root: Path, origin: str) -> UpstreamSource:
    package = _find_package(root)
    if package is None:
        raise UpstreamError(
            f"--sglang {origin}: no {DISAGG}/common/conn.py under it "
            "(give an sglang wheel, a source checkout, site-packages or the sglang package)"
        )
    found = [*(package / "srt/disaggregation").rglob("*.py"), package / "_version.py"]
    files = {
        file.relative_to(package).as_posix(): file.read_text(encoding="utf-8")
        for file in found
        if file.is_file()
    }
    version = _version_of(files.get("_version.py")) or _dist_info_version(package.parent)
    return UpstreamSource(_label(version), version, origin, files)


def _find_package(root: Path) -> Path | None:
    candidates = [root / parent / "sglang" for parent in _PARENTS] + [root]
    for package in candidates:
        if (package / "srt/disaggregation/common/conn.py").is_file():
            return package
    return None


def _wanted(name: str) -> bool:
    """Only the disaggregation package and the version file are ever read."""
    return name.endswith(".py") and (name.startswith(f"{DISAGG}/") or name == "sglang/_version.py")


def _wheel_version(filename: str) -> str | None:
    match = re.match(r"sglang-([0-9][^-]*)-", filename)
    return match.group(1) if match else None


def _version_of(text: str | None) -> str | None:
    match = _VERSION.search(text or "")
    return match.group(1) if match else None


def _dist_info_version(site: Path) -> str | None:
    for meta in sorted(site.glob("sglang-*.dist-info")):
        version = _wheel_version(meta.name + "-")
        if version:
            return version.removesuffix(".dist-info")
    return None


def _label(version: str | None) -> str:
    return f"sglang-{version}" if version else "sglang-tree"
