"""The plugin package's build backend (PEP 517), in the tree: it packs the package and the
entry points pyproject.toml declares into a wheel with the standard library alone, so pip
installs it offline whatever setuptools or wheel the interpreter has (or lacks)."""

from __future__ import annotations

import base64
import hashlib
import tomllib
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


def _dist_info() -> tuple[str, dict[str, str]]:
    project = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    name, version = project["name"], project["version"]
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    points = "".join(
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in entries.items()) + "\n"
        for group, entries in project["entry-points"].items()
    )
    return info, {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: build_plugin\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
        f"{info}/entry_points.txt": points,
    }


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    info, files = _dist_info()
    for path in sorted((HERE / "memorylab_test_plugin").glob("*.py")):
        files[f"memorylab_test_plugin/{path.name}"] = path.read_text(encoding="utf-8")
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}\n")
    files[f"{info}/RECORD"] = "".join(record) + f"{info}/RECORD,,\n"
    wheel = info.removesuffix(".dist-info") + "-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel
