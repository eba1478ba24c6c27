"""Builds the PyPI wheels from the release archives of `cargo xtask dist`.

    python3 packages/pypi/build_wheels.py DIST_DIR OUT_DIR VERSION

One platform wheel per archive found, the way ruff and maturin's `bin` mode ship a Rust
binary: `toolgate-VERSION-py3-none-PLATFORM.whl` holds the binary and its sandbox
trampoline as scripts (`toolgate-VERSION.data/scripts/`, installed into the
environment's `bin/` side by side, where the binary looks for the trampoline), and no
Python code. `pip install toolgate` and `uvx toolgate mcp` then run the binary itself.
The glibc wheel's manylinux tag is read off the binary (the newest `GLIBC_2.N` symbol
version it needs). Standard library only; nothing is published.
"""

import base64
import hashlib
import io
import re
import sys
import tarfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Rust target -> the wheel platform tag (None: read from the binary, manylinux).
PLATFORMS = {
    "x86_64-unknown-linux-gnu": None,
    "x86_64-unknown-linux-musl": "musllinux_1_2_x86_64",
    "aarch64-unknown-linux-gnu": None,
    "aarch64-unknown-linux-musl": "musllinux_1_2_aarch64",
    "x86_64-apple-darwin": "macosx_10_12_x86_64",
    "aarch64-apple-darwin": "macosx_11_0_arm64",
}
BINARIES = ("toolgate", "toolgate-sandbox-exec")
LICENCES = ("LICENSE-MIT", "LICENSE-APACHE")


def manylinux_tag(binary: bytes, arch: str) -> str:
    """`manylinux_2_N_ARCH` for the newest glibc symbol version the binary needs
    (2.17 at least, the oldest tag pip still installs everywhere)."""
    versions = [(2, 17)]
    for match in re.finditer(rb"GLIBC_2\.(\d+)(?:\.\d+)?\x00", binary):
        versions.append((2, int(match.group(1))))
    major, minor = max(versions)
    return f"manylinux_{major}_{minor}_{arch}"


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def metadata(version: str) -> str:
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    return (
        "Metadata-Version: 2.4\n"
        "Name: toolgate\n"
        f"Version: {version}\n"
        "Summary: The tools an AI coding agent may use, and the rules that decide what they may do (prebuilt binary; uvx toolgate mcp)\n"
        "Home-page: https://github.com/toolgate/toolgate\n"
        "License-Expression: MIT OR Apache-2.0\n"
        + "".join(f"License-File: {name}\n" for name in LICENCES)
        + "Requires-Python: >=3.8\n"
        "Keywords: mcp,ai,agent,tools,permissions\n"
        "Classifier: Environment :: Console\n"
        "Classifier: Programming Language :: Rust\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + readme
    )


def build(archive: Path, target: str, version: str, out: Path) -> Path:
    top = f"toolgate-{version}-{target}"
    files = {}
    with tarfile.open(archive) as tar:
        for name in BINARIES + LICENCES:
            member = tar.extractfile(f"{top}/{name}")
            if member is None:
                raise SystemExit(f"pypi: {archive} has no {name}")
            files[name] = member.read()
    tag = PLATFORMS[target] or manylinux_tag(files["toolgate"], target.split("-")[0])
    dist_info = f"toolgate-{version}.dist-info"
    data = f"toolgate-{version}.data/scripts"
    wheel = out / f"toolgate-{version}-py3-none-{tag}.whl"
    entries = []
    for name in BINARIES:
        entries.append((f"{data}/{name}", files[name], 0o755))
    for name in LICENCES:
        entries.append((f"{dist_info}/licenses/{name}", files[name], 0o644))
    entries.append((f"{dist_info}/METADATA", metadata(version).encode(), 0o644))
    entries.append(
        (
            f"{dist_info}/WHEEL",
            f"Wheel-Version: 1.0\nGenerator: toolgate build_wheels.py\nRoot-Is-Purelib: false\nTag: py3-none-{tag}\n".encode(),
            0o644,
        )
    )
    record = [record_line(name, body) for name, body, _ in entries]
    record.append(f"{dist_info}/RECORD,,")
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode(), 0o644))
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, body, mode in entries:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, body)
    return wheel


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    dist, out, version = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("toolgate-*.whl"):
        old.unlink()
    built = 0
    for target in PLATFORMS:
        archive = dist / f"toolgate-{version}-{target}.tar.gz"
        if not archive.exists():
            print(f"pypi: {target} skipped (no {archive.name})")
            continue
        print(f"pypi: {build(archive, target, version, out)}")
        built += 1
    if built == 0:
        print(f"pypi: no archive for version {version} in {dist}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
