#!/usr/bin/env python3
"""Lock file, checksum and SBOM helper for the offline installer (standard library only).

Sub-commands (``python installer/lockfile.py CMD --help``):

  compile   resolve pyproject.toml (dependencies + the ``gui`` extra) for Linux x86_64 and
            Windows amd64, CPython 3.11, into ``installer/requirements.lock``: plain
            ``name==version [; marker] --hash=sha256:...`` lines. Needs ``uv`` and the network
            (run it on a connected machine); everything else here works offline.
  select    print the lock's requirements for one target, markers evaluated and removed
            (``pip download --platform`` evaluates markers for the *host*, not the target).
  constraints  the lock's pins for this machine as a pip constraints file (``-c``): no hashes
            (pip refuses hashes in constraints), no markers; ``make venv`` tests what ships.
  check     the lock pins every dependency of pyproject.toml, with hashes, for every target.
  sums      write DIR/SHA256SUMS (``sha256sum -c`` format) for every file under DIR.
  verify    check DIR/SHA256SUMS and refuse files under wheels/ that it does not list.
  sbom      CycloneDX 1.5 JSON (name, version, licence, hashes) from the wheels' METADATA.
  cudalock  lock a folder of CUDA torch wheels: what is not already pinned by the main lock.
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

try:  # pip vendors packaging; any venv with pip has it
    from packaging.markers import Marker
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version
except ImportError:  # pragma: no cover - depends on the interpreter
    from pip._vendor.packaging.markers import Marker
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name
    from pip._vendor.packaging.version import Version

HERE = Path(__file__).resolve().parent
PYTHON_VERSION = "3.11"
TORCH_VERSION = "2.13.0"

# Per target: the marker environment, the tags ``pip download`` needs, uv's platform name and
# the torch pin. Linux wheels are limited to manylinux_2_28 (glibc 2.28: RHEL/Rocky 8 and newer).
GLIBC_MAX_MINOR = 28
TARGETS: dict[str, dict] = {
    "linux_x86_64": {
        "env": {
            "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
            "platform_machine": "x86_64",
        },
        "pip_platforms": [f"manylinux_2_{m}_x86_64" for m in range(GLIBC_MAX_MINOR, 4, -1)]
        + ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"],
        "uv_platform": f"x86_64-manylinux_2_{GLIBC_MAX_MINOR}",
        "marker": 'sys_platform == "linux"',
        # The CPU build: PyPI's Linux torch is a CUDA build that pulls several GB of nvidia-*.
        "torch": f"torch=={TORCH_VERSION}+cpu",
    },
    "win_amd64": {
        "env": {
            "sys_platform": "win32", "platform_system": "Windows", "os_name": "nt",
            "platform_machine": "AMD64",
        },
        "pip_platforms": ["win_amd64"],
        "uv_platform": "x86_64-pc-windows-msvc",
        "marker": 'sys_platform == "win32"',
        # PyPI's Windows torch is the CPU build (about 116 MiB, no nvidia-* dependencies).
        "torch": f"torch=={TORCH_VERSION}",
    },
}
COMMON_ENV = {
    "python_version": PYTHON_VERSION, "python_full_version": f"{PYTHON_VERSION}.9",
    "implementation_name": "cpython", "platform_python_implementation": "CPython",
    "implementation_version": f"{PYTHON_VERSION}.9", "platform_release": "", "platform_version": "",
    "extra": "",
}


def marker_env(target: str) -> dict[str, str]:
    return {**COMMON_ENV, **TARGETS[target]["env"]}


# ----------------------------------------------------------------------------- lock parsing


@dataclass
class Pin:
    name: str  # canonical
    version: str
    marker: str | None
    hashes: list[str] = field(default_factory=list)  # "sha256:..."
    line: str = ""

    def applies(self, target: str) -> bool:
        return self.marker is None or Marker(self.marker).evaluate(marker_env(target))

    def render(self, with_marker: bool = True) -> str:
        head = f"{self.name}=={self.version}"
        if with_marker and self.marker:
            head += f" ; {self.marker}"
        return " \\\n    ".join([head, *(f"--hash={h}" for h in sorted(self.hashes))])


class LockError(ValueError):
    pass


def logical_lines(text: str) -> Iterator[str]:
    buf = ""
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        if buf.strip():
            yield " ".join(buf.split())
        buf = ""
    if buf.strip():
        yield " ".join(buf.split())


PIN_RE = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!_-]+)\s*(?:;\s*(?P<marker>[^-][^-]*?))?\s*(?P<hashes>(?:--hash=\S+\s*)*)$")


def parse_lock(text: str) -> list[Pin]:
    pins = []
    for line in logical_lines(text):
        if line.startswith("-"):
            raise LockError(f"option lines are not allowed in the lock: {line!r}")
        if "@" in line.split("--hash", 1)[0] or "://" in line:
            raise LockError(f"direct references make pip reach out even with --no-index: {line!r}")
        m = PIN_RE.match(line)
        if not m:
            raise LockError(f"not a plain 'name==version [; marker] --hash=sha256:...' line: {line!r}")
        hashes = [h[len("--hash="):] for h in m.group("hashes").split()]
        if not hashes or not all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes):
            raise LockError(f"missing or malformed sha256 hashes: {line!r}")
        marker = m.group("marker").strip() if m.group("marker") else None
        pins.append(Pin(canonicalize_name(m.group("name")), m.group("version"), marker, hashes, line))
    return pins


def read_lock(path: Path) -> list[Pin]:
    return parse_lock(path.read_text(encoding="utf-8"))


def select(pins: Iterable[Pin], target: str, drop: Iterable[str] = ()) -> list[Pin]:
    dropped = {canonicalize_name(d) for d in drop}
    chosen: dict[str, Pin] = {}
    for pin in pins:
        if pin.name in dropped or not pin.applies(target):
            continue
        if pin.name in chosen:
            raise LockError(f"{pin.name} is pinned twice for {target}")
        chosen[pin.name] = pin
    return list(chosen.values())


def native_target() -> str:
    return "win_amd64" if sys.platform == "win32" else "linux_x86_64"


def distribution_names(lock: Path, target: str | None = None) -> list[str]:
    """Every package the lock pins for ``target`` (default: this machine). The PyInstaller spec
    copies their metadata, so the About box and results.json know every version that ships."""
    return sorted(pin.name for pin in select(read_lock(lock), target or native_target()))


def constraints(lock: Path, drop: Iterable[str] = ()) -> str:
    """``name==version`` lines of the lock for this machine: a pip constraints file."""
    lines = [f"{pin.name}=={pin.version}" for pin in select(read_lock(lock), native_target(), drop)]
    return "# from installer/requirements.lock by `lockfile.py constraints`\n" + "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- pyproject


def project_requirements(pyproject: Path, extras: Iterable[str] = ("gui",)) -> list[Requirement]:
    import tomllib

    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    reqs = [Requirement(r) for r in data.get("dependencies", [])]
    for extra in extras:
        reqs += [Requirement(r) for r in data.get("optional-dependencies", {}).get(extra, [])]
    return reqs


def check(lock: Path, pyproject: Path) -> list[str]:
    """Problems with the lock, as sentences (empty: fine)."""
    problems = []
    try:
        pins = read_lock(lock)
    except LockError as err:
        return [str(err)]
    for target in TARGETS:
        try:
            chosen = {p.name: p for p in select(pins, target)}
        except LockError as err:
            problems.append(str(err))
            continue
        for req in project_requirements(pyproject):
            if req.marker and not req.marker.evaluate(marker_env(target)):
                continue
            pin = chosen.get(canonicalize_name(req.name))
            if pin is None:
                problems.append(f"{target}: {req.name} (pyproject.toml) is not in the lock")
            elif not req.specifier.contains(Version(pin.version), prereleases=True):
                problems.append(f"{target}: lock has {pin.name}=={pin.version}, pyproject asks {req}")
        torch = chosen.get("torch")
        if torch is None or f"torch=={torch.version}" != TARGETS[target]["torch"]:
            problems.append(f"{target}: torch must be pinned as {TARGETS[target]['torch']} (CPU build)")
    return problems


# ----------------------------------------------------------------------------- compile


def _uv_compile(uv: str, infile: Path, target: str, find_links: list[str], extra_index: list[str],
                constraints: Path | None) -> list[Pin]:
    out = infile.with_suffix(f".{target}.txt")
    cmd = [uv, "pip", "compile", "--no-config", "--quiet", "--generate-hashes", "--no-header",
           "--no-annotate", "--python-version", PYTHON_VERSION,
           "--python-platform", TARGETS[target]["uv_platform"], "--only-binary", ":all:",
           "--index-strategy", "unsafe-best-match", "-o", str(out), str(infile)]
    for fl in find_links:
        cmd += ["--find-links", fl]
    for url in extra_index:
        cmd += ["--extra-index-url", url]
    if constraints is not None:
        cmd += ["--constraint", str(constraints)]
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)
    pins = parse_lock(out.read_text(encoding="utf-8"))
    return [Pin(p.name, p.version, None, p.hashes) for p in pins]


def _pip_resolve(infile: Path, find_links: list[str], extra_index: list[str], tmp: str) -> dict[str, str]:
    """What pip itself picks for Linux (as `make venv` does): {name: version}."""
    target = "linux_x86_64"
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
           "--only-binary=:all:", "--python-version", PYTHON_VERSION, "--implementation", "cp",
           "--target", str(Path(tmp) / "unused"), "--report", "-", "-r", str(infile)]
    for plat in TARGETS[target]["pip_platforms"]:
        cmd += ["--platform", plat]
    for fl in find_links:
        cmd += ["--find-links", fl]
    for url in extra_index:
        cmd += ["--extra-index-url", url]
    print("+", " ".join(cmd), file=sys.stderr)
    report = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return {canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"] for i in report["install"]}


def compile_lock(args: argparse.Namespace) -> int:
    reqs = [r for r in project_requirements(Path(args.pyproject)) if canonicalize_name(r.name) != "torch"]
    per_target: dict[str, dict[str, Pin]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        # 1. pip resolves for Linux, so the lock holds the versions developers get from pip;
        # 2. uv locks those versions, with every file's hash, for each target.
        infile = Path(tmp) / "in-linux_x86_64.in"
        infile.write_text("\n".join([TARGETS["linux_x86_64"]["torch"], *map(str, reqs)]) + "\n")
        picked = _pip_resolve(infile, args.find_links, args.torch_index, tmp)
        cons = Path(tmp) / "constraints.txt"
        cons.write_text("".join(f"{n}=={v}\n" for n, v in sorted(picked.items()) if n != "torch"))
        for target in TARGETS:
            infile = Path(tmp) / f"in-{target}.in"
            infile.write_text("\n".join([TARGETS[target]["torch"], *map(str, reqs)]) + "\n")
            pins = _uv_compile(args.uv, infile, target, args.find_links,
                               args.torch_index if target == "linux_x86_64" else [], cons)
            per_target[target] = {p.name: p for p in pins}
    merged: list[Pin] = []
    for name in sorted(set().union(*per_target.values())):
        have = {t: per_target[t][name] for t in TARGETS if name in per_target[t]}
        versions = {p.version for p in have.values()}
        if len(have) == len(TARGETS) and len(versions) == 1:
            hashes = sorted(set().union(*(p.hashes for p in have.values())))
            merged.append(Pin(name, versions.pop(), None, hashes))
        else:
            for t, p in have.items():
                merged.append(Pin(name, p.version, TARGETS[t]["marker"], p.hashes))
    header = (
        "# latent-synth offline lock: the app and its GUI, CPython 3.11, Linux x86_64 (glibc >= 2.28)\n"
        "# and Windows amd64, CPU torch. Plain `name==version --hash` lines only: no URLs, no `@`.\n"
        "# Regenerate on a connected machine (needs uv):  python installer/lockfile.py compile\n"
        "# Linux torch is the +cpu build (download.pytorch.org/whl/cpu, or a local --find-links).\n"
    )
    Path(args.out).write_text(header + "\n".join(p.render() for p in merged) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {len(merged)} pins", file=sys.stderr)
    problems = check(Path(args.out), Path(args.pyproject))
    for p in problems:
        print("problem:", p, file=sys.stderr)
    return 1 if problems else 0


# ----------------------------------------------------------------------------- checksums


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file() and p.name != "SHA256SUMS")


def write_sums(root: Path) -> Path:
    lines = [f"{sha256_file(root / rel)}  {rel}\n" for rel in _files(root)]
    out = root / "SHA256SUMS"
    out.write_text("".join(lines), encoding="utf-8", newline="\n")
    return out


def verify_sums(root: Path) -> list[str]:
    sums = root / "SHA256SUMS"
    if not sums.is_file():
        return [f"{sums} is missing"]
    listed: dict[str, str] = {}
    problems = []
    for n, line in enumerate(sums.read_text(encoding="utf-8").splitlines(), 1):
        m = re.fullmatch(r"([0-9a-f]{64}) [ *](.+)", line.strip())
        if not m:
            problems.append(f"SHA256SUMS line {n} is malformed")
            continue
        listed[m.group(2).removeprefix("./")] = m.group(1)
    for rel, digest in listed.items():
        path = root / rel
        if ".." in Path(rel).parts or Path(rel).is_absolute():
            problems.append(f"{rel}: path outside the kit")
        elif not path.is_file():
            problems.append(f"{rel}: listed in SHA256SUMS but missing")
        elif sha256_file(path) != digest:
            problems.append(f"{rel}: checksum does not match (corrupted or tampered)")
    for rel in _files(root):
        if rel.startswith("wheels/") and rel not in listed:
            problems.append(f"{rel}: not listed in SHA256SUMS (refusing unknown files)")
    return problems


# ----------------------------------------------------------------------------- SBOM


def wheel_metadata(path: Path) -> email.message.Message:
    with zipfile.ZipFile(path) as zf:
        name = next(n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
        return email.parser.Parser().parsestr(zf.read(name).decode("utf-8", "replace"), headersonly=True)


def licence_of(meta: email.message.Message) -> list[dict]:
    expr = (meta.get("License-Expression") or "").strip()
    if expr:
        return [{"expression": expr}]
    text = (meta.get("License") or "").strip()
    if text and "\n" not in text and len(text) <= 80 and text.upper() not in {"UNKNOWN", "NONE"}:
        return [{"license": {"name": text}}]
    classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or []
                   if c.startswith("License ::") and c.count("::") >= 2]
    if classifiers:
        return [{"license": {"name": c}} for c in classifiers]
    if text and text.upper() not in {"UNKNOWN", "NONE"}:
        return [{"license": {"name": text.splitlines()[0][:80] + " (see the package's licence text)"}}]
    return [{"license": {"name": "not declared in the wheel's METADATA: check the project"}}]


def sbom(wheel_dir: Path, app_version: str) -> dict:
    components: dict[tuple[str, str], dict] = {}
    for whl in sorted(wheel_dir.glob("*.whl")):
        meta = wheel_metadata(whl)
        name, version = meta["Name"], meta["Version"]
        key = (canonicalize_name(name), version)
        comp = components.get(key)
        if comp is None:
            purl = f"pkg:pypi/{key[0]}@{version}"
            comp = components[key] = {
                "type": "library", "bom-ref": purl, "name": name, "version": version, "purl": purl,
                "licenses": licence_of(meta), "hashes": [], "properties": [],
            }
            if meta.get("Summary"):
                comp["description"] = meta["Summary"]
        comp["hashes"].append({"alg": "SHA-256", "content": sha256_file(whl)})
        comp["properties"].append({"name": "latent-synth:wheel", "value": whl.name})
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", time.time()))
    return {
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": f"urn:uuid:{uuid.uuid4()}",
        "version": 1,
        "metadata": {
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch)),
            "tools": {"components": [{"type": "application", "name": "latent-synth installer/lockfile.py"}]},
            "component": {"type": "application", "bom-ref": "latent-synth", "name": "latent-synth",
                          "version": app_version, "licenses": [{"license": {"id": "MIT"}}]},
        },
        "components": sorted(components.values(), key=lambda c: (c["name"].lower(), c["version"])),
    }


# ----------------------------------------------------------------------------- CUDA variant


def cuda_lock(cuda_dir: Path, main_lock: Path) -> str:
    """Pins for the CUDA wheels that the main (Linux) lock does not already pin identically."""
    main = {(p.name, p.version) for p in select(read_lock(main_lock), "linux_x86_64")}
    lines = []
    for whl in sorted(cuda_dir.glob("*.whl")):
        meta = wheel_metadata(whl)
        key = (canonicalize_name(meta["Name"]), meta["Version"])
        if key not in main:
            lines.append(Pin(key[0], key[1], None, [f"sha256:{sha256_file(whl)}"]).render())
    return "# CUDA torch for Linux x86_64: install after the main lock with --no-deps\n" + "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compile", help="resolve pyproject.toml into the lock (connected machine, uv)")
    c.add_argument("--pyproject", default=str(HERE.parent / "pyproject.toml"))
    c.add_argument("--out", default=str(HERE / "requirements.lock"))
    c.add_argument("--uv", default="uv")
    c.add_argument("--find-links", action="append", default=[], help="e.g. a folder holding torch +cpu")
    c.add_argument("--torch-index", action="append", default=[],
                   help="extra index for the Linux CPU torch, e.g. https://download.pytorch.org/whl/cpu")
    s = sub.add_parser("select", help="the lock's lines for one target, without markers")
    s.add_argument("--target", required=True, choices=[*TARGETS, "native"])
    s.add_argument("--drop", action="append", default=[])
    s.add_argument("lock", nargs="?", default=str(HERE / "requirements.lock"))
    n = sub.add_parser("constraints", help="pip constraints (no hashes) for this machine")
    n.add_argument("--drop", action="append", default=[])
    n.add_argument("lock", nargs="?", default=str(HERE / "requirements.lock"))
    k = sub.add_parser("check", help="the lock covers pyproject.toml for every target")
    k.add_argument("lock", nargs="?", default=str(HERE / "requirements.lock"))
    k.add_argument("--pyproject", default=str(HERE.parent / "pyproject.toml"))
    w = sub.add_parser("sums", help="write DIR/SHA256SUMS")
    w.add_argument("dir")
    v = sub.add_parser("verify", help="check DIR/SHA256SUMS")
    v.add_argument("dir")
    b = sub.add_parser("sbom", help="CycloneDX JSON from the wheels in DIR")
    b.add_argument("dir")
    b.add_argument("-o", "--out", required=True)
    b.add_argument("--app-version", default="0.0.0")
    u = sub.add_parser("cudalock", help="lock a folder of CUDA torch wheels")
    u.add_argument("dir")
    u.add_argument("--lock", default=str(HERE / "requirements.lock"))
    u.add_argument("-o", "--out", required=True)
    args = ap.parse_args(argv)

    if args.cmd == "compile":
        return compile_lock(args)
    if args.cmd == "select":
        target = args.target
        if target == "native":
            target = "win_amd64" if sys.platform == "win32" else "linux_x86_64"
        for pin in select(read_lock(Path(args.lock)), target, args.drop):
            print(pin.render(with_marker=False))
        return 0
    if args.cmd == "constraints":
        print(constraints(Path(args.lock), args.drop), end="")
        return 0
    if args.cmd == "check":
        problems = check(Path(args.lock), Path(args.pyproject))
        for p in problems:
            print("problem:", p, file=sys.stderr)
        return 1 if problems else 0
    if args.cmd == "sums":
        print(write_sums(Path(args.dir)))
        return 0
    if args.cmd == "verify":
        problems = verify_sums(Path(args.dir))
        for p in problems:
            print("FAILED:", p, file=sys.stderr)
        if not problems:
            print("SHA256SUMS: all files verified", file=sys.stderr)
        return 1 if problems else 0
    if args.cmd == "sbom":
        Path(args.out).write_text(json.dumps(sbom(Path(args.dir), args.app_version), indent=1) + "\n",
                                  encoding="utf-8")
        return 0
    if args.cmd == "cudalock":
        Path(args.out).write_text(cuda_lock(Path(args.dir), Path(args.lock)), encoding="utf-8")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
