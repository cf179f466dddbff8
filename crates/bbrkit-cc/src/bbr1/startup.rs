//! STARTUP and full-pipe detection (`bbr_check_full_bw_reached`).
//!
//! STARTUP paces and sizes cwnd at [`BBR_HIGH_GAIN`] (2/ln2), doubling the
//! delivery rate each round. At each round start with a non-app-limited
//! sample, the max bw is compared with `full_bw`: growth of at least
//! [`BBR_FULL_BW_THRESH`] (25%) resets the count, otherwise after
//! [`BBR_FULL_BW_CNT`] (3) such rounds the pipe is estimated full and
//! [`Bbr1::check_drain`] moves to DRAIN. `full_bw_reached` is never cleared.
//!
//! [`BBR_HIGH_GAIN`]: super::BBR_HIGH_GAIN

use super::{BBR_FULL_BW_CNT, BBR_FULL_BW_THRESH, BBR_SCALE, Bbr1};
use crate::rate::RateSample;

impl Bbr1 {
    /// `bbr_check_full_bw_reached`: has STARTUP filled the pipe?
    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh = (u64::from(self.full_bw) * u64::from(BBR_FULL_BW_THRESH)) >> BBR_SCALE;
        if u64::from(self.max_bw()) >= bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= BBR_FULL_BW_CNT;
    }
}
