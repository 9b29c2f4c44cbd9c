//! One merged Chrome trace for the whole job, the way timer exporters write them: a process per
//! rank named with its coordinates, a compute and a communication thread, events named by kind
//! with `step` and `mb_id` arguments (and `seqlens` when lengths are revealed).

use std::io::{self, Write};

use crate::config::{Config, Lengths};
use crate::engine::{OpKind, SimStep};
use crate::job::workers;
use crate::write::{json_list, micros};

const COMPUTE_TID: u32 = 1;
const COMM_TID: u32 = 2;

pub struct ChromeWriter<W: Write> {
    out: W,
    config: Config,
    first: bool,
}

impl<W: Write> ChromeWriter<W> {
    pub fn new(config: &Config, mut out: W) -> io::Result<Self> {
        write!(out, "{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[")?;
        let mut w = ChromeWriter { out, config: config.clone(), first: true };
        for (rank, c) in workers(config) {
            let label = format!(
                "rank {rank} (dp={}, pp={}, tp={}, cp={})",
                c.dp.unwrap_or(0),
                c.pp.unwrap_or(0),
                c.tp.unwrap_or(0),
                c.cp.unwrap_or(0)
            );
            w.event(&format!(
                "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{rank},\"tid\":0,\"args\":{{\"name\":\"{label}\"}}}}"
            ))?;
            for (tid, name) in [(COMPUTE_TID, "compute"), (COMM_TID, "communication")] {
                w.event(&format!("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{rank},\"tid\":{tid},\"args\":{{\"name\":\"{name}\"}}}}"))?;
            }
        }
        Ok(w)
    }

    fn event(&mut self, json: &str) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        self.out.write_all(json.as_bytes())
    }

    pub fn step(&mut self, step: &SimStep) -> io::Result<()> {
        let config = self.config.clone();
        for (rank, c) in workers(&config) {
            let (dp, pp) = (c.dp.unwrap_or(0), c.pp.unwrap_or(0));
            let Some(group) = step.groups.get((pp * config.dp + dp) as usize) else { continue };
            let n = step.number;
            let x = |name: &str, tid: u32, start: i64, end: i64, args: &str| {
                format!(
                    "{{\"ph\":\"X\",\"name\":\"{name}\",\"cat\":\"timer\",\"pid\":{rank},\"tid\":{tid},\"ts\":{},\"dur\":{},\"args\":{{\"step\":{n}{args}}}}}",
                    micros(start),
                    micros(end - start)
                )
            };
            self.event(&x("step", COMPUTE_TID, step.start, step.end, ""))?;
            for op in &group.ops {
                let mb = op.micro_batch.map(|m| format!(",\"mb_id\":{m}")).unwrap_or_default();
                match op.kind {
                    OpKind::Forward | OpKind::Backward => {
                        let forward = op.kind == OpKind::Forward;
                        let mut args = mb.clone();
                        if forward && config.reveal == Lengths::Exact {
                            let bin = step.bins.get((dp * config.micro_batches + op.micro_batch.unwrap_or(0)) as usize);
                            args.push_str(&format!(",\"seqlens\":{}", json_list(bin.map_or(&[][..], Vec::as_slice))));
                        }
                        let (name, attn) = if forward {
                            ("forward-compute", "attention-forward")
                        } else {
                            ("backward-compute", "attention-backward")
                        };
                        self.event(&x(name, COMPUTE_TID, op.start, op.end, &args))?;
                        if op.attention > 0 {
                            self.event(&x(attn, COMPUTE_TID, op.end - op.attention, op.end, &mb))?;
                        }
                    }
                    OpKind::Recv => self.event(&x("pipeline-recv", COMM_TID, op.start, op.end, &mb))?,
                    OpKind::AllReduce { .. } => self.event(&x("grads-all-reduce", COMM_TID, op.start, op.end, ""))?,
                    OpKind::Barrier => self.event(&x("clip-grad-all-reduce", COMM_TID, op.start, op.end, ""))?,
                    OpKind::Optimizer => self.event(&x("optimizer", COMPUTE_TID, op.start, op.end, ""))?,
                    // A host stall is a bare gap inside its step, as in real merged traces
                    // (nothing records the host's GC or Python time): the reader must find it
                    // as time nothing covers, not by a name the simulator chose.
                    OpKind::Gc => {}
                    OpKind::DataWait => self.event(&x("dataloader", COMPUTE_TID, op.start, op.end, ""))?,
                }
            }
        }
        Ok(())
    }

    pub fn finish(mut self) -> io::Result<W> {
        self.out.write_all(b"]}\n")?;
        Ok(self.out)
    }
}
