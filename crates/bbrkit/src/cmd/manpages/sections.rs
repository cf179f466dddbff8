//! The sections clap does not know for each command's man page: EXIT
//! STATUS (the CLI contract, with what exit 1 means for the commands that
//! use it), EXAMPLES and FILES. Plain text here, set in roff by
//! `manpages.rs`.

/// Lines of a list section: (what to show in bold, what it is).
type Pairs = &'static [(&'static str, &'static str)];

/// EXIT STATUS, EXAMPLES and FILES of `command` (`""` for `bbrkit` itself).
pub struct Extra {
    /// When exit 1 is used: what it means (`None`: never).
    pub exit_1: Option<&'static str>,
    /// Command lines, each with a one-line comment.
    pub examples: Pairs,
    /// Files read or written, each with what it is.
    pub files: Pairs,
}

const SYSCTL_D: (&str, &str) = (
    "/etc/sysctl.d/99-zz-bbrkit.conf",
    "the one file enable writes and rollback removes or restores (under --root DIR with --root)",
);
const BEFORE_IMAGE: (&str, &str) = (
    "/var/lib/bbrkit/before-image.json",
    "what enable changed and what was there before: rollback restores it byte for byte",
);
const LOCK: (&str, &str) = (
    "/var/lib/bbrkit/lock",
    "the host lock enable and rollback hold, naming its holder",
);
const PROC_SYS: (&str, &str) = (
    "/proc/sys/net/ipv4/tcp_congestion_control",
    "the default algorithm of this network namespace",
);
const BBR3_UNIT: (&str, &str) = (
    "/etc/systemd/system/bbrkit-bbr3.service",
    "the boot unit that registers bbr3 (enable --cc bbr3)",
);
const PINS: (&str, &str) = (
    "/sys/fs/bpf/bbrkit/",
    "bpffs pins that keep bbrkit's BPF algorithms registered",
);
const NETNS: (&str, &str) = (
    "/run/netns/bbrk<pid>-*",
    "the lab's namespaces with --netns-names (removed at exit; lab --cleanup removes leftovers)",
);

/// The extra sections of `command`.
pub fn of(command: &str) -> Extra {
    let (exit_1, examples, files): (Option<&'static str>, Pairs, Pairs) = match command {
        "check" => (
            None,
            &[
                ("bbrkit check", "what this kernel offers"),
                ("bbrkit check --json", "the same as one JSON document"),
            ],
            &[
                (
                    "/proc/config.gz, /boot/config-*",
                    "the kernel configuration",
                ),
                PROC_SYS,
            ],
        ),
        "enable" => (
            Some(
                "a change would not hold (another file overrides it at boot; --force writes anyway) or a runtime write failed",
            ),
            &[
                (
                    "sudo bbrkit enable --dry-run",
                    "every change, nothing written",
                ),
                (
                    "sudo bbrkit enable",
                    "BBR (+ fq where the kernel has it), persisted",
                ),
                (
                    "sudo bbrkit enable --cc bbr3",
                    "bbrkit's BPF BBRv3, registered at boot",
                ),
                (
                    "sudo bbrkit enable --tune",
                    "also the buffer and tcp_notsent_lowat tuning",
                ),
            ],
            &[SYSCTL_D, BEFORE_IMAGE, LOCK, BBR3_UNIT, PINS],
        ),
        "verify" => (
            Some("a check failed (a FAIL line)"),
            &[
                (
                    "bbrkit verify",
                    "sysctl, module, live sockets, qdiscs, boot files",
                ),
                ("bbrkit verify --json", "for monitoring"),
            ],
            &[SYSCTL_D, PROC_SYS],
        ),
        "rollback" => (
            Some("something could not be restored (each line says what)"),
            &[
                ("sudo bbrkit rollback --dry-run", "what would be restored"),
                (
                    "sudo bbrkit rollback",
                    "restore exactly what enable changed",
                ),
            ],
            &[BEFORE_IMAGE, SYSCTL_D, LOCK],
        ),
        "doctor" => (
            Some("a finding is a warning or an error"),
            &[(
                "bbrkit doctor",
                "every known pitfall, with evidence and the fix",
            )],
            &[
                SYSCTL_D,
                (
                    "/run/netns/",
                    "named namespaces whose default algorithm it reads",
                ),
            ],
        ),
        "lab" => (
            None,
            &[
                (
                    "sudo bbrkit lab",
                    "the seed experiment: CUBIC vs BBR at 0, 2 and 5 % loss",
                ),
                (
                    "sudo bbrkit lab --cc cubic,bbr --delay 10ms --loss 2% --rate 100mbit",
                    "one condition",
                ),
                (
                    "sudo bbrkit lab --cleanup",
                    "remove namespaces a killed run left",
                ),
            ],
            &[NETNS],
        ),
        "sim" => (
            None,
            &[
                ("bbrkit sim --preset seed", "the seed experiment, simulated"),
                (
                    "bbrkit sim --cc cubic,bbr1,bbr3 --rate 100mbit --rtt 10ms --loss 0,2%,5%",
                    "a sweep",
                ),
            ],
            &[],
        ),
        "conns" => (
            None,
            &[
                (
                    "bbrkit conns",
                    "connected sockets, a summary by algorithm first",
                ),
                (
                    "bbrkit conns --cc bbr --port 443 --json",
                    "BBR sockets of port 443",
                ),
            ],
            &[],
        ),
        "metrics" => (
            None,
            &[
                ("bbrkit metrics", "the exposition on stdout"),
                (
                    "bbrkit metrics --textfile /var/lib/prometheus/node-exporter/bbrkit.prom",
                    "for node_exporter's textfile collector",
                ),
            ],
            &[("/proc/net/snmp, /proc/net/netstat", "the TCP counters")],
        ),
        "advise" => (
            None,
            &[
                ("bbrkit advise", "sample 60 s, a verdict per remote prefix"),
                (
                    "bbrkit advise --port 443 --path-rate 1gbit",
                    "port 443 on a known 1 Gbit/s path",
                ),
            ],
            &[],
        ),
        "trial" => (
            None,
            &[
                (
                    "sudo bbrkit trial --arms cubic,bbr --port 443 --until-confident",
                    "split port 443's connections until the answer is sure",
                ),
                (
                    "sudo bbrkit trial --arms cubic,bbr --cgroup /sys/fs/cgroup/web --duration 1h --json",
                    "one cgroup's connections for an hour, as one JSON document",
                ),
                (
                    "sudo bbrkit trial --definition /etc/bbrkit/trials/edge.toml --duration 10m",
                    "the fleet's definition, its stop rule overridden by the flag",
                ),
            ],
            &[(
                "/etc/bbrkit/trials/NAME.toml",
                "a trial definition that bbrkit-trial@NAME.service runs",
            )],
        ),
        // `fleet` and its `report` page.
        "fleet" | "report" => (
            None,
            &[
                (
                    "bbrkit fleet report --prometheus http://prometheus:9090 --trial edge-tokyo",
                    "the trial edge-tokyo pooled over every host that exports it",
                ),
                (
                    "bbrkit fleet report --prometheus http://127.0.0.1:9090 --trial edge-tokyo --json --plot forest.svg",
                    "as one JSON document, with a forest plot",
                ),
            ],
            &[],
        ),
        "boot" => (
            Some("a step failed (bbr3 not registered or not made the default)"),
            &[(
                "bbrkit boot --cc bbr3",
                "what bbrkit-bbr3.service runs at boot",
            )],
            &[BBR3_UNIT, PINS, PROC_SYS],
        ),
        "completions" => (
            None,
            &[
                (
                    "source <(bbrkit completions bash)",
                    "completion in this shell",
                ),
                (
                    "bbrkit completions zsh > ~/.zfunc/_bbrkit",
                    "zsh, from a directory on fpath",
                ),
            ],
            &[],
        ),
        "manpages" => (
            None,
            &[(
                "sudo bbrkit manpages /usr/local/share/man/man1",
                "install these pages for man(1)",
            )],
            &[],
        ),
        _ => (
            Some("verify, doctor, enable, rollback and boot use it (see their pages)"),
            &[
                ("bbrkit check", "can I?"),
                ("sudo bbrkit enable", "turn BBR on"),
                ("bbrkit verify", "did it work?"),
                ("bbrkit advise", "will it help this server's traffic?"),
            ],
            &[SYSCTL_D, BEFORE_IMAGE],
        ),
    };
    Extra {
        exit_1,
        examples,
        files,
    }
}
