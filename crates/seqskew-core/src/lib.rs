//! seqskew-core: the pure part of seqskew.
//!
//! Bytes go in through [`import`], which streams every supported trace format into the one
//! [`model::Job`]; the analysis reads only that model. This crate does no IO, knows nothing of
//! files, the DOM or the clock, and never panics on input: every problem is a
//! [`diag::Diagnostic`].

#![deny(clippy::indexing_slicing)]

pub mod analysis;
pub mod balance;
pub mod compare;
pub mod diag;
pub mod export;
pub mod failure;
pub mod import;
pub mod model;
mod order_keys;
pub mod report;
mod report_failure;
mod report_html;
pub mod schedule;
pub mod text;
