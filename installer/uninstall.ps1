<#
.SYNOPSIS
Remove a per-user latent-synth installation made by install.ps1.

  powershell -ExecutionPolicy Bypass -File uninstall.ps1 [-Prefix DIR]

Removes the Start-menu shortcut and PATH entry that install.ps1 recorded, then Prefix (the
virtual environment, launchers and matplotlib's cache). Your data and outputs are not touched.
#>
[CmdletBinding()]
param([string]$Prefix = (Join-Path $env:LOCALAPPDATA "Programs\latent-synth"))
$ErrorActionPreference = "Stop"
$Manifest = Join-Path $Prefix "installed-files.txt"
if (-not (Test-Path (Join-Path $Prefix "venv")) -and -not (Test-Path $Manifest)) {
    Write-Error "uninstall.ps1: no latent-synth installation in $Prefix (use -Prefix)"; exit 1
}
if (Test-Path $Manifest) {
    foreach ($entry in Get-Content -LiteralPath $Manifest) {
        if ($entry -like "PATH:*") {
            $dir = $entry.Substring(5)
            $userPath = [Environment]::GetEnvironmentVariable("Path", "User")
            $kept = ($userPath -split ';') | Where-Object { $_ -and $_ -ne $dir }
            [Environment]::SetEnvironmentVariable("Path", ($kept -join ';'), "User")
            Write-Host "removed $dir from PATH"
        } elseif ($entry -and (Test-Path -LiteralPath $entry)) {
            Remove-Item -LiteralPath $entry -Force
            Write-Host "removed $entry"
        }
    }
}
# uninstall.ps1 may itself live in Prefix: PowerShell has read it already, so removing is safe.
Remove-Item -Recurse -Force -LiteralPath $Prefix
Write-Host "latent-synth removed from $Prefix"
