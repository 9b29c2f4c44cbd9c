//! The failed-job benchmarks: a long torchrun console scanned for its failure, and a 4096-rank
//! job's Flight Recorder dumps read and diagnosed. Both check the diagnosis they time.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use seqskew_core::failure::diagnose;
use seqskew_core::import::{FileImport, FileIngest, READ_CHUNK, assemble_owned};
use seqskew_core::report::Failure;

use crate::pickle::{Py, dumps};
use crate::results::{Sample, peak_rss_mib};

/// Local ranks of the one node the console log is from.
const LOG_RANKS: u32 = 8;
/// The rank that runs out of memory at the log's end.
const LOG_CULPRIT: u32 = 5;
/// One line in this many is a look-alike of a failure message (it holds the scanner's anchors).
const LOOK_ALIKE_EVERY: u64 = 100_000;
/// Steps between Megatron-LM's iteration (and straggler) lines: its `--log-interval`.
const LOG_INTERVAL: u64 = 10;
/// The step the log starts at.
const FIRST_STEP: u64 = 1000;

/// Writes about `target` bytes of a torchrun console of one 8-GPU node: step lines from every
/// rank, every [`LOG_INTERVAL`] steps Megatron-LM's iteration line (from the last rank) and
/// straggler line (from rank 0), one line in 100,000 a warning that looks like a failure (the
/// scanner's anchors in it, nothing the diagnosis keeps), and at the end rank 5 running out of
/// memory, the others losing it and torchrun's failure report. Returns the bytes written.
pub fn write_log(out: &mut impl Write, target: u64) -> io::Result<u64> {
    let mut written = 0u64;
    for line in HEADER.lines() {
        writeln!(out, "{line}")?;
        written += line.len() as u64 + 1;
    }
    let mut random = xorshift(0x5eed_1234_abcd_ef01);
    let mut line = Vec::with_capacity(256);
    let mut lines = 0u64;
    let mut step = FIRST_STEP;
    while written < target {
        if step.is_multiple_of(LOG_INTERVAL) {
            line.clear();
            let r = random();
            let (h, m, sec) = (9 + step / 3600 % 12, step / 60 % 60, step % 60);
            let last = LOG_RANKS - 1;
            writeln!(
                line,
                "[default{last}]:[rank{last}]: [2026-12-05 {h:02}:{m:02}:{sec:02}] iteration {step:8}/  500000 | consumed samples: {:12} | elapsed time per iteration (ms): {}.{} | learning rate: 2.999999E-04 | global batch size:   512 | lm loss: 2.104321E+00 | loss scale: 1.0 | grad norm: 0.812 | number of skipped iterations:   0 | number of nan iterations:   0 |",
                step * 512,
                4000 + r % 500,
                (r >> 10) % 10,
            )?;
            writeln!(
                line,
                "[default0]:[rank0]:[2026-12-05 {h:02}:{m:02}:{sec:02}] | MnRtt/Rnk: 3453.08ms/{} | MxRtt/Rnk: {}.{:02}ms/{} | MnPwr/Rnk: 601796W/1 | MxPwr/Rnk: 611337W/2 |",
                (r >> 20) % u64::from(LOG_RANKS),
                3460 + (r >> 24) % 100,
                (r >> 32) % 100,
                (r >> 40) % u64::from(LOG_RANKS),
            )?;
            out.write_all(&line)?;
            written += line.len() as u64;
        }
        for rank in 0..LOG_RANKS {
            line.clear();
            let r = random();
            lines += 1;
            if lines.is_multiple_of(LOOK_ALIKE_EVERY) {
                let text = LOOK_ALIKES[(lines / LOOK_ALIKE_EVERY) as usize % LOOK_ALIKES.len()];
                writeln!(line, "[default{rank}]:[rank{rank}]:{text}")?;
            } else {
                writeln!(
                    line,
                    "[default{rank}]:[rank{rank}]: step {step} loss {}.{:04} lr 3e-4 tokens/s {} mem {}.{}GiB",
                    1 + r % 3,
                    (r >> 8) % 10_000,
                    100_000 + (r >> 24) % 60_000,
                    60 + (r >> 40) % 20,
                    (r >> 50) % 10,
                )?;
            }
            out.write_all(&line)?;
            written += line.len() as u64;
        }
        step += 1;
    }
    let ending = ending(step);
    out.write_all(ending.as_bytes())?;
    Ok(written + ending.len() as u64)
}

/// torchrun's start.
const HEADER: &str = "\
W1205 08:57:41.204000 4810 site-packages/torch/distributed/run.py:793]
W1205 08:57:41.204000 4810 site-packages/torch/distributed/run.py:793] *****************************************
W1205 08:57:41.204000 4810 site-packages/torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed.
W1205 08:57:41.204000 4810 site-packages/torch/distributed/run.py:793] *****************************************";

/// Lines a long run writes that hold the scanner's anchors (`rror`, `xception`, `imeout`, …)
/// but say nothing about a failure: each is read and dropped.
const LOOK_ALIKES: [&str; 3] = [
    "[W1205 09:12:44.512000000 ProcessGroupNCCL.cpp:1018] Warning: TORCH_NCCL_ASYNC_ERROR_HANDLING is deprecated in favor of TORCH_NCCL_ASYNC_ERROR_HANDLING_MODE (function operator())",
    " Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f3a2c1d5e40>",
    " /usr/local/lib/python3.11/site-packages/torch/distributed/fsdp/_init_utils.py:444: UserWarning: FSDP is switching to use `NO_SHARD` instead of ShardingStrategy.FULL_SHARD since the world size is 1 (no collective timeout applies).",
];

/// The end of the log: rank 5's out-of-memory traceback, the others' lost peer, torchrun's
/// teardown and failure report.
fn ending(step: u64) -> String {
    let mut s = String::new();
    let c = LOG_CULPRIT;
    let frames = [
        ("/workspace/train.py", 338, "<module>", "main()"),
        ("/workspace/train.py", 321, "main", "loss = train_step(model, batch, optimizer)"),
        ("/workspace/train.py", 244, "train_step", "logits = model(batch[\"input_ids\"])"),
        ("/workspace/model.py", 97, "forward", "scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale"),
    ];
    let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a total capacity of 79.15 GiB of which 1.05 GiB is free.";
    s += &format!(
        "[default{c}]:[rank{c}]: step {step} failed\n[default{c}]:[rank{c}]: Traceback (most recent call last):\n"
    );
    for (file, line, function, code) in frames {
        s += &format!(
            "[default{c}]:[rank{c}]:   File \"{file}\", line {line}, in {function}\n[default{c}]:[rank{c}]:     {code}\n"
        );
    }
    s += &format!("[default{c}]:[rank{c}]: {oom}\n");
    for r in (0..LOG_RANKS).filter(|&r| r != c) {
        s += &format!(
            "[default{r}]:[rank{r}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:561] Connection closed by peer [10.0.0.{c}]:4134{r}. This is typically caused by a remote worker crashing.\n"
        );
    }
    for r in (0..LOG_RANKS).filter(|&r| r != c) {
        s += &format!(
            "W1205 10:05:06.725000 4810 site-packages/torch/distributed/elastic/multiprocessing/api.py:1028] Sending process {} closing signal SIGTERM\n",
            4900 + r
        );
    }
    s += &format!(
        "E1205 10:05:07.117000 4810 site-packages/torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: {c} (pid: {}) of binary: /usr/bin/python3.11\n",
        4900 + c
    );
    s += "Traceback (most recent call last):\n  File \"/usr/local/bin/torchrun\", line 8, in <module>\n    sys.exit(main())\n";
    s += "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n============================================================\ntrain.py FAILED\n------------------------------------------------------------\nFailures:\n";
    let block = |s: &mut String, index: usize, rank: u32, exitcode: &str, traceback: &str| {
        *s += &format!(
            "[{index}]:\n  time      : 2026-12-05_10:05:06\n  host      : gpu-node-0\n  rank      : {rank} (local_rank: {rank})\n  exitcode  : {exitcode} (pid: {})\n  error_file: <N/A>\n  traceback : {traceback}\n",
            4900 + rank
        );
    };
    for (i, r) in (0..LOG_RANKS).filter(|&r| r != c).enumerate() {
        let traceback = format!("Signal 15 (SIGTERM) received by PID {}", 4900 + r);
        block(&mut s, i + 1, r, "-15", &traceback);
    }
    s += "------------------------------------------------------------\nRoot Cause (first observed failure):\n";
    block(
        &mut s,
        0,
        c,
        "1",
        &format!(
            "Traceback (most recent call last):\n    File \"/workspace/model.py\", line 97, in forward\n  {oom}\n  "
        ),
    );
    s += "============================================================\n";
    s
}

/// Checks the failure the log (or the dumps) lead to.
fn expect(failure: Option<&Failure>, cause: &str, initiating: &[u32]) -> Result<(), String> {
    match failure {
        Some(f) if f.cause == cause && f.initiating_ranks == initiating => Ok(()),
        Some(f) => Err(format!(
            "expected cause {cause} started by {initiating:?}; the diagnosis says {} started by {:?} ({})",
            f.cause, f.initiating_ranks, f.headline
        )),
        None => Err(format!("expected cause {cause} started by {initiating:?}; the diagnosis found no failure")),
    }
}

/// Feeds each `(name, reader)` to its own importer `READ_CHUNK` bytes at a time.
fn import_chunks<'a>(files: impl Iterator<Item = (String, &'a [u8])>) -> Vec<FileImport> {
    files
        .map(|(name, bytes)| {
            let mut ingest = FileIngest::new(&name);
            bytes.chunks(READ_CHUNK).for_each(|chunk| ingest.feed(chunk));
            ingest.finish()
        })
        .collect()
}

/// Reads a log from disk `READ_CHUNK` bytes at a time into its importer, assembles and
/// diagnoses it: the failure and the step times (all timed, as a user waits for it), and
/// checks that rank 5's OOM is found and the iteration lines read.
pub fn measure_log(path: &Path) -> Result<(), String> {
    use std::io::Read;
    let name = path.display().to_string();
    let start = Instant::now();
    let mut file = File::open(path).map_err(|e| format!("{name}: {e}"))?;
    let mut ingest = FileIngest::new(&name);
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let n = file.read(&mut buf).map_err(|e| format!("{name}: {e}"))?;
        if n == 0 {
            break;
        }
        ingest.feed(buf.get(..n).unwrap_or_default());
    }
    let import = ingest.finish();
    let bytes = import.stats.bytes;
    let inputs = vec![import.summary()];
    let assembled = assemble_owned(vec![import]);
    let failure = diagnose(&assembled.failures);
    let report = seqskew_core::analysis::diagnose(&assembled, &inputs);
    let seconds = start.elapsed().as_secs_f64();
    expect(failure.as_ref(), "oom", &[LOG_CULPRIT])?;
    expect_step_times(&report)?;
    print_sample(&Sample { seconds, peak_rss_mib: peak_rss_mib(), bytes, workers: LOG_RANKS as usize, steps: 0 })
}

/// Checks that the iteration lines gave the job's step times: the first line's log interval on.
fn expect_step_times(report: &seqskew_core::report::Report) -> Result<(), String> {
    let first_covered = FIRST_STEP.next_multiple_of(LOG_INTERVAL) + 1 - LOG_INTERVAL;
    match (report.job.step_times.as_deref(), report.job.first_step) {
        (Some("training_log"), Some(first)) if first == first_covered => Ok(()),
        (source, first) => Err(format!(
            "expected step times from the training log's iteration lines from step {first_covered}; got {source:?} from {first:?}"
        )),
    }
}

fn print_sample(sample: &Sample) -> Result<(), String> {
    println!("{}", serde_json::to_string(sample).map_err(|e| e.to_string())?);
    Ok(())
}

/// Writes the log input (cached under `data`), about `target` bytes.
pub fn log_input(data: &Path, target: u64) -> io::Result<(PathBuf, u64)> {
    crate::generate::cached(data, &format!("training-log-{}mb.log", target >> 20), |path, count| {
        let mut out = io::BufWriter::with_capacity(1 << 20, File::create(path)?);
        count.set(write_log(&mut out, target)?);
        out.flush()
    })
}

// ---------------------------------------------------------------------------------------------
// Flight Recorder dumps.

/// The rank that stops one collective early: the others wait for it in their last one.
pub const SLOW_RANK: u32 = 1234;
/// Stack frames of every entry (innermost first).
const FRAMES: [(&str, &str, i64); 5] = [
    ("all_reduce", "/usr/local/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", 2501),
    ("wrapper", "/usr/local/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", 83),
    (
        "allreduce_hook",
        "/usr/local/lib/python3.11/site-packages/torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py",
        29,
    ),
    ("train_step", "/workspace/train.py", 212),
    ("main", "/workspace/train.py", 338),
];

/// One rank's dump, as PyTorch 2.10 writes it on a watchdog timeout (`nccl_trace_rank_N`):
/// `entries` collectives on the default group, the last one still running, except on
/// `slow`, which never issued it.
pub fn dump(rank: u32, members: &str, entries: u32, slow: u32) -> Py {
    let issued = if rank == slow { entries - 1 } else { entries };
    let base_ns: i64 = 1_796_473_000_000_000_000 + i64::from(rank) * 1_337;
    let entry = |i: u32| {
        let seq = i64::from(i) + 1;
        let done = i + 1 < entries;
        let created = base_ns + seq * 412_000_000;
        let shape = || Py::List(vec![Py::List(vec![1024.into(), 1024.into()])]);
        let frames = FRAMES
            .iter()
            .map(|&(name, file, line)| {
                Py::Dict(vec![("name", name.into()), ("filename", file.into()), ("line", line.into())])
            })
            .collect();
        Py::Dict(vec![
            ("frames", Py::List(frames)),
            ("record_id", i64::from(i).into()),
            ("pg_id", 0.into()),
            ("process_group", Py::Pair(Box::new("0".into()), Box::new("default_pg".into()))),
            ("thread_name", "pt_nccl_watchdg".into()),
            ("thread_id", "140484024200064".into()),
            ("collective_seq_id", seq.into()),
            ("p2p_seq_id", 0.into()),
            ("op_id", seq.into()),
            ("profiling_name", "nccl:all_reduce".into()),
            ("time_created_ns", created.into()),
            ("input_sizes", shape()),
            ("input_dtypes", Py::List(vec!["Float".into()])),
            ("output_sizes", shape()),
            ("output_dtypes", Py::List(vec!["Float".into()])),
            ("state", if done { "completed" } else { "started" }.into()),
            ("time_discovered_started_ns", Py::None),
            ("time_discovered_completed_ns", if done { (created + 3_100_000).into() } else { Py::None }),
            ("retired", done.into()),
            ("timeout_ms", 600_000.into()),
            ("is_p2p", false.into()),
        ])
    };
    let completed = i64::from(issued.min(entries - 1));
    Py::Dict(vec![
        ("version", "2.10".into()),
        (
            "pg_config",
            Py::Dict(vec![(
                "0",
                Py::Dict(vec![("name", "0".into()), ("desc", "default_pg".into()), ("ranks", members.into())]),
            )]),
        ),
        ("comm_lib_version", "2.21.5".into()),
        (
            "pg_status",
            Py::Dict(vec![(
                "0",
                Py::Dict(vec![
                    ("last_enqueued_collective", i64::from(issued).into()),
                    ("last_started_collective", i64::from(issued).into()),
                    ("last_completed_collective", completed.into()),
                ]),
            )]),
        ),
        ("entries", Py::List((0..issued).map(entry).collect())),
    ])
}

/// Every rank's dump, pickled.
fn dumps_of(ranks: u32, entries: u32) -> Vec<(String, Vec<u8>)> {
    let slow = SLOW_RANK.min(ranks - 1);
    let members = members(ranks);
    (0..ranks).map(|r| (format!("nccl_trace_rank_{r}"), dumps(&dump(r, &members, entries, slow)))).collect()
}

/// `pg_config`'s ranks as PyTorch writes them: `"[0, 1, 2]"`.
fn members(ranks: u32) -> String {
    format!("[{}]", (0..ranks).map(|r| r.to_string()).collect::<Vec<_>>().join(", "))
}

/// Generates `ranks` dumps of `entries` entries in memory (not timed), then times their import
/// `READ_CHUNK` bytes at a time, the assembly and the failure diagnosis, and checks that the
/// slow rank is named as the hang's start. With `write`, writes the dumps there instead.
pub fn measure_flight(ranks: u32, entries: u32, write: Option<&Path>) -> Result<(), String> {
    if ranks < 2 || entries < 2 {
        return Err("flight-recorder: at least 2 ranks and 2 entries".into());
    }
    let files = dumps_of(ranks, entries);
    if let Some(dir) = write {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (name, bytes) in &files {
            std::fs::write(dir.join(name), bytes).map_err(|e| format!("{name}: {e}"))?;
        }
        eprintln!("wrote {ranks} dumps to {}", dir.display());
        return Ok(());
    }
    let bytes = files.iter().map(|(_, b)| b.len() as u64).sum();
    let start = Instant::now();
    let imports = import_chunks(files.iter().map(|(name, b)| (name.clone(), b.as_slice())));
    let imported = start.elapsed().as_secs_f64();
    let assembled = assemble_owned(imports);
    let assembled_at = start.elapsed().as_secs_f64();
    let failure = diagnose(&assembled.failures);
    let seconds = start.elapsed().as_secs_f64();
    // The parts, on stderr (the sample is the last line of stdout).
    eprintln!(
        "import {imported:.3} s, assembly {:.3} s, diagnosis {:.3} s",
        assembled_at - imported,
        seconds - assembled_at
    );
    expect(failure.as_ref(), "hang", &[SLOW_RANK.min(ranks - 1)])?;
    let collateral = failure.as_ref().map_or(0, |f| f.collateral_ranks.len());
    if collateral != ranks as usize - 1 {
        eprintln!("note: {collateral} collateral ranks, not the {} others", ranks - 1);
    }
    print_sample(&Sample { seconds, peak_rss_mib: peak_rss_mib(), bytes, workers: ranks as usize, steps: 0 })
}

fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seqskew_core::failure::pickle::decode;

    #[test]
    fn a_small_log_is_diagnosed() {
        let mut log = Vec::new();
        let written = write_log(&mut log, 2 << 20).expect("into memory");
        assert_eq!(written, log.len() as u64);
        let imports = import_chunks(std::iter::once(("console.log".to_owned(), log.as_slice())));
        let inputs: Vec<_> = imports.iter().map(FileImport::summary).collect();
        let assembled = assemble_owned(imports);
        expect(diagnose(&assembled.failures).as_ref(), "oom", &[LOG_CULPRIT]).expect("rank 5's OOM");
        expect_step_times(&seqskew_core::analysis::diagnose(&assembled, &inputs)).expect("the iteration lines");
    }

    #[test]
    fn dumps_decode_and_name_the_slow_rank() {
        let bytes = dumps(&dump(3, &members(8), 20, 3));
        let tree = decode(&bytes).expect("a pickle the decoder reads");
        let value = tree.root();
        assert_eq!(value.get("version").and_then(|v| v.as_str()), Some("2.10"));
        assert_eq!(value.get("entries").map(|e| e.items().len()), Some(19));
        let files = dumps_of(16, 20);
        let imports = import_chunks(files.iter().map(|(n, b)| (n.clone(), b.as_slice())));
        let failure = diagnose(&assemble_owned(imports).failures);
        expect(failure.as_ref(), "hang", &[15]).expect("the slow rank");
    }
}
