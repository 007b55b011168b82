<#
.SYNOPSIS
Install latent-synth for the current user from this offline kit (no network, no admin rights).

.DESCRIPTION
Verifies SHA256SUMS, creates a virtual environment in -Prefix from wheels\ alone
(pip --no-index --require-hashes), builds matplotlib's font cache in Prefix\mplconfig and adds a
Start-menu shortcut (the wizard) plus Prefix\bin\latent-synth.cmd (the command line). Running it
again replaces the previous installation. Undo with uninstall.ps1.

  powershell -ExecutionPolicy Bypass -File install.ps1 [-Prefix DIR] [-Python PATH] [-AddToPath] [-NoShortcut]

.PARAMETER Prefix
Where the program goes (default: %LOCALAPPDATA%\Programs\latent-synth).
.PARAMETER Python
A Python 3.11 interpreter (default: `py -3.11`, else python.exe on PATH if it is 3.11).
.PARAMETER AddToPath
Add Prefix\bin to the user's PATH (HKCU; no admin rights needed).
.PARAMETER NoShortcut
No Start-menu shortcut.
#>
[CmdletBinding()]
param(
    [string]$Prefix = (Join-Path $env:LOCALAPPDATA "Programs\latent-synth"),
    [string]$Python = "",
    [switch]$AddToPath,
    [switch]$NoShortcut
)
$ErrorActionPreference = "Stop"
$Kit = Split-Path -Parent $MyInvocation.MyCommand.Path
$Start = Get-Date
function Fail($msg) { Write-Error "install.ps1: $msg"; exit 1 }

# 1. Integrity: every file against SHA256SUMS; no unlisted wheel.
Write-Host "[1/5] verifying SHA256SUMS"
$sums = Join-Path $Kit "SHA256SUMS"
if (-not (Test-Path $sums)) { Fail "SHA256SUMS is missing from $Kit" }
$listed = @{}
foreach ($line in Get-Content -LiteralPath $sums) {
    if ($line -notmatch '^([0-9a-f]{64}) [ *](.+)$') { Fail "malformed line in SHA256SUMS: $line" }
    $rel = $Matches[2]; $want = $Matches[1]
    $listed[$rel] = $true
    $path = Join-Path $Kit ($rel -replace '/', '\')
    if (-not (Test-Path -LiteralPath $path)) { Fail "$rel is listed in SHA256SUMS but missing" }
    $got = (Get-FileHash -Algorithm SHA256 -LiteralPath $path).Hash.ToLower()
    if ($got -ne $want) { Fail "checksum verification FAILED for $rel (corrupted or modified); nothing was installed" }
}
foreach ($w in Get-ChildItem -LiteralPath (Join-Path $Kit "wheels") -Filter *.whl) {
    if (-not $listed.ContainsKey("wheels/$($w.Name)")) { Fail "wheels/$($w.Name) is not listed in SHA256SUMS; nothing was installed" }
}

# 2. Python 3.11
$PyArgs = @()
if ($Python -eq "") {
    if (Get-Command py -ErrorAction SilentlyContinue) { $Python = "py"; $PyArgs = @("-3.11") }
    elseif (Get-Command python -ErrorAction SilentlyContinue) { $Python = "python" }
    else { Fail "no Python 3.11 found; pass -Python C:\path\to\python.exe" }
}
& $Python @PyArgs -c "import sys; sys.exit(sys.version_info[:2] != (3, 11))"
if ($LASTEXITCODE -ne 0) { Fail "$Python is not Python 3.11 (this kit is for CPython 3.11); pass -Python" }

# pip sees only this kit: no config files, no PIP_* variables, no index.
Get-ChildItem env: | Where-Object { $_.Name -like "PIP_*" } | ForEach-Object { Remove-Item "env:$($_.Name)" }
$env:PIP_CONFIG_FILE = "NUL"; $env:PIP_NO_INPUT = "1"; $env:PIP_DISABLE_PIP_VERSION_CHECK = "1"
Remove-Item env:PYTHONPATH, env:PYTHONHOME -ErrorAction SilentlyContinue

Write-Host "[2/5] creating $Prefix\venv"
New-Item -ItemType Directory -Force -Path $Prefix | Out-Null
foreach ($d in "venv", "mplconfig") { $p = Join-Path $Prefix $d; if (Test-Path $p) { Remove-Item -Recurse -Force $p } }
& $Python @PyArgs -m venv (Join-Path $Prefix "venv")
if ($LASTEXITCODE -ne 0) { Fail "could not create the virtual environment" }
$VPy = Join-Path $Prefix "venv\Scripts\python.exe"

Write-Host "[3/5] installing from the kit (offline)"
$wheels = Join-Path $Kit "wheels"
& $VPy -m pip install --no-index --find-links $wheels --only-binary=:all: --no-cache-dir --quiet --require-hashes -r (Join-Path $Kit "requirements.lock")
if ($LASTEXITCODE -ne 0) { Fail "pip could not install the locked packages (see above)" }
$app = Get-ChildItem -LiteralPath $wheels -Filter "latent_synth-*.whl" | Select-Object -First 1
& $VPy -m pip install --no-index --no-deps --no-cache-dir --quiet $app.FullName
if ($LASTEXITCODE -ne 0) { Fail "pip could not install $($app.Name)" }

Write-Host "[4/5] building matplotlib's font cache"
$Mpl = Join-Path $Prefix "mplconfig"
New-Item -ItemType Directory -Force -Path $Mpl | Out-Null
$site = (& $VPy -c "import sysconfig; print(sysconfig.get_paths()['purelib'])").Trim()
$pth = "import os; os.environ.setdefault('MPLCONFIGDIR', r'$Mpl')"
[System.IO.File]::WriteAllText((Join-Path $site "latent_synth_env.pth"), $pth + "`n")
$env:MPLCONFIGDIR = $Mpl; $env:MPLBACKEND = "Agg"
& $VPy -c "import matplotlib.font_manager as fm; fm._load_fontmanager(try_read_cache=False)"
if (-not (Get-ChildItem -Path $Mpl -Filter "fontlist-*.json")) { Fail "matplotlib's font cache was not written" }
& (Join-Path $Prefix "venv\Scripts\latent-synth.exe") --version
if ($LASTEXITCODE -ne 0) { Fail "latent-synth does not start; see above" }

Write-Host "[5/5] adding the launchers"
$Manifest = Join-Path $Prefix "installed-files.txt"
Set-Content -LiteralPath $Manifest -Value @()
$bin = Join-Path $Prefix "bin"
New-Item -ItemType Directory -Force -Path $bin | Out-Null
$cmd = Join-Path $bin "latent-synth.cmd"
Set-Content -LiteralPath $cmd -Encoding ASCII -Value @(
    "@echo off",
    "rem latent-synth launcher (installed by install.ps1; removed by uninstall.ps1)",
    "`"$Prefix\venv\Scripts\latent-synth.exe`" %*"
)
if (-not $NoShortcut) {
    $menu = Join-Path $env:APPDATA "Microsoft\Windows\Start Menu\Programs"
    $lnk = Join-Path $menu "latent-synth.lnk"
    $shell = New-Object -ComObject WScript.Shell
    $s = $shell.CreateShortcut($lnk)
    $s.TargetPath = Join-Path $Prefix "venv\Scripts\pythonw.exe"  # no console window
    $s.Arguments = '-c "import sys; from desktop.app import main; sys.exit(main())"'
    $s.WorkingDirectory = [Environment]::GetFolderPath("MyDocuments")
    $s.Description = "latent-synth: privacy-protected synthetic copies of patient tables"
    $s.Save()
    Add-Content -LiteralPath $Manifest -Value $lnk
}
if ($AddToPath) {
    $userPath = [Environment]::GetEnvironmentVariable("Path", "User")
    if (($userPath -split ';') -notcontains $bin) {
        [Environment]::SetEnvironmentVariable("Path", ((@($userPath, $bin) | Where-Object { $_ }) -join ';'), "User")
        Add-Content -LiteralPath $Manifest -Value "PATH:$bin"
        Write-Host "added $bin to your PATH (new terminals)"
    }
}
Copy-Item -LiteralPath (Join-Path $Kit "uninstall.ps1") -Destination $Prefix -Force -ErrorAction SilentlyContinue
$secs = [int]((Get-Date) - $Start).TotalSeconds
Write-Host "installed latent-synth in $Prefix ($secs s). Command line: $cmd"
