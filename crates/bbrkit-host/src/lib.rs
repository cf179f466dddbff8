//! Reading and changing the host's congestion-control configuration.
//!
//! Owns /proc/sys, sysctl.d files and their boot precedence, kernel config,
//! /sys/module, interface qdiscs (rtnetlink), container detection and the
//! before-image that makes `rollback` exact. Must never be used by `bbrkit-cc`
//! or `bbrkit-sim`, and never writes outside its `--root` when given one.
