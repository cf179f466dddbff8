//! BBRv3 and BBRv2 (placeholder: being written; see issue 3).

use crate::controller::{CongestionControl, Status};
use crate::random::Random;
use crate::tcp::Tcp;

/// The parameters that differ between BBRv2 (v2alpha) and BBRv3 (placeholder).
#[derive(Debug, Clone, PartialEq)]
pub struct Bbr3Params {
    /// Version reported by `name()` and `tcp_bbr_info`.
    pub version: u8,
}

impl Bbr3Params {
    /// google/bbr v2alpha values.
    pub fn v2() -> Self {
        Bbr3Params { version: 2 }
    }
    /// google/bbr v3 values.
    pub fn v3() -> Self {
        Bbr3Params { version: 3 }
    }
}

/// BBRv3 state (placeholder).
pub struct Bbr3 {
    params: Bbr3Params,
    _rng: Box<dyn Random + Send>,
}

impl std::fmt::Debug for Bbr3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bbr3")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl Bbr3 {
    /// `bbr_init`.
    pub fn new(_tcp: &mut Tcp, rng: Box<dyn Random + Send>, params: Bbr3Params) -> Self {
        Bbr3 { params, _rng: rng }
    }
}

impl CongestionControl for Bbr3 {
    fn name(&self) -> &'static str {
        if self.params.version == 2 {
            "bbr2"
        } else {
            "bbr3"
        }
    }
    fn has_cong_control(&self) -> bool {
        true
    }
    fn ssthresh(&mut self, _tcp: &mut Tcp) -> u32 {
        todo!("bbr3 is being written")
    }
    fn undo_cwnd(&mut self, _tcp: &mut Tcp) -> u32 {
        todo!("bbr3 is being written")
    }
    fn status(&self, _tcp: &Tcp) -> Status {
        Status::default()
    }
}
