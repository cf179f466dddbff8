//! [`CcName`]: the name of a TCP congestion-control algorithm as the kernel
//! knows it (`TCP_CONGESTION`, `tcp_available_congestion_control`): at most
//! 15 bytes of ASCII letters, digits and `_` (`TCP_CA_NAME_MAX` is 16 with
//! the NUL). Whether the kernel offers it is for the caller to ask.

use crate::units::UnitError;

/// A well-formed kernel algorithm name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct CcName(String);

/// `TCP_CA_NAME_MAX` (include/net/tcp.h) less the terminating NUL.
pub const MAX_LEN: usize = 15;

impl std::str::FromStr for CcName {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let ok = !s.is_empty()
            && s.len() <= MAX_LEN
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if ok {
            Ok(CcName(s.to_string()))
        } else {
            Err(UnitError(format!("invalid algorithm name '{s}'")))
        }
    }
}

impl std::fmt::Display for CcName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for CcName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_only() {
        assert_eq!("bbr3".parse::<CcName>().unwrap().to_string(), "bbr3");
        assert!("tcp_bbr_v2".parse::<CcName>().is_ok());
        assert!("".parse::<CcName>().is_err());
        assert!("bbr;rm".parse::<CcName>().is_err());
        assert!("sixteen_chars_xx".parse::<CcName>().is_err());
    }
}
