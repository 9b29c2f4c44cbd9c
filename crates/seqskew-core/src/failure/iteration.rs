//! Training-progress lines: the iteration a training log reports with its time, and
//! Megatron-LM's straggler lines (the fastest and slowest rank of a log interval). Each parser
//! reads one line's body (prefixes split off, colours removed); the log scanner
//! ([`super::log`]) finds the lines by [`ANCHORS`].
//!
//! The forms, from the producing projects' format strings (quoted in docs/formats.md):
//! - Megatron-LM, `megatron/training/training.py` `training_log`:
//!   ` [2025-03-14 10:22:31.418532] iteration      100/  500000 | consumed samples: … |
//!   elapsed time per iteration (ms): 4123.7 | …` (the time stamp absent in old versions, in
//!   seconds or microseconds in newer ones; the time is the mean over the log interval).
//! - Megatron-LM, `megatron/core/utils.py` `StragglerDetector.report` (`--log-straggler`):
//!   `[…] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3468.20ms/0 | …` (`/Rank-8` in some copies).
//! - torchtitan, `torchtitan/components/metrics.py` `MetricsProcessor.log`:
//!   `step: 10  loss:  7.1234  grad_norm: …  memory: …GiB(…%)  tps: 12,345  …` (no time of its
//!   own: the step time comes from the logger's time stamps); `validate step:` is not a step.
//! - DeepSpeed, `deepspeed/runtime/pipe/engine.py` `PipelineEngine.train_batch` (rank 0,
//!   `print`): `steps: 100 loss: 2.3456 iter time (s): 1.234 samples/sec: 414.911` (the time is
//!   the mean over `steps_per_print` steps; a fork writes `step:     5 /  1000 loss: …`).
//! - tqdm (`tqdm/std.py` `format_meter`), the progress bar of Hugging Face `Trainer` and many
//!   loops: `  5%|▌         | 10/200 [00:05<01:30,  2.10it/s]` (`s/it` below one step a second,
//!   a postfix may follow the rate), rewritten in place with carriage returns: the scanner
//!   hands each rewrite here. The rate is tqdm's exponential average (smoothing 0.3), so a
//!   step's time is blurred over the few before it.
//! - DeepSpeed, `deepspeed/utils/timer.py` `SynchronizedWallClockTimer.log` (`wall_clock_breakdown`,
//!   rank 0): `[Rank 0] time (ms) | fwd: 449.36 | bwd: 882.04 | … | step: 35.17` once an optimizer
//!   step (the sums over its micro-steps; `forward`/`backward` in old versions), with no step
//!   number: the scanner counts them. The per-micro-step line (`fwd_microstep: …`) is not read.
//! - DeepSpeed, `deepspeed/utils/timer.py` `ThroughputTimer.stop` (through the logger, so time
//!   stamped): `epoch=0/micro_step=400/global_step=100, RunningAvgSamplesPerSec=…, …` (no time of
//!   its own: the step time comes from the time stamps, as torchtitan's).
//! - Hugging Face `Trainer`, `trainer.py` `_inner_training_loop` and `trainer_utils.py`
//!   `speed_metrics`: the run's summary `{'train_runtime': 3.859, …, 'train_steps_per_second':
//!   10.37, …}` (values quoted as `'3.859'` by newer callbacks): the mean step over the run. Its
//!   `{'loss': …, 'epoch': …}` dicts carry no step number and no time, and are not read.

use super::evidence::TrainingLog;

/// Substrings every progress line holds: what the scanner searches for.
pub const ANCHORS: [&str; 9] =
    ["iteration", "MxRtt/Rnk", "step:", "steps:", "it/s", "s/it", "time (ms)", "global_step=", "'train_runtime'"];

/// What a progress line says.
#[derive(Clone, Debug, PartialEq)]
pub enum Progress {
    /// A line that numbers the step it reports.
    Iteration {
        form: TrainingLog,
        step: u64,
        step_ns: Option<u64>,
    },
    /// A line that times one step without numbering it: the scanner counts them.
    Unnumbered {
        form: TrainingLog,
        step_ns: u64,
    },
    /// A run's summary: steps `1..=steps` took `step_ns` each on average.
    Run {
        form: TrainingLog,
        steps: u64,
        step_ns: u64,
    },
    Extremes {
        fastest_rank: u32,
        fastest_ns: u64,
        slowest_rank: u32,
        slowest_ns: u64,
    },
    /// A line of a form read here whose values do not parse: skipped, and reported by line.
    Unreadable {
        why: &'static str,
    },
}

/// The progress `body` (a line without its prefixes, colours removed) reports, if any.
pub fn parse(body: &str) -> Option<Progress> {
    megatron_iteration(body)
        .or_else(|| straggler(body))
        .or_else(|| deepspeed_steps(body))
        .or_else(|| deepspeed_timers(body))
        .or_else(|| deepspeed_throughput(body))
        .or_else(|| trainer_summary(body))
        .or_else(|| torchtitan_step(body))
        .or_else(|| tqdm(body))
}

/// `iteration {:8d}/{:8d} |` and, when present, `elapsed time per iteration (ms): {:.1f}`.
fn megatron_iteration(body: &str) -> Option<Progress> {
    let step = body.match_indices("iteration").find_map(|(at, word)| {
        let after = body.get(at + word.len()..)?;
        let digits = after.trim_start();
        if digits.len() == after.len() {
            return None;
        }
        let (step, rest) = leading_integer(digits)?;
        rest.trim_start().starts_with('/').then_some(step)
    })?;
    let step_ns = match value_after(body, "elapsed time per iteration (ms):") {
        Some(ms) => match decimal_ns(ms, 1e6) {
            Some(ns) => Some(ns),
            None => return Some(UNREADABLE_TIME),
        },
        None => None,
    };
    Some(Progress::Iteration { form: TrainingLog::Megatron, step, step_ns })
}

/// What a line whose time does not parse (`nan`, a line cut in its number) says.
const UNREADABLE_TIME: Progress = Progress::Unreadable { why: "its time is not a number" };

/// `MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3468.20ms/0`.
fn straggler(body: &str) -> Option<Progress> {
    let fastest = value_after(body, "MnRtt/Rnk:")?;
    let slowest = value_after(body, "MxRtt/Rnk:")?;
    let (Some((fastest_ns, fastest_rank)), Some((slowest_ns, slowest_rank))) =
        (value_with_rank(fastest), value_with_rank(slowest))
    else {
        return Some(Progress::Unreadable { why: "its times are not `<ms>ms/<rank>`" });
    };
    Some(Progress::Extremes { fastest_rank, fastest_ns, slowest_rank, slowest_ns })
}

/// `steps: {global_steps} loss: … iter time (s): {:0.3f} samples/sec: …` (or a fork's `step: N / M`).
fn deepspeed_steps(body: &str) -> Option<Progress> {
    let seconds = value_after(body, "iter time (s):")?;
    let (_, after) = ["steps:", "step:"].iter().find_map(|key| body.split_once(key))?;
    let (step, _) = leading_integer(after.trim_start())?;
    let Some(step_ns) = decimal_ns(seconds, 1e9) else { return Some(UNREADABLE_TIME) };
    Some(Progress::Iteration { form: TrainingLog::DeepSpeed, step, step_ns: Some(step_ns) })
}

/// `time (ms) | fwd: 449.36 | bwd: 882.04 | bwd_inner: … | step: 35.17`: one optimizer step's
/// forward, backward (its gradient all-reduce included) and optimizer step, summed. The
/// micro-step line and other timers' lines in this form (Megatron's `forward-compute`, the
/// pipeline engine's send/receive timers) lack one of the three and are not steps.
fn deepspeed_timers(body: &str) -> Option<Progress> {
    let (_, fields) = body.split_once("time (ms) |")?;
    let (mut forward, mut backward, mut step) = (None, None, None);
    for field in fields.split('|') {
        let (name, value) = field.split_once(':')?;
        let phase = match name.trim() {
            "fwd" | "forward" => &mut forward,
            "bwd" | "backward" => &mut backward,
            "step" => &mut step,
            _ => continue,
        };
        *phase = nanoseconds(value.trim().parse().ok()?, 1e6);
    }
    let (Some(forward), Some(backward), Some(step)) = (forward, backward, step) else { return None };
    Some(Progress::Unnumbered {
        form: TrainingLog::DeepSpeedTimers,
        step_ns: forward.saturating_add(backward).saturating_add(step),
    })
}

/// `epoch=0/micro_step=400/global_step=100, RunningAvgSamplesPerSec=…`: the optimizer step.
fn deepspeed_throughput(body: &str) -> Option<Progress> {
    let (_, after) = body.split_once("/global_step=")?;
    let (step, rest) = leading_integer(after)?;
    rest.contains("SamplesPerSec=").then_some(Progress::Iteration {
        form: TrainingLog::DeepSpeedThroughput,
        step,
        step_ns: None,
    })
}

/// `{'train_runtime': 3.859, 'train_samples_per_second': …, 'train_steps_per_second': 10.37, …}`:
/// the run's seconds and steps a second give its steps (rounded: the rate is printed to three
/// decimals) and their mean time.
fn trainer_summary(body: &str) -> Option<Progress> {
    let runtime = dict_value(body, "'train_runtime':")?;
    let rate = dict_value(body, "'train_steps_per_second':")?;
    let (Ok(runtime), Ok(rate)) = (runtime.parse::<f64>(), rate.parse::<f64>()) else {
        return Some(UNREADABLE_TIME);
    };
    let steps = (runtime * rate).round();
    if !(steps >= 1.0 && steps < u64::MAX as f64) {
        return Some(UNREADABLE_TIME);
    }
    let step_ns = nanoseconds(runtime / steps, 1e9)?;
    Some(Progress::Run { form: TrainingLog::HfTrainer, steps: steps as u64, step_ns })
}

/// A Python dict's value after `key`, unquoted: `'3.859'` or `3.859`.
fn dict_value<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    let at = body.find(key)? + key.len();
    let rest = body.get(at..)?.trim_start();
    Some(rest.split([',', '}']).next()?.trim().trim_matches('\''))
}

/// `step: {step:2}  loss: …`, not `validate step:` nor a longer word ending in `step:`.
fn torchtitan_step(body: &str) -> Option<Progress> {
    let step = body.match_indices("step:").find_map(|(at, word)| {
        let before = body.get(..at)?;
        let joined = before.bytes().next_back().is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
        if joined || before.trim_end().ends_with("validate") {
            return None;
        }
        let (step, rest) = leading_integer(body.get(at + word.len()..)?.trim_start())?;
        rest.contains("loss:").then_some(step)
    })?;
    Some(Progress::Iteration { form: TrainingLog::Torchtitan, step, step_ns: None })
}

/// `| 10/200 [00:05<01:30,  2.10it/s]` (or `5.32s/it`, `?it/s` before the first rate, a
/// postfix after it): the count done and the time per step.
fn tqdm(body: &str) -> Option<Progress> {
    let (rate_at, per_second) =
        ["it/s", "s/it"].iter().filter_map(|unit| Some((body.find(unit)?, *unit == "it/s"))).min()?;
    let open = body.get(..rate_at)?.rfind('[')?;
    let (elapsed, rate) = body.get(open + 1..rate_at)?.split_once(',')?;
    if !elapsed.contains('<') {
        return None;
    }
    let (count, _) = body.get(..open)?.trim_end().rsplit(['|', ' ']).next()?.split_once('/')?;
    let step = count.parse().ok()?;
    let step_ns = rate.trim().parse::<f64>().ok().filter(|&r| r > 0.0).and_then(|r| {
        let seconds = if per_second { 1.0 / r } else { r };
        nanoseconds(seconds, 1e9)
    });
    Some(Progress::Iteration { form: TrainingLog::Tqdm, step, step_ns })
}

/// The text after `key` up to the next `|` or the end, trimmed.
fn value_after<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    let at = body.find(key)? + key.len();
    let rest = body.get(at..)?;
    Some(rest.split('|').next().unwrap_or(rest).trim())
}

/// `3453.08ms/8` or `3453.08ms/Rank-8`: the time in nanoseconds and the rank.
fn value_with_rank(value: &str) -> Option<(u64, u32)> {
    let (time, rank) = value.split_whitespace().next()?.rsplit_once('/')?;
    let rank = rank.strip_prefix("Rank-").unwrap_or(rank).parse().ok()?;
    Some((decimal_ns(time.strip_suffix("ms")?, 1e6)?, rank))
}

/// A non-negative decimal number of units of `unit_ns` nanoseconds, as nanoseconds.
fn decimal_ns(text: &str, unit_ns: f64) -> Option<u64> {
    nanoseconds(text.split_whitespace().next()?.parse().ok()?, unit_ns)
}

/// `value` units of `unit_ns` nanoseconds, when a representable non-negative number of them.
fn nanoseconds(value: f64, unit_ns: f64) -> Option<u64> {
    let ns = (value * unit_ns).round();
    (ns.is_finite() && ns >= 0.0 && ns < u64::MAX as f64).then_some(ns as u64)
}

/// The decimal integer `text` starts with, and the rest.
fn leading_integer(text: &str) -> Option<(u64, &str)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, rest) = text.split_at_checked(digits)?;
    Some((number.parse().ok()?, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iteration(form: TrainingLog, step: u64, step_ns: Option<u64>) -> Option<Progress> {
        Some(Progress::Iteration { form, step, step_ns })
    }

    #[test]
    fn reads_each_form_and_nothing_else() {
        use TrainingLog::{Megatron, Torchtitan};
        let cases = [
            // Megatron-LM, 2025 (microseconds), 2024 (seconds) and old (no time stamp).
            (
                " [2025-03-14 10:22:31.418532] iteration      100/  500000 | consumed samples:        51200 | elapsed time per iteration (ms): 4123.7 | learning rate: 2.999999E-04 |",
                iteration(Megatron, 100, Some(4_123_700_000)),
            ),
            (
                " [2024-03-14 10:22:31] iteration        4/      40 | consumed samples:           16 | elapsed time per iteration (ms): 87.5 |",
                iteration(Megatron, 4, Some(87_500_000)),
            ),
            (
                " iteration       20/     100 | consumed samples: 80 | elapsed time per iteration (ms): 12.0 |",
                iteration(Megatron, 20, Some(12_000_000)),
            ),
            ("==> iteration 7/9 | lm loss: 1.0E+00 |", iteration(Megatron, 7, None)),
            // Not iteration lines.
            (" [after training is done] datetime: 2024-03-14", None),
            ("(after 20 iterations) memory (MB) | allocated: 1.0", None),
            ("skipping iteration 5 because of NaN", None),
            ("elapsed time per iteration (ms): 12.0", None),
            // Straggler lines, as Megatron's logger writes them and as some copies do.
            (
                "INFO:megatron.core.utils:[2024-03-14 23:07:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3468.20ms/0 | MnPwr/Rnk: 601796W/8 |",
                Some(Progress::Extremes {
                    fastest_rank: 8,
                    fastest_ns: 3_453_080_000,
                    slowest_rank: 0,
                    slowest_ns: 3_468_200_000,
                }),
            ),
            (
                "| MnRtt/Rnk: 1.50ms/Rank-3 | MxRtt/Rnk: 2.25ms/Rank-1",
                Some(Progress::Extremes {
                    fastest_rank: 3,
                    fastest_ns: 1_500_000,
                    slowest_rank: 1,
                    slowest_ns: 2_250_000,
                }),
            ),
            ("^^^^ Bottom 4 Ranks with lowest  Etpt(TF): 296.02/0, 296.17/2,", None),
            ("| MxRtt/Rnk: 2.25ms/1", None),
            // torchtitan, with grad_norm (newest) and the old `wps` form.
            (
                "[titan] 2025-03-14 10:22:31,418 - root - INFO - step: 10  loss:  7.1234  grad_norm:  1.2345  memory: 45.67GiB(57.70%)  tps: 12,345  tflops: 345.67  mfu: 34.95%",
                iteration(Torchtitan, 10, None),
            ),
            (
                "step:  1  loss: 10.8765  memory:  3.21GiB(4.05%)  wps: 1,024  mfu: 0.50%",
                iteration(Torchtitan, 1, None),
            ),
            ("validate step: 10  loss:  7.0000  memory: 1.00GiB(1.00%)  tps: 9", None),
            ("time (ms) | fwd_microstep: 1.0 | bwd_microstep: 2.0 | step_microstep: 3.0", None),
            ("optimizer step: 3", None),
            // DeepSpeed's pipeline engine, and a fork's form; its other step lines say no time.
            (
                "steps: 100 loss: 2.3456 iter time (s): 1.234 samples/sec: 414.911",
                iteration(TrainingLog::DeepSpeed, 100, Some(1_234_000_000)),
            ),
            (
                "step:     5 /  1000 loss: 2.0000 iter time (s): 0.500 samples/sec: 64.000 eta: 00:08:20",
                iteration(TrainingLog::DeepSpeed, 5, Some(500_000_000)),
            ),
            ("[Rank 0] step=100, skipped=0, lr=[0.0003], mom=[(0.9, 0.95)]", None),
            // tqdm, as Hugging Face's Trainer shows it: steps a second, seconds a step, no
            // rate yet, a postfix; not a rate in prose.
            ("  5%|▌         | 10/200 [00:05<01:30,  2.00it/s]", iteration(TrainingLog::Tqdm, 10, Some(500_000_000))),
            (" 50%|█████     | 20/40 [01:46<01:44,  5.25s/it]", iteration(TrainingLog::Tqdm, 20, Some(5_250_000_000))),
            ("  0%|          | 0/40 [00:00<?, ?it/s]", iteration(TrainingLog::Tqdm, 0, None)),
            (
                "100%|██████████| 40/40 [00:21<00:00,  1.25it/s, loss=2.31]",
                iteration(TrainingLog::Tqdm, 40, Some(800_000_000)),
            ),
            ("throughput 3.2 it/s [measured]", None),
            // DeepSpeed's wall-clock breakdown: the optimizer step's line (current and old
            // names), not the micro-step line nor Megatron's timers in the same form.
            (
                "[Rank 0] time (ms) | fwd: 449.36 | bwd: 882.04 | bwd_inner: 800.08 | bwd_allreduce: 81.60 | step: 35.17",
                Some(Progress::Unnumbered { form: TrainingLog::DeepSpeedTimers, step_ns: 1_366_570_000 }),
            ),
            (
                "rank=0 time (ms) | forward: 10.00 | backward: 20.00 | backward_inner: 15.00 | backward_allreduce: 5.00 | step: 2.50",
                Some(Progress::Unnumbered { form: TrainingLog::DeepSpeedTimers, step_ns: 32_500_000 }),
            ),
            ("[Rank 0] time (ms) | fwd_microstep: 112.34 | bwd_microstep: 220.51 | step_microstep: 35.17", None),
            ("time (ms) | forward-compute: 1210.33 | backward-compute: 2540.10 | optimizer: 85.21", None),
            // DeepSpeed's throughput timer: the step, timed by the logger's stamps.
            (
                "[2025-03-14 10:22:31,418] [INFO] [timer.py:264:stop] epoch=0/micro_step=400/global_step=100, RunningAvgSamplesPerSec=412.88, CurrSamplesPerSec=415.00, MemAllocated=12.34GB, MaxMemAllocated=20.1GB",
                iteration(TrainingLog::DeepSpeedThroughput, 100, None),
            ),
            // Hugging Face Trainer's run summary, unquoted and quoted; its loss dicts say no time.
            (
                "{'train_runtime': 1234.5678, 'train_samples_per_second': 41.472, 'train_steps_per_second': 0.81, 'train_loss': 2.45, 'epoch': 1.0}",
                Some(Progress::Run { form: TrainingLog::HfTrainer, steps: 1000, step_ns: 1_234_567_800 }),
            ),
            (
                "{'train_runtime': '3.859', 'train_samples_per_second': '10.37', 'train_steps_per_second': '10.37', 'train_loss': '6.857', 'epoch': '1'}",
                Some(Progress::Run { form: TrainingLog::HfTrainer, steps: 40, step_ns: 96_475_000 }),
            ),
            ("{'loss': 2.3456, 'grad_norm': 1.23, 'learning_rate': 4.5e-05, 'epoch': 0.12}", None),
            // Lines of these forms whose numbers do not parse are skipped and reported.
            (" iteration 20/ 100 | elapsed time per iteration (ms): nan |", Some(UNREADABLE_TIME)),
            ("steps: 100 loss: 2.3456 iter time (s): 1.2.3 samples/sec: 1", Some(UNREADABLE_TIME)),
            (
                "| MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 34",
                Some(Progress::Unreadable { why: "its times are not `<ms>ms/<rank>`" }),
            ),
            ("{'train_runtime': 'x', 'train_steps_per_second': '1.0'}", Some(UNREADABLE_TIME)),
        ];
        for (line, expected) in cases {
            assert_eq!(parse(line), expected, "{line}");
        }
    }
}
