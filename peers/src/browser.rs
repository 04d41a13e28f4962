//! A real browser for the panel's tests: Debian's Chromium (`/usr/bin/chromium`, from the
//! package `chromium`, installed by `scripts/install-deb-tools` when missing) driven by the
//! pinned `playwright-core` ([`Peer::Playwright`], installed by `scripts/install-peers`).
//! Playwright cannot download browsers here, so it never uses one of its own.
//!
//! [`chromium`] installs both on first use and then proves the pair works — the pinned
//! Playwright launches that Chromium headless and reads a page back — so a version mismatch
//! fails early with both versions named, never as a confusing failure mid-test.

use crate::install::{installed, repo_root, Peer};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Where Debian's package puts the browser.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// A browser the tests can drive.
#[derive(Clone, Debug)]
pub struct Browser {
    /// The `playwright-core` package folder, for Node's `require`.
    pub playwright: PathBuf,
    /// The browser's executable (`executablePath`).
    pub chromium: PathBuf,
    /// What the smoke launch reported: `<chromium version> with playwright-core <version>`.
    pub versions: String,
}

/// The browser, installed if missing and checked once per process (the module's contract).
/// `Err` names what is missing or what failed, and how to install it by hand.
pub fn chromium() -> Result<Browser, String> {
    static READY: OnceLock<Result<Browser, String>> = OnceLock::new();
    READY.get_or_init(prepare).clone()
}

fn prepare() -> Result<Browser, String> {
    let playwright = installed(Peer::Playwright)?.join("node_modules/playwright-core");
    install_chromium()?;
    let chromium = PathBuf::from(CHROMIUM);
    let versions = smoke(&playwright, &chromium)?;
    Ok(Browser {
        playwright,
        chromium,
        versions,
    })
}

/// Runs `scripts/install-deb-tools` when the browser is missing.
fn install_chromium() -> Result<(), String> {
    if Path::new(CHROMIUM).is_file() {
        return Ok(());
    }
    let script = repo_root().join("scripts/install-deb-tools");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if out.status.success() && Path::new(CHROMIUM).is_file() {
        return Ok(());
    }
    Err(format!(
        "no {CHROMIUM}: {} ended with {} (install the Debian package chromium by hand):\n{}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Launches the browser headless through Playwright and reads a page back: the versions.
fn smoke(playwright: &Path, chromium: &Path) -> Result<String, String> {
    const SCRIPT: &str = r##"
const pw = require(process.env.PW);
const version = require(process.env.PW + "/package.json").version;
(async () => {
  const browser = await pw.chromium.launch({ executablePath: process.env.CHROMIUM });
  const page = await browser.newPage();
  await page.setContent("<p id=probe>ready</p>");
  const text = await page.textContent("#probe");
  const seen = browser.version();
  await browser.close();
  if (text !== "ready") { throw new Error("the page read back " + text); }
  console.log(seen + " with playwright-core " + version);
})().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
"##;
    let out = Command::new("node")
        .args(["-e", SCRIPT])
        .env("PW", playwright)
        .env("CHROMIUM", chromium)
        .output()
        .map_err(|e| format!("cannot run node: {e} (install Node.js 18+)"))?;
    let said = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() && !said.is_empty() {
        return Ok(said);
    }
    Err(format!(
        "playwright-core ({}) could not drive {} ({}):\n{}",
        playwright.display(),
        chromium.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}
