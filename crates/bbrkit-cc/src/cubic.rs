//! CUBIC (placeholder: being written; see issue 3).

use crate::controller::{CongestionControl, Status};
use crate::tcp::Tcp;

/// CUBIC state (placeholder).
#[derive(Debug, Clone, Default)]
pub struct Cubic {}

impl Cubic {
    /// `cubictcp_init`.
    pub fn new(_tcp: &mut Tcp) -> Self {
        Cubic {}
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }
    fn ssthresh(&mut self, _tcp: &mut Tcp) -> u32 {
        todo!("cubic is being written")
    }
    fn undo_cwnd(&mut self, _tcp: &mut Tcp) -> u32 {
        todo!("cubic is being written")
    }
    fn status(&self, _tcp: &Tcp) -> Status {
        Status::default()
    }
}
