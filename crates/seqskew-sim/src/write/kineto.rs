//! PyTorch profiler (Kineto) traces, one per rank, shaped like real GPU traces: CPU-side
//! `ProfilerStep#N`, kernel launches with correlation ids, attention ops whose `Input Dims` and
//! `Concrete Inputs` carry the lengths the way PyTorch records them, and GPU kernels (GEMMs,
//! flash attention, NCCL collectives) on compute and communication streams. By default they
//! look like Megatron-LM's, which annotates no pipeline passes; [`KinetoWriter::annotating_passes`]
//! writes them as `torch.distributed.pipelining` does, each pass in a `Forward 3` or
//! `Backward 3` annotation.

use std::io::{self, Write};

use crate::config::{Config, Lengths, Packing};
use crate::engine::{OpKind, SimOp, SimStep};
use crate::job::host_of;
use crate::write::micros;

const CPU_TID: u32 = 1;
const COMPUTE_STREAM: u32 = 7;
const COMM_STREAM: u32 = 20;
const HEADS: u32 = 32;
const HEAD_DIM: u32 = 128;
/// Each micro-batch's attention is recorded once per layer; two keep the files small while
/// exercising the importer's folding of layer repeats.
const LAYERS: u32 = 2;

/// One rank's trace being written.
struct RankTrace<W: Write> {
    out: W,
    rank: u32,
    dp: u32,
    pp: u32,
    /// Its pipeline group's ranks as PyTorch writes a collective's `Process Group Ranks`
    /// ("[3, 11, 19, 27]": the same data-parallel, tensor and context position in each stage).
    pipeline_group: String,
    first: bool,
}

pub struct KinetoWriter<W: Write> {
    config: Config,
    ranks: Vec<RankTrace<W>>,
    correlation: u64,
    /// Each forward and backward pass in a `record_function` annotation naming its micro-batch.
    annotate_passes: bool,
}

impl<W: Write> KinetoWriter<W> {
    /// `outputs` gives each rank's sink, in rank order (`config.workers()` of them).
    pub fn new(config: &Config, outputs: Vec<W>) -> io::Result<Self> {
        let coords = crate::job::workers(config);
        let mut ranks = Vec::with_capacity(outputs.len());
        for ((rank, c), mut out) in coords.into_iter().zip(outputs) {
            write!(
                out,
                "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{{\"id\": 0, \"name\": \"Simulated GPU\", \"totalGlobalMem\": 85899345920}}],\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {rank}, \"world_size\": {}}},\n  \"record_shapes\": {},\n  \"traceEvents\": [\n",
                config.workers(),
                u8::from(config.reveal != Lengths::Hidden)
            )?;
            let (dp, tp, cp) = (c.dp.unwrap_or(0), c.tp.unwrap_or(0), c.cp.unwrap_or(0));
            let stages: Vec<String> =
                (0..config.pp).map(|p| crate::job::rank_of(config, dp, p, tp, cp).to_string()).collect();
            let pipeline_group = format!("[{}]", stages.join(", "));
            let mut t = RankTrace { out, rank, dp, pp: c.pp.unwrap_or(0), pipeline_group, first: true };
            t.event(&format!("{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {}, \"tid\": 0, \"args\": {{\"name\": \"python\"}}}}", 1000 + rank))?;
            t.event(&format!("{{\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": {}, \"tid\": 0, \"args\": {{\"labels\": \"GPU {}\"}}}}", rank % 8, rank % 8))?;
            ranks.push(t);
        }
        Ok(KinetoWriter { config: config.clone(), ranks, correlation: 1, annotate_passes: false })
    }

    /// The writer with each pass annotated as `torch.distributed.pipelining`'s single-stage
    /// schedules annotate it (`Forward 3`, `Backward 3`), the launches of its kernels inside.
    pub fn annotating_passes(self) -> Self {
        KinetoWriter { annotate_passes: true, ..self }
    }

    pub fn step(&mut self, step: &SimStep) -> io::Result<()> {
        let config = &self.config;
        for t in &mut self.ranks {
            let Some(group) = step.groups.get((t.pp * config.dp + t.dp) as usize) else { continue };
            let cpu_pid = 1000 + t.rank;
            t.event(&format!(
                "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{}\", \"pid\": {cpu_pid}, \"tid\": {CPU_TID}, \"ts\": {}, \"dur\": {}}}",
                step.number,
                micros(step.start),
                micros(step.end - step.start)
            ))?;
            for op in &group.ops {
                let bin = op
                    .micro_batch
                    .and_then(|m| step.bins.get((t.dp * config.micro_batches + m) as usize))
                    .map_or(&[][..], Vec::as_slice);
                if self.annotate_passes {
                    write_pass_annotation(t, op, step.start)?;
                }
                write_op(t, config, op, bin, step.start, &mut self.correlation)?;
            }
        }
        Ok(())
    }

    /// Closes every trace; returns the sinks in rank order.
    pub fn finish(self) -> io::Result<Vec<W>> {
        let mut outs = Vec::with_capacity(self.ranks.len());
        for mut t in self.ranks {
            write!(
                t.out,
                "\n  ],\n  \"traceName\": \"rank{}.pt.trace.json\",\n  \"host_name\": \"{}\",\n  \"baseTimeNanoseconds\": 1700000000000000000\n}}\n",
                t.rank,
                host_of(t.rank)
            )?;
            outs.push(t.out);
        }
        Ok(outs)
    }
}

impl<W: Write> RankTrace<W> {
    fn event(&mut self, json: &str) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        self.out.write_all(b"    ")?;
        self.out.write_all(json.as_bytes())
    }

    /// A GPU kernel and the CPU launch that correlates it with its step.
    fn kernel(
        &mut self,
        name: &str,
        stream: u32,
        (start, end): (i64, i64),
        launch_at: i64,
        args: &str,
        correlation: &mut u64,
    ) -> io::Result<()> {
        let c = *correlation;
        *correlation += 1;
        self.event(&format!(
            "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": {}, \"tid\": {CPU_TID}, \"ts\": {}, \"dur\": 4.000, \"args\": {{\"correlation\": {c}}}}}",
            1000 + self.rank,
            micros(launch_at)
        ))?;
        self.event(&format!(
            "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{name}\", \"pid\": {}, \"tid\": {stream}, \"ts\": {}, \"dur\": {}, \"args\": {{\"correlation\": {c}, \"stream\": {stream}{args}}}}}",
            self.rank % 8,
            micros(start),
            micros(end - start)
        ))
    }
}

/// The shapes an attention call records, or nothing when lengths are hidden.
fn attention_call(config: &Config, bin: &[u32], forward: bool) -> Option<(String, String)> {
    if config.reveal == Lengths::Hidden || bin.is_empty() || !forward {
        return None;
    }
    match config.packing {
        Packing::Packed => {
            let tokens: u32 = bin.iter().sum();
            let max = bin.iter().copied().max().unwrap_or(0);
            let q = format!("[{tokens}, {HEADS}, {HEAD_DIM}]");
            let cu = format!("[{}]", bin.len() + 1);
            Some((
                "flash_attn::_flash_attn_varlen_forward".to_owned(),
                format!(
                    "\"Input Dims\": [{q}, {q}, {q}, {cu}, {cu}, [], [], [], []], \"Concrete Inputs\": [\"\", \"\", \"\", \"\", \"\", \"{max}\", \"{max}\", \"0.0\", \"True\"]"
                ),
            ))
        }
        Packing::Padded => {
            let s = bin.iter().copied().max().unwrap_or(0);
            let q = format!("[{}, {HEADS}, {s}, {HEAD_DIM}]", bin.len());
            Some((
                "aten::scaled_dot_product_attention".to_owned(),
                format!("\"Input Dims\": [{q}, {q}, {q}, [], [], []]"),
            ))
        }
    }
}

/// When a CPU launches what the GPU starts at `at`: shortly before, within the step.
fn launch(at: i64, step_start: i64) -> i64 {
    (at - 5_000).max(step_start)
}

/// A forward or backward pass's annotation, from the launch of its first kernel to the
/// launch time of its end (other ops write none).
fn write_pass_annotation<W: Write>(t: &mut RankTrace<W>, op: &SimOp, step_start: i64) -> io::Result<()> {
    let pass = match op.kind {
        OpKind::Forward => "Forward",
        OpKind::Backward => "Backward",
        _ => return Ok(()),
    };
    let Some(mb) = op.micro_batch else { return Ok(()) };
    let (start, end) = (launch(op.start, step_start), launch(op.end, step_start));
    t.event(&format!(
        "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"{pass} {mb}\", \"pid\": {}, \"tid\": {CPU_TID}, \"ts\": {}, \"dur\": {}}}",
        1000 + t.rank,
        micros(start),
        micros((end - start).max(1_000))
    ))
}

fn write_op<W: Write>(
    t: &mut RankTrace<W>,
    config: &Config,
    op: &SimOp,
    bin: &[u32],
    step_start: i64,
    correlation: &mut u64,
) -> io::Result<()> {
    let launch = |at: i64| launch(at, step_start);
    let cpu_pid = 1000 + t.rank;
    match op.kind {
        OpKind::Forward | OpKind::Backward => {
            let forward = op.kind == OpKind::Forward;
            if let Some((name, args)) = attention_call(config, bin, forward) {
                for layer in 0..LAYERS {
                    t.event(&format!(
                        "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{name}\", \"pid\": {cpu_pid}, \"tid\": {CPU_TID}, \"ts\": {}, \"dur\": 20.000, \"args\": {{{args}}}}}",
                        micros(launch(op.start) + i64::from(layer) * 25_000)
                    ))?;
                }
                if config.reveal == Lengths::Exact {
                    let list: Vec<String> = bin.iter().map(u32::to_string).collect();
                    t.event(&format!(
                        "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"seqlens={}\", \"pid\": {cpu_pid}, \"tid\": {CPU_TID}, \"ts\": {}, \"dur\": 1.000}}",
                        list.join(","),
                        micros(launch(op.start))
                    ))?;
                }
            }
            let split = op.end - op.attention;
            let gemm = if forward { "ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn" } else { "ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_nt" };
            t.kernel(gemm, COMPUTE_STREAM, (op.start, split), launch(op.start), "", correlation)?;
            if op.attention > 0 {
                let attn = if forward { "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>" } else { "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128>>" };
                t.kernel(attn, COMPUTE_STREAM, (split, op.end), launch(split), "", correlation)?;
            }
        }
        OpKind::Recv => {
            let args = format!(
                ", \"Collective name\": \"recv\", \"Group size\": {}, \"Process Group Ranks\": \"{}\"",
                config.pp, t.pipeline_group
            );
            let name = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";
            t.kernel(name, COMM_STREAM, (op.start, op.end), launch(op.start), &args, correlation)?
        }
        OpKind::AllReduce { .. } | OpKind::Barrier => t.kernel(
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            COMM_STREAM,
            (op.start, op.end),
            launch(op.start),
            &format!(", \"Collective name\": \"allreduce\", \"Group size\": {}", config.dp),
            correlation,
        )?,
        OpKind::Optimizer => t.kernel(
            "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>",
            COMPUTE_STREAM,
            (op.start, op.end),
            launch(op.start),
            "",
            correlation,
        )?,
        OpKind::Gc => {}
        OpKind::DataWait => t.event(&format!(
            "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__\", \"pid\": {cpu_pid}, \"tid\": {CPU_TID}, \"ts\": {}, \"dur\": {}}}",
            micros(op.start),
            micros(op.end - op.start)
        ))?,
    }
    Ok(())
}
