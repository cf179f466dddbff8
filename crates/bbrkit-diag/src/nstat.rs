//! The kernel's SNMP/extended counters, as `nstat -a` reads them: the
//! "table" files `/proc/net/snmp` and `/proc/net/netstat` (pairs of lines
//! `Prefix: Name1 Name2 ...` / `Prefix: v1 v2 ...`), joined into names such
//! as `TcpRetransSegs` and `TcpExtTCPLostRetransmit`.
//!
//! Owns the file format. The counters are per network namespace; [`read`]
//! reads `/proc/thread-self/net/`, the namespace of the calling thread (the
//! same one a census describes). Must never write anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::DiagError;

/// Counters by nstat name (`TcpRetransSegs`, `TcpExtTCPTimeouts`, ...).
///
/// Negative values (e.g. `TcpMaxConn -1`) are constants rather than counters
/// and are left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters(pub BTreeMap<String, u64>);

impl Counters {
    /// The counter called `name`, if the kernel has it.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.0.get(name).copied()
    }
}

/// The namespace's counters from `/proc/thread-self/net/{snmp,netstat}`
/// (falling back to `/proc/net/` where `thread-self` does not exist).
pub fn read() -> Result<Counters, DiagError> {
    let dir = Path::new("/proc/thread-self/net");
    let dir = if dir.exists() {
        dir
    } else {
        Path::new("/proc/net")
    };
    read_from(dir)
}

/// The counters from `DIR/snmp` and `DIR/netstat`.
pub fn read_from(dir: &Path) -> Result<Counters, DiagError> {
    let mut c = Counters::default();
    for file in ["snmp", "netstat"] {
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).map_err(|source| DiagError::Read {
            path: path.clone(),
            source,
        })?;
        parse_table(&text, &path, &mut c)?;
    }
    Ok(c)
}

/// Parses one "table" file into `out`. `path` names it in errors.
pub fn parse_table(text: &str, path: &Path, out: &mut Counters) -> Result<(), DiagError> {
    let err = |line: usize, detail: String| DiagError::Format {
        path: PathBuf::from(path),
        line,
        detail,
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if !lines.len().is_multiple_of(2) {
        return Err(err(
            lines.len(),
            "odd number of lines: a header without values".into(),
        ));
    }
    for (i, pair) in lines.chunks(2).enumerate() {
        let line = 2 * i + 1;
        let (Some((p1, names)), Some((p2, values))) =
            (pair[0].split_once(':'), pair[1].split_once(':'))
        else {
            return Err(err(line, "expected 'Prefix: ...' lines".into()));
        };
        if p1 != p2 {
            return Err(err(
                line + 1,
                format!("values for '{p2}' follow the header of '{p1}'"),
            ));
        }
        let names: Vec<&str> = names.split_whitespace().collect();
        let values: Vec<&str> = values.split_whitespace().collect();
        if names.len() != values.len() {
            return Err(err(
                line + 1,
                format!(
                    "{} names but {} values for '{p1}'",
                    names.len(),
                    values.len()
                ),
            ));
        }
        for (n, v) in names.iter().zip(values) {
            match v.parse::<u64>() {
                Ok(v) => {
                    out.0.insert(format!("{p1}{n}"), v);
                }
                Err(_) if v.parse::<i64>().is_ok() => {} // negative constant
                Err(_) => {
                    return Err(err(
                        line + 1,
                        format!("value '{v}' of {p1}{n} is not a number"),
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "Ip: Forwarding DefaultTTL\nIp: 2 64\n\
        Tcp: RtoAlgorithm RtoMin MaxConn RetransSegs OutSegs\nTcp: 1 200 -1 42 1000\n";
    const NETSTAT: &str = "TcpExt: TCPLostRetransmit TCPTimeouts TCPOrigDataSent\nTcpExt: 3 4 900\n\
        IpExt: InCEPkts\nIpExt: 18446744073709551615\n";

    #[test]
    fn joins_prefix_and_name_and_skips_negative_constants() {
        let mut c = Counters::default();
        parse_table(SNMP, Path::new("snmp"), &mut c).unwrap();
        parse_table(NETSTAT, Path::new("netstat"), &mut c).unwrap();
        assert_eq!(c.get("TcpRetransSegs"), Some(42));
        assert_eq!(c.get("TcpExtTCPLostRetransmit"), Some(3));
        assert_eq!(c.get("TcpExtTCPOrigDataSent"), Some(900));
        assert_eq!(c.get("IpExtInCEPkts"), Some(u64::MAX));
        assert_eq!(c.get("TcpMaxConn"), None);
        assert_eq!(c.get("IpDefaultTTL"), Some(64));
    }

    #[test]
    fn malformed_tables_name_file_and_line() {
        let mut c = Counters::default();
        let e = parse_table("Tcp: A B\nTcp: 1\n", Path::new("/x/snmp"), &mut c).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/x/snmp: line 2: 2 names but 1 values for 'Tcp'"
        );
        let e = parse_table("Tcp: A\n", Path::new("s"), &mut c).unwrap_err();
        assert!(e.to_string().contains("odd number of lines"), "{e}");
        let e = parse_table("Tcp: A\nUdp: 1\n", Path::new("s"), &mut c).unwrap_err();
        assert!(
            e.to_string()
                .contains("values for 'Udp' follow the header of 'Tcp'"),
            "{e}"
        );
        let e = parse_table("Tcp: A\nTcp: x\n", Path::new("s"), &mut c).unwrap_err();
        assert!(
            e.to_string().contains("value 'x' of TcpA is not a number"),
            "{e}"
        );
    }

    #[test]
    fn reads_this_kernels_files() {
        let c = read().unwrap();
        assert!(c.get("TcpRetransSegs").is_some());
        assert!(c.get("TcpExtTCPOrigDataSent").is_some());
    }
}
