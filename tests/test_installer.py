"""The offline installer (installer/): lock file, scripts, checksum refusal, and (opt-in) the whole
path from wheelhouse to a working `latent-synth` with no network at all.

Heavy tests run only with LATENT_SYNTH_INSTALLER_TEST=1 (several minutes and ~3 GB of disk):
  LATENT_SYNTH_INSTALLER_TEST=1 pytest -m slow tests/test_installer.py
Optional: LATENT_SYNTH_KIT=DIR reuses a kit made by build_wheelhouse.sh; LATENT_SYNTH_BUNDLE=DIR
checks a PyInstaller bundle made by build_bundle.sh (DIR/latent-synth).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALLER = ROOT / "installer"
LOCK = INSTALLER / "requirements.lock"
HEAVY = os.environ.get("LATENT_SYNTH_INSTALLER_TEST") == "1"


def _lockfile_module():
    spec = importlib.util.spec_from_file_location("lockfile", INSTALLER / "lockfile.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["lockfile"] = mod
    spec.loader.exec_module(mod)
    return mod


lockfile = _lockfile_module()


# ----------------------------------------------------------------------------- lock file


def test_lock_has_only_hashed_exact_pins():
    text = LOCK.read_text(encoding="utf-8")
    assert "://" not in text.replace("download.pytorch.org/whl/cpu", ""), "no URLs in the lock"
    pins = lockfile.parse_lock(text)  # raises on options, direct references, missing hashes
    assert len(pins) > 20
    for pin in pins:
        assert pin.hashes and all(h.startswith("sha256:") and len(h) == 71 for h in pin.hashes), (
            pin.name
        )
    for line in lockfile.logical_lines(text):
        assert not line.startswith("-"), f"option line in the lock: {line}"
        assert " @ " not in line and "@" not in line.split("--hash")[0], line


def test_lock_pins_cpu_torch_and_covers_pyproject():
    pins = lockfile.read_lock(LOCK)
    linux = {p.name: p for p in lockfile.select(pins, "linux_x86_64")}
    win = {p.name: p for p in lockfile.select(pins, "win_amd64")}
    assert linux["torch"].version == "2.13.0+cpu"  # PyPI's Linux torch is a multi-GB CUDA build
    assert win["torch"].version == "2.13.0"  # PyPI's Windows torch is the CPU build
    for target in (linux, win):
        assert not any(name.startswith("nvidia-") or name == "triton" for name in target)
        assert "pyside6" in target and "matplotlib" in target
    problems = lockfile.check(LOCK, ROOT / "pyproject.toml")
    assert not problems, (
        "lock out of date; on a connected machine run "
        "`python installer/lockfile.py compile`:\n" + "\n".join(problems)
    )


def test_lock_parser_refuses_unsafe_lines():
    good = "numpy==2.0.0 --hash=sha256:" + "a" * 64
    assert lockfile.parse_lock(good)[0].version == "2.0.0"
    for bad in (
        "numpy>=2.0 --hash=sha256:" + "a" * 64,
        "numpy==2.0.0",
        "numpy @ https://example.invalid/numpy.whl --hash=sha256:" + "a" * 64,
        "--index-url https://example.invalid/simple",
        "numpy==2.0.0 --hash=md5:abc",
    ):
        with pytest.raises(lockfile.LockError):
            lockfile.parse_lock(bad)


def test_select_removes_markers_per_target():
    text = (
        'torch==2.13.0+cpu ; sys_platform == "linux" --hash=sha256:' + "a" * 64 + "\n"
        'torch==2.13.0 ; sys_platform == "win32" --hash=sha256:' + "b" * 64 + "\n"
        "numpy==2.0.0 --hash=sha256:" + "c" * 64 + "\n"
    )
    pins = lockfile.parse_lock(text)
    assert [p.version for p in lockfile.select(pins, "linux_x86_64") if p.name == "torch"] == [
        "2.13.0+cpu"
    ]
    assert [p.version for p in lockfile.select(pins, "win_amd64") if p.name == "torch"] == [
        "2.13.0"
    ]
    assert [p.name for p in lockfile.select(pins, "win_amd64", drop=["torch"])] == ["numpy"]


# ----------------------------------------------------------------------------- scripts


@pytest.mark.parametrize("script", sorted(p.name for p in INSTALLER.glob("*.sh")))
def test_shell_scripts_parse(script):
    assert shutil.which("bash"), "bash is needed"
    subprocess.run(["bash", "-n", str(INSTALLER / script)], check=True)


@pytest.mark.parametrize("script", ["install.ps1", "uninstall.ps1"])
def test_powershell_scripts_parse(script):
    pwsh = shutil.which("pwsh") or shutil.which("powershell")
    if not pwsh:
        pytest.skip("PowerShell is not installed here")
    cmd = (
        "$e=$null; [System.Management.Automation.Language.Parser]::ParseFile("
        f"'{INSTALLER / script}', [ref]$null, [ref]$e) | Out-Null; if ($e) {{ $e; exit 1 }}"
    )
    subprocess.run([pwsh, "-NoProfile", "-Command", cmd], check=True)


def test_expected_files_exist():
    for name in (
        "build_wheelhouse.sh",
        "install.sh",
        "uninstall.sh",
        "install.ps1",
        "uninstall.ps1",
        "build_bundle.sh",
        "latent-synth.spec",
        "README-admins.md",
        "lockfile.py",
    ):
        assert (INSTALLER / name).is_file(), name


# ----------------------------------------------------------------------------- fake kit


def _fake_wheel(folder: Path, name: str = "fakepkg", version: str = "1.0") -> Path:
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}/__init__.py", "VALUE = 1\n")
        zf.writestr(
            f"{name}-{version}.dist-info/METADATA",
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: a fake\n"
            "License-Expression: MIT\n",
        )
        zf.writestr(
            f"{name}-{version}.dist-info/WHEEL",
            "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr(f"{name}-{version}.dist-info/RECORD", "")
    return path


@pytest.fixture
def fake_kit(tmp_path):
    kit = tmp_path / "kit"
    (kit / "wheels").mkdir(parents=True)
    whl = _fake_wheel(kit / "wheels")
    digest = hashlib.sha256(whl.read_bytes()).hexdigest()
    (kit / "requirements.lock").write_text(f"fakepkg==1.0 --hash=sha256:{digest}\n")
    for name in ("install.sh", "uninstall.sh", "lockfile.py"):
        shutil.copy(INSTALLER / name, kit / name)
    lockfile.write_sums(kit)
    return kit


def test_checksums_accept_an_intact_kit(fake_kit):
    assert lockfile.verify_sums(fake_kit) == []
    if shutil.which("sha256sum"):
        subprocess.run(
            ["sha256sum", "--quiet", "--strict", "-c", "SHA256SUMS"], cwd=fake_kit, check=True
        )
    lines = (fake_kit / "SHA256SUMS").read_text().splitlines()
    assert any(line.endswith("  wheels/fakepkg-1.0-py3-none-any.whl") for line in lines)


def _install_refuses(kit: Path, tmp_path: Path) -> str:
    if not shutil.which("sha256sum"):
        pytest.skip("sha256sum (coreutils) is not installed")
    prefix = tmp_path / "prefix"
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    res = subprocess.run(
        ["bash", str(kit / "install.sh"), "--prefix", str(prefix), "--no-launcher"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert res.returncode != 0
    assert not (prefix / "venv").exists(), "nothing may be installed from a bad kit"
    return res.stderr


def test_install_refuses_a_tampered_wheel(fake_kit, tmp_path):
    whl = fake_kit / "wheels" / "fakepkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "a") as zf:
        zf.writestr("fakepkg/evil.py", "import os\n")
    problems = lockfile.verify_sums(fake_kit)
    assert any("fakepkg-1.0-py3-none-any.whl" in p and "does not match" in p for p in problems)
    assert "FAILED" in _install_refuses(fake_kit, tmp_path)


def test_install_refuses_an_unlisted_wheel(fake_kit, tmp_path):
    _fake_wheel(fake_kit / "wheels", "extra", "2.0")
    assert any("not listed" in p for p in lockfile.verify_sums(fake_kit))
    assert "not listed in SHA256SUMS" in _install_refuses(fake_kit, tmp_path)


def test_sbom_is_cyclonedx_with_licences(fake_kit, tmp_path):
    bom = lockfile.sbom(fake_kit / "wheels", "0.1.0")
    json.dumps(bom)
    assert bom["bomFormat"] == "CycloneDX" and bom["specVersion"] == "1.5"
    (comp,) = bom["components"]
    assert (comp["name"], comp["version"], comp["purl"]) == (
        "fakepkg",
        "1.0",
        "pkg:pypi/fakepkg@1.0",
    )
    assert comp["licenses"] == [{"expression": "MIT"}]
    assert comp["hashes"][0]["alg"] == "SHA-256"


# ----------------------------------------------------------------------------- heavy, opt-in


def _no_network_prefix() -> list[str]:
    """`unshare -n` (as root) or `unshare -rn` (user namespaces); skip when neither is allowed."""
    if not shutil.which("unshare"):
        pytest.skip("unshare (util-linux) is not installed")
    for cmd in (["unshare", "-n"], ["unshare", "-rn"]):
        if subprocess.run([*cmd, "true"], capture_output=True).returncode == 0:
            return cmd
    pytest.skip("unshare -n is not permitted here (no network namespaces)")


def _run(cmd, timeout, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert res.returncode == 0, (
        f"{cmd} exited {res.returncode}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    )
    return res


def _no_network_really(netns: list[str]) -> None:
    probe = "import socket; socket.create_connection(('pypi.org', 443), timeout=5)"
    res = subprocess.run([*netns, sys.executable, "-c", probe], capture_output=True, timeout=60)
    assert res.returncode != 0, "the network namespace still reaches the network"


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.skipif(not HEAVY, reason="heavy: set LATENT_SYNTH_INSTALLER_TEST=1")
@pytest.mark.skipif(sys.platform != "linux", reason="the Linux kit")
def test_wheelhouse_installs_and_runs_without_network(tmp_path):
    netns = _no_network_prefix()
    _no_network_really(netns)
    kit = os.environ.get("LATENT_SYNTH_KIT")
    if kit:
        kit = Path(kit)
    else:
        env = dict(os.environ)
        if "TORCH_INDEX_URL" not in env and env.get("PIP_FIND_LINKS"):
            # a machine with the CPU torch on disk (PIP_FIND_LINKS) needs no PyTorch index
            env.update(TORCH_INDEX_URL="", FIND_LINKS=env["PIP_FIND_LINKS"])
        _run(
            [
                "bash",
                str(INSTALLER / "build_wheelhouse.sh"),
                "--target",
                "linux_x86_64",
                "--out",
                str(tmp_path / "kits"),
            ],
            timeout=3000,
            env=env,
        )
        (kit,) = (tmp_path / "kits").glob("latent-synth-*-linux_x86_64")
    assert (kit / "SHA256SUMS").is_file() and (kit / "sbom.cdx.json").is_file()
    assert not any(
        "cu1" in w.name or w.name.startswith("nvidia") for w in (kit / "wheels").iterdir()
    )

    home, prefix = tmp_path / "home", tmp_path / "home" / "app"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "share"))
    _run(
        [
            *netns,
            "bash",
            str(kit / "install.sh"),
            "--prefix",
            str(prefix),
            "--python",
            shutil.which("python3.11") or sys.executable,
        ],
        timeout=1800,
        env=env,
    )
    launcher = home / ".local" / "bin" / "latent-synth"
    assert (
        launcher.is_file() and (home / "share" / "applications" / "latent-synth.desktop").is_file()
    )
    assert list((prefix / "mplconfig").glob("fontlist-*.json")), "font cache built at install time"

    res = _run([*netns, str(launcher), "--help"], timeout=120, env=env)
    assert "demo" in res.stdout
    out = tmp_path / "demo"
    _run(
        [*netns, str(launcher), "demo", "--out", str(out), "--quiet"],
        timeout=1800,
        env=env,
        cwd=tmp_path,
    )
    assert any(out.rglob("*.csv")), "the demo wrote its synthetic table"
    assert any(out.rglob("*.pdf")), "the demo wrote its report"

    _run(["bash", str(prefix / "uninstall.sh"), "--prefix", str(prefix)], timeout=300, env=env)
    assert not prefix.exists() and not launcher.exists()


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.skipif(
    not os.environ.get("LATENT_SYNTH_BUNDLE"), reason="set LATENT_SYNTH_BUNDLE=DIST/latent-synth"
)
def test_bundle_runs_without_network(tmp_path):
    netns = _no_network_prefix()
    exe = Path(os.environ["LATENT_SYNTH_BUNDLE"]) / "latent-synth"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "MPL"))}
    env["HOME"] = str(tmp_path)
    assert "demo" in _run([*netns, str(exe), "--help"], timeout=300, env=env).stdout
    out = tmp_path / "demo"
    _run(
        [*netns, str(exe), "demo", "--out", str(out), "--quiet"],
        timeout=1500,
        env=env,
        cwd=tmp_path,
    )
    assert any(out.rglob("*.csv")) and any(out.rglob("*.pdf"))


# ----------------------------------------------------------------------------- issue 17 (Windows)

PS1 = (INSTALLER / "install.ps1").read_text(encoding="utf-8")
UNPS1 = (INSTALLER / "uninstall.ps1").read_text(encoding="utf-8")


def test_constraints_from_the_lock_carry_versions_not_hashes():
    """Item 9: pip refuses hashes in a constraints file; every pin of this machine is there."""
    text = lockfile.constraints(LOCK, drop=["torch"])
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    pins = {p.name: p.version for p in lockfile.select(lockfile.read_lock(LOCK), "linux_x86_64")}
    assert len(lines) == len(pins) - 1 and len(lines) > 30
    assert not any(
        "--hash" in line or ";" in line or "torch" == line.split("==")[0] for line in lines
    )
    assert (
        f"pyside6=={pins['pyside6']}" in lines
        and f"autograd-gamma=={pins['autograd-gamma']}" in lines
    )
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("$(STAMP):", 1)[1].split("\n\n", 1)[0]
    assert "lockfile.py constraints" in recipe and '-c $(CONSTRAINTS) -e ".[gui,test]"' in recipe
    assert "$(LOCK)" in recipe.splitlines()[0], "a changed lock re-creates the test environment"


def test_test_environment_runs_the_locked_versions():
    """Item 9: the tested combination is the shipped one. Every package the kit pins that is
    installed here has the lock's version (the test venv is built with the lock as constraints:
    `make venv`)."""
    from importlib import metadata

    pins = lockfile.select(
        lockfile.read_lock(LOCK), "win_amd64" if os.name == "nt" else "linux_x86_64"
    )
    wrong = {}
    for pin in pins:
        try:
            installed = metadata.version(pin.name)
        except metadata.PackageNotFoundError:
            continue
        if pin.name == "torch":  # the GPU build may replace the CPU one (README, "Using a GPU")
            installed, want = installed.split("+")[0], pin.version.split("+")[0]
        else:
            want = pin.version
        if installed != want:
            wrong[pin.name] = f"{installed} installed, {want} shipped"
    assert not wrong, f"the test environment differs from the kit; run `make venv`: {wrong}"


def test_gui_script_is_the_shortcut_target():
    """Item 5: a GUI script (no `pythonw -c` in Documents) is what the Start menu starts."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["gui-scripts"] == {"latent-synth-gui": "desktop.launch:gui_main"}
    shortcut = PS1.split("CreateShortcut", 1)[1].split(".Save()", 1)[0]
    assert "latent-synth-gui.exe" in shortcut and "pythonw" not in shortcut and "-c" not in shortcut


def test_gui_start_failure_is_logged_and_shown(tmp_path, monkeypatch):
    """Item 5: a windowed program has no console; a failure at start goes to a log file in the
    user's local app-data folder and into a message box that names it."""
    from desktop import app, launch

    def broken() -> int:
        raise OSError("[WinError 126] The specified module could not be found: c10.dll")

    shown: list[str] = []
    monkeypatch.setattr(app, "main", broken)
    monkeypatch.setattr(launch, "_show_startup_error", shown.append)
    monkeypatch.setattr(launch.sys, "platform", "win32")
    monkeypatch.setitem(sys.modules, "torch", sys.modules.get("torch") or object())
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "Local"))
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path / "docs")
    monkeypatch.setattr(sys, "path", ["", str(tmp_path / "docs"), *sys.path])
    assert launch.gui_main() == 1
    log = tmp_path / "Local" / "latent-synth" / "logs" / "startup.log"
    text = log.read_text(encoding="utf-8")
    assert "c10.dll" in text and "Traceback" in text
    assert len(shown) == 1 and str(log) in shown[0] and "c10.dll" in shown[0]
    assert "" not in sys.path and str(tmp_path / "docs") not in sys.path


def test_install_ps1_smoke_test_loads_torch_and_qt_in_both_orders():
    """Item 1: the install fails at install time, not at first run, when torch and Qt cannot
    both load; the kit's Visual C++ runtime goes beside torch's DLLs when the system's is old."""
    assert '"import torch, PySide6.QtWidgets", "import PySide6.QtWidgets, torch"' in PS1
    assert 'Join-Path $site "torch\\lib"' in PS1 and '[version]"14.40.0.0"' in PS1
    assert "msvcp140_atomic_wait.dll" in PS1
    build = (INSTALLER / "build_wheelhouse.sh").read_text(encoding="utf-8")
    assert 'MSVC_RUNTIME_SHA256="' in build and '"$KIT/vcruntime"' in build


def test_install_ps1_paths_are_ascii_relative_and_checked():
    """Item 2: the .cmd launcher and the .pth file hold no install path (a non-ASCII user name
    cannot be garbled), and a Prefix too long for MAX_PATH is refused before anything is written."""
    launcher = PS1.split("Set-Content -LiteralPath $cmd", 1)[1].split("\n)", 1)[0]
    assert "%~dp0..\\venv\\Scripts\\latent-synth.exe" in launcher and "$Prefix" not in launcher
    pth = PS1.split("$pth = ", 1)[1].splitlines()[0]
    assert "$" not in pth.strip('"') and pth.isascii() and "sys.prefix" in pth
    assert "[System.Text.Encoding]::ASCII" in PS1
    assert PS1.index("Get-LongestWheelEntry (Join") < PS1.index("-m venv")
    assert "sysconfig.get_paths" not in PS1, "no path read back through the console code page"


def test_path_edits_keep_the_registry_value_kind():
    """Item 6: the user's Path (REG_EXPAND_SZ) is read unexpanded and written with its kind."""
    for script in (PS1, UNPS1):
        assert 'SetEnvironmentVariable("Path"' not in script
        assert "DoNotExpandEnvironmentNames" in script and 'GetValueKind("Path")' in script
        assert "SendMessageTimeout" in script


def test_pip_is_isolated_from_user_configuration():
    """Item 8: PIP_CONFIG_FILE=NUL does not isolate pip; --isolated does."""
    installs = [line for line in PS1.splitlines() if "install --no-index" in line]
    assert len(installs) == 2 and all("@PipIso" in line for line in installs)
    assert '$PipIso = @("-m", "pip", "--isolated")' in PS1 and "PIP_CONFIG_FILE" not in PS1


def test_bundle_copies_metadata_of_every_shipped_package():
    """Item 7: the About box and results.json read versions from package metadata; the bundle
    copies it for every package the lock pins (scipy, statsmodels, reportlab included)."""
    names = lockfile.distribution_names(LOCK, "win_amd64")
    assert {"scipy", "statsmodels", "reportlab", "pyside6", "torch", "lifelines"} <= set(names)
    spec = (INSTALLER / "latent-synth.spec").read_text(encoding="utf-8")
    assert "lockfile.distribution_names(" in spec
    cli = (INSTALLER / "pyi" / "cli_entry.py").read_text(encoding="utf-8")
    assert "from desktop.launch import main" in cli, "no arguments open the wizard, as documented"
