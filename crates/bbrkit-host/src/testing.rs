//! Fixtures for the crate's tests: a [`MemoryHost`] (the live state as
//! data, [`Live::default`] unless a test changes it) with files under a
//! temporary root. Nothing here reads or changes the live host, so every
//! test built on it runs as a normal user.

use crate::Root;
use crate::host::{Live, MemoryHost};
use crate::snapshot::{Scope, Snapshot};

/// A host of data with files under a temporary root.
pub(crate) struct Fixture {
    /// Holds the root's directory for the test's lifetime.
    _dir: tempfile::TempDir,
    /// The host.
    pub host: MemoryHost,
}

/// The files of a Debian-12-like root: a stock `sysctl.conf` and its
/// `99-sysctl.conf` symlink, systemd's `50-default.conf`.
pub(crate) const DEBIAN: &[(&str, &str)] = &[
    ("etc/sysctl.conf", "# stock\n"),
    ("etc/sysctl.d/99-sysctl.conf", "@link:../sysctl.conf"),
    (
        "usr/lib/sysctl.d/50-default.conf",
        "net.core.default_qdisc = fq_codel\n",
    ),
];

/// A systemd host: booted with systemd, another unit enabled.
pub(crate) const SYSTEMD: &[(&str, &str)] = &[
    ("run/systemd/system/.keep", ""),
    (
        "etc/systemd/system/multi-user.target.wants/ssh.service",
        "@link:/lib/systemd/system/ssh.service",
    ),
];

/// bbrkit's sysctl file as `enable --cc bbr3` writes its default line.
pub(crate) const BBR3_DEFAULT: &[(&str, &str)] = &[(
    "etc/sysctl.d/99-zz-bbrkit.conf",
    "-net.ipv4.tcp_congestion_control = bbr3\n",
)];

impl Fixture {
    /// A root holding `files` (`@link:TARGET` makes a symlink) and the
    /// default live state.
    pub(crate) fn new(files: &[(&str, &str)]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        let f = Fixture {
            _dir: dir,
            host: MemoryHost::new(root, Live::default()),
        };
        for (p, c) in files {
            f.write(p, c);
        }
        f
    }

    /// Writes a file (or `@link:TARGET` symlink) under the root.
    pub(crate) fn write(&self, path: &str, content: &str) {
        let full = self.root().path(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&full);
        match content.strip_prefix("@link:") {
            Some(t) => std::os::unix::fs::symlink(t, &full).unwrap(),
            None => std::fs::write(&full, content).unwrap(),
        }
    }

    /// The root.
    pub(crate) fn root(&self) -> &Root {
        crate::host::Host::root(&self.host)
    }

    /// The live state, to change.
    pub(crate) fn live(&mut self) -> &mut Live {
        &mut self.host.live
    }

    /// A snapshot of everything (every part in scope).
    pub(crate) fn snap(&self) -> Snapshot {
        let all = Scope {
            interfaces: true,
            sockets: true,
            bbr_version: true,
            bpf_features: true,
            doctor: true,
            keys: Vec::new(),
        };
        Snapshot::read(&self.host, &all).unwrap()
    }

    /// `text` with the root's path replaced by `$ROOT`.
    pub(crate) fn redact(&self, text: &str) -> String {
        text.replace(&self.root().base().display().to_string(), "$ROOT")
    }
}
