//! BBRv1 (placeholder: being written; see issue 3).

use crate::controller::{CongestionControl, Status};
use crate::random::Random;
use crate::tcp::Tcp;

/// BBRv1 state (placeholder).
pub struct Bbr1 {
    _rng: Box<dyn Random + Send>,
}

impl std::fmt::Debug for Bbr1 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bbr1").finish_non_exhaustive()
    }
}

impl Bbr1 {
    /// `bbr_init`.
    pub fn new(_tcp: &mut Tcp, rng: Box<dyn Random + Send>) -> Self {
        Bbr1 { _rng: rng }
    }
}

impl CongestionControl for Bbr1 {
    fn name(&self) -> &'static str {
        "bbr"
    }
    fn has_cong_control(&self) -> bool {
        true
    }
    fn ssthresh(&mut self, _tcp: &mut Tcp) -> u32 {
        todo!("bbr1 is being written")
    }
    fn undo_cwnd(&mut self, _tcp: &mut Tcp) -> u32 {
        todo!("bbr1 is being written")
    }
    fn status(&self, _tcp: &Tcp) -> Status {
        Status::default()
    }
}
