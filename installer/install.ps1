<#
.SYNOPSIS
Install latent-synth for the current user from this offline kit (no network, no admin rights).

.DESCRIPTION
Verifies SHA256SUMS, checks that -Prefix is short enough for Windows' 260-character path limit,
creates a virtual environment in -Prefix from wheels\ alone (pip --isolated --no-index
--require-hashes), places the kit's Visual C++ runtime (vcruntime\) beside torch's DLLs when the
system's is missing or older than 14.40, checks that torch and Qt load together (both orders),
builds matplotlib's font cache in Prefix\mplconfig and adds a Start-menu shortcut (the wizard,
latent-synth-gui.exe; start-up errors go to %LOCALAPPDATA%\latent-synth\logs) plus
Prefix\bin\latent-synth.cmd (the command line). Running it again replaces the previous
installation. Undo with uninstall.ps1.

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
$Prefix = $ExecutionContext.SessionState.Path.GetUnresolvedProviderPathFromPSPath($Prefix)

# Windows' path limit (MAX_PATH, 260 characters with the terminating NUL) applies unless long
# paths are enabled machine-wide (an administrator's setting). The longest file name inside the
# kit's wheels decides how long Prefix may be.
function Test-LongPathsEnabled {
    $v = Get-ItemProperty -Path "HKLM:\SYSTEM\CurrentControlSet\Control\FileSystem" -Name LongPathsEnabled -ErrorAction SilentlyContinue
    return ($v -and $v.LongPathsEnabled -eq 1)
}
function Get-LongestWheelEntry($folder) {
    Add-Type -AssemblyName System.IO.Compression.FileSystem
    $longest = 0
    foreach ($w in Get-ChildItem -LiteralPath $folder -Filter *.whl) {
        $zip = [System.IO.Compression.ZipFile]::OpenRead($w.FullName)
        try { foreach ($e in $zip.Entries) { if ($e.FullName.Length -gt $longest) { $longest = $e.FullName.Length } } }
        finally { $zip.Dispose() }
    }
    return $longest
}
function Get-DllVersion($path) {
    if (-not (Test-Path -LiteralPath $path)) { return $null }
    $vi = (Get-Item -LiteralPath $path).VersionInfo
    return [version]::new($vi.FileMajorPart, $vi.FileMinorPart, $vi.FileBuildPart, 0)
}

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

# Path length, before anything is written.
$SitePrefix = "\venv\Lib\site-packages\"
if (-not (Test-LongPathsEnabled)) {
    $longest = $Prefix.Length + $SitePrefix.Length + (Get-LongestWheelEntry (Join-Path $Kit "wheels"))
    if ($longest -gt 259) {
        $room = 259 - ($longest - $Prefix.Length)
        Fail ("the folder $Prefix is too long ($($Prefix.Length) characters): the program's files there would " +
              "reach $longest characters, over Windows' limit of 259. Install into a folder of at most $room " +
              "characters, e.g. -Prefix C:\latent-synth (or ask an administrator to enable long paths)")
    }
}

# pip sees only this kit: --isolated (no user config, no PIP_* variables), no index.
Get-ChildItem env: | Where-Object { $_.Name -like "PIP_*" } | ForEach-Object { Remove-Item "env:$($_.Name)" }
$env:PIP_NO_INPUT = "1"; $env:PIP_DISABLE_PIP_VERSION_CHECK = "1"
Remove-Item env:PYTHONPATH, env:PYTHONHOME -ErrorAction SilentlyContinue
$PipIso = @("-m", "pip", "--isolated")

Write-Host "[2/5] creating $Prefix\venv"
New-Item -ItemType Directory -Force -Path $Prefix | Out-Null
foreach ($d in "venv", "mplconfig") { $p = Join-Path $Prefix $d; if (Test-Path $p) { Remove-Item -Recurse -Force $p } }
& $Python @PyArgs -m venv (Join-Path $Prefix "venv")
if ($LASTEXITCODE -ne 0) { Fail "could not create the virtual environment" }
$VPy = Join-Path $Prefix "venv\Scripts\python.exe"

Write-Host "[3/5] installing from the kit (offline)"
$wheels = Join-Path $Kit "wheels"
& $VPy @PipIso install --no-index --find-links $wheels --only-binary=:all: --no-cache-dir --quiet --require-hashes -r (Join-Path $Kit "requirements.lock")
if ($LASTEXITCODE -ne 0) { Fail "pip could not install the locked packages (see above)" }
$app = Get-ChildItem -LiteralPath $wheels -Filter "latent_synth-*.whl" | Select-Object -First 1
& $VPy @PipIso install --no-index --no-deps --no-cache-dir --quiet $app.FullName
if ($LASTEXITCODE -ne 0) { Fail "pip could not install $($app.Name)" }

# The Visual C++ runtime: torch's DLLs need MSVCP140.dll and MSVCP140_ATOMIC_WAIT.dll of 14.40 or
# newer and do not ship them; installing Microsoft's redistributable needs admin rights. The kit
# carries the redistributable DLLs (vcruntime\); they go beside torch's DLLs when the system's
# copies are missing or older, and replace an older msvcp140.dll that PySide6 brings.
$site = Join-Path $Prefix $SitePrefix.Trim("\")
$VcKit = Join-Path $Kit "vcruntime"
$MinVc = [version]"14.40.0.0"
if (Test-Path -LiteralPath $VcKit) {
    # a 32-bit PowerShell sees SysWOW64 as System32; Sysnative is the 64-bit folder there
    $sys32 = Join-Path $env:SystemRoot $(if ([Environment]::Is64BitProcess) { "System32" } else { "Sysnative" })
    $old = @("msvcp140.dll", "msvcp140_atomic_wait.dll", "vcruntime140.dll", "vcruntime140_1.dll") |
        Where-Object { $v = Get-DllVersion (Join-Path $sys32 $_); (-not $v) -or ($v -lt $MinVc) }
    if ($old) {
        Write-Host "      the system's Visual C++ runtime is missing or older than 14.40 ($($old -join ', ')): using the kit's copy"
        $torchLib = Join-Path $site "torch\lib"
        Copy-Item -Path (Join-Path $VcKit "*.dll") -Destination $torchLib -Force
        $qt = Join-Path $site "PySide6"
        foreach ($dll in Get-ChildItem -LiteralPath $VcKit -Filter *.dll) {
            $there = Join-Path $qt $dll.Name
            $v = Get-DllVersion $there
            if ($v -and ($v -lt (Get-DllVersion $dll.FullName))) { Copy-Item -LiteralPath $dll.FullName -Destination $there -Force }
        }
    }
}

Write-Host "[4/5] building matplotlib's font cache; checking that the program starts"
$Mpl = Join-Path $Prefix "mplconfig"
New-Item -ItemType Directory -Force -Path $Mpl | Out-Null
if (-not (Test-Path -LiteralPath $site)) { Fail "the virtual environment has no $site" }
# ASCII only, and relative to the environment: Python 3.11 reads .pth files in the locale's code
# page, so a non-ASCII user name written here would be garbled.
$pth = "import os, sys; os.environ.setdefault('MPLCONFIGDIR', os.path.join(os.path.dirname(sys.prefix), 'mplconfig'))"
[System.IO.File]::WriteAllText((Join-Path $site "latent_synth_env.pth"), $pth + "`n", [System.Text.Encoding]::ASCII)
$env:MPLCONFIGDIR = $Mpl; $env:MPLBACKEND = "Agg"
& $VPy -c "import matplotlib.font_manager as fm; fm._load_fontmanager(try_read_cache=False)"
if (-not (Get-ChildItem -LiteralPath $Mpl -Filter "fontlist-*.json")) { Fail "matplotlib's font cache was not written" }
# What the first run needs, in both orders (whichever loads first brings its Visual C++ runtime).
foreach ($imports in "import torch, PySide6.QtWidgets", "import PySide6.QtWidgets, torch") {
    & $VPy -c "$imports; print('ok: $imports')"
    if ($LASTEXITCODE -ne 0) { Fail "the program would not start: '$imports' failed (see above; WinError 126 or 1114 means a missing or old Visual C++ runtime)" }
}
& (Join-Path $Prefix "venv\Scripts\latent-synth.exe") --version
if ($LASTEXITCODE -ne 0) { Fail "latent-synth does not start; see above" }

# Tell Explorer (and so new terminals) that the user's environment changed.
function Send-EnvironmentChanged {
    if (-not ("LatentSynth.Env" -as [type])) {
        Add-Type -Namespace LatentSynth -Name Env -MemberDefinition @'
[DllImport("user32.dll", CharSet = CharSet.Unicode, SetLastError = true)]
public static extern IntPtr SendMessageTimeout(IntPtr hWnd, uint Msg, UIntPtr wParam, string lParam, uint fuFlags, uint uTimeout, out UIntPtr lpdwResult);
'@
    }
    $r = [UIntPtr]::Zero
    [void][LatentSynth.Env]::SendMessageTimeout([IntPtr]0xffff, 0x1A, [UIntPtr]::Zero, "Environment", 2, 5000, [ref]$r)
}

Write-Host "[5/5] adding the launchers"
$Manifest = Join-Path $Prefix "installed-files.txt"
Set-Content -LiteralPath $Manifest -Value @()
$bin = Join-Path $Prefix "bin"
New-Item -ItemType Directory -Force -Path $bin | Out-Null
$cmd = Join-Path $bin "latent-synth.cmd"
# ASCII only: the launcher finds the program relative to itself (%~dp0 is bin\), so a non-ASCII
# Prefix never has to pass through the console's code page.
Set-Content -LiteralPath $cmd -Encoding ASCII -Value @(
    "@echo off",
    "rem latent-synth launcher (installed by install.ps1; removed by uninstall.ps1)",
    "`"%~dp0..\venv\Scripts\latent-synth.exe`" %*"
)
if (-not $NoShortcut) {
    $menu = Join-Path $env:APPDATA "Microsoft\Windows\Start Menu\Programs"
    $lnk = Join-Path $menu "latent-synth.lnk"
    $shell = New-Object -ComObject WScript.Shell
    $s = $shell.CreateShortcut($lnk)
    # The GUI script (no console window): it never imports from its working folder and logs
    # start-up failures to %LOCALAPPDATA%\latent-synth\logs\startup.log, shown in a message box.
    $s.TargetPath = Join-Path $Prefix "venv\Scripts\latent-synth-gui.exe"
    # No fixed arguments: a table dropped on the shortcut is passed as its only argument, and
    # latent-synth-gui opens the wizard with that file loaded.
    $s.Arguments = ""
    $s.WorkingDirectory = [Environment]::GetFolderPath("MyDocuments")
    $s.Description = "latent-synth: privacy-protected synthetic copies of patient tables"
    $s.Save()
    Add-Content -LiteralPath $Manifest -Value $lnk
}
if ($AddToPath) {
    # The registry value itself, unexpanded and with its kind kept: a user Path that holds
    # %USERPROFILE%\... is REG_EXPAND_SZ, and [Environment]::SetEnvironmentVariable would rewrite
    # it, expanded, as a plain REG_SZ for good.
    $key = [Microsoft.Win32.Registry]::CurrentUser.OpenSubKey("Environment", $true)
    try {
        $has = $key.GetValueNames() -contains "Path"
        $userPath = if ($has) { [string]$key.GetValue("Path", "", [Microsoft.Win32.RegistryValueOptions]::DoNotExpandEnvironmentNames) } else { "" }
        $kind = if ($has) { $key.GetValueKind("Path") } else { [Microsoft.Win32.RegistryValueKind]::ExpandString }
        if (($userPath -split ';') -notcontains $bin) {
            $key.SetValue("Path", ((@($userPath.TrimEnd(';'), $bin) | Where-Object { $_ }) -join ';'), $kind)
            Add-Content -LiteralPath $Manifest -Value "PATH:$bin"
            Send-EnvironmentChanged
            Write-Host "added $bin to your PATH (new terminals)"
        }
    } finally { $key.Close() }
}
Copy-Item -LiteralPath (Join-Path $Kit "uninstall.ps1") -Destination $Prefix -Force -ErrorAction SilentlyContinue
$secs = [int]((Get-Date) - $Start).TotalSeconds
Write-Host "installed latent-synth in $Prefix ($secs s). Command line: $cmd"
