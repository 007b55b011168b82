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
if (-not (Test-Path (Join-Path $Prefix "venv")) -and -not (Test-Path $Manifest)) {
    Write-Error "uninstall.ps1: no latent-synth installation in $Prefix (use -Prefix)"; exit 1
}
if (Test-Path $Manifest) {
    foreach ($entry in Get-Content -LiteralPath $Manifest) {
        if ($entry -like "PATH:*") {
            $dir = $entry.Substring(5)
            # The registry value, unexpanded, written back with its kind (REG_EXPAND_SZ stays so).
            $key = [Microsoft.Win32.Registry]::CurrentUser.OpenSubKey("Environment", $true)
            try {
                if ($key.GetValueNames() -contains "Path") {
                    $kind = $key.GetValueKind("Path")
                    $userPath = [string]$key.GetValue("Path", "", [Microsoft.Win32.RegistryValueOptions]::DoNotExpandEnvironmentNames)
                    $kept = ($userPath -split ';') | Where-Object { $_ -and $_ -ne $dir }
                    $key.SetValue("Path", ($kept -join ';'), $kind)
                    Send-EnvironmentChanged
                    Write-Host "removed $dir from PATH"
                }
            } finally { $key.Close() }
        } elseif ($entry -and (Test-Path -LiteralPath $entry)) {
            Remove-Item -LiteralPath $entry -Force
            Write-Host "removed $entry"
        }
    }
}
# uninstall.ps1 may itself live in Prefix: PowerShell has read it already, so removing is safe.
Remove-Item -Recurse -Force -LiteralPath $Prefix
Write-Host "latent-synth removed from $Prefix"
